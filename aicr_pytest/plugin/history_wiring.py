"""The plugin's side of the run history and of baselines (the logic: :mod:`aicr_pytest.report.history`,
:mod:`aicr_pytest.report.baseline`).

* :class:`HistoryRecorder` (``--history PATH``): registered on the controller only when asked for
  (pytest's junitxml ``LogXML`` is the model); it opens (creates, migrates) the database before
  anything runs — a corrupt or unwritable one is a usage error then — and records the finished
  run from the final CTRF document (``pytest_aicr_report``).
* :class:`BaselineGate` (``--baseline PATH|auto``): resolved once per process before any check; after
  each check's call it compares the check's measured values with the baseline's.  With
  ``--max-regression PCT`` a value worse by more than PCT fails the check with one line; without
  it the change is only reported (CTRF ``insights``, the terminal).
* :func:`finish_report`: every CTRF report says which recipe and cluster it validated
  (``extra["aicr.identity"]``, fingerprints only); with a baseline, CTRF ``baseline`` and each
  compared test's ``insights``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Final

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.report import baseline as bl
from aicr_pytest.report import cmhistory as cmh
from aicr_pytest.report import history as hs
from aicr_pytest.report.measures import measurements

if TYPE_CHECKING:
    from aicr_pytest.plugin.history_cm import ConfigMapHistory
    from aicr_pytest.plugin.state import FinishedRun, PluginState

    Store = hs.SqliteHistory | ConfigMapHistory

RECORDER_NAME: Final = "aicr-history"
GATE_NAME: Final = "aicr-baseline"
AUTO: Final = "auto"
MSG_AUTO_NONE: Final = (
    "aicr-pytest: note: --baseline auto: no passing run of this recipe on this cluster in {target}; "
    "nothing to compare with"
)
MSG_AUTO_NO_HISTORY: Final = "--baseline auto needs --history (where the previous runs are)"
MSG_AUTO_FOREIGN: Final = "aicr-pytest: note: --baseline auto: {why}; nothing to compare with"
MSG_PCT_ALONE: Final = "aicr-pytest: note: --max-regression has no effect without --baseline"
MSG_AUTO_USED: Final = "aicr-pytest: baseline: run {run_id} from {target}"
MSG_RECORD_FAILED: Final = "aicr-pytest: error: {why}"
MSG_CM_NO_CLUSTER: Final = "--history {target}: a ConfigMap history needs the cluster (not --no-cluster)"


def _ctx_of(item: pytest.Item) -> Any:
    from aicr_pytest.plugin.state import CTX_KEY

    return item.stash.get(CTX_KEY, None)


def identity(state: PluginState) -> hs.RunIdentity:
    """The recipe (name, fingerprint), the snapshot's fingerprint and the cluster (API server, context)."""
    run, settings = state.run, state.settings
    if run is None:
        return hs.RunIdentity()
    recipe_fp = hs.fingerprint(json.dumps(run.recipe.model_dump(mode="json"), sort_keys=True, default=str))
    snapshot_fp = ""
    if run.snapshot is not None:
        snapshot_fp = hs.fingerprint(
            json.dumps(run.snapshot.model_dump(mode="json"), sort_keys=True, default=str)
        )
    server, context = ("", "") if settings.no_cluster else _cluster(state)
    return hs.RunIdentity(run.recipe.display_name, recipe_fp, snapshot_fp, server, context)


def _cluster(state: PluginState) -> tuple[str, str]:
    """The API server's address and the kubeconfig context (empty when they cannot be told)."""
    settings = state.settings
    if settings.simulated:  # served on a fresh loopback port each time: the profile is the cluster
        return f"simulated://{settings.simulated}", ""
    try:
        from aicr_pytest.kube.kubeconfig import load_configuration

        cfg, source = load_configuration(settings.kubeconfig, settings.kube_context)
    except Exception:  # no kubeconfig at all: the run could not have used a cluster either
        return "", ""
    context = settings.kube_context or ""
    if not context and source.startswith("kubeconfig "):
        context = _current_context(source.removeprefix("kubeconfig ").split(" (")[0])
    return str(getattr(cfg, "host", "") or ""), context or source


