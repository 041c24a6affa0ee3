#!/usr/bin/env bash
# Debian's headless-capable `chromium` for the HTML report's browser test (tests/browser).
#   scripts/chromium.sh install   install it with apt-get when missing (a no-op once installed)
#   scripts/chromium.sh check     exit 0 when a usable chromium is on PATH (or in AICR_CHROMIUM)
# The browser test skips with a reason when no chromium is found; AICR_REQUIRE_CHROMIUM=1 (CI)
# turns that skip into a failure.
set -euo pipefail

find_chromium() {
  if [ -n "${AICR_CHROMIUM:-}" ]; then
    [ -x "$AICR_CHROMIUM" ] && { echo "$AICR_CHROMIUM"; return 0; }
    return 1
  fi
  for name in chromium chromium-browser chromium-headless-shell; do
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
  done
  return 1
}

cmd="${1:-install}"
case "$cmd" in
  check)
    path="$(find_chromium)" || { echo "chromium: not installed" >&2; exit 1; }
    "$path" --version 2>/dev/null || echo "$path"
    ;;
  install)
    if path="$(find_chromium)"; then
      echo "chromium: $("$path" --version 2>/dev/null || echo "$path") (already installed)"
      exit 0
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
      echo "chromium: apt-get not available; install chromium yourself (or set AICR_CHROMIUM)" >&2
      exit 1
    fi
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    # other apt users on the machine: wait for the dpkg lock instead of failing
    apt_opts=(-o DPkg::Lock::Timeout=600 -y -qq --no-install-recommends)
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
    $SUDO apt-get "${apt_opts[@]}" install chromium fonts-dejavu-core >/dev/null
    path="$(find_chromium)" || { echo "chromium: installed but not found on PATH" >&2; exit 1; }
    echo "chromium: $("$path" --version 2>/dev/null) (installed)"
    ;;
  *)
    echo "usage: $0 install|check" >&2; exit 2 ;;
esac
