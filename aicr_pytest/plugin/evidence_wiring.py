"""Recipe evidence (#15) in the pytest plugin: ``--emit-attestation`` before and after the run.

The options are entries of the option table (:mod:`aicr_pytest.plugin.options`, model
``"evidence"``).  The plugin calls :func:`configure` from ``pytest_configure`` (controller of an
active run only) and :func:`finish` from ``pytest_sessionfinish`` once the CTRF report is final.
An error either way lands on :attr:`PluginState.evidence_error`, which the published
:class:`~aicr_pytest.plugin.state.RunOutcome` carries (``aicr-pytest validate`` exits 6).
Everything else lives in :mod:`aicr_pytest.evidence`, which a run without evidence options never
imports (its OIDC and registry clients load ``requests``/``urllib3``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.plugin import options

if TYPE_CHECKING:
    from aicr_pytest.plugin.state import PluginState

#: ``pytest``/``validate`` exit code when the identity-disclosure prompt was declined
EVIDENCE_EXIT = 6


@contextmanager
def _interactive(config: pytest.Config) -> Iterator[None]:
    """Real stdin/stderr while evidence prompts or reports (pytest's capture suspended)."""
    capman = config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman is not None else nullcontext():
        yield


def configure(config: pytest.Config, state: PluginState) -> None:
    """Validate the evidence options and run the disclosure gate before any check runs."""
    try:
        settings = options.build_evidence_settings(options.values_from(config.option, options.PYTEST))
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    if not settings.active and not settings.given_without_emit:
        return  # no evidence option given: nothing to validate, warn about or emit
    from aicr_pytest.evidence import session

    try:
        with _interactive(config):
            state.evidence_plan = session.configure(settings)
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    except session.EvidenceError as err:
        state.evidence_error = f"evidence: {err}"
        pytest.exit(state.evidence_error, returncode=EVIDENCE_EXIT)


def finish(session: pytest.Session, state: PluginState, status: int) -> None:
    """Emit the bundle for the finished run (also a failed one); record an emission error."""
    if state.evidence_plan is None:
        return
    from aicr_pytest.evidence import session as evidence

    assert state.run is not None
    skip = None
    if state.run.readiness.blocked:
        skip = "readiness pre-flight failed, so no phase ran"
    elif status == pytest.ExitCode.INTERRUPTED:
        skip = "the run was interrupted"
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and state.evidence_plan is not None:
        tr.ensure_newline()
    with _interactive(session.config):
        error = evidence.finish(
            state.evidence_plan,
            report=state.report,
            recipe=state.run.recipe,
            snapshot=state.run.snapshot,
            data=state.run.data,
            skip_reason=skip,
        )
        if error is not None:
            print(f"ERROR: {error}", file=sys.stderr, flush=True)
    if error is not None:
        state.evidence_error = error
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


__all__ = ["EVIDENCE_EXIT", "configure", "finish"]
