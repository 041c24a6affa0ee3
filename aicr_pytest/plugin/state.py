"""Per-session state of the aicr plugin, its stash keys, and what a finished run publishes.

One :class:`PluginState` per process lives in ``config.stash[STATE_KEY]``: what the run itself
needs.  In ``pytest_configure`` :func:`start` builds it from the option table and :func:`load`
adds the run's inputs and readiness (:mod:`aicr_pytest.core.inputs`) and the prevalidation hook.
This module names no feature.  The optional features (the CTRF file, ``--html``,
``--cncf-submission``/``--evidence-dir``, ``--emit-attestation``, the interrupt watch, progress)
are plugin objects of their own (:mod:`~aicr_pytest.plugin.features`), each owning its state; they
write what the run's ending must say into the run's :class:`OutcomeNotes`, and the controller hands
them the final CTRF document through ``pytest_aicr_report`` (a :class:`FinishedRun` beside it).
When an active run ends, the controller publishes a :class:`RunOutcome` through the
``pytest_aicr_run_finished`` hook: that is all ``aicr-pytest validate`` (or any other caller of
``pytest.main``) needs for its exit code and report.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from aicr_pytest import __version__
from aicr_pytest.core.check import CheckContext
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.logsetup import configure_logging
from aicr_pytest.core.settings import Settings
from aicr_pytest.core.writable import check_distinct, check_writable
from aicr_pytest.plugin import options
from aicr_pytest.plugin.ledger import PhaseLedger
from aicr_pytest.report.outcome import is_failing
from aicr_pytest.report.results import RunIdentity, RunResults, build_ctrf

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from aicr_pytest.core.datatree import DataTree
    from aicr_pytest.core.inputs import RunState
    from aicr_pytest.core.recipe import Recipe
    from aicr_pytest.kube.client import Cluster


@dataclass
class ItemInfo:
    """What collection decided about one item: its catalog name, phase, run order and kind."""

    name: str
    phase: str
    order: int
    kind: str  # "check" | "constraint"


class ClusterHandle:
    """Connects on first use only: ``--no-cluster`` and ``--help`` never build a client."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._cluster: Cluster | None = None
        #: called with the one line when the cluster is found unreachable mid-run (the running
        #: check's cut: it ends ``other`` at once instead of polling until its budget)
        self.on_trip: Callable[[str], None] | None = None
        #: whether the unreachable line was printed already (at start, or after the check it cut)
        self.announced = True

    def _tripped(self, line: str) -> None:
        """The breaker tripped mid-run: the running check is cut short (its line is announced
        once, on the terminal, when that check ends: :func:`~aicr_pytest.plugin.outcomes.cut_on_trip`)."""
        self.announced = False
        if self.on_trip is not None:
            self.on_trip(line)

    def get(self) -> Cluster:
        """The connected cluster, probed once (:mod:`aicr_pytest.kube.reach`): when it cannot be
        reached every request raises the probe's one line at once, so each check ends ``other``
        with it instead of waiting out its own budget."""
        if self._cluster is None:
            from aicr_pytest.kube.client import connect

            self._cluster = connect(
                self._settings.kubeconfig,
                self._settings.kube_context,
                reach_timeout=self._settings.reach_timeout_s or None,
            )
            self._cluster.on_trip = self._tripped
        return self._cluster

    def connected(self) -> bool:
        return self._cluster is not None

    def unreachable(self) -> str | None:
        """The probe's one line when the cluster (connected) was found unreachable, else ``None``."""
        tripped = self._cluster.tripped if self._cluster is not None else None
        return str(tripped) if tripped is not None else None

    def read_configmap(self, namespace: str, name: str) -> dict[str, str]:
        return self.get().read_configmap(namespace, name)

    def describe(self) -> str:
        """Which cluster, without connecting: the API server once connected, else the context."""
        s = self._settings
        if s.no_cluster:
            return "none (--no-cluster: snapshot only)"
        if s.simulated:
            return f"SIMULATED cluster (profile {s.simulated})"
        if self._cluster is not None:
            return self._cluster.host
        return f"context {s.kube_context}" if s.kube_context else "the kubeconfig's current context"


