"""Recipe evidence in the pytest plugin: ``--emit-attestation`` before and after the run.

The options are entries of the option table (:mod:`aicr_pytest.plugin.options`, model
``"evidence"``).  A feature module (:mod:`~aicr_pytest.plugin.features`): on the controller of an
active run, ``pytest_aicr_configure_run`` calls :func:`configure`, which validates the options, runs
the identity-disclosure gate and, with ``--emit-attestation``, registers an
:class:`EvidenceEmitter`, which emits the bundle from the final CTRF document
(``pytest_aicr_report``).  An error either way is noted as the run's
:attr:`~aicr_pytest.plugin.state.OutcomeNotes.evidence_error`, which the published
:class:`~aicr_pytest.plugin.state.RunOutcome` carries (``aicr-pytest validate`` exits 6).
Everything else lives in :mod:`aicr_pytest.evidence`, which a run without evidence options never
imports (its OIDC and registry clients load ``requests``/``urllib3``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.plugin import options
from aicr_pytest.plugin.state import OutcomeNotes, controller_state, is_simulated

if TYPE_CHECKING:
    from aicr_pytest.evidence.emit import Plan
    from aicr_pytest.plugin.state import FinishedRun

#: ``pytest``/``validate`` exit code when the identity-disclosure prompt was declined
EVIDENCE_EXIT = 6
#: the plugin name of the registered :class:`EvidenceEmitter`
NAME = "aicr-evidence"
#: a signed bundle says a cluster passed: never for the simulator (docs/outputs.md, "Simulated runs")
MSG_SIMULATED = (
    "--emit-attestation is refused with --simulate: a simulated cluster's results must never be "
    "signed as a cluster's evidence"
)


@contextmanager
def _interactive(config: pytest.Config) -> Iterator[None]:
    """Real stdin/stderr while evidence prompts or reports (pytest's capture suspended)."""
    capman = config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman is not None else nullcontext():
        yield


class EvidenceEmitter:
    """``--emit-attestation``: what to emit after the run, and why it could not be emitted (or why
    signing was declined): :attr:`error`, the one line that makes ``validate`` exit 6."""

    def __init__(self, plan: Plan | None, error: str | None = None) -> None:
        self.plan = plan
        self.error = error

    # last of the report's consumers: the bundle is emitted once everything else is written
    @pytest.hookimpl(trylast=True)
    def pytest_aicr_report(self, session: pytest.Session, report: dict[str, Any], run: FinishedRun) -> None:
        self.finish(session, report, run)

    def finish(self, session: pytest.Session, report: dict[str, Any], run: FinishedRun) -> None:
        """Emit the bundle for the finished run (also a failed one); record an emission error."""
        if self.plan is None:
            return
        from aicr_pytest.evidence import session as evidence

        skip = None
        if run.inputs.readiness.blocked:
            skip = "readiness pre-flight failed, so no phase ran"
        elif run.exitstatus == pytest.ExitCode.INTERRUPTED:
            skip = "the run was interrupted"
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.ensure_newline()
        with _interactive(session.config):
            error = evidence.finish(
                self.plan,
                report=report,
                recipe=run.inputs.recipe,
                snapshot=run.inputs.snapshot,
                data=run.inputs.data,
                skip_reason=skip,
            )
            if error is not None:
                print(f"ERROR: {error}", file=sys.stderr, flush=True)
        if error is not None:
            self.error = error
            run.notes.evidence_error = error
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED


def configure(config: pytest.Config, notes: OutcomeNotes | None = None, *, simulated: bool = False) -> None:
    """Validate the evidence options and run the disclosure gate before any check runs; with
    ``--emit-attestation`` register the :class:`EvidenceEmitter`.  A failed gate is noted in
    ``notes`` (the run exits 6).  A ``simulated`` run refuses ``--emit-attestation``
    (:data:`MSG_SIMULATED`)."""
    try:
        settings = options.session_run(config).evidence
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    if not settings.active and not settings.given_without_emit:
        return  # no evidence option given: nothing to validate, warn about or emit
    if simulated and settings.out_dir is not None:
        raise pytest.UsageError(MSG_SIMULATED)
    if settings.out_dir is not None:
        from aicr_pytest.core.writable import check_writable_dir

        try:  # before any check runs: a long run's bundle must not be lost at its end
            check_writable_dir(str(settings.out_dir), "--emit-attestation")
        except UsageError as err:
            raise pytest.UsageError(str(err)) from None
    from aicr_pytest.evidence import session

    try:
        with _interactive(config):
            plan = session.configure(settings)
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    except session.EvidenceError as err:
        error = f"evidence: {err}"
        config.pluginmanager.register(EvidenceEmitter(None, error), NAME)
        if notes is not None:
            notes.evidence_error = error  # the outcome says why: 6
        pytest.exit(error, returncode=EVIDENCE_EXIT)
    if plan is not None:
        config.pluginmanager.register(EvidenceEmitter(plan), NAME)


# first of the run's features: the disclosure prompt comes before the interrupt watch is armed
@pytest.hookimpl(tryfirst=True)
def pytest_aicr_configure_run(config: pytest.Config, notes: OutcomeNotes) -> None:
    state = controller_state(config)
    if state is not None:  # a simulated run signs nothing
        configure(config, notes, simulated=is_simulated(state.settings))


def pytest_unconfigure(config: pytest.Config) -> None:
    config.pluginmanager.unregister(name=NAME)


__all__ = [
    "EVIDENCE_EXIT",
    "MSG_SIMULATED",
    "NAME",
    "EvidenceEmitter",
    "configure",
    "pytest_aicr_configure_run",
    "pytest_unconfigure",
]
