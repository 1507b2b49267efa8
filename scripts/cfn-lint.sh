#!/usr/bin/env bash
# Lints the synthesized templates (or the ones given) with cfn-lint (from PyPI, in a git-ignored virtualenv).
# W3005 (DependsOn also implied by GetAtt) is ignored: aws-cdk-lib's lambda.Function adds
# that DependsOn on its role itself, and it is harmless.
set -euo pipefail
cd "$(dirname "$0")/.."
version=1.58.0
venv=.cache/cfn-lint-$version
if [ ! -x "$venv/bin/cfn-lint" ]; then
  echo "[cfn-lint] installing cfn-lint $version into $venv"
  python3 -m venv "$venv" || { echo "python3 with the venv module is required (Debian: apt install python3-venv)" >&2; exit 1; }
  "$venv/bin/pip" install --quiet "cfn-lint==$version"
fi
shopt -s nullglob
# The templates given (npm run release passes the release template), else those in cdk.out/.
templates=("$@")
[ ${#templates[@]} -gt 0 ] || templates=(cdk.out/*.template.json)
if [ ${#templates[@]} -eq 0 ]; then
  echo "no template in cdk.out/: run npm run synth first" >&2
  exit 1
fi
"$venv/bin/cfn-lint" --ignore-checks W3005 -- "${templates[@]}"
echo "[cfn-lint] ${templates[*]}: no findings"
