"""``aicr-pytest validate`` without ``--snapshot`` captures one first, in a real
process against the simulated cluster (``--simulate``).

The captured file is what readiness evaluates: with the agent's log cut inside its sysctl section
(fault ``snapshot-agent-log-truncated``) the H100 recipe's kernel constraint cannot be evaluated and
the run stops at the pre-flight (exit 2). A bad recipe is reported before anything is deployed, and
``--no-cluster`` without ``--snapshot`` stays the guide's usage error (tests/plugin/test_cli.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from aicr_pytest.core import yamlio
from aicr_pytest.core.snapshot import load_snapshot_text

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
CAPTURED = re.compile(
    r"^snapshot: none given, so one was captured from node (?P<node>h100-\d) and saved to (?P<path>\S+) "
    r"\(readiness evaluates it; pass it with --snapshot to reuse it\)$",
    re.MULTILINE,
)


def cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AICR_", "KUBECONFIG"))}
    return subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", *args],
        capture_output=True,
        text=True,
        env={**env, "TMPDIR": str(tmp)},
        timeout=240,
        check=False,
    )


def operator_health_recipe(tmp: Path) -> Path:
    doc = yamlio.load(EXAMPLE.read_text())
    doc["validation"] = {"deployment": {"checks": ["operator-health"]}}
    path = tmp / "recipe.yaml"
    path.write_text(yamlio.dump(doc))
    return path


def test_validate_captures_a_snapshot_and_runs_against_it(tmp_path: Path) -> None:
    recipe = operator_health_recipe(tmp_path)
    proc = cli(
        "validate",
        "--simulate",
        "h100-eks-training",
        "-r",
        str(recipe),
        "--phase",
        "deployment",
        tmp=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = CAPTURED.search(proc.stderr)
    assert found is not None, proc.stderr
    saved = Path(found["path"])
    assert saved.parent == tmp_path and saved.name.startswith("aicr-pytest-snapshot-")
    snap = load_snapshot_text(saved.read_text(), str(saved))
    assert snap.source_node == found["node"] and snap.lookup("OS.release.ID") == "ubuntu"
    assert f"| snapshot {saved} |" in proc.stderr  # the run's header names the captured file
    report = json.loads(proc.stdout)
    assert report["results"]["summary"]["passed"] == 1 and report["results"]["summary"]["failed"] == 0
    assert "WARNING" not in proc.stderr


def test_readiness_evaluates_the_captured_snapshot(tmp_path: Path) -> None:
    recipe = operator_health_recipe(tmp_path)
    proc = cli(
        "validate",
        "--simulate",
        "h100-eks-training",
        "--fault",
        "snapshot-agent-log-truncated",
        "-r",
        str(recipe),
        tmp=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "WARNING: OS.sysctl omitted: the agent's log ends inside this section (truncated)" in proc.stderr
    assert CAPTURED.search(proc.stderr) is not None
    failed = [ln for ln in proc.stderr.splitlines() if ln.startswith("readiness constraint failed: ")]
    assert len(failed) == 1 and failed[0].startswith(
        "readiness constraint failed: name=OS.sysctl./proc/sys/kernel/osrelease "
    )
    assert (
        'error="[NOT_FOUND] value not found in snapshot: [NOT_FOUND] subtype not found in measurement"'
        in (failed[0])
    )
    assert "readiness pre-flight failed: no check runs and nothing touches the cluster" in proc.stderr


def test_a_bad_recipe_fails_before_any_capture(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("kind: Recipe\nmeasurements: []\n")
    proc = cli("validate", "-r", str(recipe), "-k", str(tmp_path / "no-kubeconfig"), tmp=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines == [
        'aicr-pytest: error: recipe file has kind "Recipe", but "RecipeResult" is required; '
        'run "aicr recipe" to generate a hydrated RecipeResult first'
    ]
    assert not list(tmp_path.glob("aicr-pytest-snapshot-*"))
