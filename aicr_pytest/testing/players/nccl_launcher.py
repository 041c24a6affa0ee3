"""The ``all_reduce_perf`` launcher log the NCCL player serves: its spec, bandwidth model and rendering.

:class:`LauncherSpec` reads what the launcher's ``mpirun … all_reduce_perf`` line asks for,
:func:`peak_busbw` is the healthy bus bandwidth per GPU and transport, :func:`render_launcher_log`
writes a realistic log for that sweep and :func:`results_digest` the termination message the GKE
launcher wrapper leaves.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: ``tail -c`` of the GKE launcher wrapper: the kubelet keeps at most 4 KiB of termination message.
TERMINATION_MESSAGE_BYTES = 3900
_LATENCY_US = 45.0
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

_RESULT_ROW = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z]")


def results_digest(log: str, limit: int = TERMINATION_MESSAGE_BYTES) -> str:
    """What the GKE launcher wrapper writes to ``/dev/termination-log`` on success: the results rows
    (size and count numeric, then a type word) and the ``Avg bus bandwidth`` trailer, last ``limit``
    bytes (``awk … | tail -c 3900``)."""
    kept = [line for line in log.splitlines() if _RESULT_ROW.match(line) or "Avg bus bandwidth" in line]
    data = "".join(line + "\n" for line in kept).encode()
    return data[-limit:].decode("utf-8", "replace")


def parse_size(text: str) -> int:
    """nccl-tests size arguments: ``1K``, ``16G``, ``512`` (binary units)."""
    t = str(text).strip().upper().removesuffix("B")
    unit = t[-1:] if t[-1:] in _SIZE_UNITS else ""
    number = t[:-1] if unit else t
    return int(float(number) * _SIZE_UNITS[unit])


@dataclass(frozen=True)
class LauncherSpec:
    """What the launcher's ``mpirun … all_reduce_perf`` line asks for."""

    min_bytes: int = 1 << 10
    max_bytes: int = 16 << 30
    factor: int = 2
    debug_info: bool = False
    nvls: bool = False
    network: str = "Socket"  #: what NCCL would pick with the runtime's env (no fault)
    termination_log: bool = False  #: the launcher copies its results to /dev/termination-log

    @classmethod
    def from_container(cls, container: Mapping[str, Any] | None) -> LauncherSpec:
        if not container:
            return cls()
        words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
        env = {str(e.get("name")): str(e.get("value", "")) for e in container.get("env") or []}
        text = " ".join(words)
        flags = {**env, **dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))}

        def arg(flag: str, default: str) -> str:
            for i, w in enumerate(words[:-1]):
                if w == flag:
                    return words[i + 1]
            return default

        try:
            min_bytes = parse_size(arg("-b", "1K"))
            max_bytes = parse_size(arg("-e", "16G"))
            factor = max(2, int(arg("-f", "2")))
        except ValueError:
            min_bytes, max_bytes, factor = 1 << 10, 16 << 30, 2
        nvls = flags.get("NCCL_NVLS_ENABLE") == "1"
        if flags.get("FI_PROVIDER") == "efa" and flags.get("NCCL_NET_PLUGIN") != "none":
            network = "AWS Libfabric"
        elif "NCCL_IB_HCA" in flags or flags.get("NCCL_IB_DISABLE") == "0":
            network = "IB"
        elif any(k.startswith("NCCL_FASTRAK_") for k in flags):
            network = "FasTrak"
        else:
            network = "Socket"
        return cls(
            min_bytes=min_bytes,
            max_bytes=max(max_bytes, min_bytes),
            factor=factor,
            debug_info=flags.get("NCCL_DEBUG", "").upper() == "INFO" or "NCCL_DEBUG=INFO" in text,
            nvls=nvls,
            network=network,
            termination_log="/dev/termination-log" in text,
        )


