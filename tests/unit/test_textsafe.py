"""Log text echoed to a terminal, a report or a page never carries raw control characters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aicr_pytest.core.textsafe import printable


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),
        ("a\x00b\x7fc\x9bd", "a\\x00b\\x7fc\\x9bd"),
        ("tab\tkept", "tab\tkept"),
        ("two\nlines", "two\\x0alines"),
        ("ünïcode — ok 日本", "ünïcode — ok 日本"),
        ("", ""),
    ],
)
def test_printable_escapes_control_characters_only(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_parse_nccl_on_a_binary_log_prints_no_control_bytes(tmp_path: Path) -> None:
    log = tmp_path / "launcher.log"
    log.write_bytes(b"garbage \x1b]0;owned\x07 line\n\x1b[2J\x00\x01binary\n#  NET/IB \x1b[31m\n")
    proc = subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", "parse", "nccl", str(log)],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert not [b for b in out if b < 0x20 and b not in (0x09, 0x0A)]
    assert b"garbage \\x1b]0;owned\\x07 line" in proc.stdout
