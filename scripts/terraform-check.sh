#!/usr/bin/env bash
# npm run terraform:check: OpenTofu's own formatter and parser on the Terraform module and its
# example (tofu fmt -check parses every file: a syntax error fails it as a format difference
# does). OpenTofu is built once from the Go module proxy into the git-ignored .cache/tofu/
# (about 7.5 min on 2 cores with empty Go caches, 115 MB; seconds afterwards); TOFU=<path> uses
# a tofu you have. What this does not check, and why: docs/terraform.md#what-was-tested.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v1.12.6
tofu=${TOFU:-.cache/tofu/$version/tofu}

if [ ! -x "$tofu" ]; then
  command -v go >/dev/null || { echo "[terraform] Go >= 1.26 is needed to build OpenTofu $version (or set TOFU=<path to tofu>)" >&2; exit 1; }
  started=$(date +%s)
  echo "[terraform] building OpenTofu $version from the Go module proxy into $tofu (once)"
  # `go install module@version` refuses a module whose go.mod has replace directives (OpenTofu's
  # has one, for its HCL fork): build it as the main module from its downloaded source instead.
  dir=$(go mod download -json "github.com/opentofu/opentofu@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] || { echo "[terraform] go mod download gave no source directory for OpenTofu $version" >&2; exit 1; }
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  cp -r "$dir/." "$src" && chmod -R u+w "$src"
  mkdir -p "$(dirname "$tofu")"
  (cd "$src" && go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$OLDPWD/$tofu" ./cmd/tofu)
  echo "[terraform] built in $(( $(date +%s) - started )) s"
fi

# An empty CLI configuration: no ~/.terraformrc warning, no plugin cache, nothing from the network.
export TF_CLI_CONFIG_FILE=/dev/null
"$tofu" version | head -1
"$tofu" fmt -check -recursive -diff terraform
echo "[terraform] tofu fmt -check: terraform/ and terraform/examples/ are parsed and formatted"
