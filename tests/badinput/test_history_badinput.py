"""Every case of :mod:`tests.badinput.history_cases`, in a real process: exit code, the one stderr
line, nothing on stdout, no traceback — and the history that was there is still all there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aicr_pytest.report import history as hs
from aicr_pytest.report.measures import Measurement
from tests.badinput.history_cases import CASES, FILES

BW = Measurement("nccl-all-reduce-bw", "performance", "bus bandwidth", 450.0, "GB/s", None, 270.0, "higher")
RUN = hs.RunRecord(
    "kept-run",
    "2026-12-05T08:00:00Z",
    hs.RunIdentity("r", "sha256:r"),
    True,
    {"performance": "passed"},
    (BW,),
)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    for rel, text in FILES.items():
        (tmp_path / rel).write_text(text)
    with hs.SqliteHistory.open(tmp_path / "good.db", create=True) as store:
        store.add(RUN)
    return tmp_path


def _command(entry: str, argv: list[str]) -> list[str]:
    if entry == "pytest":
        long = {"-r": "--recipe", "-s": "--snapshot"}
        return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *(long.get(a, a) for a in argv)]
    return [sys.executable, "-m", "aicr_pytest.cli", entry, *argv]


@pytest.mark.parametrize(
    ("entry", "argv", "code", "line"), CASES, ids=[f"{c[0]}-{i}-{c[1][-1]}" for i, c in enumerate(CASES)]
)
def test_history_bad_input(scratch: Path, entry: str, argv: list[str], code: int, line: str) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AICR_")}
    environ["KUBECONFIG"] = str(scratch / "no-kubeconfig")
    environ.pop("KUBERNETES_SERVICE_HOST", None)
    proc = subprocess.run(
        _command(entry, [a.replace("{tmp}", str(scratch)) for a in argv]),
        capture_output=True,
        text=True,
        env=environ,
        cwd=scratch,
        timeout=180,
        check=False,
    )
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == code, proc.stderr
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == [line.replace("{tmp}", str(scratch))]
    assert proc.stdout.strip() == ""
    assert (scratch / "corrupt.db").read_text() == FILES["corrupt.db"]
    with hs.SqliteHistory.open(scratch / "good.db", create=False) as store:
        assert [r.run_id for r in store.runs()] == ["kept-run"]
