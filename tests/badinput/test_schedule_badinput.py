"""Every case of :mod:`tests.badinput.schedule_cases` (exit 2, one stderr line, nothing on stdout), and
the one bad input of a run that is not a usage error: a Pushgateway that refuses the push."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.badinput.common import call_main, make_scratch
from tests.badinput.schedule_cases import CASES, FILES
from tests.badinput.validate_cases import FILES as VALIDATE_FILES


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_scratch(tmp_path, monkeypatch, FILES)


def _fill(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp))


@pytest.mark.parametrize(("argv", "code", "line"), CASES, ids=[" ".join(c[0][1:]) for c in CASES])
def test_schedule_bad_input(
    scratch: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, line: str
) -> None:
    got = call_main([_fill(a, scratch) for a in argv])
    captured = capsys.readouterr()
    assert got == code
    assert captured.err.splitlines() == [_fill(line, scratch)]
    assert captured.out == ""


def test_a_refusing_pushgateway_is_a_warning_and_the_run_keeps_its_verdict(tmp_path: Path) -> None:
    """Not a usage error: the run's own verdict (exit 0 here) and its CTRF report stand."""
    for rel in ("ok.yaml", "snap.yaml"):
        (tmp_path / rel).write_text(VALIDATE_FILES[rel])
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    out = tmp_path / "ctrf.json"
    argv = ["validate", "-r", str(tmp_path / "ok.yaml"), "-s", str(tmp_path / "snap.yaml"), "--no-cluster"]
    proc = subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", *argv, "--pushgateway", url, "-o", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "KUBECONFIG": str(tmp_path / "none")},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert warnings == [
        f"aicr-pytest: warning: --pushgateway {url}: push failed "
        "(<urlopen error [Errno 111] Connection refused>); the run's verdict and CTRF report stand"
    ]
    assert "Traceback" not in proc.stderr
    assert json.loads(out.read_text())["reportFormat"] == "CTRF"
