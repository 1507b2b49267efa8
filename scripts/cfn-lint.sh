#!/usr/bin/env bash
# Lints the synthesized templates (or the ones given) with cfn-lint and checkov, each from PyPI in
# a git-ignored virtualenv under .cache/. Both must find nothing.
# - cfn-lint: W3005 (DependsOn also implied by GetAtt) is ignored: aws-cdk-lib's lambda.Function
#   adds that DependsOn on its role itself, and it is harmless.
# - checkov: the findings that do not apply are skipped in the template itself, each with its
#   reason (Metadata.checkov.skip; docs/security.md lists them). --skip-download: checkov asks no
#   platform for guidelines or policies (it would retry an unreachable host for a while).
set -euo pipefail
cd "$(dirname "$0")/.."

# Installs `package==version` into .cache/<package>-<version> once; prints the venv's bin directory.
venv() {
  local package=$1 version=$2 dir=".cache/$1-$2"
  if [ ! -x "$dir/bin/$package" ]; then
    echo "[lint:template] installing $package $version into $dir" >&2
    python3 -m venv "$dir" || { echo "python3 with the venv module is required (Debian: apt install python3-venv)" >&2; exit 1; }
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$package==$version" >&2
  fi
  echo "$dir/bin"
}

shopt -s nullglob
# The templates given (npm run release passes the release template), else those in cdk.out/.
templates=("$@")
[ ${#templates[@]} -gt 0 ] || templates=(cdk.out/*.template.json)
if [ ${#templates[@]} -eq 0 ]; then
  echo "no template in cdk.out/: run npm run synth first" >&2
  exit 1
fi

cfn_lint=$(venv cfn-lint 1.58.0)
"$cfn_lint/cfn-lint" --ignore-checks W3005 -- "${templates[@]}"
echo "[cfn-lint] ${templates[*]}: no findings"

checkov=$(venv checkov 3.3.30)
for template in "${templates[@]}"; do
  "$checkov/checkov" --quiet --compact --skip-download --framework cloudformation --file "$template"
done
echo "[checkov] ${templates[*]}: no findings (each skipped check says why in the template)"
