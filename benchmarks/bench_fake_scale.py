"""Scale benchmark: the facade lists 5,000 nodes and 50,000 pods from the fake API server
(paginated, with a label selector) and computes per-node GPU occupancy.

Targets (issue 3): under 10 s end to end and under 500 MB peak RSS. Prints wall time, peak RSS
and the requests/pages the facade made. The fake server runs in this same process, so the RSS
figure includes the fake's store (reported separately after seeding).

    .venv/bin/python benchmarks/bench_fake_scale.py [--nodes 5000] [--pods 50000] [--page-size 500]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from typing import Any

from aicr_pytest.kube import connect, gpu_occupancy


def rss_mb() -> float:
    # ru_maxrss is KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_node(i: int) -> dict[str, Any]:
    gpu = i % 10 != 0  # one node in ten is a CPU/system node
    labels = {"kubernetes.io/hostname": f"node-{i:05d}", "node.kubernetes.io/instance-type": "p5.48xlarge"}
    if gpu:
        labels |= {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    alloc = {"cpu": "192", "memory": "2000Gi", "pods": "110"} | ({"nvidia.com/gpu": "8"} if gpu else {})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i:05d}", "labels": labels},
        "status": {
            "allocatable": alloc,
            "capacity": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def make_pod(i: int, nodes: int) -> dict[str, Any]:
    node = f"node-{i % nodes:05d}"
    gpus = 1 if i % 7 == 0 else 0
    phase = "Succeeded" if i % 13 == 0 else "Running"
    container: dict[str, Any] = {"name": "main", "image": "registry.example/app:1.0"}
    if gpus:
        container["resources"] = {
            "requests": {"nvidia.com/gpu": str(gpus)},
            "limits": {"nvidia.com/gpu": str(gpus)},
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{i:06d}",
            "namespace": f"team-{i % 50:02d}",
            "labels": {"app": f"app-{i % 100}"},
        },
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": phase},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--page-size", type=int, default=500)
    args = parser.parse_args(argv)

    from aicr_pytest.testing.cluster import FakeCluster

    with FakeCluster(simulate=False) as fc:
        t_seed = time.perf_counter()
        namespaces = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{n:02d}"}}
            for n in range(50)
        ]
        fc.bulk_add(namespaces)
        fc.bulk_add([make_node(i) for i in range(args.nodes)])
        fc.bulk_add([make_pod(i, args.nodes) for i in range(args.pods)])
        seed_s = time.perf_counter() - t_seed
        rss_seeded = rss_mb()
        base_requests = fc.request_count()

        cluster = connect(str(fc.kubeconfig_path))
        t0 = time.perf_counter()
        gpu_nodes = sum(
            1
            for _ in cluster.list(
                "v1", "nodes", label_selector="nvidia.com/gpu.present=true", page_size=args.page_size
            )
        )
        t_nodes = time.perf_counter() - t0
        t1 = time.perf_counter()
        occupancy = gpu_occupancy(cluster, "nvidia.com/gpu.present=true", page_size=args.page_size)
        t_occ = time.perf_counter() - t1
        wall = time.perf_counter() - t0
        peak = rss_mb()
        cluster.close()

        requested = sum(o.requested for o in occupancy.values())
        allocatable = sum(o.allocatable for o in occupancy.values())
        print(
            f"seeded {args.nodes} nodes + {args.pods} pods in {seed_s:.2f}s "
            f"(RSS after seeding {rss_seeded:.0f} MB)"
        )
        print(f"list GPU nodes (label selector): {gpu_nodes} nodes in {t_nodes:.2f}s")
        print(
            f"gpu_occupancy: {len(occupancy)} nodes, {requested}/{allocatable} GPUs requested, {t_occ:.2f}s"
        )
        print(f"facade wall time: {wall:.2f}s (target < 10 s)")
        print(f"peak RSS (process, incl. in-process fake): {peak:.0f} MB (target < 500 MB)")
        print(
            f"facade requests: {cluster.stats.requests} "
            f"(pages {cluster.stats.pages}, retries {cluster.stats.retries}); "
            f"server saw {fc.request_count() - base_requests}"
        )
        ok = wall < 10 and peak < 500
        print("RESULT: " + ("PASS" if ok else "FAIL"))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
