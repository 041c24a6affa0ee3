"""Time to a verdict against each kind of broken API server.

A SIMULATED cluster (``h100-eks-training``, served from this process on real time, over HTTPS as
``aicr-pytest simulate`` serves it) is put behind a loopback TCP proxy (tests/harness/brokenapi.py)
that refuses, stalls, or answers every request with one status; 401 comes from the simulated server
itself (a wrong token), a TLS failure from a CA that did not sign its certificate, DNS from a host
name under ``.invalid``.  ``mid-run`` passes traffic for ``--mid-run-after`` seconds, then stalls.

For each class ``aicr-pytest validate --recipe … --snapshot … --kubeconfig K -o ctrf.json`` runs in a
subprocess; printed: the wall time from start to exit (``mid-run``: from the cluster's loss to exit),
the exit code, the CTRF status counts and the first error line.  Targets: every class ≤ 30 s, the
median ≤ 12 s (default ``--reach-timeout`` of 10 s).

    .venv/bin/python benchmarks/bench_unreachable.py [--only silent,500] [--mid-run-after 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
CLASSES = ("refused", "dns", "tls", "401", "403", "429", "500", "503", "silent", "mid-run")
TARGET_EACH, TARGET_MEDIAN = 30.0, 12.0


def _kubeconfig(cluster: Any, work: Path, klass: str, proxy: Any) -> Path:
    from aicr_pytest.testing.server.tls import make_tls

    doc: dict[str, Any] = cluster.kubeconfig()
    entry = doc["clusters"][0]["cluster"]
    if klass == "dns":
        entry["server"] = "https://api.cluster.invalid:6443"
    elif klass == "tls":
        entry["certificate-authority-data"] = __import__("base64").b64encode(make_tls().ca_pem).decode()
    elif klass == "401":
        doc["users"][0]["user"] = {"token": "expired-token"}
    elif proxy is not None:
        scheme = "http" if klass.isdigit() else "https"
        entry["server"] = proxy.url(scheme)
        if scheme == "http":
            entry.pop("certificate-authority-data", None)
    path = work / f"{klass}.kubeconfig"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _run(kubeconfig: Path, ctrf: Path) -> tuple[float, int, str, dict[str, int]]:
    cmd = [
        str(REPO / ".venv" / "bin" / "aicr-pytest"),
        "validate",
        "--recipe",
        str(RECIPE),
        "--snapshot",
        str(SNAPSHOT),
        "--kubeconfig",
        str(kubeconfig),
        "-o",
        str(ctrf),
    ]
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    took = time.monotonic() - start
    first = next((ln for ln in done.stderr.splitlines() if ln.startswith("aicr-pytest: error")), "")
    counts: dict[str, int] = {}
    if ctrf.is_file():
        summary = json.loads(ctrf.read_text())["results"]["summary"]
        counts = {k: int(summary[k]) for k in ("passed", "failed", "skipped", "other")}
    return took, done.returncode, first, counts


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="", help="comma-separated classes (default: all)")
    parser.add_argument("--mid-run-after", type=float, default=8.0, help="seconds before the cluster goes")
    args = parser.parse_args()
    wanted = [c for c in (args.only.split(",") if args.only else CLASSES) if c]

    from aicr_pytest.testing import FakeCluster, RealClock
    from tests.harness.brokenapi import BrokenApi

    rows: list[tuple[str, float, int, str, dict[str, int]]] = []
    with tempfile.TemporaryDirectory(prefix="aicr-bench-reach-") as tmp:
        work = Path(tmp)
        for klass in wanted:
            with FakeCluster(PROFILE, clock=RealClock(), tls=True) as cluster:
                mode: str | int = {"refused": "refuse", "silent": "stall", "mid-run": "pass"}.get(
                    klass, int(klass) if klass.isdigit() else "pass"
                )
                proxy = BrokenApi(cluster.url, mode=mode)
                try:
                    kubeconfig = _kubeconfig(cluster, work, klass, proxy)
                    timer = None
                    if klass == "mid-run":
                        timer = threading.Timer(args.mid_run_after, proxy.set_mode, args=("stall",))
                        timer.start()
                    took, code, line, counts = _run(kubeconfig, work / f"{klass}.json")
                    if timer is not None:
                        timer.cancel()
                        took -= args.mid_run_after  # from the moment the cluster went away
                finally:
                    proxy.close()
            rows.append((klass, took, code, line, counts))
            print(f"{klass:9s} {took:6.1f}s exit {code} {counts} | {line[:150]}", flush=True)
    times = [r[1] for r in rows]
    median = statistics.median(times) if times else 0.0
    worst = max(times) if times else 0.0
    print(
        f"time to verdict: median {median:.1f}s (target <= {TARGET_MEDIAN:g}s), worst {worst:.1f}s "
        f"(target <= {TARGET_EACH:g}s each)"
    )
    ok = worst <= TARGET_EACH and median <= TARGET_MEDIAN
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
