"""inference-perf GPU node choice through the real cluster path: 5,000 nodes, 100,000 pods.

Starts a :class:`~aicr_pytest.testing.cluster.FakeCluster` (empty profile, controllers off),
bulk-loads 5,000 GPU nodes (8 ``nvidia.com/gpu`` each, GPU Feature Discovery labels, a GPU taint,
one in 97 NotReady, one in 250 cordoned) and 100,000 pods in 200 namespaces (about one in nine
requests 1/2/4/8 GPUs, some pods with a GPU one-shot init container or a GPU restartable sidecar;
~8 % completed or failed, ~1 % pending unbound), placed so no node is over-committed (~70 % of
the GPUs in use), then runs what inference-perf runs before it deploys anything:
:func:`aicr_pytest.inference.cluster.choose_node` through the facade
(:func:`aicr_pytest.kube.client.connect`) — the allocation-mode probe (nodes, discovery of
``resource.k8s.io``, DeviceClasses, ResourceSlices), topology rejection, policy evidence and
verification, candidate discovery, occupancy (every non-terminal pod, paginated, plus
ResourceClaims) and the node choice with its evidence.

``--dra-every N`` makes every Nth node a DRA node instead (a node-local ``gpu.nvidia.com``
ResourceSlice with 8 devices, no scalar GPUs, 2 devices allocated by a ResourceClaim): a mixed
cluster.

Prints seeding time (not counted), wall time of the check path with its stages, peak RSS
(``getrusage``) and the facade's request/page counts.  By default the fake API server and its
store live in this same process (~800 MB for these objects), so the process peak is printed with
the RSS after seeding, and the verdict uses the growth during the check path.  ``--fake-process``
serves the fake from a forked child instead: the peak printed (and judged) is the check's alone.
In-process, the fake's JSON encoding competes with the check for the GIL, so the wall time is
pessimistic; against a separate server it is what a real cluster's API server costs the check.
After seeding, ``gc.freeze()`` moves the fake's ~10 million objects out of the cyclic collector's
generations (a separate API server's objects would not be in them either); ``--no-freeze`` keeps
them there and shows what the full collections over them cost.

``--prefetch on|off`` switches the facade's list-page prefetch (the next page is fetched on a
background thread while the check works on the current one; default: the facade's default).

Target (issue 7): under 15 s and under 600 MB peak RSS.

    .venv/bin/python benchmarks/bench_inference_occupancy_fake.py [--nodes 5000] [--pods 100000]
        [--page-size 500] [--dra-every 0] [--policy POLICY] [--fake-process] [--prefetch on|off]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import random
import resource
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

NAMESPACES = 200
GPU_SIZES = (1, 1, 1, 2, 2, 4, 8)
TARGET_S = 15.0
TARGET_MB = 600.0


def rss_mb() -> float:
    """Peak RSS of this process (``ru_maxrss`` is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / 1024 if sys.platform == "darwin" else peak / 1024


def node_name(i: int) -> str:
    return f"gpu-node-{i:05d}"


def is_dra(i: int, dra_every: int) -> bool:
    return dra_every > 0 and i % dra_every == 0


def make_node(i: int, dra_every: int) -> dict[str, Any]:
    name = node_name(i)
    dra = is_dra(i, dra_every)
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "p5.48xlarge",
        "topology.kubernetes.io/zone": f"us-east-1{'abcd'[i % 4]}",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.memory": "81559",
        "nvidia.com/gpu.family": "hopper",
        "nvidia.com/gpu.machine": "p5.48xlarge",
        "nvidia.com/cuda.driver-version.full": "570.124.06",
        "nvidia.com/cuda.runtime-version.full": "12.8",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "single",
        "feature.node.kubernetes.io/pci-10de.present": "true",
    }
    alloc = {"cpu": "191450m", "memory": "2002Gi", "pods": "110", "ephemeral-storage": "900Gi"}
    if not dra:
        alloc["nvidia.com/gpu"] = "8"
    spec: dict[str, Any] = {
        "providerID": f"aws:///us-east-1a/i-{i:017x}",
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    }
    if i % 250 == 7:
        spec["unschedulable"] = True
    ready = "False" if i % 97 == 3 else "True"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
                {"type": "Ready", "status": ready, "reason": "KubeletReady"},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.34.1-eks-1234567",
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.1.132-147.221.amzn2023.x86_64",
                "osImage": "Amazon Linux 2023.7.20250414",
                "architecture": "amd64",
                "operatingSystem": "linux",
            },
        },
    }


