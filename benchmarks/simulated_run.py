"""What the simulated-cluster benchmarks share: one pytest run of a phase against a served fake,
in a subprocess, read back from its CTRF report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"


def run_check(
    kubeconfig: str, workdir: Path, *, recipe: Path, phase: str, check: str, extra: Sequence[str] = ()
) -> tuple[dict[str, Any], float, str]:
    """Run ``phase`` of ``recipe``; returns ``check``'s CTRF test, the process time and the output tail."""
    ctrf = workdir / "ctrf.json"
    argv = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "--recipe", str(recipe), "--snapshot", str(SNAPSHOT), "--aicr-kubeconfig", kubeconfig,
        "--aicr-phase", phase, "--aicr-ctrf-report", str(ctrf), *extra,
    ]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(
        argv, cwd=workdir, env=dict(os.environ), capture_output=True, text=True, check=False
    )
    total = time.monotonic() - started
    tests = (json.loads(ctrf.read_text()).get("results") or {}).get("tests") or [] if ctrf.exists() else []
    found: dict[str, Any] = next((t for t in tests if t.get("name") == check), {})
    return found, total, proc.stdout[-3000:] + proc.stderr[-2000:]
