#!/usr/bin/env bash
# npm run release:check, after npm run release: the artifacts in dist/release/ are what their
# checksums say, and the registries' own checks pass on the packages: `npm publish --dry-run`
# on the construct's and the CLI's tarballs (a dev build is a prerelease: npm wants a tag, here
# `next`), `twine check` on the wheel (twine from PyPI into a git-ignored virtualenv, as
# cfn-lint is). Nothing is published.
set -euo pipefail
cd "$(dirname "$0")/../dist/release" 2>/dev/null || { echo "[release:check] no dist/release/: run npm run release first" >&2; exit 1; }
shopt -s nullglob

started=$(date +%s)
sha256sum --check --strict SHA256SUMS
listed=$(wc -l < SHA256SUMS)
present=$(find . -maxdepth 1 -type f ! -name SHA256SUMS | wc -l)
[ "$listed" -eq "$present" ] || { echo "[release:check] SHA256SUMS lists $listed files, dist/release/ has $present" >&2; exit 1; }

for tarball in cdk-graceful-node-termination@*.jsii.tgz graceful-node-termination-[0-9]*.tgz; do
  echo "[release:check] npm publish --dry-run $tarball"
  npm publish --dry-run --tag next --ignore-scripts "./$tarball"
done

version=7.0.0
venv=../../.cache/twine-$version
if [ ! -x "$venv/bin/twine" ]; then
  echo "[release:check] installing twine $version into .cache/twine-$version"
  python3 -m venv "$venv" || { echo "python3 with the venv module is required (Debian: apt install python3-venv)" >&2; exit 1; }
  "$venv/bin/pip" install --quiet "twine==$version"
fi
"$venv/bin/twine" check --strict ./*.whl
echo "[release:check] checksums, npm publish --dry-run (2 packages) and twine check passed in $(( $(date +%s) - started )) s"
