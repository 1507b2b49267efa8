#!/usr/bin/env bash
# Builds a real Kubernetes control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl), etcd and kwok from the Go module proxy, into a git-ignored
# cache keyed by version. Idempotent: skips every binary that already reports its version.
#
# Why wrappers: `go install k8s.io/kubernetes/cmd/...@v` fails because k8s.io/kubernetes
# requires its staging modules at v0.0.0 with local replaces. The committed wrapper module
# in ./kubernetes replaces each with its published v0.Y.Z twin.
#   https://github.com/kubernetes/kubernetes/issues/79384
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

bin_dir="$(node -e 'console.log(require("node:path").resolve(process.argv[1]))' "${PLANE_CACHE:-$repo/.cache/plane}")/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION/bin"
mkdir -p "$bin_dir"

log() { printf '[plane-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null || die "Go is not installed. Install Go >= 1.26 (https://go.dev/doc/install) and re-run."
go_minor="$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')"
[ "$go_minor" -ge 26 ] || die "Go $(go env GOVERSION) is too old: kwok $KWOK_VERSION needs Go >= 1.26."

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
build_flags=(-trimpath -tags=selinux,notest,grpcnotrace)

# Version stamping as upstream's hack/lib/version.sh does, so `--version` is meaningful.
k8s_ldflags() {
  local v="$KUBERNETES_VERSION" major minor date
  major="$(echo "${v#v}" | cut -d. -f1)"; minor="$(echo "${v#v}" | cut -d. -f2)"
  date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  local out=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    out+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    out+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date -X $pkg.gitCommit=module-proxy"
  done
  echo "-s -w$out"
}

has_version() { # binary, expected substring, version args...
  local b="$bin_dir/$1" want="$2"; shift 2
  [ -x "$b" ] || return 1
  # Captured first: with pipefail, grep -q closing the pipe early would fail the check.
  local out; out="$("$b" "$@" 2>&1)" || return 1
  [[ "$out" == *"$want"* ]]
}

build_k8s() {
  local name="$1" pkg="$2" vflag="$3"
  if has_version "$name" "$KUBERNETES_VERSION" $vflag; then log "$name $KUBERNETES_VERSION cached"; return; fi
  log "building $name $KUBERNETES_VERSION (first build downloads ~1-2 GB of modules and takes tens of minutes on 2 cores)"
  local t0=$SECONDS
  (cd "$here/kubernetes" && go build "${build_flags[@]}" -ldflags "$(k8s_ldflags)" -o "$bin_dir/$name" "$pkg") \
    || die "go build of $pkg failed (see above). Check that the Go module proxy is reachable: go env GOPROXY"
  log "built $name in $((SECONDS - t0)) s"
}

grep -q "k8s.io/kubernetes $KUBERNETES_VERSION" "$here/kubernetes/go.mod" \
  || die "test/cluster/plane/kubernetes/go.mod does not pin $KUBERNETES_VERSION; run test/cluster/plane/regen-wrappers.sh"

log "downloading modules (cached after the first run)"
(cd "$here/kubernetes" && go mod download) || die "go mod download failed for the Kubernetes wrapper"
build_k8s kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver --version
build_k8s kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager --version
build_k8s kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler --version
build_k8s kubectl k8s.io/kubernetes/cmd/kubectl "version --client"

if has_version etcd "${ETCD_VERSION#v}" --version; then log "etcd $ETCD_VERSION cached"; else
  log "building etcd $ETCD_VERSION"
  (cd "$here/etcd" && go build "${build_flags[@]}" -ldflags "-s -w" -o "$bin_dir/etcd" go.etcd.io/etcd/server/v3) \
    || die "go build of etcd failed"
fi

if has_version kwok "${KWOK_VERSION#v}" --version; then log "kwok $KWOK_VERSION cached"; else
  log "building kwok $KWOK_VERSION"
  (cd "$here/kwok" && go build "${build_flags[@]}" -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" -o "$bin_dir/kwok" sigs.k8s.io/kwok/cmd/kwok) \
    || die "go build of kwok failed"
fi

log "plane binaries ready in $bin_dir"
echo "$bin_dir"
