"""aicr-pytest's own hooks (pytest-xdist ``newhooks.py`` style).

Registered in ``pytest_addhooks``.  Check families implement them in a light ``hooks`` module of
their package (its imports are deferred until the family is selected); a user's ``conftest.py``
or plugin can implement them for their own checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from aicr_pytest.core.clock import Clock
    from aicr_pytest.core.datatree import DataTree
    from aicr_pytest.core.recipe import Recipe
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.evidence.cncf.collector import SubmissionResult
    from aicr_pytest.plugin.state import FinishedRun, RunOutcome


@pytest.hookspec
def pytest_aicr_prevalidate(
    checks: Sequence[str], recipe: Recipe, settings: Settings, data: DataTree
) -> None:
    """Validate what only a check understands, before anything touches the cluster.

    Called once per process when the run's inputs are loaded, with the names of the selected
    checks.  Raise :class:`aicr_pytest.UsageError` with one line for a value the user got wrong
    (exit 2; nothing is created).  Outcomes that are the check's own business (a skip, a failure
    it reports itself) are left to the check.
    """


@pytest.hookspec
def pytest_aicr_report(session: pytest.Session, report: dict[str, Any], run: FinishedRun) -> None:
    """A run's final CTRF document: called once, on the controller, from ``pytest_sessionfinish``.

    Called for every run with ``--recipe`` that got that far, also a failed, blocked or interrupted
    one, after the CTRF report was written.  ``report`` is the document as written; ``run``
    (:class:`aicr_pytest.plugin.state.FinishedRun`) holds the run's inputs, its results, the
    selected items and pytest's exit status.  The optional features (``--html``,
    ``--evidence-dir``, ``--emit-attestation``) are implementations of this hook; a
    ``conftest.py`` or plugin can be one too.  An implementation that makes the run fail sets
    ``session.exitstatus``.
    """


@pytest.hookspec
def pytest_aicr_run_finished(config: pytest.Config, outcome: RunOutcome) -> None:
    """An active run ended: called once, on the controller, from ``pytest_unconfigure``.

    ``outcome`` (:class:`aicr_pytest.plugin.state.RunOutcome`) says whether readiness blocked the
    run, the statuses of its checks, a usage error a check raised, and the CTRF document.  This is
    how ``aicr-pytest validate`` learns what it needs for its exit code; a plugin object passed to
    ``pytest.main(..., plugins=[...])`` can do the same.
    """


# --- CNCF AI-conformance evidence --------------------------------------------------------------


@pytest.hookspec(firstresult=True)
def pytest_aicr_cncf_clock(config: pytest.Config) -> Clock | None:
    """The clock ``--cncf-submission`` waits on (``None``: the system clock).

    The collector runs outside any test, so the ``aicr_clock`` fixture cannot reach it; a
    ``conftest.py`` that drives a simulated cluster's virtual time returns that clock here.
    """


@pytest.hookspec
def pytest_aicr_cncf_finished(config: pytest.Config, result: SubmissionResult) -> None:
    """``--cncf-submission`` finished collecting: ``result.exit_code()`` is ``aicr validate``'s code
    (0, 8 on any FAIL, 5 when the overall budget ran out)."""
