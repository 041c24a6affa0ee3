"""The fixtures a check asks for: the run's inputs, the check itself, the cluster, a run scope, a clock.

Registered by the aicr plugin (``pytest_plugins`` of :mod:`aicr_pytest.plugin`) on every run, so
the module imports nothing heavy: each fixture imports what it needs when a test asks for it.
Every fixture needs ``--recipe`` except ``aicr_settings`` and ``aicr_clock``. Every name carries the ``aicr_``
prefix, so a suite of the user's keeps its own ``recipe``, ``snapshot`` (syrupy's), ``run`` ...
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from aicr_pytest.core.errors import Inconclusive

if TYPE_CHECKING:  # registered on every pytest run: imported when a fixture is used
    from aicr_pytest.core.check import CheckContext
    from aicr_pytest.core.clock import Clock
    from aicr_pytest.core.datatree import DataTree
    from aicr_pytest.core.inputs import RunState
    from aicr_pytest.core.policy import AllocationPolicy
    from aicr_pytest.core.recipe import Recipe
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.core.snapshot import Snapshot
    from aicr_pytest.kube.client import Cluster
    from aicr_pytest.kube.run import RunScope
    from aicr_pytest.plugin.state import PluginState

log = logging.getLogger("aicr_pytest")

__all__ = [
    "aicr_allocation_policy",
    "aicr_check",
    "aicr_clock",
    "aicr_cluster",
    "aicr_data_tree",
    "aicr_recipe",
    "aicr_run",
    "aicr_settings",
    "aicr_snapshot",
    "aicr_snapshot_constraint",
]


def get_state(config: pytest.Config) -> PluginState | None:
    """The session's state (``None`` when no run was asked for)."""
    from aicr_pytest.plugin.state import get_state as stashed

    return stashed(config)


def _require_run(request: pytest.FixtureRequest) -> RunState:
    state = get_state(request.config)
    if state is None or state.run is None:
        raise pytest.UsageError("aicr-pytest fixtures need --recipe")
    return state.run


@pytest.fixture(scope="session")
def aicr_settings(request: pytest.FixtureRequest) -> Settings:
    """Validated command-line settings of this run (the defaults when no run was asked for)."""
    state = get_state(request.config)
    if state is not None:
        return state.settings
    from aicr_pytest.plugin import options

    return options.session_run(request.config).settings


@pytest.fixture(scope="session")
def aicr_recipe(request: pytest.FixtureRequest) -> Recipe:
    """The recipe (RecipeResult) given with ``--recipe``."""
    return _require_run(request).recipe


@pytest.fixture(scope="session")
def aicr_snapshot(request: pytest.FixtureRequest) -> Snapshot | None:
    """The snapshot given with ``--snapshot`` (``None`` when omitted)."""
    return _require_run(request).snapshot


@pytest.fixture(scope="session")
def aicr_allocation_policy(request: pytest.FixtureRequest) -> AllocationPolicy:
    """The GPU allocation policy resolved from the recipe's hydrated component values."""
    return _require_run(request).policy


@pytest.fixture(scope="session")
def aicr_data_tree(request: pytest.FixtureRequest) -> DataTree:
    """The data tree: ``--data`` layered over the embedded ``recipes/`` data."""
    return _require_run(request).data


@pytest.fixture
def aicr_check(request: pytest.FixtureRequest) -> CheckContext:
    """The check being run: name, phase, timeout, its phase constraints and an ``emit`` for evidence."""
    from aicr_pytest.core import catalog
    from aicr_pytest.core.check import CheckContext
    from aicr_pytest.plugin.state import CTX_KEY

    run = _require_run(request)
    name = str(request.param)
    spec = catalog.BY_NAME[name]
    state = get_state(request.config)
    budgets = state.budgets if state is not None else {}
    ctx = CheckContext(
        name=name,
        phase=spec.phase,
        timeout_s=budgets.get(name, spec.timeout_s),  # the catalog's, or the --data overlay's
        constraints=list(run.recipe.phase_constraints(spec.phase)),
        placement=run.settings.placement,
    )
    request.node.stash[CTX_KEY] = ctx
    return ctx


@pytest.fixture
def aicr_snapshot_constraint(request: pytest.FixtureRequest) -> tuple[str, str, str]:
    """(phase, name, expression) of a phase constraint that addresses the snapshot."""
    from aicr_pytest.core.check import CheckContext
    from aicr_pytest.plugin.state import CTX_KEY

    phase, name, value = request.param
    ctx = CheckContext(name=str(name), phase=str(phase), timeout_s=0, constraints=[])
    request.node.stash[CTX_KEY] = ctx
    return str(phase), str(name), str(value)


@pytest.fixture(scope="session")
def aicr_clock() -> Clock:
    """Time source for checks (``time()``/``sleep()``); override it to inject a fake clock."""
    from aicr_pytest.core.clock import SYSTEM_CLOCK

    return SYSTEM_CLOCK


@pytest.fixture(scope="session")
def aicr_cluster(request: pytest.FixtureRequest) -> Cluster:
    """The cluster facade (connected lazily, on first use by a check)."""
    state = get_state(request.config)
    if state is None or state.cluster_handle is None:
        raise pytest.UsageError("the aicr_cluster fixture needs --recipe")
    if state.settings.no_cluster:
        raise Inconclusive("--no-cluster: no cluster access in this run")
    return state.cluster_handle.get()


@pytest.fixture
def aicr_run(request: pytest.FixtureRequest) -> Iterator[RunScope]:
    """Run-scoped names, labels and a cleanup registry; everything created is deleted afterwards.

    The cluster connects on first use.  Cleanup runs on success, failure, timeout, Ctrl-C and
    SIGTERM; ``--no-cleanup`` keeps the objects and prints kubectl commands instead.
    """
    from aicr_pytest.kube.run import RunScope, defer_signals, install_signal_handlers
    from aicr_pytest.plugin.state import CTX_KEY, HINTS_KEY

    state = get_state(request.config)
    if state is None or state.cluster_handle is None:
        raise pytest.UsageError("the aicr_run fixture needs --recipe")
    handle = state.cluster_handle
    worker = getattr(request.config, "workerinput", {}).get("workerid")
    s = state.settings
    scope = RunScope(
        handle.get,
        run_id=state.run_id,
        worker_id=worker,
        no_cleanup=s.no_cleanup,
        namespace=s.placement.namespace,
        image_pull_secrets=s.placement.image_pull_secrets,
        allow_fake_nodes=s.allow_fake_nodes,
    )
    try:
        with install_signal_handlers():
            try:
                yield scope
            finally:
                with defer_signals():
                    scope.cleanup()
    finally:
        # also when an interrupt ends the run here (a signal held during cleanup is acted on as the
        # block ends, a third one abandons cleanup): what was kept or left is still reported
        report = scope.cleanup()  # the first call's report; nothing is deleted twice
        ctx = request.node.stash.get(CTX_KEY, None)
        if report.warnings:
            for warning in report.warnings:
                log.warning("cleanup: %s", warning)
            if ctx is not None:
                ctx.extra["aicr.cleanupWarnings"] = list(report.warnings)
        request.node.stash[HINTS_KEY] = report.lines()
