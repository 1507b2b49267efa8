#!/usr/bin/env bash
# Puts a real Kubernetes control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl), etcd and kwok into a git-ignored cache keyed by version: first the
# official release binaries, checksum-verified, where their hosts are reachable (download.sh,
# PLANE_DOWNLOAD=auto|never|always), then whatever is still missing built from the Go module
# proxy. Idempotent: skips every binary that already reports its version. Prints the bin folder
# last.
#
# Why wrappers: `go install k8s.io/kubernetes/cmd/...@v` fails because k8s.io/kubernetes
# requires its staging modules at v0.0.0 with local replaces. The committed wrapper module
# in ./kubernetes replaces each with its published v0.Y.Z twin.
#   https://github.com/kubernetes/kubernetes/issues/79384
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log_tag=plane-build
# shellcheck source=common.sh
source "$here/common.sh"

to_build="$(bash "$here/download.sh")" || die "download.sh failed (see above)"
if [ -z "$to_build" ]; then
  log "plane binaries ready in $bin_dir"
  echo "$bin_dir"
  exit 0
fi
log "building from the Go module proxy: $(echo "$to_build" | tr '\n' ' ')"

command -v go >/dev/null || die "Go is not installed. Install Go >= 1.26 (https://go.dev/doc/install) and re-run, or run where dl.k8s.io and github.com are reachable."
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

build_k8s() {
  local name="$1" pkg="$2"
  if is_current "$name"; then log "$name $KUBERNETES_VERSION cached"; return; fi
  log "building $name $KUBERNETES_VERSION (first build downloads ~1-2 GB of modules and takes tens of minutes on 2 cores)"
  local t0=$SECONDS
  (cd "$here/kubernetes" && go build "${build_flags[@]}" -ldflags "$(k8s_ldflags)" -o "$bin_dir/$name" "$pkg") \
    || die "go build of $pkg failed (see above). Check that the Go module proxy is reachable: go env GOPROXY"
  log "built $name in $((SECONDS - t0)) s"
}

if grep -q '^kube' <<<"$to_build"; then
  grep -q "k8s.io/kubernetes $KUBERNETES_VERSION" "$here/kubernetes/go.mod" \
    || die "test/cluster/plane/kubernetes/go.mod does not pin $KUBERNETES_VERSION; run test/cluster/plane/regen-wrappers.sh"
  log "downloading modules (cached after the first run)"
  (cd "$here/kubernetes" && go mod download) || die "go mod download failed for the Kubernetes wrapper"
  for name in kube-apiserver kube-controller-manager kube-scheduler kubectl; do build_k8s "$name" "k8s.io/kubernetes/cmd/$name"; done
fi

if is_current etcd; then log "etcd $ETCD_VERSION cached"; else
  log "building etcd $ETCD_VERSION"
  (cd "$here/etcd" && go build "${build_flags[@]}" -ldflags "-s -w" -o "$bin_dir/etcd" go.etcd.io/etcd/server/v3) \
    || die "go build of etcd failed"
fi

if is_current kwok; then log "kwok $KWOK_VERSION cached"; else
  log "building kwok $KWOK_VERSION"
  (cd "$here/kwok" && go build "${build_flags[@]}" -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" -o "$bin_dir/kwok" sigs.k8s.io/kwok/cmd/kwok) \
    || die "go build of kwok failed"
fi

log "plane binaries ready in $bin_dir"
echo "$bin_dir"
