#!/usr/bin/env bash
# npm run terraform:check (after npm run release): the Terraform module checked by OpenTofu as
# far as this machine allows (docs/terraform.md#what-was-tested):
#   1. tofu fmt -check: every .tf file of terraform/ (the example included) and of the test
#      fixture parses and is formatted;
#   2. tofu init + validate of the module, its provider a local stand-in for hashicorp/aws
#      (test/terraform/aws-stand-in: the real provider cannot be had here) served from a
#      filesystem mirror: references, types, functions and the attributes the module uses;
#   3. tofu test: the fixture (test/terraform/fixture) applies the module on the release in
#      dist/release/, then updates it to a next release, the stand-in checking the stack as
#      CloudFormation would (parameters, capabilities, template URL, code object, the previous
#      code kept for a rollback); then a plan with a bad setting must fail at the module's
#      validation.
# OpenTofu and the stand-in are built from the Go module proxy into the git-ignored .cache/tofu/
# (OpenTofu about 7.5 min and the stand-in 1.3 min on 2 cores with empty Go caches, then seconds);
# TOFU=<path> uses a tofu you have.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
version=v1.12.6
cache=.cache/tofu
tofu=${TOFU:-$repo/$cache/$version/tofu}
command -v go >/dev/null || { echo "[terraform] Go >= 1.26 is needed to build OpenTofu and the provider stand-in" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$tofu" ]; then
  started=$(date +%s)
  echo "[terraform] building OpenTofu $version from the Go module proxy into $tofu (once)"
  # `go install module@version` refuses a module whose go.mod has replace directives (OpenTofu's
  # has one, for its HCL fork): build it as the main module from its downloaded source instead.
  dir=$(go mod download -json "github.com/opentofu/opentofu@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] || { echo "[terraform] go mod download gave no source directory for OpenTofu $version" >&2; exit 1; }
  cp -r "$dir/." "$work/opentofu" && chmod -R u+w "$work/opentofu"
  mkdir -p "$(dirname "$tofu")"
  (cd "$work/opentofu" && go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$tofu" ./cmd/tofu)
  echo "[terraform] OpenTofu built in $(( $(date +%s) - started )) s"
fi

# The stand-in, rebuilt when its source changes, in the layout of an unpacked filesystem mirror.
stand_in_version=6.999.0
mirror=$repo/$cache/mirror
plugin=$mirror/registry.opentofu.org/hashicorp/aws/$stand_in_version/linux_amd64/terraform-provider-aws_v$stand_in_version
digest=$(cat test/terraform/aws-stand-in/*.go test/terraform/aws-stand-in/go.* | sha256sum | cut -c1-16)
if [ "$(cat "$plugin.digest" 2>/dev/null)" != "$digest" ]; then
  started=$(date +%s)
  echo "[terraform] building the hashicorp/aws stand-in (test/terraform/aws-stand-in)"
  mkdir -p "$(dirname "$plugin")"
  (cd test/terraform/aws-stand-in && go build -trimpath -o "$plugin" .)
  echo "$digest" > "$plugin.digest"
  echo "[terraform] stand-in built in $(( $(date +%s) - started )) s"
fi
cat > "$work/tofurc" <<EOF
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.opentofu.org/hashicorp/aws"]
  }
}
EOF
# Only the mirror: no registry, no plugin cache, nothing from the network.
export TF_CLI_CONFIG_FILE=$work/tofurc TF_IN_AUTOMATION=1
# sed, not head: head leaves at the first line, and under pipefail the SIGPIPE tofu may meet
# writing the rest fails the check (exit 141, as a CI run did).
"$tofu" version | sed -n 1p

"$tofu" fmt -check -recursive -diff terraform test/terraform/fixture
echo "[terraform] 1. tofu fmt -check: terraform/ (with its example) and the fixture parse and are formatted"

cp -r terraform "$work/module"
(cd "$work/module" && "$tofu" init -input=false -no-color >/dev/null && "$tofu" validate -no-color)
echo "[terraform] 2. tofu validate: the module, against the stand-in's schema"

release=$(ls "$repo"/dist/release/graceful-node-termination-*.template.json 2>/dev/null | sed -n 1p || true)
[ -n "$release" ] || { echo "[terraform] no release in dist/release/: run npm run release first" >&2; exit 1; }
cp -r test/terraform/fixture "$work/fixture"
sed -i "s|\"../../../terraform\"|\"$repo/terraform\"|" "$work/fixture/main.tf"
export GNT_AWS_STAND_IN_ROOT=$work/aws
mkdir -p "$GNT_AWS_STAND_IN_ROOT/s3/artifacts"
cd "$work/fixture"
"$tofu" init -input=false -no-color >/dev/null
# The next release: the same files under another version's names, for the update run.
next=$work/next-release
mkdir -p "$next"
current=$(basename "$release" .template.json | sed 's/^graceful-node-termination-//')
for file in "$(dirname "$release")"/graceful-node-termination-"$current"{.template.json,-lambda-*.zip}; do
  cp "$file" "$next/$(basename "$file" | sed "s/$current/$current.next/")"
done
"$tofu" test -no-color -var "release_directory=$repo/dist/release" -var "next_release_directory=$next"
if "$tofu" plan -no-color -input=false -var "release_directory=$repo/dist/release" -var mode=loud >"$work/bad.txt" 2>&1; then
  echo "[terraform] a plan with mode = \"loud\" passed; the module's validation should have refused it" >&2
  exit 1
fi
grep -q 'mode must be one of enforce, observe' "$work/bad.txt" || { cat "$work/bad.txt" >&2; exit 1; }
echo "[terraform] 3. tofu test: the module applied on $(basename "$release" .template.json) and updated to a next release against the stand-in; a bad setting refused at plan"
