"""aicr-pytest's own hooks (pytest-xdist ``newhooks.py`` style).

Registered in ``pytest_addhooks``.  Check families implement them in a light ``hooks`` module of
their package (its imports are deferred until the family is selected); a user's ``conftest.py``
or plugin can implement them for their own checks.

The features seam: an optional feature (the CTRF file, ``--html``, the evidence writers, the
interrupt watch, a conftest's own) is a plugin module listed in :mod:`aicr_pytest.plugin.features`
(or any plugin or ``conftest.py``) that implements, in the order of a run:

1. :func:`pytest_aicr_main` when it replaces the session; :func:`pytest_aicr_configure` — check
   its options and destinations, register its plugin object
   when asked for (before the run's inputs load); :func:`pytest_aicr_replaces_run` when it runs
   instead of the checks;
2. :func:`pytest_aicr_configure_run` — register what needs an active run (its inputs are loaded);
3. :func:`pytest_aicr_finishing` — note in :class:`~aicr_pytest.plugin.state.OutcomeNotes` what
   the final report must say, once the session is torn down;
4. :func:`pytest_aicr_amend_report` — add its own keys to the document before anyone writes it;
   :func:`pytest_aicr_report` — write from the final CTRF document, note a failure in
   ``run.notes``; :func:`pytest_aicr_report_location` names what it wrote in the terminal summary;
   then unregister in its own ``pytest_unconfigure``.

The core hooks (:mod:`aicr_pytest.plugin`, :mod:`aicr_pytest.plugin.hooks`) call these and never
name a feature.
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
    from aicr_pytest.plugin.state import FinishedRun, OutcomeNotes, RunOutcome


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


@pytest.hookspec(firstresult=True)
def pytest_aicr_main(config: pytest.Config) -> int | None:
    """A feature that runs instead of the test session (``--cncf-submission``), the way pytest's own
    ``--markers`` replaces it: it runs (calling ``config._do_configure()`` first) and returns
    pytest's exit code; ``None``: the session runs.  Called once from ``pytest_cmdline_main``."""


@pytest.hookspec
def pytest_aicr_configure(config: pytest.Config, settings: Settings) -> None:
    """The options are read, the run's inputs not yet loaded (nothing has touched the cluster).

    Called once per process (``hasattr(config, "workerinput")`` tells an xdist worker) from
    ``pytest_configure``, also without ``--recipe`` (``settings.active`` says whether the
    validator is active).  A feature checks its options and its destinations here (raise
    ``pytest.UsageError`` with one line: exit 4 under pytest, 2 under ``aicr-pytest validate``)
    and registers its plugin object when its option asks for it.
    """


@pytest.hookspec(firstresult=True)
def pytest_aicr_replaces_run(config: pytest.Config) -> bool | None:
    """``True`` from a feature that runs instead of the checks (``--cncf-submission`` alone): the
    run's inputs are not loaded and no check is collected.  Called after :func:`pytest_aicr_configure`."""


@pytest.hookspec
def pytest_aicr_configure_run(config: pytest.Config, notes: OutcomeNotes) -> None:
    """An active run's inputs are loaded and its result collector registered; no check ran yet.

    Called once per process (controller and every xdist worker) from ``pytest_configure``.  A
    feature that needs the run registers its plugin object here; ``notes`` (meaningful on the
    controller) is where it records what the run's ending must say.
    """


@pytest.hookspec
def pytest_aicr_finishing(session: pytest.Session, notes: OutcomeNotes) -> None:
    """The session is over and torn down, the final CTRF document not built yet: called once, on
    the controller of an active run, from ``pytest_sessionfinish``.  A feature records in ``notes``
    what that document must say (why the run stopped early)."""


@pytest.hookspec
def pytest_aicr_amend_report(session: pytest.Session, report: dict[str, Any], notes: OutcomeNotes) -> None:
    """The CTRF document is built and not yet written: called once, on the controller of an active
    run, from ``pytest_sessionfinish``.  A feature that adds to it (its own keys under
    ``report["extra"]``: the schema allows nothing else) edits ``report`` in place here; every
    consumer of ``pytest_aicr_report`` then sees the same final document."""


@pytest.hookspec
def pytest_aicr_report(session: pytest.Session, report: dict[str, Any], run: FinishedRun) -> None:
    """A run's final CTRF document: called once, on the controller, from ``pytest_sessionfinish``.

    Called for every run with ``--recipe`` that got that far, also a failed, blocked or interrupted
    one.  ``report`` is the document; ``run`` (:class:`aicr_pytest.plugin.state.FinishedRun`)
    holds the run's inputs, its results, the selected items, pytest's exit status and the run's
    notes.  The optional features (``--ctrf-report``, a wrapper that writes the file before any
    other implementation runs; ``--html``; ``--evidence-dir``; ``--emit-attestation``) are
    implementations of this hook; a ``conftest.py`` or plugin can be one too.  An implementation
    that makes the run fail sets ``session.exitstatus`` (and says why in ``run.notes`` when
    ``validate``'s exit code depends on it).
    """


@pytest.hookspec
def pytest_aicr_report_location(config: pytest.Config) -> str | None:
    """Where a report of this run is, for the ``details:`` line under ``aicr failures``
    (``CTRF report out.json``); ``None``: nothing to name.  Called on the controller of an active
    run from ``pytest_terminal_summary``; the lines are joined in call order."""


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
