"""`aicr-pytest validate` end to end in a subprocess: flags, CTRF output and exit codes."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import cli as cli_module
from aicr_pytest.core import yamlio
from aicr_pytest.plugin import options
from tests.plugin.helpers import SNAPSHOT, make_recipe

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
EXAMPLE_SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"


def cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


def write(tmp_path: Path, recipe: dict[str, Any], snapshot: dict[str, Any] | None = None) -> tuple[str, str]:
    rp, sp = tmp_path / "recipe.yaml", tmp_path / "snapshot.yaml"
    rp.write_text(yamlio.dump(recipe))
    sp.write_text(yamlio.dump(snapshot or SNAPSHOT))
    return str(rp), str(sp)


def test_example_no_cluster_exit_0_and_ctrf_on_stdout() -> None:
    proc = cli("validate", "--recipe", str(EXAMPLE), "--snapshot", str(EXAMPLE_SNAPSHOT), "--no-cluster")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    tests = report["results"]["tests"]
    assert [t["suite"][0] for t in tests] == sorted(
        (t["suite"][0] for t in tests), key=["deployment", "conformance", "performance"].index
    )
    assert {t["message"] for t in tests} == {"skipped - no-cluster mode"}
    assert "aicr-pytest: recipe" in proc.stderr and "--no-cluster" in proc.stderr
    assert "aicr phase summary" in proc.stderr


def test_output_file_and_phase_selection(tmp_path: Path) -> None:
    out = tmp_path / "ctrf.json"
    proc = cli(
        "validate",
        "-r",
        str(EXAMPLE),
        "-s",
        str(EXAMPLE_SNAPSHOT),
        "--no-cluster",
        "--phase",
        "performance",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "reportFormat" not in proc.stdout
    tests = json.loads(out.read_text())["results"]["tests"]
    assert [t["name"] for t in tests] == ["nccl-all-reduce-bw"]


def test_readiness_block_exits_2_even_without_fail_on_error(tmp_path: Path) -> None:
    rp, sp = write(
        tmp_path,
        make_recipe(
            constraints=[{"name": "K8s.server.version", "value": ">= 1.34"}], deployment=["operator-health"]
        ),
    )
    for extra in ([], ["--fail-on-error=false"]):
        proc = cli("validate", "-r", rp, "-s", sp, "--no-cluster", *extra)
        assert proc.returncode == 2, proc.stderr
        assert (
            'readiness constraint failed: name=K8s.server.version expected=">= 1.34" actual=v1.33.5-eks-abc'
            in proc.stderr
        )
        tests = json.loads(proc.stdout)["results"]["tests"]
        assert tests[0]["suite"] == ["readiness"]


USER_FAIL = """
import pytest
from aicr_pytest import Inconclusive

@pytest.mark.check("operator-health")
def test_fails(aicr_check):
    aicr_check.fail("gpu-operator pods not running")

@pytest.mark.check("dra-support")
def test_other(aicr_check):
    raise Inconclusive("API unreachable")
