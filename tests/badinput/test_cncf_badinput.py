"""Every case of :mod:`tests.badinput.cncf_cases`: the exit code and the one stderr line, no
traceback, nothing written into the evidence directory, on both entry points (and ``cncf check``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.badinput.cncf_cases import CNCF_CHECK_CASES, FILES, PYTEST_CASES, RECIPE, VALIDATE_CASES
from tests.badinput.common import call_main, make_scratch

EXAMPLE_RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "examples" / "h100-eks-training.yaml"


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_scratch(tmp_path, monkeypatch, FILES)


def _fill(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp)).replace(RECIPE, str(EXAMPLE_RECIPE))


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _nothing_written(tmp: Path) -> None:
    ev = tmp / "ev"
    assert not ev.exists() or list(ev.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "code", "line"),
    [*VALIDATE_CASES, *CNCF_CHECK_CASES],
    ids=[" ".join(c[0][1:]) for c in VALIDATE_CASES] + [" ".join(c[0]) for c in CNCF_CHECK_CASES],
)
def test_validate_bad_input(
    scratch: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, line: str
) -> None:
    got = call_main([_fill(a, scratch) for a in argv])
    captured = capsys.readouterr()
    assert got == code
    assert _lines(captured.err) == [_fill(line, scratch)]
    assert "Traceback" not in captured.err + captured.out and captured.out == ""
    _nothing_written(scratch)


@pytest.mark.parametrize(("args", "code", "line"), PYTEST_CASES, ids=[" ".join(c[0]) for c in PYTEST_CASES])
def test_pytest_bad_input(
    scratch: Path, pytester: pytest.Pytester, args: list[str], code: int, line: str
) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", *[_fill(a, scratch) for a in args])
    assert result.ret == code
    assert _lines(result.stderr.str()) == [_fill(line, scratch)]
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    _nothing_written(scratch)
