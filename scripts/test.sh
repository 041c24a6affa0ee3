#!/usr/bin/env bash
# The test command: installs everything it needs, then runs ruff, mypy and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
echo "== ruff"; .venv/bin/ruff check .
echo "== mypy"; .venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest -p no:cacheprovider -q -n 2 "$@"
