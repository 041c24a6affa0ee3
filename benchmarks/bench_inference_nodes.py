"""inference-perf GPU node choice at scale: 5,000 nodes, 100,000 pods (pure-function part).

Runs the allocation-mode probe, candidate discovery, occupancy accounting and node selection the
way the check does, on synthetic dicts: 5,000 GPU nodes (every 10th publishes node-local
gpu.nvidia.com ResourceSlices and advertises scalar GPUs too), 100,000 pods (one in four requests
GPUs, some with init/sidecar containers), and a ResourceClaim per DRA node.  Pods are streamed in
pages of 500 the way a paginated list returns them, so memory stays flat; ``--materialize`` builds
the whole pod list first instead.

Prints wall time per stage and peak RSS.  Targets (full path incl. paginated listing): < 15 s,
< 600 MB.

    .venv/bin/python benchmarks/bench_inference_nodes.py [--nodes N] [--pods N] [--materialize]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Iterator
from typing import Any

from aicr_pytest import inference
from aicr_pytest.core import allocmode

PAGE = 500


def make_node(i: int) -> dict[str, Any]:
    name = f"gpu-node-{i:05d}"
    return {
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        },
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "191", "memory": "2060000Mi", "nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "False" if i % 97 == 0 else "True"}],
        },
    }


def make_slice(i: int) -> dict[str, Any]:
    name = f"gpu-node-{i:05d}"
    return {
        "metadata": {"name": f"{name}-gpu.nvidia.com-abcde"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{d}"} for d in range(8)],
        },
    }


def make_claim(i: int) -> dict[str, Any]:
    name = f"gpu-node-{i:05d}"
    return {
        "metadata": {"name": f"claim-{i}", "namespace": "team"},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": name, "device": f"gpu-{d}"}
                        for d in range(2)
                    ]
                }
            }
        },
    }


def make_pod(i: int, nodes: int) -> dict[str, Any]:
    node = i % nodes
    if node % 10 == 0:  # keep DRA nodes free of scalar workloads (otherwise they are skipped)
        node += 1
    gpus = (i % 4 == 0) * (1 + i % 3)
    container: dict[str, Any] = {
        "name": "main",
        "image": "registry.example.com/app:1.0",
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
    }
    if gpus:
        container["resources"]["requests"]["nvidia.com/gpu"] = str(gpus)
        container["resources"]["limits"]["nvidia.com/gpu"] = str(gpus)
    spec: dict[str, Any] = {"nodeName": f"gpu-node-{node % nodes:05d}", "containers": [container]}
    if i % 50 == 0:
        spec["initContainers"] = [
            {"name": "sidecar", "restartPolicy": "Always", "resources": {}},
            {"name": "setup", "resources": {"requests": {"nvidia.com/gpu": "1"}}},
        ]
    phase = "Succeeded" if i % 33 == 0 else "Running"
    return {
        "metadata": {"name": f"pod-{i}", "namespace": f"ns-{i % 200}", "labels": {"app": f"a{i % 17}"}},
        "spec": spec,
        "status": {"phase": phase},
    }


def paged_pods(count: int, nodes: int) -> Iterator[dict[str, Any]]:
    """Yield pods page by page, as a paginated list (``limit`` + ``continue``) would."""
    for start in range(0, count, PAGE):
        page = [make_pod(i, nodes) for i in range(start, min(count, start + PAGE))]
        yield from page


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / 1024 if sys.platform == "darwin" else peak / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--materialize", action="store_true", help="build the whole pod list first")
    args = parser.parse_args()

    t0 = time.perf_counter()
    nodes = [make_node(i) for i in range(args.nodes)]
    slices = [make_slice(i) for i in range(0, args.nodes, 10)]
    claims = [make_claim(i) for i in range(0, args.nodes, 10)]
    device_classes = [{"metadata": {"name": "gpu.nvidia.com"}, "spec": {}}]
    pods: Any = (
        list(paged_pods(args.pods, args.nodes)) if args.materialize else paged_pods(args.pods, args.nodes)
    )
    t1 = time.perf_counter()

    mode = allocmode.detect(nodes, "v1", device_classes, slices)
    allocmode.reject_unsupported_gpu_topology(mode)
    allocmode.verify_policy(None, mode)
    t2 = time.perf_counter()
    candidates = inference.discover_candidate_nodes(nodes, mode, None, None)
    occupancy = inference.count_used_gpus_by_node(pods, claims, mode)
    t3 = time.perf_counter()
    choice = inference.select_worker_node(candidates, occupancy, mode, None)
    evidence = inference.wiring_evidence(mode, choice)
    t4 = time.perf_counter()

    print(
        f"nodes={args.nodes} pods={args.pods} slices={len(slices)} claims={len(claims)} "
        f"materialized={args.materialize}"
    )
    print(f"build inputs        {t1 - t0:7.3f} s")
    print(f"allocation probe    {t2 - t1:7.3f} s")
    print(f"occupancy (+pods)   {t3 - t2:7.3f} s  (pod generation is included when streamed)")
    print(f"selection+evidence  {t4 - t3:7.3f} s")
    print(f"total pure path     {t4 - t1:7.3f} s")
    print(f"peak RSS            {peak_rss_mb():7.1f} MB")
    print(
        f"chosen: {choice.name} free={choice.free_gpus}/{choice.node_gpus} "
        f"wiring={'DRA' if choice.dra_wiring else 'device-plugin'} "
        f"({len(evidence.splitlines())} evidence lines)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
