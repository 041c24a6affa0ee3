"""Bad-node isolation: a 16-node SIMULATED cluster with one slow node; how fast is it named?

The ``h100-eks-training`` profile with its GPU pool grown to ``--nodes`` H100 nodes and the
``nccl-slow-node`` fault (every NCCL run the last GPU node in name order takes part in gets a tenth
of the healthy bus bandwidth) is served from this process on real time; pytest runs the performance
phase (``nccl-all-reduce-bw``) with ``--isolate-bad-nodes`` in a subprocess against it.

Printed: the check's status and message, the suspects, the rounds (and the budget), the reruns,
the check's wall time and the whole process time.  Target: the slow node is named within 5 rounds.

    .venv/bin/python benchmarks/bench_nccl_isolation.py [--nodes 16]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from simulated_run import run_check

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
CHECK = "nccl-all-reduce-bw"
TARGET_ROUNDS = 5


def run(kubeconfig: str, workdir: Path) -> tuple[dict[str, Any], float, str]:
    return run_check(
        kubeconfig,
        workdir,
        recipe=RECIPE,
        phase="performance",
        check=CHECK,
        extra=["--aicr-isolate-bad-nodes"],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=16, help="H100 nodes in the GPU pool")
    args = parser.parse_args()

    from aicr_pytest.nccl.isolation import round_budget
    from aicr_pytest.testing import FakeCluster, RealClock
    from aicr_pytest.testing.players.nccl_launcher import last_gpu_node
    from aicr_pytest.testing.profiles import h100_eks_training

    profile = h100_eks_training()
    profile.node_pools[1].count = args.nodes
    with (
        tempfile.TemporaryDirectory(prefix="aicr-bench-iso-") as tmp,
        FakeCluster(profile, ["nccl-slow-node"], clock=RealClock()) as fc,
    ):
        slow = last_gpu_node(fc.list("v1", "Node"))
        t, total, tail = run(str(fc.kubeconfig_path), Path(tmp))
        launches = len(fc.state.get("nccl_launches") or [])
    iso = (t.get("extra") or {}).get("aicr.ncclIsolation") or {}
    rounds = len(iso.get("rounds") or [])
    print(f"bad-node isolation on SIMULATED h100-eks-training, {args.nodes} GPU nodes, slow node {slow}")
    print(f"check {CHECK}: {t.get('status')}: {t.get('message')}")
    print(
        f"suspects {iso.get('suspects')}; rounds {rounds} (budget {iso.get('budget')} = "
        f"ceil(log2 {args.nodes})+1 = {round_budget(args.nodes)}); reruns {iso.get('reruns')} "
        f"(NCCL launches served: {launches}, the first the failed run)"
    )
    wall = (t.get("duration") or 0) / 1000.0
    print(
        f"check wall time {wall:.1f} s (setup to teardown: the failed run, the reruns, cleanup); "
        f"process {total:.1f} s"
    )
    named = iso.get("suspects") == [slow] and 0 < rounds <= TARGET_ROUNDS
    print(f"target: the slow node named within {TARGET_ROUNDS} rounds: {'met' if named else 'MISSED'}")
    if not named:
        print(tail)
    return 0 if named else 1


if __name__ == "__main__":
    raise SystemExit(main())
