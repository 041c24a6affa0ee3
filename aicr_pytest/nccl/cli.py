"""``aicr-pytest parse nccl LOGFILE``: the NCCL check's parser and transport rule on a saved log.

Users debug a failed run offline with it: the same streaming parser and the same transport
verification the check runs, on a launcher log saved with ``kubectl logs``.  Exit 0 when a value was
extracted and the variant's transport rule holds, 1 otherwise; an unreadable file is a
:class:`~aicr_pytest.core.errors.UsageError` (exit 2).
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any, Literal, TextIO

from aicr_pytest import nccl
from aicr_pytest.core.errors import UsageError
from aicr_pytest.nccl.plot import format_size

ParseVariant = Literal["default", "net", "nvls"]
ParseFormat = Literal["text", "json"]

MSG_LOG_NOT_FOUND = "NCCL log {path}: no such file"
MSG_LOG_UNREADABLE = "NCCL log {path}: {error}"


def _open(path: str) -> IO[bytes]:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # closed by the caller
    except FileNotFoundError:
        raise UsageError(MSG_LOG_NOT_FOUND.format(path=path)) from None
    except IsADirectoryError:
        raise UsageError(MSG_LOG_UNREADABLE.format(path=path, error="is a directory")) from None
    except OSError as exc:
        raise UsageError(MSG_LOG_UNREADABLE.format(path=path, error=exc.strerror or exc)) from None


def analyse_log(path: str, variant: ParseVariant) -> dict[str, Any]:
    """Parse + verify; the JSON document ``aicr-pytest parse nccl --format json`` prints."""
    if variant not in ("default", "net", "nvls"):
        raise UsageError(f"unknown NCCL variant {variant!r} (expected default, net or nvls)")
    stream = _open(path)
    try:
        try:
            result: nccl.NcclResult | None = nccl.parse_all_reduce_stream(stream)
            failure: nccl.NcclParseError | None = None
        except nccl.NcclParseError as exc:
            result, failure = None, exc
        except OSError as exc:
            raise UsageError(MSG_LOG_UNREADABLE.format(path=path, error=exc.strerror or exc)) from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()

    doc: dict[str, Any]
    if result is not None:
        doc = result.to_json()
        doc["error"] = None
        try:
            nccl.verify_transport(variant, result.transport)
        except nccl.TransportError as exc:
            doc["error"] = str(exc)
    else:
        assert failure is not None
        doc = {
            "busbw_gbps": None,
            "size_bytes": None,
            "avg_busbw_gbps": failure.avg_busbw_gbps,
            "complete": False,
            "rows": [{"size_bytes": r.size_bytes, "busbw_gbps": r.busbw_gbps} for r in failure.rows],
            "transport": {"network": failure.transport.network, "nvls": failure.transport.nvls},
            "error": str(failure),
            "log_tail": list(failure.tail),
        }
    doc["variant"] = variant
    return doc


def _text(doc: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if doc["busbw_gbps"] is not None:
        lines.append(
            f"busbw: {doc['busbw_gbps']:.2f} GB/s (out-of-place, largest message "
            f"{format_size(doc['size_bytes'])} = {doc['size_bytes']} bytes)"
        )
    else:
        lines.append("busbw: none")
    avg = doc["avg_busbw_gbps"]
    lines.append(f"avg busbw (trailer): {avg:.2f} GB/s" if avg is not None else "avg busbw (trailer): none")
    transport = doc["transport"]
    network = transport["network"] if transport["network"] is not None else "none"
    lines.append(f"transport: network={network} nvls={'true' if transport['nvls'] else 'false'}")
    if doc["rows"]:
        lines.append(f"sweep: {len(doc['rows'])} rows")
        lines.append(f"  {'size (B)':>14}  {'busbw (GB/s)':>12}")
        lines += [f"  {r['size_bytes']:>14}  {r['busbw_gbps']:>12.2f}" for r in doc["rows"]]
    if doc["error"] is None:
        lines.append(f"result: ok ({doc['variant']} variant)")
    else:
        lines.append(f"error: {doc['error']}")
        if "log_tail" in doc:
            lines.append(f"--- {nccl.DIAGNOSTIC_LABEL}: last {len(doc['log_tail'])} lines ---")
            lines += doc["log_tail"] or ["(empty)"]
    return lines


def run_parse_nccl(path: str, variant: ParseVariant, fmt: ParseFormat, out: TextIO) -> int:
    """Print the analysis of ``path`` to ``out``; 0 = value found and transport rule holds."""
    if fmt not in ("text", "json"):
        raise UsageError(f"unknown format {fmt!r} (expected text or json)")
    doc = analyse_log(path, variant)
    if fmt == "json":
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.write("\n".join(_text(doc)) + "\n")
    return 0 if doc["error"] is None else 1


__all__ = ["analyse_log", "run_parse_nccl"]
