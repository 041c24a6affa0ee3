"""Every case of :mod:`tests.badinput.validate_cases`, in a real process: exit code, the one stderr
line, nothing on stdout, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.badinput.common import pytest_spelling
from tests.badinput.validate_cases import CASES, FIFOS, FILES

#: environment variables a case must not inherit from the shell running the suite
_CLEARED = (
    "AICR_NCCL_FABRIC",
    "AICR_NCCL_RUNTIME_IMAGE",
    "AICR_CUDA_SMOKE_IMAGE",
    "AICR_DCGM_DIAG_LEVEL",
    "AICR_DCGM_IMAGE",
    "AICR_NAMESPACE",
    "AICR_REQUIRE_GPU",
    "AICR_DEBUG",
    "AICR_LOG_JSON",
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("validate-badinput")
    for rel, text in FILES.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text)
    for rel in FIFOS:  # nothing ever writes to them: a reader that opens one hangs
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(tmp / rel)
    if not (tmp / "fifo-kubeconfig").exists():
        os.mkfifo(tmp / "fifo-kubeconfig")  # read, it would block the run for ever
    return tmp


def _fill(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp))


def _command(entry: str, argv: list[str]) -> list[str]:
    if entry == "pytest":  # the corpus is written in validate's spelling
        return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *pytest_spelling(argv)]
    return [sys.executable, "-m", "aicr_pytest.cli", entry, *argv]


def test_corpus_has_at_least_50_cases_on_both_entry_points() -> None:
    assert len(CASES) >= 50
    assert {c[0] for c in CASES} >= {"validate", "pytest"}


@pytest.mark.parametrize(
    ("entry", "argv", "env", "code", "line"),
    CASES,
    ids=[f"{c[0]}-{i}-{'-'.join(c[1][-2:]) or 'no-args'}" for i, c in enumerate(CASES)],
)
def test_validate_bad_input(
    scratch: Path, entry: str, argv: list[str], env: dict[str, str], code: int, line: str
) -> None:
    environ = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    environ["KUBECONFIG"] = str(scratch / "no-kubeconfig")
    environ.pop("KUBERNETES_SERVICE_HOST", None)
    environ.update({k: _fill(v, scratch) for k, v in env.items()})
    proc = subprocess.run(
        _command(entry, [_fill(a, scratch) for a in argv]),
        capture_output=True,
        text=True,
        env=environ,
        cwd=scratch,
        timeout=180,
        check=False,
    )
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == code, proc.stderr
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == [_fill(line, scratch)]
    assert proc.stdout.strip() == ""
