#!/usr/bin/env bash
# Build (once per machine, cached) the two OCI registries the evidence tests start on 127.0.0.1:
#   docker-registry     Debian's docker-registry package (CNCF distribution 2.8.2): no Referrers API,
#                       so pushes exercise the OCI 1.1 tag-schema fallback. Extracted from the .deb
#                       (`apt-get download` + `dpkg-deb -x`); the package is never installed and its
#                       service never started.
#   referrers-registry  tools/registry/main.go on go-containerregistry's pkg/registry with the OCI 1.1
#                       Referrers API enabled, built from the Go module proxy (tools/registry/go.mod, go.sum).
#
# Usage: scripts/registry.sh build   build what is missing into the cache (no-op when both exist)
#        scripts/registry.sh check   exit 0 when both binaries are cached, 1 otherwise
#        scripts/registry.sh dir     print the cache's bin directory
#
# Cache: ${AICR_REGISTRY_CACHE:-$HOME/.cache/aicr-pytest/registry/<ggcr version>-<source hash>}/bin
# Exit codes: 0 ok; 1 build failed; 3 a toolchain is missing (no Go, or no apt-get/dpkg-deb): callers
# skip with a reason (AICR_REQUIRE_REGISTRY=1 turns the skip into a failure).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
moddir="$repo/tools/registry"

GGCR_VERSION="$(awk '$1 == "require" && $2 == "github.com/google/go-containerregistry" { print $3 }' "$moddir/go.mod")"
[[ -n "$GGCR_VERSION" ]] || { echo "registry: no go-containerregistry version in $moddir/go.mod" >&2; exit 1; }
DEB_PACKAGE="docker-registry"
DEB_VERSION_PREFIX="2.8."
src_hash="$(cat "$moddir/go.mod" "$moddir/go.sum" "$moddir/main.go" | sha256sum | cut -c1-12)"
cache="${AICR_REGISTRY_CACHE:-$HOME/.cache/aicr-pytest/registry/$GGCR_VERSION-$src_hash}"
bin="$cache/bin"

log() { echo "registry: $*" >&2; }

have_all() { [[ -x "$bin/docker-registry" && -x "$bin/referrers-registry" ]]; }

find_go() {
    if command -v go >/dev/null 2>&1; then command -v go
    elif [[ -x /usr/local/go/bin/go ]]; then echo /usr/local/go/bin/go
    else return 1
    fi
}

build_docker_registry() {
    [[ -x "$bin/docker-registry" ]] && return 0
    command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 || {
        log "apt-get/dpkg-deb not found: cannot fetch Debian's $DEB_PACKAGE"; return 3; }
    local work start=$SECONDS
    work="$(mktemp -d "$cache/deb.XXXXXX")"
    if ! (cd "$work" && apt-get download -q "$DEB_PACKAGE" >/dev/null 2>&1); then
        log "apt-get download $DEB_PACKAGE failed; refreshing the package lists once"
        local sudo=""; [[ "$(id -u)" -eq 0 ]] || sudo="sudo"
        $sudo apt-get update -qq >/dev/null 2>&1 || true
        (cd "$work" && apt-get download -q "$DEB_PACKAGE" >/dev/null 2>&1) || { rm -rf "$work"; log "apt-get download $DEB_PACKAGE failed"; return 1; }
    fi
    local deb version
    deb="$(ls "$work"/*.deb)"
    version="$(dpkg-deb -f "$deb" Version)"
    [[ "$version" == "$DEB_VERSION_PREFIX"* ]] || { rm -rf "$work"; log "$DEB_PACKAGE $version is not distribution $DEB_VERSION_PREFIX*"; return 1; }
    dpkg-deb -x "$deb" "$work/root"
    mv -f "$work/root/usr/bin/docker-registry" "$bin/docker-registry"
    echo "$version" > "$bin/docker-registry.VERSION"
    rm -rf "$work"
    log "docker-registry $version: $((SECONDS - start))s"
}

build_referrers_registry() {
    [[ -x "$bin/referrers-registry" ]] && return 0
    local go start=$SECONDS
    go="$(find_go)" || { log "no Go toolchain found: cannot build referrers-registry"; return 3; }
    (cd "$moddir" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" \
        "$go" build -trimpath -ldflags "-s -w" -o "$bin/referrers-registry.tmp" .)
    mv -f "$bin/referrers-registry.tmp" "$bin/referrers-registry"
    echo "$GGCR_VERSION" > "$bin/referrers-registry.VERSION"
    log "referrers-registry (go-containerregistry $GGCR_VERSION, $("$go" version | cut -d' ' -f3)): $((SECONDS - start))s"
}

build() {
    mkdir -p "$bin"
    if have_all; then
        log "both registries cached in $bin"
        return 0
    fi
    local rc=0 status=0
    build_docker_registry || rc=$?
    [[ $rc -eq 0 ]] || status=$rc
    rc=0
    build_referrers_registry || rc=$?
    [[ $rc -eq 0 ]] || { [[ $status -eq 1 ]] || status=$rc; }
    return $status
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
