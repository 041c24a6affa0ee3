"""Conformance phase: wall time with and without ``-n 4`` against the sum of its checks' durations.

A SIMULATED cluster (``h100-eks-training-dra``: the six phase-I checks, three of them running pods --
dra-support's claim pod, secure-accelerator-access's GPU pod + no-allocation probe, gang-scheduling's
two workers) is served from this process on real time, with pods that take seconds: the conformance
player is replaced by one whose pods start ``--pod-start`` s after binding and run ``--pod-run`` s.
pytest runs the phase in a subprocess against it, once serially and once with ``-n 4``; a tiny
plugin records each check item's start and end (setup to teardown, so cleanup is included).

Printed per run: the phase's wall time (first check start → last check end), the sum of the check
durations, wall/sum, the whole process time, each check's start offset and duration, and every
check's status. Target (issue #12): with ``-n 4`` the phase's wall ≤ 0.4 × the sum when ≥ 4 checks are
declared. On a CPU-starved machine the checks themselves slow down under ``-n 4`` (four workers and
the simulated API server share the CPUs), which inflates that sum, so the parallel wall is also
printed against the *serial* run's sum, and the load average with it.

    .venv/bin/python benchmarks/bench_conformance_parallel.py [--pod-start 4] [--pod-run 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training-dra.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-dra-snapshot.yaml"
PROFILE = "h100-eks-training-dra"
TARGET = 0.4

TIMING_PLUGIN = """
import json, os, time
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    try:
        return (yield)
    finally:
        with open(os.environ["AICR_BENCH_TIMING"], "a") as out:
            out.write(json.dumps({"id": item.nodeid, "start": start, "stop": time.time()}) + "\\n")
"""


def run_phase(kubeconfig: Path, workdir: Path, parallel: int | None) -> dict[str, Any]:
    timing = workdir / f"timing-{parallel or 0}.jsonl"
    ctrf = workdir / f"ctrf-{parallel or 0}.json"
    timing.unlink(missing_ok=True)
    env = {**os.environ, "AICR_BENCH_TIMING": str(timing), "PYTHONPATH": str(workdir)}
    argv = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "bench_timing",
        "--recipe", str(RECIPE), "--snapshot", str(SNAPSHOT), "--aicr-kubeconfig", str(kubeconfig),
        "--aicr-phase", "conformance", "--aicr-ctrf-report", str(ctrf),
    ]  # fmt: skip
    if parallel:
        argv += ["-n", str(parallel)]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True, check=False)
    total = time.monotonic() - started
    spans = [json.loads(line) for line in timing.read_text().splitlines() if line.strip()]
    report = json.loads(ctrf.read_text()) if ctrf.exists() else {}
    tests = (report.get("results") or {}).get("tests") or []
    return {
        "rc": proc.returncode,
        "total": total,
        "wall": max(s["stop"] for s in spans) - min(s["start"] for s in spans),
        "sum": sum(s["stop"] - s["start"] for s in spans),
        "checks": len(spans),
        "spans": [
            (
                s["id"].rsplit("[", 1)[-1].rstrip("]"),
                s["start"] - min(x["start"] for x in spans),
                s["stop"] - s["start"],
            )
            for s in sorted(spans, key=lambda x: x["start"])
        ],
        "statuses": {t["name"]: t["status"] for t in tests},
        "tail": proc.stdout[-2000:] + proc.stderr[-2000:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pod-start", type=float, default=4.0, help="seconds from binding to Running")
    parser.add_argument("--pod-run", type=float, default=4.0, help="seconds from Running to exit")
    parser.add_argument("-n", type=int, default=4, help="xdist workers for the parallel run")
    args = parser.parse_args()

    from aicr_pytest.testing import FakeCluster, RealClock, using_player
    from aicr_pytest.testing.players import conformance

    slow = conformance.player(pod_start_s=args.pod_start, pod_run_s=args.pod_run)
    with tempfile.TemporaryDirectory(prefix="aicr-bench-conf-") as tmp:
        workdir = Path(tmp)
        (workdir / "bench_timing.py").write_text(TIMING_PLUGIN)
        results: dict[str, dict[str, Any]] = {}
        for label, parallel in (("serial", None), (f"-n {args.n}", args.n)):
            with using_player("conformance", slow), FakeCluster(PROFILE, clock=RealClock()) as fc:
                results[label] = run_phase(fc.kubeconfig_path, workdir, parallel)
        pods = f"pods: {args.pod_start:g}s start + {args.pod_run:g}s run"
        print(f"conformance phase on SIMULATED {PROFILE} ({pods})")
        print(
            f"{'run':<8} {'checks':>6} {'wall s':>8} {'sum s':>8} {'wall/sum':>9} {'process s':>10}  statuses"
        )
        for label, r in results.items():
            statuses = ", ".join(f"{k}={v}" for k, v in sorted(r["statuses"].items()))
            print(
                f"{label:<8} {r['checks']:>6} {r['wall']:>8.1f} {r['sum']:>8.1f} "
                f"{r['wall'] / r['sum']:>9.2f} {r['total']:>10.1f}  {statuses}"
            )
            print("         " + "  ".join(f"{n}@{at:.1f}s:{d:.1f}s" for n, at, d in r["spans"]))
            if r["rc"] != 0:
                print(f"  (exit {r['rc']})\n{r['tail']}")
        par = results[f"-n {args.n}"]
        ratio = par["wall"] / par["sum"]
        verdict = "met" if ratio <= TARGET and par["checks"] >= 4 else "MISSED"
        print(f"target wall <= {TARGET} x sum with -n {args.n}: {ratio:.2f} ({verdict})")
        serial_sum = results["serial"]["sum"]
        print(
            f"-n {args.n} wall / serial sum (the same work without contention): "
            f"{par['wall'] / serial_sum:.2f}"
            f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
        )
        speedup = results["serial"]["wall"] / par["wall"]
        print(f"phase wall speed-up -n {args.n} vs serial: {speedup:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
