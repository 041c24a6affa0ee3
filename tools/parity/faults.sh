#!/usr/bin/env bash
# Every simulator fault through `aicr-pytest validate` (all phases), one CTRF report each, for the
# before/after parity check of a refactor:
#   tools/parity/faults.sh OUT_DIR [JOBS]   then   python tools/parity/compare.py OLD_DIR NEW_DIR
# Faults that name inference components run against the inference example, every other fault
# against the training example.  Most of each run's time is the deployment phase's 60 s readiness
# dwell (a sleep), so JOBS runs (default 6) share the machine without slowing each other much.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: tools/parity/faults.sh OUT_DIR [JOBS]}"
jobs="${2:-6}"
mkdir -p "$out"
py=.venv/bin/python
faults=$("$py" -m aicr_pytest.cli simulate --list | awk '/^faults/{f=1; next} f && NF {print $1}')
run_one() {
  local fault="$1" out="$2" py="$3" recipe snapshot profile
  case "$fault" in
    inference-*|dynamo-*) recipe=recipes/examples/h100-eks-inference.yaml; profile=h100-eks-inference ;;
    *) recipe=recipes/examples/h100-eks-training.yaml; profile=h100-eks-training ;;
  esac
  snapshot="${recipe%.yaml}-snapshot.yaml"
  "$py" -m aicr_pytest.cli validate -r "$recipe" -s "$snapshot" --simulate "$profile" --fault "$fault" \
    -o "$out/fault-$fault.json" >"$out/fault-$fault.log" 2>&1
  echo $? >"$out/fault-$fault.rc"
  echo "fault-$fault: exit $(cat "$out/fault-$fault.rc")"
}
export -f run_one
printf '%s\n' $faults | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} "$out" "$py"
