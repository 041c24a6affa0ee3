"""NCCL launcher-log parsing (section 4 of a run): streaming, constant memory, fail-closed.

:func:`parse_all_reduce`, :func:`parse_all_reduce_stream` and :func:`parse_all_reduce_file` read
the ``all_reduce_perf`` launcher log (through :class:`AllReduceLogScanner`) and collect the
transport banners in the same pass; no usable bandwidth is a :class:`NcclParseError`.

Deliberate differences from AICR, each tested:

* Only rows of the ``all_reduce_perf`` results table count.  AICR's regex also matches NCCL INFO ring
  listings (``Channel 00/24 :    0   1   2 …``), so such a line printed after the table would be taken
  as the bandwidth.  We parse whole table rows, strictly.
* The value is the out-of-place busbw of the **largest** message size of the last table, not of the
  last regex match; a table cut short (a partial last row, or a table without its trailer that
  stops before the ``maxBytes`` the header announced) is an error instead of a smaller number.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from aicr_pytest.core.textsafe import printable
from aicr_pytest.nccl.variant import NcclCheckFailure

#: Lines of launcher log kept for the diagnostic block of a parse failure.
DIAGNOSTIC_TAIL_LINES = 100
# --- parse and transport --------------------------------------------------
MSG_NO_BANDWIDTH = "could not find bandwidth value in logs"
MSG_PARSE_FAILED = "failed to parse bandwidth from logs: {cause}"
MSG_TABLE_TRUNCATED_ROW = "results table is truncated: its last row is incomplete ({line!r})"
MSG_TABLE_TRUNCATED_SWEEP = (
    "results table is truncated: it stops at {size} bytes, before the {max_bytes}-byte maximum the benchmark "
    "header announced, and has no '# Avg bus bandwidth' trailer"
)
MSG_OUT_OF_BOUNDS = "all_reduce_perf reported {count} out-of-bounds values (data validation FAILED)"
MSG_REJECTED_ROWS = (
    "{count} row-like line(s) lack the all_reduce_perf results layout (size count type redop [root], then "
    "out-of-place and in-place time/algbw/busbw/#wrong columns)"
)
DIAGNOSTIC_LABEL = "launcher log (bandwidth parse failed)"


class NcclParseError(NcclCheckFailure):
    """No usable bandwidth in the launcher log.

    ``str(exc)`` is ``failed to parse bandwidth from logs: <cause>``; ``tail`` holds the last
    :data:`DIAGNOSTIC_TAIL_LINES` lines of the log for the report's diagnostic block.
    """

    def __init__(
        self,
        cause: str,
        *,
        tail: Sequence[str] = (),
        transport: TransportInfo | None = None,
        avg_busbw_gbps: float | None = None,
        rows: Sequence[SweepRow] = (),
    ) -> None:
        super().__init__(MSG_PARSE_FAILED.format(cause=cause))
        self.cause = cause
        self.tail = tuple(tail)
        self.transport = transport if transport is not None else TransportInfo()
        self.avg_busbw_gbps = avg_busbw_gbps
        self.rows = tuple(rows)

    def diagnostic_block(self) -> list[str]:
        """The tail as report lines: a header, the lines (``(empty)`` when there were none)."""
        body = list(self.tail) or ["(empty)"]
        return [f"--- {DIAGNOSTIC_LABEL}: last {len(self.tail)} lines ---", *body]


@dataclass(frozen=True)
class SweepRow:
    size_bytes: int
    busbw_gbps: float  #: out-of-place busbw
    in_place_busbw_gbps: float


@dataclass(frozen=True)
class TransportInfo:
    """Transport banners seen in the log (first ``Using network`` wins)."""

    network: str | None = None  #: text after ``NCCL INFO Using network`` (e.g. ``AWS Libfabric``)
    nvls_available: bool = False
    nvls_comm: bool = False

    @property
    def network_plugin(self) -> str | None:
        """First token of :attr:`network` (what the Socket rule compares)."""
        return self.network.split()[0] if self.network else None

    @property
    def nvls(self) -> bool:
        return self.nvls_available and self.nvls_comm


@dataclass(frozen=True)
class NcclResult:
    busbw_gbps: float  #: out-of-place busbw of the largest message size: the value compared
    size_bytes: int  #: the message size of that row
    avg_busbw_gbps: float | None  #: the ``# Avg bus bandwidth`` trailer of the table, if any
    rows: tuple[SweepRow, ...]  #: the whole sweep of the table, in printed order (capped)
    transport: TransportInfo
    complete: bool  #: the table ended with its trailer (``# Out of bounds``/``# Avg bus bandwidth``)

    def to_json(self) -> dict[str, Any]:
        return {
            "busbw_gbps": self.busbw_gbps,
            "size_bytes": self.size_bytes,
            "avg_busbw_gbps": self.avg_busbw_gbps,
            "complete": self.complete,
            "rows": [{"size_bytes": r.size_bytes, "busbw_gbps": r.busbw_gbps} for r in self.rows],
            "transport": {"network": self.transport.network, "nvls": self.transport.nvls},
        }


MAX_SWEEP_ROWS = 1024
_MAX_LINE_BYTES = 1 << 20  #: longer lines are cut (constant memory on pathological input)
_KEEP_LINE_CHARS = 512  #: per-line cap of the diagnostic tail (CTRF line cap)
_CHUNK_BYTES = 8 << 20

# An optional kubectl --timestamps stamp, an optional mpirun --tag-output tag, then the line.
_TS = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)[ \t]"
_TAG = rb"\[\d+,\d+\]<std(?:out|err)>:"
# Candidate lines (table rows or '#' lines) are found by the regex engine; Python only looks at them.
_CANDIDATE_AFTER_NL = re.compile(rb"\n((?>(?:" + _TS + rb")?)(?>(?:" + _TAG + rb")?)[ \t]*[0-9#][^\n]*)")
_CANDIDATE_AT_START = re.compile(rb"(?>(?:" + _TS + rb")?)(?>(?:" + _TAG + rb")?)[ \t]*[0-9#][^\n]*")
_PREFIX_STR = re.compile(
    r"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)[ \t])?"
    r"(?:\[\d+,\d+\]<std(?:out|err)>:)?"
)
_NET_MARK = b"NCCL INFO Using network "
_NVLS_AVAILABLE_MARK = b"NVLS multicast support is available"
_NVLS_COMM_RE = re.compile(rb"NVLS comm 0x[0-9a-fA-F]+")
_INT_RE = re.compile(r"\d+\Z")
_SIGNED_INT_RE = re.compile(r"-?\d+\Z")
_FLOAT_RE = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\Z")
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WRONG_RE = re.compile(r"(?:N/A|-?\d+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\Z")
_AVG_RE = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(\S+)")
_OOB_RE = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)\s*(\w*)")
_PARAMS_RE = re.compile(r"maxBytes\s+(\d+)\s+step:\s*(\d+)\((factor|bytes)\)")


def _parse_group(tokens: Sequence[str]) -> float | None:
    """One ``time algbw busbw #wrong`` group → busbw, or ``None`` if malformed."""
    time_, algbw, busbw, wrong = tokens
    if not (
        _FLOAT_RE.match(time_)
        and _FLOAT_RE.match(algbw)
        and _FLOAT_RE.match(busbw)
        and _WRONG_RE.match(wrong)
    ):
        return None
    value = float(busbw)
    return value if math.isfinite(value) else None