def _current_context(path: str) -> str:
    try:
        from kubernetes import config as k8s_config

        _, active = k8s_config.list_kube_config_contexts(config_file=path)  # type: ignore[no-untyped-call]
    except Exception:
        return ""
    return str((active or {}).get("name") or "")


# --- the history --------------------------------------------------------------------------------


def open_store(state: PluginState, target: str, *, create: bool) -> Store:
    """The history at ``target``: an SQLite file, or ``cm://ns/name`` on the run's cluster."""
    if not cmh.is_cm(target):
        return hs.SqliteHistory.open(target, create=create)
    from aicr_pytest.plugin.history_cm import ConfigMapHistory

    cmh.parse_target(target)
    if state.settings.no_cluster or state.cluster_handle is None:
        raise UsageError(MSG_CM_NO_CLUSTER.format(target=target))
    return ConfigMapHistory(state.cluster_handle.get(), target, state.settings.history_keep)


class HistoryRecorder:
    """``--history TARGET``: records the finished run (after every other consumer of the report)."""

    def __init__(self, target: str) -> None:
        self.target = target

    @pytest.hookimpl(trylast=True)
    def pytest_aicr_report(self, session: pytest.Session, report: dict[str, Any], run: FinishedRun) -> None:
        state = _state(session.config)
        ident = identity(state) if state is not None else hs.RunIdentity()
        try:
            if state is None:
                raise UsageError(f"--history {self.target}: the run's state is gone")
            with open_store(state, self.target, create=True) as store:
                store.add(hs.record_of(report, ident))
        except UsageError as err:
            print(MSG_RECORD_FAILED.format(why=err), file=sys.stderr, flush=True)
            if session.exitstatus != pytest.ExitCode.INTERRUPTED:  # an interrupt's 5 wins
                session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _state(config: pytest.Config) -> PluginState | None:
    from aicr_pytest.plugin.state import controller_state

    return controller_state(config)


# --- the baseline -------------------------------------------------------------------------------


class BaselineGate:
    """``--baseline``: each check's values against the baseline's, gated by ``--max-regression``."""

    def __init__(
        self,
        doc: dict[str, Any],
        source: str,
        max_regression: float | None,
        limits: dict[str, float] | None = None,
    ) -> None:
        self.doc = doc
        self.source = source
        self.run_id = hs.report_run_id(doc) or source
        self.max_regression = max_regression
        #: per-check limits from the catalog (``maxRegression``), over ``--max-regression``
        self.limits = limits or {}
        self.values = measurements(doc)
        #: terminal lines of values that moved (controller), in run order
        self.lines: list[str] = []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        result = yield
        ctx = _ctx_of(item)
        if ctx is None:
            return result
        test = {"name": ctx.name, "suite": [ctx.phase], "status": "passed", "extra": ctx.extra}
        mine = [m for m in measurements({"results": {"tests": [test]}}) if m.name != "duration"]
        theirs = [m for m in self.values if m.check == ctx.name]
        limit = self.limits.get(ctx.name, self.max_regression)
        changes = bl.compare(mine, theirs, limit)
        if not changes:
            return result
        regressed = [c for c in changes if c.regressed]
        if regressed and limit is not None:
            where = bl.CATALOG_LIMIT if ctx.name in self.limits else "--max-regression"
            for c in regressed:
                ctx.emit(bl.regression_line(c, self.run_id, limit, where))
            ctx.fail(bl.regression_line(regressed[0], self.run_id, limit, where))
        for c in changes:
            if c.worse_pct:
                ctx.emit(bl.insight_line(c, self.run_id))
        return result

    def terminal_lines(self, report: dict[str, Any]) -> list[str]:
        """The values that moved against the baseline, one line each (worse ones first)."""
        changes: list[bl.Change] = []
        for test in report.get("results", {}).get("tests", []):
            values = (test.get("insights") or {}).get("extra", {}).get(bl.INSIGHTS_KEY) or []
            if values:
                mine = measurements({"results": {"tests": [test]}})
                changes += bl.compare(mine, [m for m in self.values if m.check == test.get("name")], None)
        changes.sort(key=lambda c: -(c.worse_pct or 0.0))
        return [bl.insight_line(c, self.run_id) for c in changes if c.worse_pct]


