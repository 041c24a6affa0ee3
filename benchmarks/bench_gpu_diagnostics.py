"""gpu-diagnostics over 64 SIMULATED GPU nodes: do the diagnostics really run in parallel?

The ``h100-eks-training`` profile with its GPU pool grown to ``--nodes`` H100 nodes is served from
this process on real time; every node's ``dcgmi diag`` gets its own simulated duration (seeded,
uniform between ``--min`` and ``--max`` seconds; one node, the slowest, ``--max`` + 5 s) through the
DCGM diag player's per-node knob.  pytest runs the deployment phase with ``gpu-diagnostics`` only in a
subprocess against it.

Printed: the check's status and message, the slowest node's diag time (the pod's start delay plus
its run), the check's wall time (setup to teardown: listing, 64 pods created, waited for, logs read,
cleanup) and the whole process time.  Target: wall time within the slowest node's diag time + 10 s.

    .venv/bin/python benchmarks/bench_gpu_diagnostics.py [--nodes 64] [--min 5] [--max 20]
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path
from typing import Any

from simulated_run import run_check

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
CHECK = "gpu-diagnostics"
SLACK_S = 10.0


def run(kubeconfig: str, workdir: Path) -> tuple[dict[str, Any], float, str]:
    from aicr_pytest.core import yamlio

    recipe: dict[str, Any] = yamlio.load(RECIPE.read_text())
    recipe["validation"] = {"deployment": {"checks": [CHECK]}}
    path = workdir / "recipe.yaml"
    path.write_text(yamlio.dump(recipe))
    return run_check(kubeconfig, workdir, recipe=path, phase="deployment", check=CHECK)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64, help="H100 nodes in the GPU pool")
    parser.add_argument("--min", type=float, default=5.0, help="shortest simulated diag, seconds")
    parser.add_argument("--max", type=float, default=20.0, help="longest simulated diag but one, seconds")
    args = parser.parse_args()

    from aicr_pytest.testing import FakeCluster, RealClock
    from aicr_pytest.testing.players.dcgm_diag import START_AFTER_S
    from aicr_pytest.testing.profiles import h100_eks_training

    profile = h100_eks_training()
    profile.node_pools[1].count = args.nodes
    rng = random.Random(7)
    with (
        tempfile.TemporaryDirectory(prefix="aicr-bench-diag-") as tmp,
        FakeCluster(profile, clock=RealClock()) as fc,
    ):
        gpu = sorted(
            n["metadata"]["name"]
            for n in fc.list("v1", "Node")
            if "nvidia.com/gpu.count" in n["metadata"].get("labels", {})
        )
        durations = {n: round(rng.uniform(args.min, args.max), 1) for n in gpu}
        slowest_node = gpu[len(gpu) // 2]
        durations[slowest_node] = args.max + 5.0
        fc.state["dcgm_diag"] = {"run_for_s": durations}
        t, total, tail = run(str(fc.kubeconfig_path), Path(tmp))
    slowest = START_AFTER_S + durations[slowest_node]
    wall = (t.get("duration") or 0) / 1000.0
    print(f"gpu-diagnostics on SIMULATED h100-eks-training, {len(gpu)} GPU nodes, level 1")
    said = t.get("message") or ((t.get("stdout") or [""])[-1])
    print(f"check {CHECK}: {t.get('status')}: {said}")
    print(
        f"simulated diag per node {args.min:g}-{args.max:g} s; slowest {slowest_node}: "
        f"{slowest:.1f} s ({START_AFTER_S:g} s start + {durations[slowest_node]:g} s run); "
        f"sum over nodes {sum(durations.values()) + START_AFTER_S * len(gpu):.0f} s"
    )
    print(f"check wall time {wall:.1f} s (setup to teardown); process {total:.1f} s")
    met = t.get("status") == "passed" and wall <= slowest + SLACK_S
    print(
        f"target: wall <= slowest + {SLACK_S:g} s = {slowest + SLACK_S:.1f} s: {'met' if met else 'MISSED'}"
    )
    if not met:
        print(tail)
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