def parse_row(line: str) -> SweepRow | None:
    """A results-table data row (current 13-column or older 12-column layout), else ``None``."""
    tokens = line.split()
    n = len(tokens)
    if n == 13:
        if not _SIGNED_INT_RE.match(tokens[4]):
            return None
        groups = (tokens[5:9], tokens[9:13])
    elif n == 12:
        groups = (tokens[4:8], tokens[8:12])
    else:
        return None
    if not (_INT_RE.match(tokens[0]) and _INT_RE.match(tokens[1])):
        return None
    if not (_WORD_RE.match(tokens[2]) and _WORD_RE.match(tokens[3])):
        return None
    oop = _parse_group(groups[0])
    inp = _parse_group(groups[1])
    if oop is None or inp is None:
        return None
    return SweepRow(size_bytes=int(tokens[0]), busbw_gbps=oop, in_place_busbw_gbps=inp)


def _row_like(line: str) -> bool:
    """Starts like a data row (two integers) but may be cut or laid out differently."""
    tokens = line.split(None, 2)
    return len(tokens) >= 2 and tokens[0].isdigit() and tokens[1].isdigit()


@dataclass
class _Table:
    rows: list[SweepRow] = field(default_factory=list)
    row_count: int = 0
    best: SweepRow | None = None
    avg: float | None = None
    closed: bool = False
    oob_failed: int = 0
    partial_line: str | None = None
    max_bytes: int | None = None
    step: int | None = None
    step_is_factor: bool = True

    def add(self, row: SweepRow) -> None:
        self.row_count += 1
        if len(self.rows) < MAX_SWEEP_ROWS:
            self.rows.append(row)
        if self.best is None or row.size_bytes >= self.best.size_bytes:
            self.best = row
        self.partial_line = None


