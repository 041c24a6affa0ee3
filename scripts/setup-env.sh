#!/usr/bin/env bash
# Create/refresh .venv with aicr-pytest (editable) and its dev tools. Installs Debian's python3
# and python3-venv first when the machine lacks them. Idempotent: skips pip when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then need_apt+=(python3-venv); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}" python3-full >/dev/null || \
      $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup-env: python3 (>= 3.11) with venv support is required" >&2; exit 2
  fi
fi
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || {
  echo "setup-env: python3 >= 3.11 is required (found $(python3 --version))" >&2; exit 2; }

[ -x .venv/bin/python ] || python3 -m venv .venv
stamp=".venv/.aicr-installed-$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  rm -f .venv/.aicr-installed-*
  touch "$stamp"
fi
