#!/usr/bin/env bash
# The `ctrf` reference implementation (npm, ctrf-io/ctrf-js) for the CTRF validation test
# (tests/plugin/test_ctrf_reference_impl.py), installed into a cache directory with npm.
#   scripts/ctrf.sh install   install it when missing (a no-op once installed)
#   scripts/ctrf.sh check     exit 0 when it is installed and node can load it
# The directory is $AICR_CTRF_JS_DIR, default ~/.cache/aicr-pytest/ctrf-js. The test skips with a
# reason when it is missing; AICR_REQUIRE_CTRF_JS=1 (CI) turns that skip into a failure.
set -euo pipefail

VERSION="0.3.0"
DIR="${AICR_CTRF_JS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/aicr-pytest/ctrf-js}"

loads() {
  command -v node >/dev/null 2>&1 || return 1
  node -e "const c = require(process.argv[1]); if (typeof c.validate !== 'function') process.exit(1)" \
    "$DIR/node_modules/ctrf" >/dev/null 2>&1
}

cmd="${1:-install}"
case "$cmd" in
  check)
    loads || { echo "ctrf (npm): not installed in $DIR" >&2; exit 1; }
    echo "ctrf (npm) $VERSION: $DIR"
    ;;
  install)
    if loads; then echo "ctrf (npm) $VERSION: $DIR (already installed)"; exit 0; fi
    command -v npm >/dev/null 2>&1 || { echo "ctrf (npm): npm not available; install Node.js 20.19+" >&2; exit 1; }
    mkdir -p "$DIR"
    npm install --prefix "$DIR" --no-audit --no-fund --no-save --loglevel=error "ctrf@$VERSION" >/dev/null
    loads || { echo "ctrf (npm): installed in $DIR but node cannot load it" >&2; exit 1; }
    echo "ctrf (npm) $VERSION: $DIR (installed)"
    ;;
  *)
    echo "usage: $0 install|check" >&2; exit 2 ;;
esac
