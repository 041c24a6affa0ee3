#!/usr/bin/env bash
# Run the README's examples and keep each CTRF report, for the before/after parity check of a
# refactor:  tools/parity/examples.sh OUT_DIR   then   python tools/parity/compare.py OLD_DIR NEW_DIR
# Each case is one line: <name> <entry point args...>.  Cases with the deployment phase wait the
# real 60 s readiness dwell, so the whole set takes a few minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: tools/parity/examples.sh OUT_DIR}"
mkdir -p "$out"
py=.venv/bin/python
T=recipes/examples/h100-eks-training.yaml
TS=recipes/examples/h100-eks-training-snapshot.yaml
I=recipes/examples/h100-eks-inference.yaml
IS=recipes/examples/h100-eks-inference-snapshot.yaml

run() {  # run NAME ARGS... : aicr-pytest validate, CTRF to OUT/NAME.json, exit code to OUT/NAME.rc
  local name="$1"; shift
  "$py" -m aicr_pytest.cli validate "$@" -o "$out/$name.json" >"$out/$name.log" 2>&1
  echo $? >"$out/$name.rc"
  echo "$name: exit $(cat "$out/$name.rc")"
}

run training-all            -r $T -s $TS --simulate h100-eks-training
run training-deployment     -r $T -s $TS --simulate h100-eks-training --phase deployment
run training-conformance    -r $T -s $TS --simulate h100-eks-training --phase conformance
run training-performance    -r $T -s $TS --simulate h100-eks-training --phase performance
run training-no-cluster     -r $T -s $TS --no-cluster
run training-fault-crashloop -r $T -s $TS --simulate h100-eks-training --phase deployment --fault device-plugin-crashloop
run training-fault-lowbw    -r $T -s $TS --simulate h100-eks-training --phase performance --fault nccl-low-bandwidth
run training-fail-fast      -r $T -s $TS --simulate h100-eks-training --fail-fast --fault device-plugin-crashloop
run inference-all           -r $I -s $IS --simulate h100-eks-inference
run inference-performance   -r $I -s $IS --simulate h100-eks-inference --phase performance
run inference-no-cluster    -r $I -s $IS --no-cluster
run inference-fault-lowtp   -r $I -s $IS --simulate h100-eks-inference --phase performance --fault inference-low-throughput

# the plain-pytest entry point
"$py" -m pytest -p no:cacheprovider -q --recipe $T --snapshot $TS --aicr-no-cluster \
  --aicr-ctrf-report "$out/pytest-training-no-cluster.json" >"$out/pytest-training-no-cluster.log" 2>&1
echo $? >"$out/pytest-training-no-cluster.rc"
echo "pytest-training-no-cluster: exit $(cat "$out/pytest-training-no-cluster.rc")"
