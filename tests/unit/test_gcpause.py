"""The console script pauses cyclic garbage collection for start-up and resumes it for the run."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aicr_pytest.core import gcpause

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"


@pytest.fixture
def collector_state() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gcpause._paused = False
    (gc.enable if enabled else gc.disable)()


def test_pause_then_resume_restores_collection(collector_state: None) -> None:
    gc.enable()
    gcpause.pause()
    assert not gc.isenabled() and gcpause.paused()
    gcpause.resume()
    assert gc.isenabled() and not gcpause.paused()
    assert gc.get_freeze_count() > 0  # start-up's objects moved out of the collector's way
    gc.unfreeze()


def test_resume_without_pause_leaves_the_collector_alone(collector_state: None) -> None:
    gc.disable()  # someone else turned it off (not us): resume must not turn it on
    gcpause.resume()
    assert not gc.isenabled()


def test_pause_when_already_off_is_not_ours_to_undo(collector_state: None) -> None:
    gc.disable()
    gcpause.pause()
    assert not gcpause.paused()
    gcpause.resume()
    assert not gc.isenabled()


PROBE = """
import gc

def pytest_collectstart(collector):
    print("GC collecting:", gc.isenabled(), flush=True)

def pytest_runtest_logstart(nodeid, location):
    print("GC running:", gc.isenabled(), gc.get_freeze_count() > 0, flush=True)
"""


def test_the_console_script_collects_with_gc_paused_and_runs_with_it_on(tmp_path: Path) -> None:
    (tmp_path / "gcprobe.py").write_text(PROBE)
    script = Path(sys.executable).with_name("aicr-pytest")
    head = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from aicr_pytest.entry import main; main()"]
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    argv = [
        "validate",
        "-r",
        str(EXAMPLE),
        "-s",
        str(SNAPSHOT),
        "--no-cluster",
        "-o",
        str(tmp_path / "c.json"),
    ]
    proc = subprocess.run(
        [*head, *argv, "--", "-s", "-p", "gcprobe"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout + proc.stderr  # the probe's lines share the terminal's progress lines
    assert text.count("GC collecting: False") >= 5, text[-3000:]  # one per collector
    assert text.count("GC running: True True") == 15, text[-3000:]  # one per selected check
    assert "GC collecting: True" not in text and "GC running: False" not in text