def peak_busbw(product: str, spec: LauncherSpec) -> float:
    """Healthy out-of-place bus bandwidth at the largest message (GB/s) for the GPU and transport."""
    p = product.upper()
    if "GB200" in p or "GB300" in p:
        if spec.nvls:
            return 742.0
        return 96.0 if spec.network != "Socket" else 380.0
    if "B200" in p:
        return 520.0
    if "H200" in p:
        return 468.0
    if "H100" in p:  # a3-megagpu-8g over TCPXO measured ~338-340 GB/s (AICR overlay note)
        return 340.0 if spec.network == "FasTrak" else 452.0
    return 300.0


#: ``nccl-slow-node``: a run the slow node takes part in gets a tenth of the healthy bus bandwidth
SLOW_NODE_FACTOR = 0.1
GPU_COUNT_LABEL = "nvidia.com/gpu.count"


def last_gpu_node(nodes: Iterable[Mapping[str, Any]]) -> str | None:
    """The last node in name order that GFD labels with a GPU count (the node faults act on)."""
    names = [
        str((n.get("metadata") or {}).get("name") or "")
        for n in nodes
        if GPU_COUNT_LABEL in ((n.get("metadata") or {}).get("labels") or {})
    ]
    return max(names) if names else None


def slow_node_sets(
    faults: Collection[str], nodes: Iterable[Mapping[str, Any]], scripted: Iterable[Collection[str]] = ()
) -> list[frozenset[str]]:
    """The node sets that make a run slow when all of a set's nodes take part: the last GPU node
    under ``nccl-slow-node``, plus the ``scripted`` sets (a test's link fault: two nodes, or all)."""
    sets = [frozenset(s) for s in scripted if s]
    if "nccl-slow-node" in faults and (last := last_gpu_node(nodes)) is not None:
        sets.append(frozenset({last}))
    return sets


def bandwidth_factor(run_nodes: Collection[str], slow: Iterable[frozenset[str]]) -> float:
    """:data:`SLOW_NODE_FACTOR` when the run's nodes hold every node of one of the ``slow`` sets."""
    return SLOW_NODE_FACTOR if any(s <= set(run_nodes) for s in slow) else 1.0


def device_name(product: str) -> str:
    """GFD product label → the name nvidia-smi / nccl-tests print (``NVIDIA-H100-80GB-HBM3`` → …)."""
    return product.replace("-", " ") if product else "NVIDIA GPU"