@dataclass
class OutcomeNotes:
    """What the features note about how an active run ended (the controller's, one per run).

    The core builds the CTRF document and the :class:`RunOutcome` from these fields and never
    asks a feature itself.  A feature writes here; one whose ending changes ``validate``'s exit
    code adds its field (and the one of :class:`RunOutcome` that carries it).
    """

    #: why the run stopped early (SIGINT, SIGTERM, the ``--timeout`` deadline): the interrupt watch
    interrupted: str | None = None
    #: why ``--emit-attestation`` emitted no bundle: recipe evidence (``validate`` exits 6)
    evidence_error: str | None = None
    #: ``[INTERNAL] evidence rendering failed: …``: ``--evidence-dir`` (``validate`` exits 8)
    render_error: str | None = None


@dataclass
class PluginState:
    settings: Settings
    run: RunState | None = None
    run_id: str = ""
    start_ms: int = 0
    ledger: PhaseLedger | None = None
    items: list[ItemInfo] = field(default_factory=list)
    results: RunResults = field(default_factory=RunResults)
    cluster_handle: ClusterHandle | None = None
    #: the final CTRF document (built in ``pytest_sessionfinish`` on the controller)
    report: dict[str, Any] | None = None
    #: each check's time budget in seconds: the catalog's, overridden by ``--data`` (core.budgets)
    budgets: dict[str, float] = field(default_factory=dict)
    #: what the features noted about the run's ending (controller)
    notes: OutcomeNotes = field(default_factory=OutcomeNotes)

    @property
    def active(self) -> bool:
        return self.run is not None


@dataclass(frozen=True)
class FinishedRun:
    """What ``pytest_aicr_report`` hands a consumer of the final CTRF document besides the document.

    ``inputs`` are the run's validated inputs (settings, recipe, snapshot, data tree, readiness);
    ``results`` every result the controller collected (also cleanup hints and the HTML figures);
    ``items`` what collection selected, in run order; ``exitstatus`` pytest's exit status as
    ``pytest_sessionfinish`` received it (``ExitCode.INTERRUPTED`` after an interrupt);
    ``notes`` the run's :class:`OutcomeNotes`, where a consumer records why it failed.
    """

    inputs: RunState
    results: RunResults
    items: tuple[ItemInfo, ...]
    exitstatus: int
    notes: OutcomeNotes = field(default_factory=OutcomeNotes)


@dataclass(frozen=True)
class RunOutcome:
    """A finished run, as the process that started it sees it (published once, by the controller).

    ``statuses`` are the CTRF statuses of the checks and snapshot constraints in run order
    (readiness constraints not included); ``report`` is the CTRF document (``None`` when the
    session ended before it was built); ``usage_error`` the one line of a :class:`UsageError` a
    check raised; ``evidence_error`` the one line saying why ``--emit-attestation`` emitted no
    bundle (emission, push or signing failed, or keyless signing was declined).
    """

    readiness_blocked: bool
    usage_error: str | None
    statuses: tuple[str, ...]
    report: dict[str, Any] | None
    evidence_error: str | None = None
    #: why the run stopped early (SIGINT, SIGTERM, the ``--timeout`` deadline); the run exits 5
    interrupted: str | None = None
    #: ``[INTERNAL] evidence rendering failed: …`` (``--evidence-dir``): ``validate`` exits 8
    render_error: str | None = None
    #: one line per output that could not be written fully: ``validate`` exits 8
    output_errors: tuple[str, ...] = ()

    @property
    def failing(self) -> bool:
        """A check ended ``failed`` or ``other``."""
        return any(is_failing(s) for s in self.statuses)


STATE_KEY = pytest.StashKey[PluginState]()
ITEM_KEY = pytest.StashKey[ItemInfo]()
CTX_KEY = pytest.StashKey[CheckContext]()
HINTS_KEY = pytest.StashKey[list[str]]()


def get_state(config: pytest.Config) -> PluginState | None:
    return config.stash.get(STATE_KEY, None)


def controller_state(config: pytest.Config) -> PluginState | None:
    """The state of an active run in the controller (or only) process; ``None`` elsewhere."""
    state = get_state(config)
    if state is None or state.run is None or is_worker(config):
        return None
    return state


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def uses_xdist(config: pytest.Config) -> bool:
    numprocesses = getattr(config.option, "numprocesses", None)
    dist = getattr(config.option, "dist", "no")
    return bool(numprocesses) or (dist not in (None, "no"))


def ledger_dir(state: PluginState) -> Path:
    base = Path(os.environ.get("TMPDIR", "/tmp"))
    return base / f"aicr-pytest-ledger-{os.getpid()}-{state.run_id}"


def readiness_blocked(state: PluginState) -> bool:
    return state.run is not None and state.run.readiness.blocked


