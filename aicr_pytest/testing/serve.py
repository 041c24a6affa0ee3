"""``aicr-pytest simulate`` and ``aicr-pytest validate --simulate``: a SIMULATED cluster on loopback.

The fake API server and the simulator run in this process on a real (wall) clock, so pods move
through their scripted lifecycle in real time.  The server speaks HTTPS with a CA made at start
and written into the kubeconfig, so kubectl (which sends a bearer token only over TLS) and every
``--no-cleanup`` command work against it.  Every line printed here says SIMULATED: nobody
should mistake its results for a real cluster's.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from aicr_pytest.core.errors import UsageError
from aicr_pytest.testing.clock import RealClock
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.profiles import FAULTS, PROFILES


def _validate(profile: str, faults: Sequence[str]) -> None:
    if profile not in PROFILES:
        raise UsageError(f'unknown simulate profile "{profile}"; available: {", ".join(sorted(PROFILES))}')
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        raise UsageError(f'unknown simulate fault "{unknown[0]}"; available: {", ".join(sorted(FAULTS))}')


@contextlib.contextmanager
def simulated_cluster(
    profile: str, faults: Sequence[str] = (), kubeconfig: str | Path | None = None
) -> Iterator[FakeCluster]:
    """Start a SIMULATED cluster with ``profile`` and ``faults``; stop it on exit."""
    _validate(profile, faults)
    path = Path(kubeconfig) if kubeconfig else None
    with FakeCluster(profile, faults, clock=RealClock(), kubeconfig_path=path, tls=True) as cluster:
        yield cluster


def serve(profile: str, faults: Sequence[str], kubeconfig: str | None, duration: float | None) -> int:
    """Serve until Ctrl-C (or ``duration`` seconds); print the kubeconfig path."""
    if kubeconfig is None:
        kubeconfig = str(Path(tempfile.mkdtemp(prefix="aicr-simulate-")) / "kubeconfig")
    with simulated_cluster(profile, faults, kubeconfig) as cluster:
        fault_text = ", ".join(faults) if faults else "none"
        print(f"SIMULATED cluster: profile {profile}, faults {fault_text}", flush=True)
        print(f"SIMULATED API server: {cluster.url}", flush=True)
        print(f"SIMULATED kubeconfig: {cluster.kubeconfig_path}", flush=True)
        print(
            "SIMULATED: try `aicr-pytest validate --recipe recipes/examples/h100-eks-training.yaml"
            " --snapshot recipes/examples/h100-eks-training-snapshot.yaml"
            f" --kubeconfig {cluster.kubeconfig_path}`",
            flush=True,
        )
        try:
            if duration is not None:
                time.sleep(max(0.0, duration))
            else:
                while True:
                    time.sleep(3600)
        except KeyboardInterrupt:
            print("SIMULATED cluster stopped (interrupted)", file=sys.stderr, flush=True)
            return 0
    print("SIMULATED cluster stopped", flush=True)
    return 0
