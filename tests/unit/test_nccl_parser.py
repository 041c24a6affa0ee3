"""The NCCL launcher-log parser: our adversarial fixtures, streaming memory (AICR's own samples:
tests/compat/test_reference_nccl_samples.py)."""

from __future__ import annotations

import gc
import io
import re
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import nccl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nccl"

# AICR's parser, used only to document where we deliberately differ.
AICR_REGEX = re.compile(r"\s+(\d+)\s+\d+\s+\w+\s+\w+\s+-?\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)")


def aicr_value(text: str) -> float | None:
    matches = AICR_REGEX.findall(text)
    return float(matches[-1][1]) if matches else None


# --- our fixtures --------------------------------------------------------------------------------

# file → (our value, size of that row, AICR's regex value on the same file)
FIXTURE_VALUES: dict[str, tuple[float, int, float | None]] = {
    # ssh/mpirun warnings around the table, NCCL INFO lines between rows, full 1K..16G sweep
    "eks-launcher-warnings-interleaved.log": (481.76, 17179869184, 481.76),
    # NCCL INFO ring listings after the table: AICR's regex takes "8 ... 15" from a ring line
    # and reports 15 GB/s; only table rows count here.
    "info-ring-after-table.log": (333.5, 8589934592, 15.0),
    # older nccl-tests layout (no root column, float "error" column): AICR's regex never matches
    # (it needs an integer root), we read it.
    "old-format-no-root.log": (186.4, 134217728, None),
    # Socket fallback still has a valid table: the value parses, the -net transport rule fails
    "socket-fallback-net.log": (390.0, 17179869184, 390.0),
    # sweep from 0 bytes; the value is the largest message's row
    "sweep-from-zero.log": (150.0, 268435456, 150.0),
    # mpirun --tag-output prefixes on every line
    "tag-output.log": (244.8, 4294967296, 244.8),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_VALUES))
def test_fixture_values(name: str) -> None:
    path = FIXTURES / name
    value, size, aicr = FIXTURE_VALUES[name]
    assert aicr_value(path.read_text()) == aicr
    result = nccl.parse_all_reduce_file(path)
    assert (result.busbw_gbps, result.size_bytes) == (value, size)
    assert result.complete
    assert result.rows[-1].size_bytes == size
    # same answer via the line iterator and via tiny chunks (chunk boundaries inside lines)
    with path.open() as fh:
        assert nccl.parse_all_reduce(fh).busbw_gbps == value
    with path.open("rb") as fb:
        assert nccl.parse_all_reduce_stream(fb, chunk_bytes=7).busbw_gbps == value


def test_interleaved_fixture_transport_and_sweep() -> None:
    result = nccl.parse_all_reduce_file(FIXTURES / "eks-launcher-warnings-interleaved.log")
    assert result.transport.network == "AWS Libfabric"
    nccl.verify_transport("net", result.transport)
    assert len(result.rows) == 25
    assert result.rows[0].size_bytes == 1024
    assert result.avg_busbw_gbps == pytest.approx(128.2376)


def test_sweep_from_zero_keeps_the_zero_row() -> None:
    result = nccl.parse_all_reduce_file(FIXTURES / "sweep-from-zero.log")
    assert (result.rows[0].size_bytes, result.rows[0].busbw_gbps) == (0, 0.0)
    assert result.rows[1].size_bytes == 1


def test_tag_output_transport_markers() -> None:
    result = nccl.parse_all_reduce_file(FIXTURES / "tag-output.log")
    assert result.transport.nvls
    nccl.verify_transport("nvls", result.transport)


def test_socket_fallback_fails_net_even_with_high_bandwidth() -> None:
    result = nccl.parse_all_reduce_file(FIXTURES / "socket-fallback-net.log")
    assert result.busbw_gbps == 390.0
    assert nccl.evaluate(
        "nccl-all-reduce-bw-net", nccl.parse_threshold("x", ">= 40"), result.busbw_gbps
    ).passed
    with pytest.raises(nccl.TransportError) as err:
        nccl.verify_transport("net", result.transport)
    assert str(err.value) == nccl.MSG_NET_SOCKET


def test_truncated_mid_row_fails_closed() -> None:
    # AICR would report the 2 GiB row (420.00) as if it were the result of the whole sweep.
    with pytest.raises(nccl.NcclParseError) as err:
        nccl.parse_all_reduce_file(FIXTURES / "truncated-mid-row.log")
    assert "results table is truncated: its last row is incomplete" in str(err.value)
    assert err.value.rows[-1].size_bytes == 2147483648
    assert err.value.tail[-1].startswith("  4294967296")


def test_truncated_at_a_line_boundary_before_max_bytes_fails_closed() -> None:
    text = (FIXTURES / "truncated-mid-row.log").read_text().rsplit("\n", 1)[0] + "\n"
    with pytest.raises(nccl.NcclParseError) as err:
        nccl.parse_all_reduce(text)
    assert str(err.value) == nccl.MSG_PARSE_FAILED.format(
        cause=nccl.MSG_TABLE_TRUNCATED_SWEEP.format(size=2147483648, max_bytes=17179869184)
    )


