"""What an interrupt leaves: cleanup runs to completion and reports what it kept or left, a check
that finished keeps its verdict, SIGTERM and SIGHUP are named as such, and a second Ctrl-C cannot empty the
reports.  Real ``aicr-pytest validate`` processes against an in-process fake cluster (wall clock)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aicr_pytest.kube.client import RUN_ID_LABEL
from aicr_pytest.plugin import interrupt
from aicr_pytest.testing.clock import RealClock
from aicr_pytest.testing.cluster import FakeCluster
from tests.plugin.helpers import make_recipe
from tests.plugin.test_cli import write

#: a check that creates a ConfigMap, says so, then waits to be interrupted
CHECKS = """
import pathlib, signal, time, pytest

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held"}, "data": {"k": "v"}}

@pytest.mark.check("operator-health")
def test_creates_and_waits(aicr_check, aicr_run):
    aicr_run.ensure_namespace()
    aicr_run.create(CM)
    pathlib.Path("started").write_text(aicr_run.run_id)
    time.sleep(60)

@pytest.mark.check("expected-resources")
def test_never(aicr_check):
    pass
"""

#: a check that passes, with the whole-run deadline brought forward to land in its cleanup
DEADLINE_IN_CLEANUP = """
import pathlib, signal, time, pytest

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}, "data": {"k": "v"}}

@pytest.mark.check("operator-health")
def test_passes_then_cleans_up_slowly(aicr_check, aicr_run):
    aicr_run.ensure_namespace()
    aicr_run.create(CM)
    pathlib.Path("started").write_text(aicr_run.run_id)
    cleanup = aicr_run.cleanup

    def slow_cleanup():
        time.sleep(0.8)  # the deadline's SIGALRM arrives here, inside cleanup
        return cleanup()

    aicr_run.cleanup = slow_cleanup
    signal.setitimer(signal.ITIMER_REAL, 0.3)  # the plugin's deadline handler, fired early
    aicr_check.emit("verdict in")

@pytest.mark.check("expected-resources")
def test_after(aicr_check):
    pass
