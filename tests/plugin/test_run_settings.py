"""A run's options resolve once, into one :class:`RunSettings`: ``aicr-pytest validate`` reads
``--config`` once and hands its resolution to its pytest session, which resolves nothing again;
plain pytest resolves the same inputs into an equal object."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import cli
from aicr_pytest.core import aicrconfig
from aicr_pytest.core.errors import UsageError
from aicr_pytest.plugin import options

Inputs = Callable[..., tuple[Path, Path]]

#: a test that writes the session's RunSettings (and its typed views) to run-settings.json
PROBE = """
import json
from pathlib import Path

from aicr_pytest.plugin import options


def test_probe(request):
    run = options.session_run(request.config)
    winput = getattr(request.config, "workerinput", None)
    assert winput is None or options.WORKER_KEY in winput  # a worker takes the controller's
    Path("run-settings.json").write_text(json.dumps({
        "values": dict(run.values),
        "given": sorted(run.given),
        "settings": run.settings.model_dump(mode="json"),
        "evidence": repr(run.evidence),
        "cncf": repr(run.cncf),
    }, default=str))
"""


class Counts:
    def __init__(self) -> None:
        self.config_reads = 0
        self.session_resolutions = 0


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    """Counts reads of the ``--config`` file and resolutions of the option table by a session."""
    seen = Counts()
    read, resolve = aicrconfig.load_validate_config, options.run_settings

    def counting_read(path: str) -> dict[str, Any]:
        seen.config_reads += 1
        return read(path)

    def counting_resolve(*args: Any, **kwargs: Any) -> options.RunSettings:
        seen.session_resolutions += 1
        return resolve(*args, **kwargs)

    monkeypatch.setattr(aicrconfig, "load_validate_config", counting_read)
    monkeypatch.setattr(options, "run_settings", counting_resolve)
    yield seen


@pytest.fixture
def config_file(pytester: pytest.Pytester, write_inputs: Inputs) -> Path:
    rp, sp = write_inputs()
    cfg = pytester.path / "aicr.yaml"
    cfg.write_text(
        "kind: AICRConfig\napiVersion: aicr.run/v1alpha2\nspec:\n  validate:\n"
        f"    input: {{recipe: {rp}, snapshot: {sp}}}\n"
        "    execution: {noCluster: true, failFast: true}\n"
        "    agent: {namespace: cfg-ns, imagePullSecrets: [cfg-secret]}\n"
    )
    pytester.makepyfile(test_probe=PROBE)
    return cfg


#: the same options, in each entry point's spelling
FLAGS = {
    "validate": ["--timeout", "7m", "--node-selector", "pool=gpu", "--skip-check", "dra-support"],
    "pytest": ["--aicr-timeout=7m", "--aicr-node-selector=pool=gpu", "--aicr-skip-check=dra-support"],
}
#: after ``--`` (validate) / on the command line (pytest): the probe instead of the bundled checks
PYTEST_SIDE = ["-p", "no:cacheprovider", "--aicr-no-bundled-checks", "test_probe.py"]


def _validate(config_file: Path) -> int:
    argv = ["validate", "--config", str(config_file), *FLAGS["validate"], "-o", "out.json"]
    return cli.main([*argv, "--", *PYTEST_SIDE])


def _plain(pytester: pytest.Pytester, config_file: Path) -> pytest.RunResult:
    # what validate's own options mean on the pytest side: -o is --aicr-ctrf-report, and validate
    # always checks the kubeconfig
    validate_sets = ["--aicr-ctrf-report=out.json", "--aicr-check-kubeconfig"]
    return pytester.runpytest(f"--aicr-config={config_file}", *FLAGS["pytest"], *validate_sets, *PYTEST_SIDE)


def test_validate_reads_config_once_and_its_session_resolves_nothing(
    pytester: pytest.Pytester, config_file: Path, counts: Counts, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _validate(config_file)
    assert code == 0, capsys.readouterr().err
    assert counts.config_reads == 1
    assert counts.session_resolutions == 0  # the session took validate's RunSettings
    probed = json.loads((pytester.path / "run-settings.json").read_text())
    assert probed["values"]["namespace"] == "cfg-ns" and probed["values"]["timeout"] == "7m"


def test_plain_pytest_reads_config_once(pytester: pytest.Pytester, config_file: Path, counts: Counts) -> None:
    _plain(pytester, config_file).assert_outcomes(passed=1)
    assert (counts.config_reads, counts.session_resolutions) == (1, 1)


def test_validate_and_plain_pytest_resolve_equal_settings(
    pytester: pytest.Pytester, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    probe = pytester.path / "run-settings.json"
    assert _validate(config_file) == 0, capsys.readouterr().err
    from_validate = json.loads(probe.read_text())
    probe.unlink()
    _plain(pytester, config_file).assert_outcomes(passed=1)
    from_pytest = json.loads(probe.read_text())
    assert from_validate == from_pytest
    assert from_pytest["settings"]["placement"]["namespace"] == "cfg-ns"
    assert from_pytest["settings"]["fail_fast"] is True and from_pytest["settings"]["timeout_s"] == 420.0
    assert "no_bundled_checks" in from_pytest["given"] and "recipe" not in from_pytest["given"]


def test_an_xdist_worker_takes_the_controller_s_resolution(
    pytester: pytest.Pytester, config_file: Path
) -> None:
    probe = pytester.path / "run-settings.json"
    args = [f"--aicr-config={config_file}", *FLAGS["pytest"], *PYTEST_SIDE]
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
    alone = json.loads(probe.read_text())
    probe.unlink()
    pytester.runpytest_subprocess("-n", "1", *args).assert_outcomes(passed=1)
    assert json.loads(probe.read_text()) == alone


def test_resolve_validate_equals_plain_pytest_resolution_for_the_same_options() -> None:
    env = {"AICR_NAMESPACE": "env-ns"}
    ns = cli.build_parser().parse_args(["validate", "-r", "r.yaml", "--data", "", "--timeout", "2m"])
    values, run = options.resolve_validate(options.values_from(ns, options.VALIDATE), environ=env)
    plain = options.run_settings({"recipe": "r.yaml", "timeout": "2m"}, environ=env)
    assert run == plain
    assert run.values["namespace"] == values["namespace"] == "env-ns"
    assert run.values["data"] is None and values["data"] == ""  # '--data ""': no data tree
    assert (run.run_timeout, options.RunSettings(run.values).run_timeout) == ("2m", None)


def test_aicr_options_after_dashdash() -> None:
    """Ours after ``--``: one that validate resolves itself would disagree with it (refused); a
    pytest-only one (``--aicr-no-bundled-checks``) joins the resolution."""
    found = options.after_dashdash(["-k", "nccl", "--aicr-no-bundled-checks", "-x"])
    assert found == {"no_bundled_checks": True}
    sets = "after --: validate sets it from its own options; give"
    for arg, line in (
        ("--aicr-timeout=1s", f"--aicr-timeout {sets} --timeout"),
        ("--recipe", f"--recipe {sets} --recipe"),
        ("--aicr-ctrf-report=x", f"--aicr-ctrf-report {sets} -o/--output"),
    ):
        with pytest.raises(UsageError) as err:
            options.after_dashdash(["-x", arg])
        assert str(err.value) == f"{line} before --"
