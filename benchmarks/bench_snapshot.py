"""Benchmark: parse a ~20 MB snapshot and resolve 1,000 constraint paths.

Run: ``.venv/bin/python benchmarks/bench_snapshot.py [--nodes 5000] [--format yaml|json] [--keep]``

The generated snapshot has the shape ``aicr snapshot`` produces, scaled to a 5,000-node cluster:
``K8s`` (server, image with one tag per deployed image, policy, node), ``GPU.hardware``, ``OS`` (grub,
a few thousand sysctl paths, kmod, release), ``SystemD`` units with their D-Bus properties,
``NodeTopology`` (summary, one taint and several labels per node) and ``NetworkTopology.pfs`` with
eight NIC items per node.  Targets: parse + 1,000 lookups under 3 s, peak RSS under 400 MB.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from aicr_pytest.core.snapshot import load_snapshot_text  # noqa: E402

TARGET_SECONDS = 3.0
TARGET_RSS_MB = 400.0


def _node(i: int) -> str:
    return f"ip-10-{i // 65536 % 256}-{i // 256 % 256}-{i % 256}.ec2.internal"


def build_snapshot(nodes: int, seed: int = 7) -> dict[str, Any]:
    rnd = random.Random(seed)
    node_names = [_node(i) for i in range(nodes)]
    images = {
        f"registry-{i % 40}/team-{i % 97}/app-{i}": f"v{i % 9}.{i % 31}.{i % 7}" for i in range(nodes // 2)
    }
    sysctl = {f"/proc/sys/kernel/param_{i}": str(rnd.randint(0, 1 << 20)) for i in range(3000)}
    sysctl["/proc/sys/kernel/osrelease"] = "6.8.0-1015-aws"
    sysctl["/proc/sys/vm/swappiness"] = "60"
    units = [
        {
            "subtype": f"{name}.service",
            "data": {
                **{f"Property{j}": f"value-{j}-{rnd.random():.6f}" for j in range(250)},
                "ActiveState": "active",
                "SubState": "running",
                "MemoryCurrent": rnd.randint(1 << 20, 1 << 32),
                "CPUUsageNSec": rnd.randint(1 << 30, 1 << 40),
                "Restart": "always",
                "NRestarts": 0,
                "TasksMax": 4915.2,
            },
        }
        for name in ("containerd", "kubelet", "docker", "nvidia-persistenced")
    ]
    taints = {f"dedicated.{n}": f"NoSchedule|gpu|{n}" for n in node_names}
    labels: dict[str, Any] = {}
    for n in node_names:
        labels[f"node.kubernetes.io/instance-type.{n}"] = f"p5.48xlarge|{n}"
        labels[f"topology.kubernetes.io/zone.{n}"] = f"us-west-2{'abc'[hash(n) % 3]}|{n}"
    labels["nvidia.com/gpu.product"] = (
        "NVIDIA-H100-80GB-HBM3|" + ",".join(node_names[:20]) + f" (+{nodes - 20} more)"
    )
    pfs = []
    for i, n in enumerate(node_names):
        for nic in range(8):
            pfs.append(
                {
                    "context": {
                        "pciAddress": f"0000:{nic + 0x10:02x}:00.0",
                        "deviceID": "0x1021",
                        "psid": "MT_0000000838",
                        "partNumber": "900-9X7AH-0078-DTZ",
                        "rdmaDevice": f"mlx5_{nic}",
                        "networkInterface": f"enp{nic + 16}s0np0",
                        "model": "ConnectX-7",
                        "connectedGPU": f"GPU-{i:05d}-{nic}",
                        "gpuProximity": "PIX",
                        "node": n,
                    },
                    "data": {"rail": nic, "numaNode": nic // 4, "traffic": "east-west", "uid": i * 8 + nic},
                }
            )
    return {
        "kind": "Snapshot",
        "apiVersion": "aicr.run/v1alpha2",
        "metadata": {"timestamp": "2026-07-01T10:30:00Z", "version": "v0.12.0", "source-node": node_names[0]},
        "measurements": [
            {
                "type": "K8s",
                "subtypes": [
                    {
                        "subtype": "server",
                        "data": {
                            "version": "v1.33.5-eks-3025e55",
                            "platform": "linux/amd64",
                            "goVersion": "go1.24.4",
                        },
                    },
                    {"subtype": "image", "data": images},
                    {
                        "subtype": "policy",
                        "data": {"driver.version": "580.105.08", "devicePlugin.enabled": "true"},
                    },
                    {
                        "subtype": "node",
                        "data": {
                            "source-node": node_names[0],
                            "provider": "eks",
                            "kubelet-version": "v1.33.5-eks-3025e55",
                        },
                    },
                ],
            },
            {
                "type": "GPU",
                "subtypes": [
                    {
                        "subtype": "hardware",
                        "data": {"gpu-present": True, "gpu-count": 8, "driver-loaded": True, "model": "h100"},
                    }
                ],
            },
            {
                "type": "OS",
                "subtypes": [
                    {
                        "subtype": "grub",
                        "data": {"BOOT_IMAGE": "/boot/vmlinuz-6.8.0-1015-aws", "console": "ttyS0"},
                    },
                    {"subtype": "sysctl", "data": sysctl},
                    {"subtype": "kmod", "data": {f"mod_{i}": True for i in range(300)}},
                    {"subtype": "release", "data": {"ID": "ubuntu", "VERSION_ID": "24.04"}},
                ],
            },
            {"type": "SystemD", "subtypes": units},
            {
                "type": "NodeTopology",
                "subtypes": [
                    {
                        "subtype": "summary",
                        "data": {"node-count": nodes, "taint-count": nodes, "label-count": 40 * nodes},
                    },
                    {"subtype": "taint", "data": taints},
                    {"subtype": "label", "data": labels},
                ],
            },
            {
                "type": "NetworkTopology",
                "subtypes": [
                    {"subtype": "capabilities", "data": {"sriov": True, "rdma": True, "ib": False}},
                    {"subtype": "pfs", "items": pfs},
                ],
            },
        ],
    }


def lookup_paths(doc: dict[str, Any], count: int, seed: int = 11) -> list[str]:
    rnd = random.Random(seed)
    sysctl = list(doc["measurements"][2]["subtypes"][1]["data"])
    labels = list(doc["measurements"][4]["subtypes"][2]["data"])
    nitems = len(doc["measurements"][5]["subtypes"][1]["items"])
    fixed = [
        "K8s.server.version",
        "OS.release.ID",
        "OS.release.VERSION_ID",
        "OS.sysctl./proc/sys/kernel/osrelease",
        "GPU.hardware.model",
        "NodeTopology.summary.node-count",
    ]
    out = list(fixed)
    while len(out) < count:
        r = rnd.random()
        if r < 0.3:
            out.append(f"OS.sysctl.{rnd.choice(sysctl)}")
        elif r < 0.55:
            out.append(f"NodeTopology.label.{rnd.choice(labels)}")
        elif r < 0.8:
            out.append(f"NetworkTopology.pfs[{rnd.randrange(nitems)}].pciAddress")
        else:
            out.append(f"NetworkTopology.pfs[uid={rnd.randrange(nitems)}].rdmaDevice")
    return out


def measure(path: Path, fmt: str, paths: list[str]) -> dict[str, float]:
    """Run in a fresh process: read + parse the file, then resolve ``paths``."""
    rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    c0 = time.process_time()
    t0 = time.perf_counter()
    raw = path.read_bytes()
    snap = load_snapshot_text(raw, str(path), format=fmt)
    del raw
    t1 = time.perf_counter()
    found = sum(1 for p in paths if snap.get(p) is not None)
    t2 = time.perf_counter()
    c2 = time.process_time()
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "parse_s": t1 - t0,
        "lookup_s": t2 - t1,
        "total_s": t2 - t0,
        "cpu_s": c2 - c0,
        "found": found,
        "rss_start_mb": rss_start,
        "rss_peak_mb": rss_peak,
    }


def generate(snap_file: Path, paths_file: Path, nodes: int, lookups: int, fmt: str) -> None:
    doc = build_snapshot(nodes)
    paths_file.write_text(json.dumps(lookup_paths(doc, lookups)))
    if fmt == "json":
        snap_file.write_text(json.dumps(doc))
    else:  # block style, unbounded width, 4-space indent: what Go's yaml.v3 writes
        snap_file.write_text(yaml.safe_dump(doc, sort_keys=False, width=10**9, indent=4, allow_unicode=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--lookups", type=int, default=1000)
    ap.add_argument("--format", choices=("yaml", "json"), default="yaml")
    ap.add_argument("--keep", action="store_true", help="keep the generated file")
    ap.add_argument("--generate", nargs=2, type=Path, help=argparse.SUPPRESS)  # internal: child process
    args = ap.parse_args(argv)

    if args.generate is not None:
        generate(args.generate[0], args.generate[1], args.nodes, args.lookups, args.format)
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        snap_file = Path(tmp) / f"snapshot.{args.format}"
        paths_file = Path(tmp) / "paths.json"
        # generated in a child process so that building the document does not count towards our peak RSS
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--nodes",
                str(args.nodes),
                "--lookups",
                str(args.lookups),
                "--format",
                args.format,
                "--generate",
                str(snap_file),
                str(paths_file),
            ],
            check=True,
        )
        size_mb = snap_file.stat().st_size / 1e6
        paths = json.loads(paths_file.read_text())
        r = measure(snap_file, args.format, paths)
        if args.keep:
            kept = Path(tempfile.gettempdir()) / f"aicr-bench-snapshot.{args.format}"
            kept.write_bytes(snap_file.read_bytes())
            print(f"file: {kept}")
    print(f"snapshot: {size_mb:.1f} MB {args.format}, {args.nodes} nodes")
    print(f"parse: {r['parse_s']:.3f} s")
    print(f"lookups: {len(paths)} in {r['lookup_s'] * 1000:.1f} ms ({r['found']} resolved)")
    print(f"total: {r['total_s']:.3f} s wall, {r['cpu_s']:.3f} s CPU (target < {TARGET_SECONDS:.0f} s)")
    print(
        f"peak RSS: {r['rss_peak_mb']:.0f} MB (interpreter + imports {r['rss_start_mb']:.0f} MB; "
        f"target < {TARGET_RSS_MB:.0f} MB)"
    )
    ok = r["total_s"] < TARGET_SECONDS and r["rss_peak_mb"] < TARGET_RSS_MB and r["found"] == len(paths)
    print("result: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