def render_launcher_log(
    *,
    jobset: str,
    spec: LauncherSpec,
    workers: Sequence[str],
    procs_per_node: int,
    product: str,
    peak_gbps: float,
    network: str,
    seed: str,
) -> tuple[str, list[str], str]:
    """(``head``, ``rows``, ``trailer``) of a launcher log: ``head`` is written when the launcher
    starts, rows one by one, the trailer last."""
    rng = random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:12], 16))
    ranks = max(1, len(workers) * max(1, procs_per_node))
    factor = 2.0 * (ranks - 1) / ranks if ranks > 1 else 1.0
    peak = peak_gbps * rng.uniform(0.985, 1.015)
    algbw_peak = peak / factor if factor else peak
    head: list[str] = []
    for w in workers:
        head.append(f"Warning: Permanently added '{w}.{jobset}' (ED25519) to the list of known hosts.")
    head.append(
        f"# nThread 1 nGpus 1 minBytes {spec.min_bytes} maxBytes {spec.max_bytes} "
        f"step: {spec.factor}(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
    )
    head.append("#")
    head.append("# Using devices")
    dev = device_name(product)
    for r in range(ranks):
        host = workers[r // procs_per_node] if workers else "localhost"
        local = r % procs_per_node
        pid = 41 + local
        head.append(
            f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>10} device {local:2d} "
            f"[0000:{0x18 + 0x10 * local:02x}:00] {dev}"
        )
    if spec.debug_info:
        host = workers[0] if workers else "localhost"
        pfx = f"{host}:41:41 [0] NCCL INFO "
        head += [
            f"{pfx}Bootstrap: Using eth0:10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)}<0>",
            f"{pfx}NCCL version 2.27.7+cuda12.9",
            f"{pfx}cudaDriverVersion 12090",
        ]
        if network == "AWS Libfabric":
            head += [
                f"{pfx}NET/OFI Initializing aws-ofi-nccl 1.16.3",
                f"{pfx}NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)",
                f"{pfx}NET/Plugin: Loaded net plugin Libfabric (v10)",
            ]
        elif network == "Socket" and spec.network == "AWS Libfabric":
            head += [
                f"{pfx}NET/OFI aws-ofi-nccl initialization failed",
                f"{pfx}NET/Plugin: Failed to initialize net plugin Libfabric, "
                "falling back to internal implementation",
                f"{pfx}NET/Socket : Using [0]eth0:10.0.1.17<0>",
            ]
        elif network == "IB":
            nics = " ".join(f"[{i}]rocep{144 + 16 * i}s0:1/RoCE" for i in range(max(1, procs_per_node)))
            head.append(f"{pfx}NET/IB : Using {nics} ; OOB eth0:10.0.1.17<0>")
        elif network == "Socket" and spec.network == "IB":
            head += [f"{pfx}NET/IB : No device found.", f"{pfx}NET/Socket : Using [0]eth0:10.0.1.17<0>"]
        elif network == "Socket":
            head.append(f"{pfx}NET/Socket : Using [0]eth0:10.0.1.17<0>")
        head.append(f"{pfx}Using network {network}")
        if spec.nvls:
            head += [
                f"{pfx}MNNVL 1 cliqueId 1 cliqueSize {ranks} cliqueRank 0",
                f"{pfx}NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)",
            ]
        comm = f"0x{rng.getrandbits(44):x}"
        for ch in range(2):
            ring = " ".join(f"{(i + ch) % ranks:3d}" for i in range(ranks))
            head.append(f"{pfx}Channel {ch:02d}/24 : {ring}")
        if spec.nvls:
            head.append(
                f"{pfx}NVLS comm {comm} headRank 0 nHeads {procs_per_node} nvlsRanks {ranks} "
                f"buffSize 1048576 memSize 2097152 nvlsPerRankSize 201326592"
            )
        head.append(
            f"{pfx}comm {comm} rank 0 nRanks {ranks} nNodes {len(workers)} localRanks {procs_per_node} "
            f"localRank 0 MNNVL {1 if spec.nvls else 0} - Init COMPLETE"
        )
    head += ["#", *_TABLE_HEADER]
    rows: list[str] = []
    busbws: list[float] = []
    size = spec.min_bytes
    while size <= spec.max_bytes:
        t1 = (_LATENCY_US + size / (algbw_peak * 1e3)) * rng.uniform(0.99, 1.01)
        t2 = t1 * rng.uniform(0.995, 1.02)
        a1, a2 = size / t1 / 1e3, size / t2 / 1e3
        b1, b2 = a1 * factor, a2 * factor
        busbws.append(b1)
        lead = f"{size:>12}  {size // 4:>12}  {'float':>8}  {'sum':>6}  {-1:>6}"
        rows.append(
            f"{lead}  {_us(t1):>7}  {a1:6.2f}  {b1:6.2f}  {0:>6}  {_us(t2):>7}  {a2:6.2f}  {b2:6.2f}  {0:>6}"
        )
        size *= spec.factor
    avg = sum(busbws) / len(busbws) if busbws else 0.0
    trailer = [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {avg:.4g} ",
        "#",
        "# Collective test concluded: all_reduce_perf",
        "#",
    ]
    return "\n".join(head) + "\n", rows, "\n".join(trailer) + "\n"


_GROUP = "   time   algbw   busbw #wrong  "
_TABLE_HEADER = (
    "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place",
    "#       size         count      type   redop    root  " + _GROUP + _GROUP.rstrip(),
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    + "            (us)  (GB/s)  (GB/s)",
)


def _us(t: float) -> str:
    if t < 1e3:
        return f"{t:.2f}"
    if t < 1e5:
        return f"{t:.1f}"
    return f"{t:.0f}"