class AllReduceLogScanner:
    """Incremental ``all_reduce_perf`` launcher-log reader.

    Feed bytes (:meth:`feed`) or lines (:meth:`feed_lines`), then call :meth:`result`.  Memory is
    bounded by one chunk, the current and previous table (≤ :data:`MAX_SWEEP_ROWS` rows each) and
    the diagnostic tail, whatever the log size.
    """

    def __init__(self) -> None:
        self._carry = b""
        self._skipping_long_line = False
        self._tail: deque[str] = deque(maxlen=DIAGNOSTIC_TAIL_LINES)
        self._table: _Table | None = None
        self._last_with_rows: _Table | None = None
        self._pending_params: tuple[int, int, bool] | None = None
        self._orphan_avg: float | None = None
        self._rejected_rows = 0
        self._network: str | None = None
        self._nvls_available = False
        self._nvls_comm = False

    # -- input --------------------------------------------------------------------------------

    def feed(self, data: bytes | bytearray) -> None:
        """Feed raw log bytes (any chunking).  ``data`` is not retained (it may be reused)."""
        if not data:
            return
        pos = 0
        if self._skipping_long_line:
            nl = data.find(b"\n")
            if nl < 0:
                return
            self._skipping_long_line = False
            pos = nl + 1
        last = data.rfind(b"\n", pos)
        if last < 0:
            self._carry += data[pos:]
            if len(self._carry) > _MAX_LINE_BYTES:
                self._scan(self._carry[:_MAX_LINE_BYTES])
                self._carry = b""
                self._skipping_long_line = True
            return
        if self._carry:
            first = data.find(b"\n", pos)
            line = self._carry + data[pos:first]
            self._carry = b""
            self._scan(line)
            pos = first + 1
        if pos <= last:
            self._scan(data, pos, last)
        self._carry = bytes(data[last + 1 :])

    def feed_lines(self, lines: Iterable[str | bytes], batch_bytes: int = 1 << 20) -> None:
        """Feed an iterable of lines (with or without line endings) in bounded batches."""
        batch: list[bytes] = []
        size = 0
        for line in lines:
            raw = line.encode("utf-8", "replace") if isinstance(line, str) else bytes(line)
            if not raw.endswith(b"\n"):
                raw += b"\n"
            batch.append(raw)
            size += len(raw)
            if size >= batch_bytes:
                self.feed(b"".join(batch))
                batch.clear()
                size = 0
        if batch:
            self.feed(b"".join(batch))

    def close(self) -> None:
        if self._carry:
            self._scan(self._carry)
            self._carry = b""

    # -- scanning -----------------------------------------------------------------------------

    def _scan(self, buf: bytes | bytearray, start: int = 0, end: int | None = None) -> None:
        """Scan the whole lines in ``buf[start:end]`` (``start`` begins a line; no trailing newline)."""
        if end is None:
            end = len(buf)
        m = _CANDIDATE_AT_START.match(buf, start, end)
        if m is not None:
            self._on_candidate(m.group(0))
        for m in _CANDIDATE_AFTER_NL.finditer(buf, start, end):
            self._on_candidate(m.group(1))
        if self._network is None:
            self._find_network(buf, start, end)
        if not self._nvls_available and buf.find(_NVLS_AVAILABLE_MARK, start, end) >= 0:
            self._nvls_available = True
        if not self._nvls_comm and _NVLS_COMM_RE.search(buf, start, end) is not None:
            self._nvls_comm = True
        # the last DIAGNOSTIC_TAIL_LINES lines of the region, found from its end
        cut, found = end, 0
        while found < DIAGNOSTIC_TAIL_LINES:
            j = buf.rfind(b"\n", start, cut)
            if j < 0:
                break
            cut, found = j, found + 1
        begin = cut + 1 if found == DIAGNOSTIC_TAIL_LINES else start
        for raw in buf[begin:end].split(b"\n"):
            text = raw[: _KEEP_LINE_CHARS * 4].decode("utf-8", "replace").rstrip("\r")
            self._tail.append(printable(text)[:_KEEP_LINE_CHARS])

    def _find_network(self, buf: bytes | bytearray, start: int, end: int) -> None:
        while True:
            i = buf.find(_NET_MARK, start, end)
            if i < 0:
                return
            eol = buf.find(b"\n", i, end)
            rest = buf[i + len(_NET_MARK) : eol if eol >= 0 else end].decode("utf-8", "replace").strip()
            rest = printable(rest)
            if rest:
                self._network = rest
                return
            start = i + len(_NET_MARK)

    def _on_candidate(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        m = _PREFIX_STR.match(text)
        line = text[m.end() :] if m else text
        body = line.lstrip()
        if body.startswith("#"):
            self._on_comment(body)
            return
        row = parse_row(body)
        if row is not None:
            table = self._table
            if table is None or table.closed:  # rows after a closed table start a new (headerless) one
                table = self._new_table()
            table.add(row)
            return
        if _row_like(body):
            self._rejected_rows += 1
            if self._table is not None and not self._table.closed:
                self._table.partial_line = body[:200]

    def _new_table(self) -> _Table:
        self._finish_table()
        table = _Table()
        if self._pending_params is not None:
            table.max_bytes, table.step, table.step_is_factor = self._pending_params
            self._pending_params = None
        self._table = table
        return table

    def _finish_table(self) -> None:
        if self._table is not None and self._table.best is not None:
            self._last_with_rows = self._table

    def _on_comment(self, body: str) -> None:
        words = body[1:].split()
        lowered = [w.lower() for w in words[:3]]
        if lowered == ["size", "count", "type"]:
            self._new_table()
            return
        if words[:1] == ["nThread"]:
            pm = _PARAMS_RE.search(body)
            if pm:
                self._pending_params = (int(pm.group(1)), int(pm.group(2)), pm.group(3) == "factor")
            return
        am = _AVG_RE.match(body)
        if am:
            try:
                value: float | None = float(am.group(1))
            except ValueError:
                value = None
            target = self._current_or_last()
            if target is None:
                self._orphan_avg = value
            else:
                target.avg = value
                target.closed = True
            return
        om = _OOB_RE.match(body)
        if om:
            target = self._current_or_last()
            if target is not None:
                target.closed = True
                if int(om.group(1)) > 0 or om.group(2).upper() == "FAILED":
                    target.oob_failed = max(int(om.group(1)), 1)
            return
        if "Collective test concluded" in body and self._table is not None:
            self._table.closed = True

    def _current_or_last(self) -> _Table | None:
        if self._table is not None and (self._table.best is not None or not self._table.closed):
            return self._table
        return self._last_with_rows

    # -- output -------------------------------------------------------------------------------

    @property
    def transport(self) -> TransportInfo:
        return TransportInfo(
            network=self._network, nvls_available=self._nvls_available, nvls_comm=self._nvls_comm
        )

    @property
    def tail(self) -> list[str]:
        return list(self._tail)

    def result(self) -> NcclResult:
        """The parsed value; raises :class:`NcclParseError` (fail-closed) when there is none."""
        self.close()
        self._finish_table()
        table = self._last_with_rows
        if table is None or table.best is None:
            cause = MSG_NO_BANDWIDTH
            if self._rejected_rows:
                cause += ": " + MSG_REJECTED_ROWS.format(count=self._rejected_rows)
            avg = (
                self._table.avg
                if self._table is not None and self._table.avg is not None
                else self._orphan_avg
            )
            raise self._error(cause, avg=avg)
        best = table.best
        if table.oob_failed:
            raise self._error(MSG_OUT_OF_BOUNDS.format(count=table.oob_failed), table=table)
        if not table.closed:
            if table.partial_line is not None and table is self._table:
                raise self._error(MSG_TABLE_TRUNCATED_ROW.format(line=table.partial_line), table=table)
            if table.max_bytes is not None and table.step is not None:
                nxt = best.size_bytes * table.step if table.step_is_factor else best.size_bytes + table.step
                if table.step > (1 if table.step_is_factor else 0) and nxt <= table.max_bytes:
                    raise self._error(
                        MSG_TABLE_TRUNCATED_SWEEP.format(size=best.size_bytes, max_bytes=table.max_bytes),
                        table=table,
                    )
        return NcclResult(
            busbw_gbps=best.busbw_gbps,
            size_bytes=best.size_bytes,
            avg_busbw_gbps=table.avg,
            rows=tuple(table.rows),
            transport=self.transport,
            complete=table.closed,
        )

    def _error(self, cause: str, *, avg: float | None = None, table: _Table | None = None) -> NcclParseError:
        return NcclParseError(
            cause,
            tail=self.tail,
            transport=self.transport,
            avg_busbw_gbps=table.avg if table is not None else avg,
            rows=table.rows if table is not None else (),
        )


def parse_all_reduce(lines: Iterable[str | bytes] | str | bytes) -> NcclResult:
    """Parse a launcher log given as an iterable of lines (or one string), streaming.

    Value = out-of-place busbw of the largest-message row of the last results table.  Raises
    :class:`NcclParseError` when there is no table row (or the table is cut short).
    """
    scanner = AllReduceLogScanner()
    if isinstance(lines, str):
        scanner.feed(lines.encode("utf-8", "replace"))
    elif isinstance(lines, bytes | bytearray):
        scanner.feed(bytes(lines))
    else:
        scanner.feed_lines(lines)
    return scanner.result()


class _ReadInto(Protocol):
    def readinto(self, buffer: bytearray, /) -> int | None: ...


def parse_all_reduce_stream(stream: IO[bytes], chunk_bytes: int = _CHUNK_BYTES) -> NcclResult:
    """Parse a binary stream in fixed-size chunks (the fast path for big saved logs)."""
    scanner = AllReduceLogScanner()
    for chunk in _chunks(stream, chunk_bytes):
        scanner.feed(chunk)
    return scanner.result()


def _chunks(stream: IO[bytes], size: int) -> Iterator[bytes | bytearray]:
    """Fixed-size chunks; one reused buffer when the stream supports ``readinto``."""
    if hasattr(stream, "readinto"):
        reader: _ReadInto = stream
        buf = bytearray(size)
        while True:
            n = reader.readinto(buf)
            if not n:
                return
            yield buf if n == size else buf[:n]
    while True:
        chunk = stream.read(size)
        if not chunk:
            return
        yield chunk


def parse_all_reduce_file(path: str | Path, chunk_bytes: int = _CHUNK_BYTES) -> NcclResult:
    with open(path, "rb") as fh:
        return parse_all_reduce_stream(fh, chunk_bytes)
