"""Watch latency: time from a pod reaching Succeeded in the fake API server to ``wait_for``
returning (target: median under 100 ms; AICR polls every 2-5 s).

Each round creates a Running pod, starts ``wait_for_pod_phase(..., "Succeeded")`` in a thread,
waits until its watch is open, flips the pod to Succeeded and measures until the waiter returns.

    .venv/bin/python benchmarks/bench_watch_latency.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from typing import Any

from aicr_pytest.kube import connect, wait_for_pod_phase


def pod(name: str, phase: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {"containers": [{"name": "main", "image": "x"}]},
        "status": {"phase": phase},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)

    from aicr_pytest.testing.cluster import FakeCluster

    latencies: list[float] = []
    with FakeCluster(simulate=False) as fc:
        cluster = connect(str(fc.kubeconfig_path))
        for i in range(args.rounds):
            name = f"p{i}"
            fc.add(pod(name, "Running"))
            done = threading.Event()
            result: dict[str, Any] = {}

            def waiter(
                name: str = name, result: dict[str, Any] = result, done: threading.Event = done
            ) -> None:
                try:
                    result["pod"] = wait_for_pod_phase(cluster, "bench", name, "Succeeded", timeout=30)
                    result["t"] = time.perf_counter()
                finally:
                    done.set()

            watches_before = fc.request_count(watch=True)
            thread = threading.Thread(target=waiter)
            thread.start()
            deadline = time.monotonic() + 5
            while fc.request_count(watch=True) == watches_before and time.monotonic() < deadline:
                time.sleep(0.001)
            time.sleep(0.02)  # let the server enter its watch loop
            t0 = time.perf_counter()
            fc.add(pod(name, "Succeeded"))
            done.wait(30)
            thread.join()
            if "t" not in result:
                print(f"round {i}: waiter did not return")
                return 1
            latencies.append((result["t"] - t0) * 1000)
        cluster.close()
    median = statistics.median(latencies)
    print(f"rounds: {len(latencies)}")
    print(
        f"latency ms: median {median:.1f}, min {min(latencies):.1f}, max {max(latencies):.1f}, "
        f"p90 {sorted(latencies)[int(0.9 * (len(latencies) - 1))]:.1f}"
    )
    print(f"target: median < 100 ms -> RESULT: {'PASS' if median < 100 else 'FAIL'}")
    return 0 if median < 100 else 1


if __name__ == "__main__":
    sys.exit(main())
