"""The SQLite run history at 1,000 recorded runs: how fast ``history`` answers and what recording a run
adds to ``validate``.

A database is filled with ``--runs`` runs, each a CTRF document of ``--checks`` checks (three NCCL
variants with their bus bandwidth, inference-perf with throughput and TTFT p99, gpu-health with a
per-node health table and DCGM counters over ``--nodes`` nodes, the rest durations only).  Then:

* ``history`` — :func:`aicr_pytest.report.historycmd.run_history` over the whole database (text and
  ``--json``, and ``--check`` one check), in-process, best of 5; and ``aicr-pytest history DB`` as a
  process, to the last byte of output (interpreter start-up included);
* recording — what ``--history`` does once a run ended (open and migrate-check the database, read
  every measured value out of the CTRF document, write the run in one transaction), best of 20, on
  the database of ``--runs`` runs.

Targets: ``history`` under 0.5 s; recording under 50 ms.

    .venv/bin/python benchmarks/bench_history.py [--runs 1000] [--checks 20] [--nodes 8]
"""

from __future__ import annotations

import argparse
import io
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aicr_pytest.report import history as hs  # noqa: E402
from aicr_pytest.report.historycmd import run_history  # noqa: E402

HISTORY_TARGET_S = 0.5
RECORD_TARGET_S = 0.050


def ctrf(i: int, checks: int, nodes: int, rng: random.Random) -> dict[str, Any]:
    tests: list[dict[str, Any]] = []
    for variant in ("", "-net", "-nvls"):
        bw = rng.gauss(450.0, 10.0)
        tests.append(
            {
                "name": f"nccl-all-reduce-bw{variant}",
                "status": "passed",
                "duration": rng.randint(60_000, 90_000),
                "suite": ["performance"],
                "extra": {
                    "aicr.measurements": [
                        {
                            "name": "bus bandwidth",
                            "value": bw,
                            "unit": "GB/s",
                            "constraint": ">= 300",
                            "effectiveThreshold": 270.0,
                            "passed": True,
                        }
                    ]
                },
            }
        )
    tests.append(
        {
            "name": "inference-perf",
            "status": "passed",
            "duration": 600_000,
            "suite": ["performance"],
            "extra": {
                "aicr.facts": {"node": "gpu-0"},
                "aicr.measurements": [
                    {
                        "name": "inference throughput",
                        "value": rng.gauss(9000, 200),
                        "unit": "tokens/sec",
                        "constraint": ">= 8000",
                        "effectiveThreshold": 7200.0,
                    },
                    {
                        "name": "inference TTFT p99",
                        "value": rng.gauss(150, 5),
                        "unit": "ms",
                        "constraint": "<= 200",
                        "effectiveThreshold": 220.0,
                    },
                ],
            },
        }
    )
    tests.append(
        {
            "name": "gpu-health",
            "status": "passed",
            "duration": 61_000,
            "suite": ["deployment"],
            "extra": {
                "aicr.gpuHealth": {
                    "counters": {
                        f"gpu-{n}": {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": 0.0} for n in range(nodes)
                    }
                },
                "aicr.healthTable": [
                    {"node": f"gpu-{n}", "gpu": str(g), "test": "exporter health", "result": "pass"}
                    for n in range(nodes)
                    for g in range(8)
                ],
            },
        }
    )
    for c in range(max(0, checks - len(tests))):
        tests.append(
            {
                "name": f"check-{c}",
                "status": "passed",
                "duration": rng.randint(100, 5000),
                "suite": ["deployment"],
            }
        )
    return {
        "reportFormat": "CTRF",
        "specVersion": "0.0.1",
        "timestamp": f"2026-12-{1 + i // 100:02d}T{i % 24:02d}:00:00Z",
        "results": {
            "tool": {"name": "aicr-pytest"},
            "summary": {"tests": len(tests), "failed": 0, "other": 0},
            "tests": tests,
        },
        "extra": {"aicr.runId": f"run{i:05d}"},
    }


def best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--checks", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=8)
    args = ap.parse_args()
    rng = random.Random(7)
    ident = hs.RunIdentity("h100-eks-training", "sha256:aaaa", "sha256:bbbb", "https://10.0.0.1:6443", "prod")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "history.db"
        start = time.perf_counter()
        with hs.SqliteHistory.open(db, create=True) as store:
            for i in range(args.runs):
                store.add(hs.record_of(ctrf(i, args.checks, args.nodes, rng), ident))
            count, values = store.count(), sum(len(r.measurements) for r in store.runs())
        fill = time.perf_counter() - start
        size = db.stat().st_size
        print(
            f"database: {count} runs, {values} measured values, {size / 1e6:.1f} MB, filled in {fill:.1f} s"
        )

        text = best(lambda: run_history(str(db), out=io.StringIO()), 5)
        as_json = best(lambda: run_history(str(db), as_json=True, out=io.StringIO()), 5)
        one = best(lambda: run_history(str(db), check="nccl-all-reduce-bw", out=io.StringIO()), 5)
        last = best(lambda: run_history(str(db), last=20, out=io.StringIO()), 5)
        cmd = [sys.executable, "-m", "aicr_pytest.cli", "history", str(db)]
        proc = best(lambda: subprocess.run(cmd, capture_output=True, check=True), 3)
        print(
            f"history (in-process, best of 5): text {text * 1000:.0f} ms, --json {as_json * 1000:.0f} ms, "
            f"--check {one * 1000:.0f} ms, --last 20 {last * 1000:.0f} ms"
        )
        print(f"history (aicr-pytest history DB as a process, best of 3): {proc * 1000:.0f} ms")

        doc = ctrf(args.runs, args.checks, args.nodes, rng)
        n = [args.runs]

        def record() -> None:
            n[0] += 1
            doc["extra"]["aicr.runId"] = f"run{n[0]:05d}"
            with hs.SqliteHistory.open(db, create=True) as store:
                store.add(hs.record_of(doc, ident))

        rec = best(record, 20)
        print(f"recording one run on a {args.runs}-run database (best of 20): {rec * 1000:.1f} ms")

        recipe = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
        snap = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
        base = [sys.executable, "-m", "aicr_pytest.cli", "validate", "-r", str(recipe), "-s", str(snap)]
        base += ["--no-cluster", "-o", str(Path(tmp) / "ctrf.json")]
        plain = best(lambda: subprocess.run(base, capture_output=True, check=False), 5)
        recorded = best(
            lambda: subprocess.run([*base, "--history", str(db)], capture_output=True, check=False), 5
        )
        print(
            f"validate --no-cluster (best of 5): {plain * 1000:.0f} ms; with --history on the "
            f"{args.runs}-run database {recorded * 1000:.0f} ms "
            f"(+{(recorded - plain) * 1000:.0f} ms, noisy on a shared machine)"
        )
    worst = max(text, as_json, one, last)
    ok = worst < HISTORY_TARGET_S and rec < RECORD_TARGET_S
    verdict = {True: "met", False: "MISSED"}
    print(
        f"targets: history < {HISTORY_TARGET_S * 1000:.0f} ms in-process "
        f"({verdict[worst < HISTORY_TARGET_S]}; "
        f"as a process {verdict[proc < HISTORY_TARGET_S]}), "
        f"recording < {RECORD_TARGET_S * 1000:.0f} ms ({verdict[rec < RECORD_TARGET_S]})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