def make_slice(i: int) -> dict[str, Any]:
    name = node_name(i)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-gpu.nvidia.com-x7k2p"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{d}",
                    "attributes": {
                        "type": {"string": "gpu"},
                        "productName": {"string": "NVIDIA H100 80GB HBM3"},
                        "index": {"int": d},
                    },
                    "capacity": {"memory": {"value": "81559Mi"}},
                }
                for d in range(8)
            ],
        },
    }


def make_claim(i: int) -> dict[str, Any]:
    name = node_name(i)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"claim-{i:05d}", "namespace": f"team-{i % NAMESPACES:03d}"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}]
            }
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


def _container(name: str, gpus: int, image: str) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": "2", "memory": "8Gi"}
    limits: dict[str, str] = {"memory": "8Gi"}
    if gpus:
        requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = str(gpus)
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "OMP_NUM_THREADS", "value": "8"}],
        "resources": {"requests": requests, "limits": limits},
        "volumeMounts": [
            {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


class Placer:
    """Deterministic pod placement that never over-commits a node's 8 GPUs (~70 % used overall).

    GPU pods go to a pseudo-random device-plugin node with room for their effective request (else
    they request none); CPU-only pods go anywhere.  A few nodes stay entirely free, so the choice
    is a full node.
    """

    def __init__(self, nodes: int, dra_every: int) -> None:
        self.nodes = nodes
        self.rng = random.Random(7)
        self.free = [0 if is_dra(n, dra_every) else 8 for n in range(nodes)]
        self.dp_nodes = [n for n in range(nodes) if self.free[n] and n % 500 != 11]  # keep a few free

    def node_for(self, gpus: int) -> tuple[int, int]:
        """(node, GPUs actually requested) for a pod that wants ``gpus``."""
        if not gpus:
            return self.rng.randrange(self.nodes), 0
        for _ in range(8):
            node = self.dp_nodes[self.rng.randrange(len(self.dp_nodes))]
            if self.free[node] >= gpus:
                self.free[node] -= gpus
                return node, gpus
        return self.rng.randrange(self.nodes), 0


def make_pod(i: int, placer: Placer) -> dict[str, Any]:
    """One pod: GPU size, init/sidecar containers, phase and binding all vary with ``i``."""
    phase = "Running"
    if i % 17 == 0:
        phase = "Succeeded"
    elif i % 61 == 0:
        phase = "Failed"
    elif i % 101 == 0:
        phase = "Pending"
    wants = GPU_SIZES[(i // 9) % len(GPU_SIZES)] if i % 9 == 0 else 0
    init_gpu = i % 25 == 0  # a one-shot init container wanting 1 GPU (+ a CPU sidecar)
    sidecar_gpu = i % 100 == 1  # a restartable GPU sidecar, counted on top of the main container
    effective = max(wants + sidecar_gpu, 1 if init_gpu else 0)
    if phase == "Running":
        node, effective = placer.node_for(effective)
        if not effective:
            wants = init_gpu = sidecar_gpu = False  # no room: it becomes a CPU-only pod
    else:  # terminal and pending pods take no capacity (pending ones are not bound at all)
        node = placer.rng.randrange(placer.nodes)
    gpus = int(wants)
    ns = f"team-{i % NAMESPACES:03d}"
    spec: dict[str, Any] = {
        "nodeName": node_name(node),
        "restartPolicy": "Always",
        "serviceAccountName": "default",
        "schedulerName": "default-scheduler",
        "priority": 0,
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [_container("main", gpus, f"registry.example.com/{ns}/app:1.{i % 9}")],
        "volumes": [{"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {}}]}}],
    }
    if init_gpu:
        spec["initContainers"] = [
            _container("log-shipper", 0, "registry.example.com/fluent-bit:3.2") | {"restartPolicy": "Always"},
            _container("warmup", 1, "registry.example.com/warmup:0.3"),
        ]
    elif sidecar_gpu:
        spec["initContainers"] = [
            _container("dcgm-sidecar", 1, "nvcr.io/nvidia/dcgm:4.1") | {"restartPolicy": "Always"}
        ]
    if phase == "Pending":
        del spec["nodeName"]
    status: dict[str, Any] = {
        "phase": phase,
        "qosClass": "Burstable",
        "hostIP": f"10.0.{node // 250}.{node % 250}",
        "podIP": f"10.1.{(i // 250) % 250}.{i % 250}",
        "startTime": "2025-06-01T00:00:00Z",
        "conditions": [
            {"type": t, "status": "True" if phase == "Running" else "False"}
            for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ],
        "containerStatuses": [
            {
                "name": "main",
                "ready": phase == "Running",
                "restartCount": i % 3,
                "image": f"registry.example.com/{ns}/app:1.{i % 9}",
                "imageID": f"registry.example.com/{ns}/app@sha256:{i:064x}",
                "containerID": f"containerd://{i:064x}",
                "started": phase == "Running",
                "state": {"running": {"startedAt": "2025-06-01T00:00:05Z"}},
            }
        ],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"app-{i:06d}-{(i * 2654435761) % 99991:05d}",
            "namespace": ns,
            "labels": {"app": f"app-{i % 97}", "team": ns, "pod-template-hash": f"{i % 1000:04d}"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"app-{i % 97}-{i % 1000:04d}",
                    "uid": f"00000000-0000-0000-0000-{i % 1000:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": status,
    }


def seed(fc: Any, nodes: int, pods: int, dra_every: int) -> tuple[int, int]:
    fc.bulk_add(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{n:03d}"}}
            for n in range(NAMESPACES)
        ]
    )
    fc.bulk_add([make_node(i, dra_every) for i in range(nodes)])
    if dra_every > 0:
        fc.bulk_add(
            [
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "DeviceClass",
                    "metadata": {"name": "gpu.nvidia.com"},
                    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
                }
            ]
        )
        fc.bulk_add([make_slice(i) for i in range(0, nodes, dra_every)])
        fc.bulk_add([make_claim(i) for i in range(0, nodes, dra_every)])
    placer = Placer(nodes, dra_every)
    for start in range(0, pods, 10_000):  # chunks keep the seeding lists' own footprint small
        fc.bulk_add([make_pod(i, placer) for i in range(start, min(pods, start + 10_000))])
    used = sum(8 - f for n, f in enumerate(placer.free) if not is_dra(n, dra_every))
    capacity = 8 * sum(1 for n in range(nodes) if not is_dra(n, dra_every))
    return used, capacity


def _serve(args: argparse.Namespace, conn: Connection) -> None:
    """Child of ``--fake-process``: seed, report the kubeconfig, serve until told to stop."""
    from aicr_pytest.testing.cluster import FakeCluster

    with FakeCluster(simulate=False) as fc:
        t0 = time.perf_counter()
        used = seed(fc, args.nodes, args.pods, args.dra_every)
        conn.send((str(fc.kubeconfig_path), time.perf_counter() - t0, rss_mb(), used))
        conn.recv()  # "stop"
        conn.send((fc.request_count(), rss_mb()))


def run_check_path(
    kubeconfig: str, policy: str | None, page_size: int, prefetch: bool | None = None
) -> dict[str, Any]:
    """``choose_node`` exactly as the check calls it, with the facade's default page size patched
    only when ``--page-size`` differs from it."""
    from aicr_pytest.inference import cluster as live
    from aicr_pytest.kube.client import Cluster, connect

    if page_size != 500:
        original = Cluster.list

        def list_with(self: Cluster, *a: Any, **kw: Any) -> Any:
            kw.setdefault("page_size", page_size)
            return original(self, *a, **kw)

        Cluster.list = list_with  # type: ignore[method-assign]

    marks: list[tuple[float, str]] = []
    cluster = connect(kubeconfig)
    if prefetch is not None:
        cluster.prefetch_pages = prefetch
    t0 = time.perf_counter()

    def say(text: str) -> None:
        marks.append((time.perf_counter(), text))

    mode, choice = live.choose_node(cluster, policy, None, say)
    wall = time.perf_counter() - t0
    cluster.close()
    return {
        "wall": wall,
        "probe": marks[0][0] - t0 if marks else float("nan"),
        "rest": marks[-1][0] - marks[0][0] if len(marks) > 1 else float("nan"),
        "evidence": [line for _, text in marks for line in text.splitlines()],
        "choice": choice,
        "mode": mode,
        "stats": cluster.stats,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--page-size", type=int, default=500, help="facade list page size (check: 500)")
    parser.add_argument("--dra-every", type=int, default=0, help="every Nth node is a DRA node (0: none)")
    parser.add_argument("--policy", default=None, help="configured GPU allocation policy (default: none)")
    parser.add_argument(
        "--no-freeze", action="store_true", help="in-process: leave the seeded fake in the cyclic GC's view"
    )
    parser.add_argument(
        "--fake-process", action="store_true", help="serve the fake from a forked child (RSS: check only)"
    )
    parser.add_argument(
        "--prefetch",
        choices=("on", "off"),
        default=None,
        help="facade list-page prefetch (default: the facade's default)",
    )
    args = parser.parse_args(argv)
    from aicr_pytest.kube.client import PREFETCH_PAGES_DEFAULT

    prefetch = PREFETCH_PAGES_DEFAULT if args.prefetch is None else args.prefetch == "on"

    print(
        f"nodes={args.nodes} pods={args.pods} namespaces={NAMESPACES} dra_every={args.dra_every} "
        f"page_size={args.page_size} policy={args.policy} "
        f"fake={'child process' if args.fake_process else 'in-process'} "
        f"prefetch={'on' if prefetch else 'off'}"
    )
    fake_requests: int | None = None
    child_rss = ""
    if args.fake_process:
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(args, child), daemon=True)
        proc.start()
        kubeconfig, seed_s, seeded_rss, (used, capacity) = parent.recv()
        print(
            f"seeding (child, not counted): {seed_s:.2f} s; child RSS after seeding {seeded_rss:.0f} MB; "
            f"device-plugin GPUs in use {used}/{capacity}"
        )
        base_rss = rss_mb()
        result = run_check_path(kubeconfig, args.policy, args.page_size, prefetch)
        parent.send("stop")
        fake_requests, child_peak = parent.recv()
        proc.join(10)
        child_rss = f"; fake child peak {child_peak:.0f} MB"
        peak = check_rss = rss_mb()
        rss_note = f"check process only, {base_rss:.0f} MB before the check path{child_rss}"
    else:
        from aicr_pytest.testing.cluster import FakeCluster

        with FakeCluster(simulate=False) as fc:
            t0 = time.perf_counter()
            used, capacity = seed(fc, args.nodes, args.pods, args.dra_every)
            seed_s = time.perf_counter() - t0
            seeded_rss = rss_mb()
            if not args.no_freeze:
                gc.freeze()  # the fake's objects are not the check's: keep them out of its GC passes
            print(
                f"seeding (not counted): {seed_s:.2f} s; RSS after seeding {seeded_rss:.0f} MB; "
                f"device-plugin GPUs in use {used}/{capacity}"
            )
            base = fc.request_count()
            result = run_check_path(str(fc.kubeconfig_path), args.policy, args.page_size, prefetch)
            fake_requests = fc.request_count() - base
            peak = rss_mb()
        check_rss = peak - seeded_rss
        rss_note = (
            f"process peak {peak:.0f} MB includes the in-process fake: {seeded_rss:.0f} MB after seeding, "
            f"+{check_rss:.0f} MB during the check path"
        )

    stats = result["stats"]
    choice = result["choice"]
    print(f"allocation probe (nodes, discovery, DRA lists): {result['probe']:.2f} s")
    print(f"occupancy (pods + claims, paginated) + candidates + choice: {result['rest']:.2f} s")
    print(f"check path wall time: {result['wall']:.2f} s (target < {TARGET_S:.0f} s)")
    print(f"check-path RSS: {check_rss:.0f} MB (target < {TARGET_MB:.0f} MB; {rss_note})")
    print(
        f"facade: {stats.requests} requests ({dict(sorted(stats.by_verb.items()))}), {stats.pages} pages, "
        f"{stats.retries} retries; fake server saw {fake_requests}"
    )
    print(
        f"chosen: {choice.name} free={choice.free_gpus}/{choice.node_gpus} "
        f"wiring={'DRA' if choice.dra_wiring else 'device-plugin'} candidates={choice.candidates}"
    )
    for line in result["evidence"]:
        print(f"  | {line if len(line) <= 160 else line[:150] + ' ...'}")
    ok = result["wall"] < TARGET_S and check_rss < TARGET_MB
    print("RESULT: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
