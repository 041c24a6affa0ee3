"""Continuous validation: the runner's peak memory, and how long ``schedule`` takes to apply.

1. **Runner memory.** A SIMULATED h100-eks-training cluster (the test kit, HTTPS on loopback, real
   clock) grown to 5,000 nodes and 50,000 pods (``bench_fake_scale.py``'s shapes) serves a
   ``validate --phase deployment`` run in a child process, the way the CronJob's pod runs it; the
   child's peak RSS (``ru_maxrss`` of the children) is the runner's, without the fake's store.
   Target: under 256 MiB, the CronJob's default memory limit (``aicr_pytest.schedule.render``).
2. **Apply time** is printed by ``tests/controlplane/test_schedule_on_controlplane.py`` (run it with
   ``-s`` once ``bash scripts/controlplane.sh check`` exits 0): the first ``schedule`` against the
   real control plane and the idempotent second one (every object ``unchanged``).

    .venv/bin/python benchmarks/bench_schedule.py [--nodes N] [--pods N] [--node-health]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_fake_scale's shapes

from bench_fake_scale import make_node, make_pod

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
LIMIT_MIB = 256


def runner_memory(nodes: int, pods: int, extra: list[str]) -> tuple[float, float, int, str]:
    """(peak RSS MiB of the validate child, its wall seconds, its exit code, its checks' statuses)."""
    from aicr_pytest.testing.serve import simulated_cluster

    with tempfile.TemporaryDirectory() as tmp, simulated_cluster("h100-eks-training") as fc:
        fc.bulk_add(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{n:02d}"}}
                for n in range(50)
            ]
        )
        fc.bulk_add([make_node(i) for i in range(nodes)])
        fc.bulk_add([make_pod(i, nodes) for i in range(pods)])
        argv = [
            sys.executable, "-m", "aicr_pytest.cli", "validate", "-r", str(RECIPE), "-s", str(SNAPSHOT),
            "--phase", "deployment", "-k", str(fc.kubeconfig_path), "-o", f"{tmp}/ctrf.json",
            # the pods of check-nvidia-smi go to the profile's GPU pool: no simulated kubelet plays
            # the 5,000 synthetic nodes, so a pod placed there would wait out the check's budget
            "--node-selector", "eks.amazonaws.com/nodegroup=gpu-h100", *extra,
        ]  # fmt: skip
        t0 = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
        wall = time.perf_counter() - t0
        if proc.returncode not in (0, 8):
            print(proc.stderr[-3000:], file=sys.stderr)
        report = json.loads(Path(f"{tmp}/ctrf.json").read_text()) if Path(f"{tmp}/ctrf.json").exists() else {}
        tests = (report.get("results") or {}).get("tests") or []
        statuses = ", ".join(
            f"{t['name']} {t['status']} ({t.get('duration', 0) / 1000:.0f}s)"
            for t in tests
            if t.get("suite") != ["readiness"]
        )
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return peak_kib / 1024.0, wall, proc.returncode, statuses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--node-health", action="store_true", help="add the node-health checks to the run")
    args = parser.parse_args(argv)
    extra = ["--node-health"] if args.node_health else []
    peak, wall, code, statuses = runner_memory(args.nodes, args.pods, extra)
    print(
        f"runner: validate {' '.join(['--phase', 'deployment', *extra])} on {args.nodes} nodes "
        f"+ {args.pods} pods "
        "(SIMULATED): "
        f"exit {code}, {wall:.1f}s, peak RSS {peak:.0f} MiB (CronJob limit {LIMIT_MIB} MiB)"
    )
    print(f"checks: {statuses}")
    ok = peak < LIMIT_MIB and code in (0, 8)
    print("RESULT: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
