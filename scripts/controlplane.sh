#!/usr/bin/env bash
# Build (once per machine, cached) the binaries of the integration-test control plane:
#   kube-apiserver, kube-controller-manager, kube-scheduler  from k8s.io/kubernetes (tools/controlplane/go.mod)
#   kwok                                                      from sigs.k8s.io/kwok (go install @tag)
#   etcd                                                      from Debian's etcd-server package
#   kwok-stages.yaml  kwok's default Stages of the pinned tag (node-initialize, node-heartbeat-with-lease,
#                     pod-ready, pod-complete, pod-delete), copied from its module; standalone kwok has none
# Everything comes from the Go module proxy and Debian; nothing else is downloaded.
#
# Usage: scripts/controlplane.sh build   build what is missing into the cache (no-op when all binaries exist)
#        scripts/controlplane.sh check   exit 0 when every binary is in the cache, 1 otherwise
#        scripts/controlplane.sh dir     print the cache's bin directory
#
# Cache: ${AICR_CONTROLPLANE_CACHE:-$HOME/.cache/aicr-pytest/controlplane/<k8s version>}/bin
# Exit codes: 0 ok; 1 build failed; 3 no Go toolchain (a contributor's machine: callers skip with a reason).
# When /usr/bin/time exists, each step's wall time and peak RSS go to <cache>/logs/<step>.time.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
moddir="$repo/tools/controlplane"

KWOK_VERSION="v0.8.0"   # go directive 1.26.0; requires k8s.io/client-go v0.36.1
K8S_VERSION="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$moddir/go.mod")"
[[ "$K8S_VERSION" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || { echo "controlplane: no k8s.io/kubernetes version in $moddir/go.mod" >&2; exit 1; }
K8S_MINOR="${BASH_REMATCH[1]}"

cache="${AICR_CONTROLPLANE_CACHE:-$HOME/.cache/aicr-pytest/controlplane/$K8S_VERSION}"
bin="$cache/bin"
logs="$cache/logs"
kube_binaries=(kube-apiserver kube-controller-manager kube-scheduler)
all_binaries=("${kube_binaries[@]}" kwok etcd)

log() { echo "controlplane: $*" >&2; }

have_all() {
    local b
    for b in "${all_binaries[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
    [[ -s "$bin/kwok-stages.yaml" ]]
}

find_go() {
    if command -v go >/dev/null 2>&1; then command -v go
    elif [[ -x /usr/local/go/bin/go ]]; then echo /usr/local/go/bin/go
    else return 1
    fi
}

# timed NAME CMD...: run CMD, saying when it starts, every $AICR_HEARTBEAT_S seconds (60) while it
# runs (kube-apiserver alone compiles for about ten minutes) and how long it took; with GNU time,
# its wall time and peak RSS also go to $logs/NAME.time.
timed() {
    local name="$1"; shift
    local start=$SECONDS status=0 beat
    log "$name: started"
    ( while sleep "${AICR_HEARTBEAT_S:-60}"; do log "$name: still running ($((SECONDS - start))s)"; done ) &
    beat=$!
    if [[ -x /usr/bin/time ]]; then
        /usr/bin/time -v -o "$logs/$name.time" "$@" || status=$?
    else
        "$@" || status=$?
    fi
    kill "$beat" 2>/dev/null || true
    wait "$beat" 2>/dev/null || true
    if [[ $status -ne 0 ]]; then
        log "$name: failed after $((SECONDS - start))s (exit $status)"
        return "$status"
    fi
    log "$name: $((SECONDS - start))s"
}

ensure_etcd() {
    [[ -x "$bin/etcd" ]] && return 0
    if ! command -v etcd >/dev/null 2>&1; then
        if command -v apt-get >/dev/null 2>&1; then
            local sudo=""; [[ "$(id -u)" -eq 0 ]] || sudo="sudo"
            log "installing Debian's etcd-server"
            # The package's service is never started here (no systemd in containers); we run etcd ourselves.
            $sudo apt-get install -y -qq etcd-server >/dev/null 2>&1 \
                || { $sudo apt-get update -qq && $sudo apt-get install -y -qq etcd-server >/dev/null; }
        fi
    fi
    command -v etcd >/dev/null 2>&1 || { log "etcd not found and Debian's etcd-server could not be installed"; return 1; }
    ln -sf "$(command -v etcd)" "$bin/etcd"
    log "etcd: $("$bin/etcd" --version | head -1)"
}

build() {
    mkdir -p "$bin" "$logs"
    if have_all; then
        log "all binaries cached in $bin"
        return 0
    fi
    local go
    go="$(find_go)" || { log "no Go toolchain found: cannot build the control plane"; exit 3; }
    log "$("$go" version); k8s $K8S_VERSION, kwok $KWOK_VERSION -> $bin"
    log "a cold build takes about 17 minutes on 2 cores (steps: etcd, modules, kube-apiserver," \
        "kube-controller-manager, kube-scheduler, kwok); later runs reuse the cache"
    ensure_etcd

    local missing=() b
    for b in "${kube_binaries[@]}"; do [[ -x "$bin/$b" ]] || missing+=("$b"); done
    if [[ ${#missing[@]} -gt 0 ]]; then
        local pkgs=() ldflags
        for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
        ldflags="-s -w"
        ldflags+=" -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
        ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
        ldflags+=" -X k8s.io/component-base/version.gitMinor=$K8S_MINOR"
        ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
        ldflags+=" -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
        # Fetch the modules first (timed separately), then compile one binary at a time so each can be timed.
        (cd "$moddir" && timed modules env GOFLAGS="-mod=readonly -buildvcs=false" "$go" list -deps "${pkgs[@]}" >/dev/null)
        for b in "${missing[@]}"; do
            (cd "$moddir" && timed "$b" env CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" \
                "$go" build -ldflags "$ldflags" -o "$bin/$b.tmp" "k8s.io/kubernetes/cmd/$b")
            mv -f "$bin/$b.tmp" "$bin/$b"
        done
    fi
    if [[ ! -x "$bin/kwok" ]]; then
        local gobin="$cache/kwok-gobin"
        mkdir -p "$gobin"
        (cd "$cache" && timed kwok env CGO_ENABLED=0 GOBIN="$gobin" GOFLAGS= "$go" install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
        mv -f "$gobin/kwok" "$bin/kwok"
        rmdir "$gobin" 2>/dev/null || true
    fi
    if [[ ! -s "$bin/kwok-stages.yaml" ]]; then
        local kwok_dir stage
        kwok_dir="$(cd "$cache" && GOFLAGS= "$go" mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" \
            | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
        {
            echo "# kwok $KWOK_VERSION default stages (Apache-2.0, sigs.k8s.io/kwok kustomize/stage), via scripts/controlplane.sh"
            for stage in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
                         pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
                echo "---"
                cat "$kwok_dir/kustomize/stage/$stage.yaml"
            done
        } > "$bin/kwok-stages.yaml.tmp"
        mv -f "$bin/kwok-stages.yaml.tmp" "$bin/kwok-stages.yaml"
    fi
    echo "$K8S_VERSION" > "$bin/VERSION"
    have_all || { log "build finished but something is still missing from $bin"; return 1; }
    log "done: $(ls "$bin" | tr '\n' ' ')"
}

case "${1:-build}" in
    build)
        mkdir -p "$cache"
        if command -v flock >/dev/null 2>&1; then
            exec 9>"$cache/.lock"
            flock 9
        fi
        build
        ;;
    check) have_all ;;
    dir) echo "$bin" ;;
    *) echo "usage: $0 [build|check|dir]" >&2; exit 2 ;;
esac