"""


@pytest.mark.parametrize(
    ("checks", "flags", "code"),
    [
        ({"deployment": ["operator-health"]}, [], 8),
        ({"deployment": ["operator-health"]}, ["--fail-on-error=false"], 0),
        ({"conformance": ["dra-support"]}, [], 8),
        ({"conformance": ["slinky-slurm-health"]}, [], 0),
    ],
)
def test_exit_codes_failed_other_and_fail_on_error(
    tmp_path: Path, checks: dict[str, list[str]], flags: list[str], code: int
) -> None:
    (tmp_path / "test_user_checks.py").write_text(USER_FAIL)
    rp, sp = write(tmp_path, make_recipe(**checks))
    proc = cli(
        "validate",
        "-r",
        rp,
        "-s",
        sp,
        *flags,
        "--",
        "-p",
        "no:cacheprovider",
        "--aicr-no-bundled-checks",
        str(tmp_path / "test_user_checks.py"),
        cwd=tmp_path,
    )
    assert proc.returncode == code, proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--phase", "bogus"],
            'invalid phase "bogus": must be one of: deployment, performance, conformance, all',
        ),
        (["--phase", "all", "--phase", "deployment"], 'phase "all" cannot be combined with other phases'),
        (
            ["--node-selector", "novalue"],
            'invalid node-selector: invalid format "novalue", expected key=value',
        ),
        (["--toleration", "k=v:Sometimes"], 'invalid toleration: invalid effect "Sometimes"'),
        (["--data", "/nonexistent/dir"], "--data /nonexistent/dir: not a directory"),
    ],
)
def test_bad_flags_exit_2_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    rp, sp = write(tmp_path, make_recipe(deployment=["operator-health"]))
    proc = cli("validate", "-r", rp, "-s", sp, "--no-cluster", *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len([line for line in proc.stderr.splitlines() if line.strip()]) == 1


@pytest.mark.parametrize(
    ("recipe_text", "snapshot_text", "extra", "message"),
    [
        (None, None, ["--no-cluster"], "recipe.yaml"),  # missing file
        ("kind: RecipeResult\n  bad: [", None, ["--no-cluster"], "malformed YAML"),
        ("- a\n- b\n", None, ["--no-cluster"], "a list"),
        ("just a scalar\n", None, ["--no-cluster"], "a scalar"),
        ("kind: Snapshot\napiVersion: aicr.run/v1alpha2\n", None, ["--no-cluster"], "kind"),
        (
            "kind: RecipeResult\napiVersion: aicr.run/v1alpha2\nconstraints:\n- name: K8s.server.version\n",
            None,
            ["--no-cluster"],
            "value",
        ),
        (
            None,
            "kind: Snapshot\napiVersion: aicr.run/v1alpha2\nmeasurements: []\n",
            ["--no-cluster"],
            "measurements",
        ),
    ],
)
def test_bad_input_exit_2_no_traceback(
    tmp_path: Path, recipe_text: str | None, snapshot_text: str | None, extra: list[str], message: str
) -> None:
    rp, sp = write(tmp_path, make_recipe(deployment=["operator-health"]))
    if recipe_text is None and snapshot_text is None:
        rp = str(tmp_path / "missing" / "recipe.yaml")
    if recipe_text is not None:
        Path(rp).write_text(recipe_text)
    if snapshot_text is not None:
        Path(sp).write_text(snapshot_text)
    proc = cli("validate", "-r", rp, "-s", sp, *extra)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_cluster_without_snapshot_and_cm_without_namespace(tmp_path: Path) -> None:
    rp, _ = write(tmp_path, make_recipe(deployment=["operator-health"]))
    proc = cli("validate", "-r", rp, "--no-cluster")
    assert proc.returncode == 2
    assert "--no-cluster requires --snapshot" in proc.stderr
    proc = cli("validate", "-r", "cm://only-name", "-s", "snap.yaml")
    assert proc.returncode == 2
    assert "cm://" in proc.stderr and "Traceback" not in proc.stderr


def test_unexpected_positional_args_rejected(tmp_path: Path) -> None:
    rp, sp = write(tmp_path, make_recipe(deployment=["operator-health"]))
    proc = cli("validate", "-r", rp, "-s", sp, "--no-cluster", "stray")
    assert proc.returncode == 2
    assert "pass pytest arguments after --" in proc.stderr


def _dra(gpus: bool | None, waiver: bool) -> dict[str, Any]:
    overrides: dict[str, Any] = {"gpuResourcesEnabledOverride": waiver}
    if gpus is not None:
        overrides["resources"] = {"gpus": {"enabled": gpus}}
    return {
        "name": "nvidia-dra-driver-gpu",
        "namespace": "nvidia-dra-driver",
        **_CHART,
        "overrides": overrides,
    }


#: a coherent Helm ref: the allocation-policy cases must get past load-time coherence
_CHART = {"type": "Helm", "source": "https://helm.ngc.nvidia.com/nvidia", "version": "v25.10.1"}


def _op(device_plugin: bool) -> dict[str, Any]:
    return {
        "name": "gpu-operator",
        "namespace": "gpu-operator",
        **_CHART,
        "overrides": {"devicePlugin": {"enabled": device_plugin}},
    }


@pytest.mark.parametrize(
    ("refs", "fragment"),
    [
        ([_dra(None, True), _op(True)], 'is enabled but "resources.gpus.enabled" is not set'),
        ([_dra(True, False), _op(True)], "requires gpuResourcesEnabledOverride=true"),
        ([_dra(True, True), _op(True)], "dual advertisement"),
        ([_dra(False, False), _op(False)], "no whole-GPU advertiser"),
        ([_dra(False, True), _op(True)], "is an inert waiver"),
    ],
    ids=["E1", "E2", "E3", "E4", "E5"],
)
def test_invalid_allocation_policy_exits_2(tmp_path: Path, refs: list[dict[str, Any]], fragment: str) -> None:
    recipe = make_recipe(deployment=["operator-health"])
    recipe["componentRefs"] = refs
    rp, sp = write(tmp_path, recipe)
    proc = cli("validate", "-r", rp, "-s", sp, "--no-cluster")
    assert proc.returncode == 2, proc.stderr
    assert "[INVALID_REQUEST] invalid GPU allocation configuration: " in proc.stderr
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unparsable_comparator_exits_2(tmp_path: Path) -> None:
    recipe = make_recipe(constraints=[{"name": "K8s.server.version", "value": ">= banana"}])
    rp, sp = write(tmp_path, recipe)
    proc = cli("validate", "-r", rp, "-s", sp, "--no-cluster")
    assert proc.returncode == 2
    assert "banana" in proc.stderr and "Traceback" not in proc.stderr


EXAMPLES = sorted(
    p for p in (REPO / "recipes" / "examples").glob("*.yaml") if not p.stem.endswith("-snapshot")
)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_each_example_recipe_selects_the_checks_it_declares(tmp_path: Path, example: Path) -> None:
    data = yamlio.load(example.read_text())
    assert data.get("kind") == "RecipeResult"
    snapshot = example.with_name(example.stem + "-snapshot.yaml")
    declared = [
        name
        for phase in ("deployment", "conformance", "performance")
        for name in ((data.get("validation") or {}).get(phase) or {}).get("checks") or []
    ]
    out = tmp_path / "ctrf.json"
    proc = cli("validate", "-r", str(example), "-s", str(snapshot), "--no-cluster", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    tests = json.loads(out.read_text())["results"]["tests"]
    selected = [t["name"] for t in tests if t["message"] == "skipped - no-cluster mode"]
    assert sorted(selected) == sorted(declared)
    assert declared, f"{example.name} declares no checks"


SLOW_CHECK = """
import time, pathlib, pytest