def run_identity(state: PluginState) -> RunIdentity:
    """The recipe, cluster and simulation the report names (CTRF ``environment``, stable test ids)."""
    s = state.settings
    handle = state.cluster_handle or ClusterHandle(s)
    recipe = state.run.recipe.display_name if state.run is not None else "recipe"
    return RunIdentity(
        recipe=recipe, cluster=handle.describe(), simulated=is_simulated(s), offline=s.no_cluster
    )


def is_simulated(settings: Settings) -> bool:
    """The run validated the simulator (``--simulate``), not a cluster."""
    return bool(settings.simulated) and not settings.no_cluster


def build_report(state: PluginState) -> dict[str, Any]:
    """The run's CTRF document (kept on the state): readiness results first when they blocked;
    why the run stopped early, when it did, from the notes."""
    readiness = state.run.readiness if state.run is not None else None
    state.report = build_ctrf(
        state.results.finished,
        readiness=readiness.results if readiness is not None and readiness.blocked else [],
        start_ms=state.start_ms,
        run_id=state.run_id,
        interrupted=state.notes.interrupted,
        identity=run_identity(state),
        report_extra=state.results.report_extra,
    )
    return state.report


def finished_run(state: PluginState, exitstatus: int) -> FinishedRun:
    """What ``pytest_aicr_report`` passes beside the CTRF document (an active run only)."""
    assert state.run is not None
    return FinishedRun(
        inputs=state.run,
        results=state.results,
        items=tuple(state.items),
        exitstatus=exitstatus,
        notes=state.notes,
    )


def remove_ledger(config: pytest.Config, state: PluginState) -> None:
    """Under xdist, delete the ledger directory the workers shared."""
    if uses_xdist(config):
        shutil.rmtree(ledger_dir(state), ignore_errors=True)


def run_outcome(state: PluginState) -> RunOutcome | None:
    """The outcome of an active run (``None`` when the validator was not active), with what the
    features noted (see :class:`RunOutcome`)."""
    if state.run is None:
        return None
    notes = state.notes
    return RunOutcome(
        readiness_blocked=state.run.readiness.blocked,
        usage_error=state.results.usage_error,
        statuses=state.results.statuses(),
        report=state.report,
        evidence_error=notes.evidence_error,
        interrupted=notes.interrupted,
        render_error=notes.render_error,
        output_errors=tuple(state.results.output_errors),
    )


def needs_cluster(
    run: RunState,
    environ: Mapping[str, str] | None = None,
    *,
    kit_writes_kubeconfig: bool = False,
    bundled: bool = False,
) -> bool:
    """Whether to load the kubeconfig now, so one that is missing or unreadable stops the run before
    any check: when a check of this run will talk to the cluster and the user named a kubeconfig or
    context.  Under ``aicr-pytest validate`` (``check_kubeconfig``) ``--kubeconfig``,
    ``$KUBECONFIG`` and ``--kube-context`` count, and with the bundled checks (every one of them
    talks to the cluster) always: no configuration at all is then one line before any check, not
    one ``other`` per check.  Under plain pytest only the flags count, and not when
    a conftest's fixture uses the test kit (``aicr_fake_cluster_factory``), which may write that
    kubeconfig during the session.  With none named the cluster connects on first use, as before
    (in-cluster config, then ``~/.kube/config``)."""
    s = run.settings
    if s.no_cluster or run.readiness.blocked:
        return False
    env = os.environ if environ is None else environ
    if s.check_kubeconfig:
        # with the bundled checks: found (or not) now, whatever the source (in-cluster, ~/.kube/config)
        named = bundled or bool(s.kubeconfig or s.kube_context or env.get("KUBECONFIG", "").strip())
    else:
        named = bool(s.kubeconfig or s.kube_context) and not kit_writes_kubeconfig
    if not named:
        return False
    return any(sel.spec.name not in s.skip_checks for sel in run.selected)


def _bundled(config: pytest.Config) -> bool:
    """Whether the run collects the bundled checks (they all talk to the cluster in a live run)."""
    return not options.session_run(config).no_bundled_checks


def _kit_writes_kubeconfig(config: pytest.Config) -> bool:
    from aicr_pytest.plugin.testkit import kit_writes_kubeconfig

    return kit_writes_kubeconfig(config)


def start(config: pytest.Config) -> PluginState:
    """The settings from the option table, as an (inactive) state stashed under :data:`STATE_KEY`.

    Stashed before the inputs load (:func:`load`), so a usage error still leaves the state
    behind.  Raises ``pytest.UsageError`` with the one line to print.
    """
    try:
        settings = options.session_run(config).settings
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    state = PluginState(settings=settings)
    config.stash[STATE_KEY] = state
    return state


