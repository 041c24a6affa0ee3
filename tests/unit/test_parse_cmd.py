"""`aicr-pytest parse nccl`: the check's parser and transport rule on a saved launcher log."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from aicr_pytest import nccl
from aicr_pytest.core.errors import UsageError
from aicr_pytest.nccl.cli import run_parse_nccl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nccl"


def run(path: Path | str, variant: str = "default", fmt: str = "json") -> tuple[int, str]:
    out = io.StringIO()
    rc = run_parse_nccl(str(path), variant, fmt, out)  # type: ignore[arg-type]
    return rc, out.getvalue()


def test_json_success() -> None:
    rc, text = run(FIXTURES / "two-sizes.log")
    doc = json.loads(text)
    assert rc == 0
    assert doc["busbw_gbps"] == 374.81
    assert doc["avg_busbw_gbps"] == 187.43
    assert doc["rows"] == [
        {"size_bytes": 1024, "busbw_gbps": 0.05},
        {"size_bytes": 8589934592, "busbw_gbps": 374.81},
    ]
    assert doc["transport"] == {"network": None, "nvls": False}
    assert doc["error"] is None
    assert doc["variant"] == "default"


def test_json_net_transport_ok() -> None:
    rc, text = run(FIXTURES / "eks-launcher-warnings-interleaved.log", "net")
    doc = json.loads(text)
    assert rc == 0 and doc["transport"]["network"] == "AWS Libfabric" and doc["busbw_gbps"] == 481.76


def test_json_socket_fallback_fails_net() -> None:
    rc, text = run(FIXTURES / "socket-fallback-net.log", "net")
    doc = json.loads(text)
    assert rc == 1
    assert doc["busbw_gbps"] == 390.0  # the value is still reported
    assert doc["transport"] == {"network": "Socket", "nvls": False}
    assert doc["error"] == nccl.MSG_NET_SOCKET


def test_same_log_passes_default_variant() -> None:
    assert run(FIXTURES / "socket-fallback-net.log", "default")[0] == 0


def test_nvls_transport() -> None:
    assert run(FIXTURES / "tag-output.log", "nvls")[0] == 0
    rc, text = run(FIXTURES / "eks-launcher-warnings-interleaved.log", "nvls")
    assert rc == 1 and json.loads(text)["error"] == nccl.MSG_NVLS_NOT_AVAILABLE


def test_json_parse_failure_with_tail() -> None:
    rc, text = run(FIXTURES / "trailer-only.log")
    doc = json.loads(text)
    assert rc == 1
    assert doc["busbw_gbps"] is None
    assert doc["avg_busbw_gbps"] == 301.22
    assert doc["rows"] == []
    assert doc["error"] == "failed to parse bandwidth from logs: could not find bandwidth value in logs"
    assert doc["log_tail"] == ["# Avg bus bandwidth    : 301.22"]


def test_text_output_success() -> None:
    rc, text = run(FIXTURES / "two-sizes.log", fmt="text")
    assert rc == 0
    lines = text.splitlines()
    assert lines[0] == "busbw: 374.81 GB/s (out-of-place, largest message 8GiB = 8589934592 bytes)"
    assert lines[1] == "avg busbw (trailer): 187.43 GB/s"
    assert lines[2] == "transport: network=none nvls=false"
    assert lines[3] == "sweep: 2 rows"
    assert lines[-1] == "result: ok (default variant)"


def test_text_output_failure_has_diagnostic_block() -> None:
    rc, text = run(FIXTURES / "truncated-mid-row.log", fmt="text")
    assert rc == 1
    assert "error: failed to parse bandwidth from logs: results table is truncated" in text
    assert re.search(r"^--- launcher log \(bandwidth parse failed\): last \d+ lines ---$", text, re.M)


def test_empty_log(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    rc, text = run(empty, fmt="text")
    assert rc == 1
    assert text.splitlines()[-1] == "(empty)"


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        run(tmp_path / "nope.log")
    assert str(err.value) == f"NCCL log {tmp_path / 'nope.log'}: no such file"
    with pytest.raises(UsageError, match="is a directory"):
        run(tmp_path)


def test_bad_variant_or_format(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("")
    with pytest.raises(UsageError):
        run(log, variant="ib")
    with pytest.raises(UsageError):
        run(log, fmt="yaml")


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    data = (FIXTURES / "two-sizes.log").read_bytes()

    class FakeStdin:
        buffer = io.BytesIO(data)

    monkeypatch.setattr("sys.stdin", FakeStdin)
    rc, text = run("-")
    assert rc == 0 and json.loads(text)["busbw_gbps"] == 374.81
