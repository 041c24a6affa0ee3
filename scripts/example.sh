#!/usr/bin/env bash
# The main job on the embedded example: validate the H100/EKS training recipe against a
# SIMULATED cluster (no GPUs needed). The CTRF report is written to out/ctrf.json.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
mkdir -p out
exec .venv/bin/aicr-pytest validate \
  --recipe recipes/examples/h100-eks-training.yaml \
  --snapshot recipes/examples/h100-eks-training-snapshot.yaml \
  --simulate h100-eks-training \
  --output out/ctrf.json "$@"