def test_in_place_only_table_is_refused() -> None:
    # AICR's regex would report the in-place busbw (99.70) as if it were out-of-place.
    with pytest.raises(nccl.NcclParseError) as err:
        nccl.parse_all_reduce_file(FIXTURES / "in-place-only.log")
    assert nccl.MSG_REJECTED_ROWS.format(count=11) in str(err.value)
    assert err.value.avg_busbw_gbps == 40.5


# --- inline adversarial cases ----------------------------------------------------------------------

HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)\n"
)


def row(size: int, busbw: float, in_place: float | None = None) -> str:
    ip = busbw if in_place is None else in_place
    lead = f"{size:12d}  {size // 4:12d}     float     sum      -1"
    return f"{lead}    100.0   10.00  {busbw:6.2f}      0    100.0   10.00  {ip:6.2f}      0"


@pytest.mark.parametrize("text", ["", "\n", "   \n\n", "\x00\x01binary\xff"])
def test_empty_or_garbage_log(text: str) -> None:
    with pytest.raises(nccl.NcclParseError) as err:
        nccl.parse_all_reduce(text)
    assert str(err.value) == "failed to parse bandwidth from logs: could not find bandwidth value in logs"


def test_value_is_out_of_place_busbw_of_the_largest_size_not_max_not_avg() -> None:
    text = HEADER + row(1024, 500.0) + "\n" + row(2048, 80.0, 900.0) + "\n# Avg bus bandwidth    : 290\n"
    result = nccl.parse_all_reduce(text)
    assert (result.busbw_gbps, result.size_bytes, result.avg_busbw_gbps) == (80.0, 2048, 290.0)


def test_largest_size_wins_even_if_not_printed_last() -> None:
    text = HEADER + row(4096, 300.0) + "\n" + row(1024, 100.0) + "\n# Avg bus bandwidth    : 200\n"
    assert nccl.parse_all_reduce(text).busbw_gbps == 300.0


def test_row_at_start_of_log_without_leading_space() -> None:
    # AICR's regex needs whitespace before the size, so it misses a first-line row; we don't.
    text = row(1024, 12.5).lstrip() + "\n"
    assert aicr_value(text) is None
    assert nccl.parse_all_reduce(text).busbw_gbps == 12.5


def test_rows_after_a_closed_table_start_a_new_table() -> None:
    # e.g. termination-message rows appended after a complete streamed table
    first = (
        HEADER
        + row(8589934592, 333.47)
        + "\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 333.49\n"
    )
    appended = row(8589934592, 333.47) + "\n" + row(17179869184, 337.87)
    result = nccl.parse_all_reduce(first + "\n" + appended)
    assert result.busbw_gbps == 337.87
    assert not result.complete


def test_out_of_bounds_failure_fails_closed() -> None:
    text = HEADER + row(1024, 50.0).replace("      0", "     12") + "\n# Out of bounds values : 12 FAILED\n"
    with pytest.raises(nccl.NcclParseError) as err:
        nccl.parse_all_reduce(text)
    assert nccl.MSG_OUT_OF_BOUNDS.format(count=12) in str(err.value)


@pytest.mark.parametrize(
    "line",
    [
        "node-0-0:52:61 [0] NCCL INFO Channel 00/24 :    0   1   2   3   4   5   6   7   8   9  10  11  12",
        "    0   1   2   3   4   5   6   7",
        "  1024  256  float  sum  -1  10.0  1.0  nan  0  10.0  1.0  1.0  0",
        "  1024  256  float  sum  -1  10.0  1.0  inf  0  10.0  1.0  1.0  0",
        "  1024  256  float  sum  -1  10.0  1.0  1_0  0  10.0  1.0  1.0  0",
        "  1024  256  float  sum  x1  10.0  1.0  9.0  0  10.0  1.0  1.0  0",
        "  1024  256  3.0  sum  -1  10.0  1.0  9.0  0  10.0  1.0  1.0  0",
        "2 more processes have sent help message help-mpi-btl-openib.txt / no device params found",
    ],
)
def test_lines_that_are_not_rows(line: str) -> None:
    assert nccl.parse_row(line) is None


def test_wrong_column_variants_are_rows() -> None:
    base = "  1024  256  float  sum  -1  10.0  1.0  9.0  {w}  10.0  1.0  1.0  {w}"
    for wrong in ("0", "N/A", "3"):
        parsed = nccl.parse_row(base.format(w=wrong))
        assert parsed is not None
        assert parsed.busbw_gbps == 9.0
    old = "      1024    256   float    sum    0.030   0.00   9.50  0e+00    0.030   0.00   9.40  1e-07"
    assert nccl.parse_row(old) == nccl.SweepRow(1024, 9.5, 9.4)


def test_kubectl_timestamps_and_crlf() -> None:
    stamped = "\r\n".join(
        f"2026-07-13T10:00:0{i}.123456789Z {line}"
        for i, line in enumerate([*HEADER.splitlines(), row(1024, 7.0), "# Avg bus bandwidth    : 7.0"])
    )
    assert nccl.parse_all_reduce(stamped).busbw_gbps == 7.0