@pytest.mark.check("operator-health")
def test_slow(aicr_check):
    pathlib.Path("started").write_text("1")
    time.sleep(60)
"""


def test_sigterm_exits_5(tmp_path: Path) -> None:
    import signal
    import time

    (tmp_path / "test_slow.py").write_text(SLOW_CHECK)
    rp, sp = write(tmp_path, make_recipe(deployment=["operator-health"]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aicr_pytest.cli",
            "validate",
            "-r",
            rp,
            "-s",
            sp,
            "--",
            "-p",
            "no:cacheprovider",
            "--aicr-no-bundled-checks",
            str(tmp_path / "test_slow.py"),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the check never started"
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 5, err


def test_the_validate_request_reads_only_options_of_validate() -> None:
    """Each field of the request is a row of the option table on ``validate``: one resolution
    fills it, and no option is read by a string key."""
    names = {opt.name for opt in options.entries(options.VALIDATE)}
    fields = {f.name for f in dataclasses.fields(cli_module.ValidateRequest)}
    assert fields <= names, fields - names
    ns = cli_module.build_parser().parse_args(["validate", "-r", "r.yaml", "--fault", "x", "-n", "team"])
    given = options.values_from(ns, options.VALIDATE)
    request = cli_module.ValidateRequest.of(options.resolved(given, options.VALIDATE, environ={}))
    assert (request.recipe, request.fault, request.namespace, request.timeout) == (
        "r.yaml",
        ["x"],
        "team",
        "5m",
    )
    assert request.captures and not request.alongside


def test_every_subcommand_is_one_entry_of_the_table() -> None:
    parser = cli_module.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(cli_module.SUBCOMMANDS) == set(subparsers.choices)
    assert cli_module.main([]) == cli_module.EXIT_INVALID  # no subcommand: the help, exit 2
