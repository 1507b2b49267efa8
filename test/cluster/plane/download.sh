#!/usr/bin/env bash
# Downloads the official release binaries of the plane (Kubernetes from dl.k8s.io, etcd and
# kwok from their GitHub releases) into the cache build.sh fills, each checked against the
# digest its project publishes before it is made executable or run. A binary already cached
# at its version is left alone. Prints the binaries still missing on stdout, one a line
# (build.sh builds those from the Go module proxy); exits non-zero only when
# PLANE_DOWNLOAD=always and one is missing.
#
# Digests: Kubernetes publishes <binary>.sha256 beside each binary (the hex digest alone), etcd
# one SHA256SUMS file a release. kwok publishes no checksum file (its hack/releases.sh uploads
# the bare binaries), so its digest is the one GitHub records for the release asset (the REST
# API's assets[].digest), or PLANE_KWOK_SHA256. No digest, no download; a digest that does
# not match deletes the file and leaves the binary to the build.
#
# Environment:
#   PLANE_DOWNLOAD           auto (default): download what can be, build the rest;
#                            never: build everything; always: fail unless every binary downloads
#   PLANE_K8S_RELEASE_URL    default https://dl.k8s.io/release
#   PLANE_ETCD_RELEASE_URL   default https://github.com/etcd-io/etcd/releases/download
#   PLANE_KWOK_RELEASE_URL   default https://github.com/kubernetes-sigs/kwok/releases/download
#   PLANE_KWOK_API_URL       default https://api.github.com/repos/kubernetes-sigs/kwok
#   PLANE_KWOK_SHA256        kwok's digest for this machine's architecture, instead of the API's
#   PLANE_DOWNLOAD_MAX_TIME  seconds one binary may take (default 300)
#   PLANE_CACHE              the cache folder (default .cache/plane)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log_tag=plane-download
# shellcheck source=common.sh
source "$here/common.sh"

mode="${PLANE_DOWNLOAD:-auto}"
case "$mode" in auto | never | always) ;; *) die "PLANE_DOWNLOAD is auto, never or always, not '$mode'" ;; esac
max_time="${PLANE_DOWNLOAD_MAX_TIME:-300}"

missing() { # the binaries not cached at their version
  local name
  for name in "${plane_binaries[@]}"; do is_current "$name" || echo "$name"; done
}

finish() {
  local left
  left="$(missing)"
  [ -z "$left" ] || echo "$left"
  if [ "$mode" = always ] && [ -n "$left" ]; then die "PLANE_DOWNLOAD=always, but not downloaded and verified: $(echo "$left" | tr '\n' ' ')"; fi
  exit 0
}

needed="$(missing)"
[ -n "$needed" ] || finish
[ "$mode" != never ] || {
  log "PLANE_DOWNLOAD=never: not downloading"
  finish
}
case "$(uname -s)/$(uname -m)" in
  Linux/x86_64 | Linux/amd64) arch=amd64 ;;
  Linux/aarch64 | Linux/arm64) arch=arm64 ;;
  *)
    log "no release binaries for $(uname -s)/$(uname -m): building instead"
    finish
    ;;
esac

k8s_url="${PLANE_K8S_RELEASE_URL:-https://dl.k8s.io/release}/$KUBERNETES_VERSION/bin/linux/$arch"
etcd_tarball="etcd-$ETCD_VERSION-linux-$arch.tar.gz"
etcd_url="${PLANE_ETCD_RELEASE_URL:-https://github.com/etcd-io/etcd/releases/download}/$ETCD_VERSION"
kwok_url="${PLANE_KWOK_RELEASE_URL:-https://github.com/kubernetes-sigs/kwok/releases/download}/$KWOK_VERSION/kwok-linux-$arch"
kwok_api_url="${PLANE_KWOK_API_URL:-https://api.github.com/repos/kubernetes-sigs/kwok}/releases/tags/$KWOK_VERSION"

stage="$(mktemp -d "$bin_dir/../download.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

# curl that gives up fast: 10 s to connect, a stalled transfer after 30 s, a whole file after
# max-time. Its error goes to the log.
fetch() { # url, output file, max seconds
  local err
  err="$(curl --fail --silent --show-error --location --connect-timeout 10 --max-time "$3" \
    --speed-limit 32768 --speed-time 30 -H 'Accept: application/vnd.github+json, */*' -o "$2" "$1" 2>&1)" || {
    log "could not fetch $1: ${err:-curl failed}"
    return 1
  }
}

