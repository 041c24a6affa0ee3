"""Every case of :mod:`tests.badinput.cncf_cases`: the exit code and the one stderr line, no
traceback, nothing written into the evidence directory, on both entry points."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicr_pytest.cli import main
from tests.badinput.cncf_cases import FILES, PYTEST_CASES, RECIPE, VALIDATE_CASES

EXAMPLE_RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "examples" / "h100-eks-training.yaml"


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for rel, text in FILES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fill(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp)).replace(RECIPE, str(EXAMPLE_RECIPE))


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _nothing_written(tmp: Path) -> None:
    ev = tmp / "ev"
    assert not ev.exists() or list(ev.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "code", "line"), VALIDATE_CASES, ids=[" ".join(c[0][1:]) for c in VALIDATE_CASES]
)
def test_validate_bad_input(
    scratch: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, line: str
) -> None:
    try:
        got = main([_fill(a, scratch) for a in argv])
    except SystemExit as exc:
        got = int(exc.code or 0)
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