def test_first_using_network_banner_wins() -> None:
    text = (
        "h:1:2 [0] NCCL INFO Using network Socket\n"
        "h:1:2 [0] NCCL INFO Using network AWS Libfabric\n" + HEADER + row(1024, 1.0) + "\n"
    )
    result = nccl.parse_all_reduce(text)
    assert result.transport.network == "Socket"
    with pytest.raises(nccl.TransportError):
        nccl.verify_transport("net", result.transport)


def test_nvls_needs_both_markers() -> None:
    only_available = (
        "NCCL INFO NVLS multicast support is available on dev 0\nNCCL INFO Using network Socket\n"
    )
    with pytest.raises(nccl.NcclParseError) as err:
        nccl.parse_all_reduce(only_available)
    with pytest.raises(nccl.TransportError) as terr:
        nccl.verify_transport("nvls", err.value.transport)
    assert str(terr.value) == nccl.MSG_NVLS_NO_COMM


def test_diagnostic_tail_is_last_100_lines() -> None:
    text = "".join(f"noise line {i}\n" for i in range(1000))
    with pytest.raises(nccl.NcclParseError) as err:
        nccl.parse_all_reduce(text)
    assert len(err.value.tail) == 100
    assert err.value.tail[0] == "noise line 900"
    assert err.value.tail[-1] == "noise line 999"
    block = err.value.diagnostic_block()
    assert block[0] == "--- launcher log (bandwidth parse failed): last 100 lines ---"
    assert nccl.NcclParseError("x").diagnostic_block()[1] == "(empty)"


def test_overlong_line_is_bounded() -> None:
    text = "x" * (3 << 20) + "\n" + HEADER + row(1024, 5.0) + "\n"
    scanner = nccl.AllReduceLogScanner()
    for i in range(0, len(text), 1 << 16):
        scanner.feed(text[i : i + (1 << 16)].encode())
    assert scanner.result().busbw_gbps == 5.0
    assert all(len(line) <= 512 for line in scanner.tail)


def test_a_single_string_is_not_iterated_per_character() -> None:
    assert nccl.parse_all_reduce(HEADER + row(1024, 3.0)).busbw_gbps == 3.0
    assert nccl.parse_all_reduce((HEADER + row(1024, 3.0)).encode()).busbw_gbps == 3.0


# --- streaming / constant memory -----------------------------------------------------------------


def _big_log_lines(target_bytes: int) -> Iterator[str]:
    info = "nccl-bw-0-node-0-0:52:61 [0] NCCL INFO Channel 07/24 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
    produced = 0
    while produced < target_bytes:
        yield info
        produced += len(info)
    yield "# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5\n"
    yield HEADER
    yield row(1024, 10.0) + "\n"
    yield row(2048, 42.0) + "\n"
    yield "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 26.0\n"
    for _ in range(1000):
        yield info


def test_streaming_50mb_generator_in_constant_memory() -> None:
    gc.collect()
    tracemalloc.start()
    try:
        result = nccl.parse_all_reduce(_big_log_lines(50 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.busbw_gbps == 42.0
    # ~50 MB of input; the parser holds one batch (1 MiB) plus small state.
    assert peak < 8 << 20, f"peak {peak / 1e6:.1f} MB"


def test_scanner_holds_no_reference_to_fed_lines() -> None:
    scanner = nccl.AllReduceLogScanner()
    for chunk in _big_log_lines(5 << 20):
        scanner.feed(chunk.encode())
    # nothing in the scanner grows with the input: its carry is below one line, the tail is capped
    assert len(scanner._carry) < 200
    assert len(scanner.tail) <= nccl.DIAGNOSTIC_TAIL_LINES
    assert scanner.result().busbw_gbps == 42.0


def test_stream_reader_reads_in_chunks() -> None:
    class CountingStream(io.BytesIO):
        biggest = 0

        def read(self, size: int | None = -1) -> bytes:
            assert size is not None and size > 0, "whole-file read"
            return super().read(size)

        def readinto(self, buffer: Any) -> int:
            CountingStream.biggest = max(CountingStream.biggest, len(buffer))
            return super().readinto(buffer)

    data = "".join(_big_log_lines(2 << 20)).encode()
    assert nccl.parse_all_reduce_stream(CountingStream(data), chunk_bytes=1 << 16).busbw_gbps == 42.0
    assert CountingStream.biggest == 1 << 16

    class ReadOnly:  # no readinto: the parser falls back to read(size)
        def __init__(self, payload: bytes) -> None:
            self._inner = io.BytesIO(payload)

        def read(self, size: int = -1) -> bytes:
            assert size > 0, "whole-file read"
            return self._inner.read(size)

    assert nccl.parse_all_reduce_stream(ReadOnly(data), chunk_bytes=1 << 16).busbw_gbps == 42.0  # type: ignore[arg-type]
