"""Whole-process time of `aicr-pytest validate --no-cluster` on the embedded example.

Target (Foundation issue): median under 1.5 s on a 2-core machine.  Prints every run and the
median; also reports whether the kubernetes client was imported (it must not be).

    .venv/bin/python benchmarks/bench_validate_no_cluster.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    cmd = [
        sys.executable,
        "-m",
        "aicr_pytest.cli",
        "validate",
        "--recipe",
        str(RECIPE),
        "--snapshot",
        str(SNAPSHOT),
        "--no-cluster",
        "--output",
        "/dev/null",
    ]
    times: list[float] = []
    for i in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        print(f"run {i + 1}: {elapsed:.3f} s (exit {proc.returncode})")
        if proc.returncode != 0:
            print(proc.stderr[-2000:])
            return 1
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, aicr_pytest.plugin, aicr_pytest.core.inputs, aicr_pytest.cli; "
            "print('kubernetes' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    print(f"median: {statistics.median(times):.3f} s over {runs} runs (target < 1.5 s)")
    print(f"kubernetes imported by the plugin: {probe.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
