"""Benchmark: parse a 1 GB NCCL launcher log (target: < 10 s, constant memory).

Generates the log into a temporary file (streamed, never held in memory): NCCL INFO init noise,
the all_reduce_perf results table with INFO lines interleaved, then teardown noise after the
table (the GKE FasTrak shape).  Then parses it with the check's parser and prints wall time,
throughput and peak RSS before/after parsing.

    .venv/bin/python benchmarks/bench_nccl_parser.py [--size-mb 1024] [--timestamps] [--keep PATH]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aicr_pytest import nccl

H0 = "nccl-bw-0a1b2c3d4e-node-0-0"
INFO = [
    f"{H0}:52:61 [0] NCCL INFO Channel 07/24 : 0[0] -> 1[1] via P2P/CUMEM/read\n",
    f"{H0}:77:90 [3] NCCL INFO Channel 11/0 : 11[3] -> 12[4] [send] via NET/AWS Libfabric/2/GDRDMA\n",
    f"{H0}:52:61 [0] NCCL INFO Channel 00/24 :    0   1   2   3   4   5   6   7   8   9  10  11\n",
    f"[1,5]<stderr>:{H0}:57:66 [5] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)\n",
    f"{H0}:870:938 [0] NCCL INFO NET/FasTrak: SCTP Closed\n",
]
BANNER = "nccl-bw-0a1b2c3d4e-node-0-0:52:61 [0] NCCL INFO Using network AWS Libfabric\n"
HEADER = (
    "# nThread 1 nGpus 1 minBytes 1024 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)\n"
)


def _row(size: int, busbw: float) -> str:
    return (
        f"{size:12d}  {size // 4:12d}     float     sum      -1   {size / 1e6:8.2f}  {busbw * 0.53:6.2f}"
        f"  {busbw:6.2f}      0   {size / 1e6:8.2f}  {busbw * 0.53:6.2f}"
        f"  {max(busbw - 0.3, 0.0):6.2f}      0\n"
    )


def generate(path: Path, size_bytes: int, timestamps: bool) -> float:
    """Write ~size_bytes of log to ``path``; returns the busbw of the largest row."""
    stamp = "2026-07-13T10:00:00.123456789Z " if timestamps else ""
    block = "".join(stamp + INFO[i % len(INFO)] for i in range(40_000)).encode()
    before = int(size_bytes * 0.9)
    written = 0
    with path.open("wb") as fh:
        fh.write((stamp + BANNER).encode())
        while written < before:
            fh.write(block)
            written += len(block)
        fh.write((stamp + HEADER.replace("\n", "\n" + stamp, 2)).encode())
        size, peak = 1024, 0.0
        while size <= 17179869184:
            peak = min(482.0, size / 2**24)
            fh.write((stamp + _row(size, peak)).encode())
            fh.write((stamp + INFO[0]).encode())  # INFO interleaved with the rows
            size *= 2
        fh.write(f"{stamp}# Out of bounds values : 0 OK\n{stamp}# Avg bus bandwidth    : 201.5\n".encode())
        while written < size_bytes:
            fh.write(block)
            written += len(block)
    return round(peak, 2)


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument(
        "--timestamps", action="store_true", help="prefix every line like kubectl logs --timestamps"
    )
    parser.add_argument("--keep", type=Path, help="write the log here and keep it")
    args = parser.parse_args()

    tmpdir = None
    if args.keep:
        path = args.keep
    else:
        tmpdir = tempfile.TemporaryDirectory(prefix="bench-nccl-")
        path = Path(tmpdir.name) / "launcher.log"
    try:
        t0 = time.perf_counter()
        expected = generate(path, args.size_mb << 20, args.timestamps)
        gen_s = time.perf_counter() - t0
        size = os.path.getsize(path)
        rss_before = maxrss_mb()
        t0 = time.perf_counter()
        result = nccl.parse_all_reduce_file(path)
        parse_s = time.perf_counter() - t0
        rss_after = maxrss_mb()
        nccl.verify_transport("net", result.transport)
        ok = result.busbw_gbps == expected and result.complete and result.size_bytes == 17179869184
        kind = "timestamped" if args.timestamps else "plain"
        print(f"log:        {size / 2**20:.0f} MiB ({kind}), generated in {gen_s:.1f} s")
        print(f"parse:      {parse_s:.2f} s  ({size / 2**20 / parse_s:.0f} MiB/s)")
        print(
            f"value:      {result.busbw_gbps:.2f} GB/s at {result.size_bytes} B, {len(result.rows)} rows, "
            f"transport {result.transport.network!r}  [{'ok' if ok else 'WRONG, expected ' + str(expected)}]"
        )
        print(
            f"peak RSS:   {rss_before:.1f} MiB before parsing, {rss_after:.1f} MiB after "
            f"(+{rss_after - rss_before:.1f} MiB)"
        )
        print(f"target:     < 10 s -> {'PASS' if parse_s < 10 and ok else 'FAIL'}")
        return 0 if ok and parse_s < 10 else 1
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
