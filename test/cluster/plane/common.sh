# Sourced by build.sh and download.sh: the versions, the cache folder and the version check.
# The caller sets log_tag (plane-build, plane-download) before sourcing.
# shellcheck shell=bash
# shellcheck source=versions.env
source "$here/versions.env"
repo="$(cd "$here/../../.." && pwd)"

bin_dir="$(node -e 'console.log(require("node:path").resolve(process.argv[1]))' "${PLANE_CACHE:-$repo/.cache/plane}")/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION/bin"
mkdir -p "$bin_dir"

# Every binary of the plane, in build order.
plane_binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)

log() { printf '[%s %s] %s\n' "$log_tag" "$(date +%H:%M:%S)" "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

has_version() { # binary path, expected substring, version args...
  local b="$1" want="$2"
  shift 2
  [ -x "$b" ] || return 1
  # Captured first: with pipefail, grep -q closing the pipe early would fail the check.
  local out
  out="$("$b" "$@" 2>&1)" || return 1
  [[ "$out" == *"$want"* ]]
}

# Whether the binary at a path (default: the cache) reports the version versions.env pins.
is_current() { # name [path]
  local name="$1" path="${2:-$bin_dir/$1}"
  case "$name" in
    kubectl) has_version "$path" "$KUBERNETES_VERSION" version --client ;;
    kube-*) has_version "$path" "$KUBERNETES_VERSION" --version ;;
    etcd) has_version "$path" "${ETCD_VERSION#v}" --version ;;
    kwok) has_version "$path" "${KWOK_VERSION#v}" --version ;;
    *) return 1 ;;
  esac
}