def load(config: pytest.Config, state: PluginState) -> None:
    """With ``--recipe``: logging, the ``--junitxml`` destination, the run's inputs, readiness and
    prevalidation (the features checked their own destinations before: ``pytest_aicr_configure``).

    Makes the state active.  Raises ``pytest.UsageError`` with the one line to print.
    """
    settings = state.settings
    if not settings.active:
        return
    configure_logging(debug=settings.debug, log_json=settings.log_json)
    try:
        xmlpath = getattr(config.option, "xmlpath", None)  # pytest's own --junitxml, written at the end
        if not is_worker(config):
            outputs = [
                ("--aicr-ctrf-report", settings.ctrf_report),
                ("--aicr-html", settings.html),
                ("--junitxml", str(xmlpath) if xmlpath else None),
            ]
            check_distinct(outputs, options.session_run(config).inputs)
        if settings.ctrf_report and not is_worker(config):
            check_writable(settings.ctrf_report, "--aicr-ctrf-report")
        if xmlpath and not is_worker(config):
            check_writable(str(xmlpath), "--junitxml")
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None

    from aicr_pytest.core.inputs import load_run_state

    state.cluster_handle = ClusterHandle(settings)

    def prevalidate(checks: list[str], recipe: Recipe, data: DataTree) -> None:
        from aicr_pytest.core import catalog

        # the hooks modules (light) of the selected checks' families, named by their catalog rows
        for module in catalog.hook_modules(checks):
            if not config.pluginmanager.has_plugin(module):
                config.pluginmanager.import_plugin(module)
        config.hook.pytest_aicr_prevalidate(checks=checks, recipe=recipe, settings=settings, data=data)

    try:
        from aicr_pytest.recipegen.hydrate import hydrate_overlay

        state.run = load_run_state(
            settings,
            state.cluster_handle.read_configmap,
            prevalidate,
            binary_version=__version__,
            hydrate=hydrate_overlay,
        )
        from aicr_pytest.core.budgets import check_budgets

        state.budgets = check_budgets(state.run.data)
        if needs_cluster(
            state.run, kit_writes_kubeconfig=_kit_writes_kubeconfig(config), bundled=_bundled(config)
        ):
            state.cluster_handle.get()  # kubeconfig problems: one line now; the server probed
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None

    unreachable = state.cluster_handle.unreachable()
    if unreachable and not is_worker(config):
        # one line before any check; every check that needs the cluster then ends `other` with it
        print(f"aicr-pytest: error: {unreachable}", file=sys.stderr, flush=True)

    if is_worker(config):
        winput: dict[str, Any] = config.workerinput  # type: ignore[attr-defined]
        state.run_id = str(winput.get("aicr_run_id", ""))
        directory = winput.get("aicr_ledger_dir")
        state.ledger = PhaseLedger(Path(directory) if directory else None)
    else:
        state.run_id = uuid.uuid4().hex[:8]
        state.start_ms = int(time.time() * 1000)
        state.ledger = PhaseLedger(ledger_dir(state) if uses_xdist(config) else None)
        if state.cluster_handle.connected() and not unreachable:
            _leftovers(state)


def _leftovers(state: PluginState) -> None:
    """What earlier runs left in the cluster: named in one line; deleted with ``--clean-stale``
    (:mod:`aicr_pytest.kube.stale`: never a run that may still be going)."""
    from aicr_pytest.kube.stale import scan

    assert state.cluster_handle is not None
    s = state.settings
    # no run is judged stale before the longest check it could be running has had its time
    bound = max([s.stale_after_s, *state.budgets.values()])
    scan(
        state.cluster_handle.get(),
        state.run_id,
        bound=bound,
        clean_stale=s.clean_stale,
        emit=lambda line: print(line, file=sys.stderr, flush=True),
    )


__all__ = [
    "CTX_KEY",
    "HINTS_KEY",
    "ITEM_KEY",
    "STATE_KEY",
    "ClusterHandle",
    "FinishedRun",
    "ItemInfo",
    "OutcomeNotes",
    "PluginState",
    "RunOutcome",
    "build_report",
    "controller_state",
    "finished_run",
    "get_state",
    "is_simulated",
    "is_worker",
    "ledger_dir",
    "load",
    "needs_cluster",
    "readiness_blocked",
    "remove_ledger",
    "run_identity",
    "run_outcome",
    "start",
    "uses_xdist",
]