"""


@pytest.fixture
def fc(tmp_path: Path) -> Iterator[FakeCluster]:
    with FakeCluster("h100-eks-training", clock=RealClock(), kubeconfig_path=tmp_path / "kubeconfig") as fc:
        yield fc


def _start(tmp_path: Path, fc: FakeCluster, checks: str, *flags: str) -> subprocess.Popen[str]:
    (tmp_path / "test_checks.py").write_text(checks)
    rp, sp = write(tmp_path, make_recipe(deployment=["operator-health", "expected-resources"]))
    cmd = [
        sys.executable, "-m", "aicr_pytest.cli", "validate", "-r", rp, "-s", sp,
        "--kubeconfig", str(fc.kubeconfig_path), "--phase", "deployment",
        "-o", str(tmp_path / "ctrf.json"), *flags,
        "--", "-p", "no:cacheprovider", "--aicr-no-bundled-checks", str(tmp_path / "test_checks.py"),
    ]  # fmt: skip
    return subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_started(proc: subprocess.Popen[str], tmp_path: Path) -> str:
    deadline = time.monotonic() + 90
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the check never started"
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    time.sleep(0.3)
    return (tmp_path / "started").read_text()


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    _, err = proc.communicate(timeout=90)
    return proc.returncode, err


def _left(fc: FakeCluster, run_id: str) -> list[str]:
    return [
        f"{kind}/{o['metadata']['name']}"
        for kind in ("ConfigMap", "Namespace")
        for o in fc.list("v1", kind, label_selector=f"{RUN_ID_LABEL}={run_id}")
    ]


def _report(tmp_path: Path) -> dict[str, dict[str, object]]:
    doc = json.loads((tmp_path / "ctrf.json").read_text())
    return {"": doc, **{t["name"]: t for t in doc["results"]["tests"]}}


@pytest.mark.parametrize(
    ("signum", "reason"),
    [(signal.SIGTERM, interrupt.SIGTERM_REASON), (signal.SIGHUP, interrupt.SIGHUP_REASON)],
    ids=["SIGTERM", "SIGHUP"],
)
@pytest.mark.usefixtures("sighup_default")
def test_sigterm_or_sighup_in_a_check_that_created_objects_is_named_as_itself(
    tmp_path: Path, fc: FakeCluster, signum: int, reason: str
) -> None:
    """SIGHUP (a closed terminal or SSH session) is handled as SIGTERM is: cleanup, full reports."""
    proc = _start(tmp_path, fc, CHECKS)
    run_id = _wait_started(proc, tmp_path)
    proc.send_signal(signum)
    code, err = _finish(proc)
    assert code == 5, err
    tests = _report(tmp_path)
    assert tests["operator-health"]["message"] == reason
    assert tests["expected-resources"]["status"] == "other"
    assert tests[""]["extra"]["aicr.interrupted"] == reason  # type: ignore[index]
    assert _left(fc, run_id) == []


def test_interrupted_no_cleanup_run_prints_the_kubectl_commands(tmp_path: Path, fc: FakeCluster) -> None:
    proc = _start(tmp_path, fc, CHECKS, "--no-cleanup")
    run_id = _wait_started(proc, tmp_path)
    proc.send_signal(signal.SIGTERM)
    code, err = _finish(proc)
    assert code == 5, err
    assert f"cleanup disabled (--no-cleanup): 2 object(s) of run {run_id} kept for debugging" in err
    delete = f"kubectl -n aicr-validation delete configmaps -l {RUN_ID_LABEL}={run_id} --cascade=foreground"
    assert delete in err
    assert "ConfigMap/held-" + run_id in _left(fc, run_id)  # kept, as asked


@pytest.mark.usefixtures("sigint_raises")  # the child inherits SIGINT's default action
def test_a_second_ctrl_c_still_gets_the_full_report(tmp_path: Path, fc: FakeCluster) -> None:
    proc = _start(tmp_path, fc, CHECKS)
    run_id = _wait_started(proc, tmp_path)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    code, err = _finish(proc)
    assert code == 5, err
    tests = _report(tmp_path)
    assert tests[""]["extra"]["aicr.interrupted"] == interrupt.SIGINT_REASON, (tests, err)  # type: ignore[index]
    assert {name: t["status"] for name, t in tests.items() if name} == {
        "operator-health": "other",
        "expected-resources": "other",
    }
    assert _left(fc, run_id) == []


def test_a_deadline_during_cleanup_keeps_the_verdict_and_finishes_cleanup(
    tmp_path: Path, fc: FakeCluster
) -> None:
    proc = _start(tmp_path, fc, DEADLINE_IN_CLEANUP, "--timeout", "30s")
    code, err = _finish(proc)
    run_id = (tmp_path / "started").read_text()
    assert code == 5, err
    tests = _report(tmp_path)
    summary = tests[""]["results"]["summary"]  # type: ignore[index]
    assert tests["operator-health"]["status"] == "passed"  # its verdict was in: counted once
    assert tests["expected-resources"]["status"] == "other"
    assert tests["expected-resources"]["message"] == "timed out after 30s"
    assert (summary["passed"], summary["other"], summary["tests"]) == (1, 1, 2)
    assert err.rstrip().splitlines()[-1].split(" in ")[0].strip("= ") == "1 passed, 1 other", err
    assert _left(fc, run_id) == []  # the deadline waited for cleanup


def test_stop_signals_raise_once_then_hold_then_give_up() -> None:
    lines: list[str] = []
    stop = interrupt.StopSignals(notify=lines.append)
    with pytest.raises(interrupt.RunInterrupted, match=interrupt.SIGTERM_REASON):
        stop.handler(signal.SIGTERM, None)
    stop.handler(signal.SIGINT, None)  # held: the run is already stopping
    assert lines == [interrupt.MSG_STOPPING]
    with pytest.raises(KeyboardInterrupt, match="interrupted 3 times while stopping"):
        stop.handler(signal.SIGINT, None)


def test_an_ignored_sigint_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        undo = interrupt.install_stop_signals(interrupt.StopSignals())
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        undo()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_deadline_while_already_stopping_is_held_too() -> None:
    lines: list[str] = []
    stop = interrupt.StopSignals(notify=lines.append)
    with pytest.raises(interrupt.RunInterrupted):
        stop.handler(signal.SIGINT, None)
    disarm = interrupt.arm_deadline(0.05, stop)
    try:
        time.sleep(0.3)  # the alarm fires here: held, not raised, since the run is already stopping
    finally:
        disarm()
    assert lines == [interrupt.MSG_STOPPING]


QUICK = """
import pytest

@pytest.mark.check("operator-health")
def test_quick(aicr_check):
    pass

@pytest.mark.check("expected-resources")
def test_quick_too(aicr_check):
    pass
"""


def test_the_next_run_names_what_a_killed_run_left(tmp_path: Path, fc: FakeCluster) -> None:
    """SIGKILL leaves no chance to clean up; the next run finds the objects by their labels."""
    proc = _start(tmp_path, fc, CHECKS)
    run_id = _wait_started(proc, tmp_path)
    proc.kill()
    proc.communicate(timeout=30)
    left = _left(fc, run_id)
    assert left, "the killed run left nothing to find"
    (tmp_path / "started").unlink()
    code, err = _finish(_start(tmp_path, fc, QUICK))
    assert code == 0, err
    line = next(ln for ln in err.splitlines() if "left in the cluster" in ln)
    assert line.startswith(
        f"aicr-pytest: {len(left)} object(s) left in the cluster by 1 earlier aicr-pytest run(s): "
        f"run {run_id} ({len(left)} object(s), newest "
    )
    # the bound is --stale-after (1h) or the longest check budget of the catalog, whichever is longer
    assert re.search(r"; none idle over 1h\d+m0s yet \(they may belong to a run still going\)$", line), line
    assert sorted(_left(fc, run_id)) == sorted(left)  # named, not deleted: it may still be going