sha256_of() {
  if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

needs() { grep -qx "$1" <<<"$needed"; }

# Writes $stage/<name>.digest for each binary whose published digest could be read. One job
# per release host, the three at once: the first request of each is the reachability probe
# (nothing more is asked of a host that failed it), so an offline machine loses one connect
# timeout at most.
k8s_digests() {
  local name
  for name in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    needs "$name" || continue
    fetch "$k8s_url/$name.sha256" "$stage/$name.sha256" 20 || return 1
    cut -d' ' -f1 "$stage/$name.sha256" | head -n1 >"$stage/$name.digest"
  done
}

etcd_digest() {
  fetch "$etcd_url/SHA256SUMS" "$stage/SHA256SUMS" 20 || return 1
  awk -v f="$etcd_tarball" '$2 == f || $2 == "*" f { print $1 }' "$stage/SHA256SUMS" >"$stage/etcd.digest"
}

kwok_digest() {
  if [ -n "${PLANE_KWOK_SHA256:-}" ]; then echo "$PLANE_KWOK_SHA256" >"$stage/kwok.digest" && return; fi
  fetch "$kwok_api_url" "$stage/kwok-release.json" 20 || return 1
  node -e '
    const [file, name] = process.argv.slice(1);
    const asset = (JSON.parse(require("node:fs").readFileSync(file, "utf8")).assets ?? []).find((a) => a.name === name);
    const digest = /^sha256:([0-9a-f]{64})$/.exec(asset?.digest ?? "");
    if (digest) console.log(digest[1]);
  ' "$stage/kwok-release.json" "kwok-linux-$arch" >"$stage/kwok.digest"
}

read_digests() {
  local pids=()
  if needs kube-apiserver || needs kube-controller-manager || needs kube-scheduler || needs kubectl; then
    k8s_digests &
    pids+=($!)
  fi
  if needs etcd; then
    etcd_digest &
    pids+=($!)
  fi
  if needs kwok; then
    kwok_digest &
    pids+=($!)
  fi
  local pid
  for pid in "${pids[@]}"; do wait "$pid" || true; done
}

# The digest read for a binary, if it is one (64 hex digits).
digest_of() {
  local d=""
  [ -f "$stage/$1.digest" ] && d="$(tr -d '[:space:]' <"$stage/$1.digest" | tr 'A-F' 'a-f')"
  if [[ "$d" =~ ^[0-9a-f]{64}$ ]]; then echo "$d"; else return 1; fi
}

# Downloads one file and checks its digest; a mismatch deletes it.
fetch_verified() { # url, output file, expected digest, name
  local t0=$SECONDS actual
  fetch "$1" "$2" "$max_time" || return 1
  actual="$(sha256_of "$2")"
  if [ "$actual" != "$3" ]; then
    rm -f "$2"
    log "REFUSED $4: checksum mismatch for $1 (published $3, downloaded $actual); deleted, it will be built instead"
    return 1
  fi
  log "$4: $(($(wc -c <"$2") / 1048576)) MB in $((SECONDS - t0)) s, sha256 verified"
}

# Moves a verified binary into the cache, once it reports the version versions.env pins.
install_binary() { # name, verified file
  chmod +x "$2"
  if ! is_current "$1" "$2"; then
    rm -f "$2"
    log "$1 from the release does not report the pinned version; building it instead"
    return 1
  fi
  mv -f "$2" "$bin_dir/$1"
}

download_one() {
  local name="$1" digest
  digest="$(digest_of "$name")" || return 1
  case "$name" in
    etcd)
      fetch_verified "$etcd_url/$etcd_tarball" "$stage/$etcd_tarball" "$digest" etcd || return 1
      tar -xzf "$stage/$etcd_tarball" -C "$stage" "${etcd_tarball%.tar.gz}/etcd" || {
        log "the verified etcd tarball holds no ${etcd_tarball%.tar.gz}/etcd; building it instead"
        return 1
      }
      install_binary etcd "$stage/${etcd_tarball%.tar.gz}/etcd"
      ;;
    kwok) fetch_verified "$kwok_url" "$stage/kwok" "$digest" kwok && install_binary kwok "$stage/kwok" ;;
    *) fetch_verified "$k8s_url/$name" "$stage/$name" "$digest" "$name" && install_binary "$name" "$stage/$name" ;;
  esac
}

log "downloading $(echo "$needed" | tr '\n' ' ')for linux/$arch"
read_digests
for name in $needed; do
  if [ ! -f "$stage/$name.digest" ]; then continue; fi
  if ! digest_of "$name" >/dev/null; then
    log "no published sha256 for $name: building it instead"
    continue
  fi
  download_one "$name" || true
done
finish
