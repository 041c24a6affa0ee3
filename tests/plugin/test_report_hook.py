"""The optional features as plugin objects, and the one hook that hands them the finished run.

Each feature (``--html``, ``--emit-attestation``, ``--evidence-dir``, ``--cncf-submission``, the
interrupt watch, progress) is in the plugin manager only when its option (or an active run) asks
for it; ``pytest_aicr_report`` reaches them, and a user's conftest, once with the final CTRF
document.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from aicr_pytest import cli
from aicr_pytest.plugin import cncf_wiring, evidence_wiring, htmlreport, interrupt, progress_sink
from aicr_pytest.plugin.state import RunOutcome
from tests.plugin.helpers import make_recipe

Inputs = Callable[..., tuple[Path, Path]]

CHECKS = """
import pytest

@pytest.mark.check("operator-health")
def test_ok(aicr_check):
    aicr_check.emit("fine")

@pytest.mark.check("dra-support")
def test_fails(aicr_check):
    aicr_check.fail("no DRA driver")
"""

#: a conftest that records every call of the hook, one JSON line each
RECORDING_CONFTEST = """
import json
from pathlib import Path

def pytest_aicr_report(session, report, run):
    line = {
        "report": report,
        "items": [[i.name, i.phase] for i in run.items],
        "exitstatus": int(run.exitstatus),
        "recipe_checks": sorted(s.spec.name for s in run.inputs.selected),
        "finished": [a.status for a in run.results.finished],
        "worker": hasattr(session.config, "workerinput"),
    }
    with open(Path(__file__).parent / "calls.jsonl", "a") as f:
        f.write(json.dumps(line) + "\\n")
"""


class Receiver:
    def __init__(self) -> None:
        self.outcomes: list[RunOutcome] = []

    def pytest_aicr_run_finished(self, config: pytest.Config, outcome: RunOutcome) -> None:
        self.outcomes.append(outcome)


def run_user_checks(
    pytester: pytest.Pytester, source: str, recipe: Path, snapshot: Path, *args: str
) -> tuple[pytest.RunResult, RunOutcome]:
    """Run ``source`` as the only checks of an in-process run; its result and its one outcome."""
    pytester.makepyfile(test_user=source)
    receiver = Receiver()
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "test_user.py", "--aicr-no-bundled-checks",
        "--recipe", str(recipe), "--snapshot", str(snapshot), *args,
        plugins=[receiver],
    )  # fmt: skip
    (outcome,) = receiver.outcomes
    return result, outcome


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_conftest_receives_the_final_report_once_on_the_controller(
    pytester: pytest.Pytester, write_inputs: Inputs, xdist: list[str]
) -> None:
    pytester.makeconftest(RECORDING_CONFTEST)
    pytester.makepyfile(test_user=CHECKS)
    rp, sp = write_inputs(make_recipe(deployment=["operator-health"], conformance=["dra-support"]))
    ctrf = pytester.path / "ctrf.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "test_user.py", "--aicr-no-bundled-checks",
        "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", str(ctrf), *xdist,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    calls = [json.loads(line) for line in (pytester.path / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 1, calls
    (call,) = calls
    assert call["worker"] is False
    assert call["report"] == json.loads(ctrf.read_text())  # the document as written
    assert [(t["name"], t["status"]) for t in call["report"]["results"]["tests"]] == [
        ("operator-health", "passed"),
        ("dra-support", "failed"),
    ]
    assert call["recipe_checks"] == ["dra-support", "operator-health"]
    assert call["finished"] == ["passed", "failed"]
    assert call["exitstatus"] == pytest.ExitCode.TESTS_FAILED
    if not xdist:  # an xdist controller collects nothing itself
        assert call["items"] == [["operator-health", "deployment"], ["dra-support", "conformance"]]


def test_no_report_hook_without_recipe(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RECORDING_CONFTEST)
    pytester.makepyfile(test_plain="def test_x():\n    assert 1\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 0
    assert not (pytester.path / "calls.jsonl").exists()


FEATURES = [
    # name, class, the arguments added to an active run that ask for it
    pytest.param(htmlreport.NAME, htmlreport.HtmlReport, ["--aicr-html", "page.html"], id="html"),
    pytest.param(
        evidence_wiring.NAME,
        evidence_wiring.EvidenceEmitter,
        ["--aicr-emit-attestation", "out"],
        id="attestation",
    ),
    pytest.param(
        cncf_wiring.RENDERER_NAME, cncf_wiring.CncfRenderer, ["--aicr-evidence-dir", "ev"], id="evidence-dir"
    ),
    pytest.param(
        cncf_wiring.SUBMISSION_NAME,
        cncf_wiring.CncfSubmission,
        ["--aicr-cncf-submission", "--aicr-evidence-dir", "ev"],
        id="cncf-submission",
    ),
]


@pytest.mark.parametrize(("name", "kind", "option"), FEATURES)
def test_a_feature_is_registered_only_when_its_option_is_given(
    pytester: pytest.Pytester, write_inputs: Inputs, name: str, kind: type, option: list[str]
) -> None:
    rp, sp = write_inputs()
    base = ["-p", "no:cacheprovider", "--recipe", str(rp), "--snapshot", str(sp)]
    without = pytester.parseconfigure(*base)
    assert without.pluginmanager.get_plugin(name) is None
    assert not any(isinstance(p, kind) for p in without.pluginmanager.get_plugins())
    given = pytester.parseconfigure(*base, *option)
    assert isinstance(given.pluginmanager.get_plugin(name), kind)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        pytest.param(interrupt.WATCH_NAME, interrupt.InterruptWatch, id="interrupt-watch"),
        pytest.param(progress_sink.NAME, progress_sink.ProgressSink, id="progress"),
    ],
)
def test_the_run_features_are_registered_only_for_an_active_run(
    pytester: pytest.Pytester, write_inputs: Inputs, name: str, kind: type
) -> None:
    rp, sp = write_inputs()
    assert pytester.parseconfigure("-p", "no:cacheprovider").pluginmanager.get_plugin(name) is None
    active = pytester.parseconfigure("-p", "no:cacheprovider", "--recipe", str(rp), "--snapshot", str(sp))
    assert isinstance(active.pluginmanager.get_plugin(name), kind)
    submission = pytester.parseconfigure(
        "-p", "no:cacheprovider", "--recipe", str(rp), "--aicr-cncf-submission", "--aicr-evidence-dir", "ev"
    )
    assert submission.pluginmanager.get_plugin(name) is None  # the collector replaces the session


#: a passing CNCF check that leaves a file where the evidence directory was
BREAKS_EVIDENCE_DIR = """
import shutil
from pathlib import Path

