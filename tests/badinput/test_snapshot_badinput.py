"""Every case of :mod:`tests.badinput.snapshot_cases`: the exit code and the one stderr line, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.badinput.common import call_main, make_scratch
from tests.badinput.snapshot_cases import CASES, FILES


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_scratch(tmp_path, monkeypatch, FILES)


def _fill(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp))


@pytest.mark.parametrize(
    ("argv", "code", "line"), CASES, ids=[" ".join(c[0][1:]) or "no-flags" for c in CASES]
)
def test_snapshot_bad_input(
    scratch: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, line: str
) -> None:
    got = call_main([_fill(a, scratch) for a in argv])
    captured = capsys.readouterr()
    assert got == code
    assert captured.err.splitlines() == [_fill(line, scratch)]
    assert captured.out == ""


def test_a_bad_environment_value_is_one_line(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.environ["AICR_REQUIRE_GPU"] = "sometimes"
    try:
        assert call_main(["snapshot"]) == 2
    finally:
        del os.environ["AICR_REQUIRE_GPU"]
    assert capsys.readouterr().err.splitlines() == [
        'aicr-pytest: error: invalid AICR_REQUIRE_GPU="sometimes" (use true or false)'
    ]


def test_bad_input_in_a_real_process_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    argv, code, line = CASES[0]
    proc = subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "KUBECONFIG": str(tmp_path / "none")},
        timeout=120,
        check=False,
    )
    assert proc.returncode == code
    assert proc.stderr.splitlines() == [line] and "Traceback" not in proc.stderr
