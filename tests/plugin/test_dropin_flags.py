"""The `aicr validate` drop-in flags end to end: the flags on both entry points.

``validate`` runs in a real process (:func:`cli`); plain pytest runs through pytester.  A small user
test (:data:`SCOPE_PROBE`) writes what the ``run`` fixture's scope was given, so the flags that shape
cluster objects are observed where the checks receive them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import cli as cli_mod
from aicr_pytest.core import runflags
from aicr_pytest.plugin import bundled, options
from aicr_pytest.plugin.hooks import BUNDLED_HEADER
from tests.plugin.helpers import SNAPSHOT, make_recipe, read_ctrf

Inputs = Callable[..., tuple[Path, Path]]

#: a user test that records the run scope's namespace and pull secrets
SCOPE_PROBE = """
from pathlib import Path

def test_scope(aicr_run):
    Path("scope.json").write_text(
        '{"namespace": "%s", "secrets": "%s"}' % (aicr_run.namespace, ",".join(aicr_run.image_pull_secrets))
    )
"""

SKIPPED = {
    "name": "operator-health",
    "status": "skipped",
    "suite": ["deployment"],
    "message": runflags.SKIP_CHECK_REASON,
    "extra": {"skipReason": runflags.SKIP_CHECK_REASON_CODE},
    "filePath": "checks/deployment/test_deployment.py",
}
#: what changes from run to run (times) or is checked elsewhere (the stable ids)
VOLATILE = ("duration", "start", "stop", "id", "testId")


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AICR_") and k != "KUBECONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**environ, **(env or {})},
        timeout=180,
        check=False,
    )


def _two_checks() -> dict[str, Any]:
    return make_recipe(deployment=["operator-health", "gpu-operator-version"])


def _without(test: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in test.items() if k not in keys}


# --- item 1: every flag accepted, with its meaning ----------------------------------------------


def test_skip_check_is_reported_skipped_with_the_reason_on_validate(
    tmp_path: Path, write_inputs: Inputs
) -> None:
    rp, sp = write_inputs(_two_checks())
    out = tmp_path / "ctrf.json"
    proc = cli(
        "validate",
        "-r",
        str(rp),
        "-s",
        str(sp),
        "--no-cluster",
        "--skip-check",
        "operator-health",
        "-o",
        str(out),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    tests = read_ctrf(out)["results"]["tests"]
    assert _without(tests[0], *VOLATILE) == SKIPPED
    assert tests[1]["name"] == "gpu-operator-version" and tests[1]["message"] == "skipped - no-cluster mode"


def test_skip_check_is_reported_skipped_with_the_reason_under_pytest(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    rp, sp = write_inputs(_two_checks())
    out = pytester.path / "ctrf.json"
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-no-cluster",
        "--aicr-skip-check",
        "operator-health",
        "--aicr-ctrf-report",
        str(out),
    )
    assert result.ret == 0
    assert _without(read_ctrf(out)["results"]["tests"][0], *VOLATILE) == SKIPPED


def test_namespace_and_pull_secrets_reach_the_run_scope_on_validate(
    tmp_path: Path, write_inputs: Inputs
) -> None:
    rp, sp = write_inputs()
    (tmp_path / "test_probe.py").write_text(SCOPE_PROBE)
    proc = cli(
        "validate",
        "-r",
        str(rp),
        "-s",
        str(sp),
        "--no-cluster",
        "-n",
        "team-ns",
        "--image-pull-secret",
        "regcred",
        "--image-pull-secret",
        "mirror",
        "-o",
        str(tmp_path / "c.json"),
        "--",
        "test_probe.py",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "scope.json").read_text()) == {
        "namespace": "team-ns",
        "secrets": "regcred,mirror",
    }


def test_namespace_env_and_default_under_pytest(
    pytester: pytest.Pytester, write_inputs: Inputs, monkeypatch: pytest.MonkeyPatch
) -> None:
    rp, sp = write_inputs()
    pytester.makepyfile(test_probe=SCOPE_PROBE)
    base = (
        "-p",
        "no:cacheprovider",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-no-cluster",
        "test_probe.py",
    )
    pytester.runpytest(*base)
    assert json.loads((pytester.path / "scope.json").read_text())["namespace"] == "aicr-validation"
    monkeypatch.setenv("AICR_NAMESPACE", "from-env")
    pytester.runpytest(*base)
    assert json.loads((pytester.path / "scope.json").read_text())["namespace"] == "from-env"
    pytester.runpytest(*base, "--aicr-namespace", "from-flag", "--aicr-image-pull-secret", "regcred")
    assert json.loads((pytester.path / "scope.json").read_text()) == {
        "namespace": "from-flag",
        "secrets": "regcred",
    }


def test_config_file_gives_defaults_and_flags_and_env_win(tmp_path: Path, write_inputs: Inputs) -> None:
    rp, sp = write_inputs()
    (tmp_path / "test_probe.py").write_text(SCOPE_PROBE)
    cfg = tmp_path / "aicr.yaml"
    cfg.write_text(
        "kind: AICRConfig\napiVersion: aicr.run/v1alpha2\nspec:\n  validate:\n"
        f"    input: {{recipe: {rp}, snapshot: {sp}}}\n"
        "    execution: {noCluster: true}\n    agent: {namespace: cfg-ns, imagePullSecrets: [cfg-secret]}\n"
    )
    base = ("validate", "--config", str(cfg), "-o", str(tmp_path / "c.json"), "--", "test_probe.py")
    scope = tmp_path / "scope.json"
    assert cli(*base, cwd=tmp_path).returncode == 0
    assert json.loads(scope.read_text()) == {"namespace": "cfg-ns", "secrets": "cfg-secret"}
    assert cli(*base, cwd=tmp_path, env={"AICR_NAMESPACE": "env-ns"}).returncode == 0
    assert json.loads(scope.read_text())["namespace"] == "env-ns"
    proc = cli(*base[:3], "-n", "flag-ns", *base[3:], cwd=tmp_path, env={"AICR_NAMESPACE": "env-ns"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(scope.read_text())["namespace"] == "flag-ns"


@pytest.mark.parametrize("entry", ["validate", "pytest"])
def test_require_gpu_fails_a_snapshot_without_gpu(tmp_path: Path, write_inputs: Inputs, entry: str) -> None:
    snapshot = {**SNAPSHOT, "measurements": [m for m in SNAPSHOT["measurements"] if m["type"] != "GPU"]}
    rp, sp = write_inputs(make_recipe(deployment=["operator-health"]), snapshot)
    line = (
        'readiness constraint failed: name=--require-gpu expected="a GPU measurement" actual= '
        f'error="{runflags.MSG_NO_GPU}"'
    )
    if entry == "validate":
        proc = cli("validate", "-r", str(rp), "-s", str(sp), "--no-cluster", "--require-gpu", cwd=tmp_path)
        assert proc.returncode == 2 and line in proc.stderr.splitlines()
        ok = cli("validate", "-r", str(rp), "-s", str(sp), "--no-cluster", cwd=tmp_path)
        assert ok.returncode == 0, ok.stderr
    else:
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--recipe",
            str(rp),
            "--snapshot",
            str(sp),
            "--aicr-no-cluster",
        ]
        env = {**os.environ, "AICR_REQUIRE_GPU": "true"}
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180, check=False
        )
        assert proc.returncode == 1 and line in (proc.stdout + proc.stderr).splitlines()


def test_container_flags_are_accepted_and_the_timeout_parsed(tmp_path: Path, write_inputs: Inputs) -> None:
    rp, sp = write_inputs()
    proc = cli(
        "validate",
        "-r",
        str(rp),
        "-s",
        str(sp),
        "--no-cluster",
        "--image",
        "reg/agent:1",
        "--job-name",
        "mine",
        "--service-account-name",
        "sa",
        "--timeout",
        "1h30m",
        "--debug",
        "--log-json",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"]["summary"]["skipped"] == 1


def test_debug_asks_pytest_for_long_tracebacks_before_user_arguments() -> None:
    run = options.RunSettings({"recipe": "r.yaml"}, frozenset({"recipe"}))
    args = cli_mod._pytest_args(run, extra=["--", "--tb=short"], debug=True)
    assert args[-2:] == ["--tb=long", "--tb=short"]
    assert "--tb=long" not in cli_mod._pytest_args(run, extra=())


# --- item 2: warnings before the run ----------------------------------------------------------------


@pytest.mark.parametrize("entry", ["validate", "pytest"])
def test_a_recipe_without_checks_says_so(tmp_path: Path, write_inputs: Inputs, entry: str) -> None:
    rp, sp = write_inputs(make_recipe())
    line = f"warning: {runflags.MSG_NO_CHECKS}"
    if entry == "validate":
        proc = cli("validate", "-r", str(rp), "-s", str(sp), "--no-cluster", cwd=tmp_path)
        assert proc.returncode == 0 and line in proc.stderr.splitlines()
    else:
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--recipe",
            str(rp),
            "--snapshot",
            str(sp),
            "--aicr-no-cluster",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=180, check=False)
        assert line in (proc.stdout + proc.stderr).splitlines()


# --- item 7: fidelity --------------------------------------------------------------------------------


def test_version_skew_advisory(tmp_path: Path, write_inputs: Inputs) -> None:
    recipe = {**make_recipe(deployment=["operator-health"]), "metadata": {"version": "v0.11.1"}}
    rp, sp = write_inputs(recipe, {**SNAPSHOT, "metadata": {"version": "v0.12.0"}})
    proc = cli("validate", "-r", str(rp), "-s", str(sp), "--no-cluster", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from aicr_pytest import __version__

    expected = runflags.MSG_VERSION_SKEW.format(binary=__version__, recipe="v0.11.1", snapshot="v0.12.0")
    assert f"warning: {expected}" in proc.stderr.splitlines()


def test_header_names_the_bundled_checks_and_paths_are_theirs(tmp_path: Path, write_inputs: Inputs) -> None:
    rp, sp = write_inputs()
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    proc = cli("validate", "-r", str(rp), "-s", str(sp), "--no-cluster", cwd=sub)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert f"rootdir: {bundled.checks_dir()}" in lines
    assert f"{BUNDLED_HEADER}{bundled.checks_dir()}" in lines
    assert any(ln.startswith("deployment/test_deployment.py ") for ln in lines), proc.stderr


# --- item 8: help ---------------------------------------------------------------------------------------


def test_help_lists_exit_codes_and_simulate_lists_profiles_and_faults(tmp_path: Path) -> None:
    text = cli("validate", "--help", cwd=tmp_path).stdout
    for code in (
        "0  every phase passed",
        "2  invalid input",
        "5  interrupted",
        "6  --emit-attestation",
        "8  a phase",
    ):
        assert f"  {code}" in text
    assert "--service-account-name is accepted" in " ".join(text.split())
    from aicr_pytest.testing.profiles import PROFILES
    from aicr_pytest.testing.profiles.faults import FAULTS

    listing = cli("simulate", "--list", cwd=tmp_path)
    assert listing.returncode == 0
    names = [ln.split()[0] for ln in listing.stdout.splitlines() if ln.startswith("  ")]
    assert names == [*PROFILES, *sorted(FAULTS)]


def test_pytest_spellings_avoid_pytests_own_flags() -> None:
    by = options.by_name()
    assert by["namespace"].flags_for(options.PYTEST) == ("--aicr-namespace",)  # -n stays xdist's
    assert by["debug"].flags_for(options.PYTEST) == ("--aicr-debug",)
    assert by["timeout"].long_flag(options.PYTEST) == "--aicr-timeout"
