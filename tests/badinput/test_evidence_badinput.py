"""Every case of :mod:`tests.badinput.evidence_cases`: the exit code and the one stderr line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.badinput.common import call_main, make_scratch
from tests.badinput.evidence_cases import CASES, FILES


@pytest.mark.parametrize(("argv", "code", "line"), CASES, ids=[c[0][-1].split("/")[-1] for c in CASES])
def test_evidence_bad_input(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
    line: str,
) -> None:
    scratch = str(make_scratch(tmp_path, monkeypatch, FILES))
    assert call_main([a.replace("{tmp}", scratch) for a in argv]) == code
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [line.replace("{tmp}", scratch)]
    assert captured.out == ""