import pytest

@pytest.mark.check("dra-support")
def test_dra(aicr_check):
    ev = Path(__file__).parent / "ev"
    shutil.rmtree(ev)
    ev.write_text("not a directory")
    aicr_check.emit("RESULT: dra ok")
"""


def test_a_render_failure_fails_the_run_and_reaches_the_outcome(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    rp, sp = write_inputs(make_recipe(conformance=["dra-support"]))
    result, outcome = run_user_checks(
        pytester, BREAKS_EVIDENCE_DIR, rp, sp, "--aicr-evidence-dir", str(pytester.path / "ev")
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the check passed; rendering did not
    assert outcome.statuses == ("passed",)
    assert outcome.render_error is not None
    assert outcome.render_error.startswith(f"{cncf_wiring.MSG_RENDER_FAILED}: ")
    assert f"ERROR: {outcome.render_error}" in result.stdout.lines
    assert outcome.evidence_error is None and outcome.interrupted is None
    assert cli.exit_code_for(outcome, int(result.ret), fail_on_error=True) == cli.EXIT_FAILED


def test_a_declined_disclosure_before_any_check_reaches_the_outcome(
    pytester: pytest.Pytester, write_inputs: Inputs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aicr_pytest.evidence import session

    def decline(settings: object) -> None:
        raise session.EvidenceError("keyless signing declined")

    monkeypatch.setattr(session, "configure", decline)
    rp, sp = write_inputs(make_recipe(deployment=["operator-health"]))
    result, outcome = run_user_checks(
        pytester, CHECKS, rp, sp, "--aicr-emit-attestation", str(pytester.path / "out")
    )
    assert result.ret == evidence_wiring.EVIDENCE_EXIT
    assert outcome.evidence_error == "evidence: keyless signing declined"
    assert outcome.statuses == ()  # nothing ran
    assert cli.exit_code_for(outcome, int(result.ret), fail_on_error=True) == cli.EXIT_EVIDENCE
