"""A check's time budget, shrunk through a ``--data`` catalog overlay: past it the check ends
``other`` with one timeout line naming the budget, its run-scoped objects are deleted, the checks
after it still run, and ``aicr-pytest validate`` exits 8 — in one process and under xdist, without
pytest-timeout.  Real ``aicr-pytest validate`` processes against an in-process fake cluster (wall
clock); the budget logic itself: tests/unit/test_check_budgets.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.testing.cluster import FakeCluster
from tests.plugin import test_interrupt_cleanup as interrupt_tests
from tests.plugin.helpers import make_recipe
from tests.plugin.test_cli import write

#: the fake cluster (wall clock) of the interrupt tests, and what a run left in it
fc = interrupt_tests.fc
_left = interrupt_tests._left

#: operator-health creates a ConfigMap and would then take a minute; expected-resources is quick
CHECKS = """
import pathlib, time, pytest

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "slow"}, "data": {"k": "v"}}

@pytest.mark.check("operator-health")
def test_slow(aicr_check, aicr_run):
    aicr_run.ensure_namespace()
    aicr_run.create(CM)
    pathlib.Path("run-id").write_text(aicr_run.run_id)
    aicr_check.emit(f"budget {aicr_check.timeout_s:g}s")
    try:
        time.sleep(60)
    except Exception:  # a check's own error handling cannot swallow the budget
        pass
    aicr_check.emit("never reached")

@pytest.mark.check("expected-resources")
def test_quick(aicr_check):
    aicr_check.emit("quick")
"""

OVERLAY = "validators:\n  - name: operator-health\n    timeout: 1s\n"


def _data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    (data / "validators").mkdir(parents=True)
    (data / "registry.yaml").write_text("components: []\n")
    (data / "validators" / "catalog.yaml").write_text(OVERLAY)
    return data


def _validate(tmp_path: Path, fc: FakeCluster, *pytest_args: str) -> tuple[int, str, dict[str, Any]]:
    (tmp_path / "test_checks.py").write_text(CHECKS)
    rp, sp = write(tmp_path, make_recipe(deployment=["operator-health", "expected-resources"]))
    cmd = [
        sys.executable, "-m", "aicr_pytest.cli", "validate", "-r", rp, "-s", sp,
        "--kubeconfig", str(fc.kubeconfig_path), "--phase", "deployment", "--data", str(_data_dir(tmp_path)),
        "-o", str(tmp_path / "ctrf.json"),
        "--", "-p", "no:cacheprovider", "-p", "no:timeout", "--aicr-no-bundled-checks",
        str(tmp_path / "test_checks.py"),
        *pytest_args,
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    doc = json.loads((tmp_path / "ctrf.json").read_text())
    return proc.returncode, proc.stderr, {t["name"]: t for t in doc["results"]["tests"]}


@pytest.mark.parametrize("pytest_args", [(), ("-n", "1")], ids=["one-process", "xdist"])
def test_a_check_past_its_overlaid_budget_ends_other_cleans_up_and_exits_8(
    tmp_path: Path, fc: FakeCluster, pytest_args: tuple[str, ...]
) -> None:
    started = time.monotonic()
    code, err, tests = _validate(tmp_path, fc, *pytest_args)
    assert time.monotonic() - started < 50, "the check was not stopped at its budget"
    assert code == 8, err[-3000:]
    slow = tests["operator-health"]
    assert (slow["status"], slow["message"]) == ("other", "timeout: validator did not complete within 1s")
    assert slow["stdout"] == ["budget 1s"]  # the check saw the overlay's budget
    assert slow["duration"] < 20_000
    quick = tests["expected-resources"]
    assert (quick["status"], quick["stdout"]) == ("passed", ["quick"])
    assert _left(fc, (tmp_path / "run-id").read_text()) == []


def test_a_bundled_check_on_the_simulator_counts_down_its_overlaid_budget(tmp_path: Path) -> None:
    """expected-resources holds its readiness signals for a minute; given 12 s by the overlay, its
    progress lines count down those 12 s (``…; 2s left``), not the catalog's 8 minutes, and it ends
    within them: by its own deadline (``failed``, its own text) or by the budget (``other``), which
    of the two fires first being a matter of milliseconds."""
    repo = Path(__file__).resolve().parents[2]
    data = _data_dir(tmp_path)
    (data / "validators" / "catalog.yaml").write_text(
        "validators:\n  - name: expected-resources\n    timeout: 12s\n"
    )
    ctrf = tmp_path / "ctrf.json"
    cmd = [
        sys.executable, "-m", "aicr_pytest.cli", "validate", "--simulate", "h100-eks-training",
        "-r", str(repo / "recipes/examples/h100-eks-training.yaml"),
        "-s", str(repo / "recipes/examples/h100-eks-training-snapshot.yaml"),
        "--phase", "deployment", "--data", str(data), "-o", str(ctrf),
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 8, proc.stderr[-3000:]
    tests = {t["name"]: t for t in json.loads(ctrf.read_text())["results"]["tests"]}
    er = tests["expected-resources"]
    assert er["status"] in ("failed", "other") and er["duration"] < 20_000, er
    if er["status"] == "other":
        assert er["message"] == "timeout: validator did not complete within 12s"
    progress = [ln for ln in proc.stderr.splitlines() if ln.startswith("expected-resources: waiting for")]
    assert progress and all(re.search(r"; ([0-9]|1[0-2])s left$", ln) for ln in progress), progress
    others = ("operator-health", "gpu-operator-version", "check-nvidia-smi")
    assert [tests[n]["status"] for n in others] == ["passed"] * 3