def resolve_baseline(
    given: str | None,
    history: str | None,
    ours: dict[str, str],
    max_regression: float | None,
    state: PluginState | None = None,
) -> BaselineGate | None:
    """The baseline a run compares with: a CTRF file (foreign or unreadable: :class:`UsageError`), or
    ``auto``: the last passing run of this recipe on this cluster in ``--history`` (none: a note)."""
    bl.check_pct(max_regression)
    if not given:
        return None
    if given != AUTO:
        doc = bl.load_ctrf(given)
        why = bl.foreign(doc, ours)
        if why is not None:
            raise UsageError(bl.MSG_FOREIGN.format(path=given, why=why))
        return BaselineGate(doc, given, max_regression)
    if not history:
        raise UsageError(MSG_AUTO_NO_HISTORY)
    try:
        if state is None:
            raise UsageError(history)
        with open_store(state, history, create=False) as store:
            found = store.last_passing(ours.get("recipeFingerprint", ""), ours.get("cluster", ""))
    except UsageError:
        found = None
    if found is None or found.ctrf is None:
        print(MSG_AUTO_NONE.format(target=history), file=sys.stderr, flush=True)
        return None
    print(MSG_AUTO_USED.format(run_id=found.run_id, target=history), file=sys.stderr, flush=True)
    return BaselineGate(found.ctrf, f"{history}#{found.run_id}", max_regression)


def configure(config: pytest.Config, state: PluginState, controller: bool) -> None:
    """With ``--history``/``--baseline``: check them before any check runs (a usage error: exit 2),
    then register the features.  The gate runs in every process (checks run on xdist workers)."""
    history = state.settings.history
    given = state.settings.baseline
    pct = state.settings.max_regression
    if not (history or given or pct is not None):
        return
    try:
        bl.check_pct(pct)
        if history:
            cmh.check_keep(state.settings.history_keep)
        if history and controller:  # corrupt, unwritable, unreachable: now, not at the end
            with open_store(state, history, create=True) as store:
                if not isinstance(store, hs.SqliteHistory):  # the ring: can we read it?
                    store.runs(last=1)
        gate = resolve_baseline(given, history, identity(state).to_extra(), pct, state) if given else None
        if pct is not None and not given and controller:
            print(MSG_PCT_ALONE, file=sys.stderr, flush=True)
        if gate is not None and state.run is not None:
            from aicr_pytest.core import catalog
            from aicr_pytest.core.datatree import CATALOG_PATH

            merged = state.run.data.load_merged(CATALOG_PATH, "validators")
            gate.limits = bl.catalog_limits(merged, catalog.BY_NAME)
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    if history and controller:
        config.pluginmanager.register(HistoryRecorder(history), RECORDER_NAME)
    if gate is not None:
        config.pluginmanager.register(gate, GATE_NAME)


def finish_report(config: pytest.Config, state: PluginState, report: dict[str, Any]) -> None:
    """The final CTRF document: this run's identity; with a baseline, ``baseline`` and ``insights``."""
    report.setdefault("extra", {})[hs.IDENTITY_KEY] = identity(state).to_extra()
    gate = config.pluginmanager.get_plugin(GATE_NAME)
    if isinstance(gate, BaselineGate):
        bl.annotate(report, gate.doc, gate.source, gate.max_regression, gate.limits)
        gate.lines = gate.terminal_lines(report)


def terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """``--baseline``: the values that moved against it, worst first (never a failure by itself)."""
    gate = config.pluginmanager.get_plugin(GATE_NAME)
    if isinstance(gate, BaselineGate) and gate.lines:
        terminalreporter.section(f"against the baseline (run {gate.run_id})", sep="-")
        for line in gate.lines:
            terminalreporter.write_line(line)


__all__ = [
    "GATE_NAME",
    "RECORDER_NAME",
    "BaselineGate",
    "HistoryRecorder",
    "configure",
    "finish_report",
    "identity",
    "resolve_baseline",
    "terminal_summary",
]
