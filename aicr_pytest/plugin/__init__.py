"""The aicr-pytest pytest plugin (entry point ``pytest11: aicr``).

Hooks only; every decision is delegated to plain modules:
options → :mod:`aicr_pytest.core.settings`, inputs/readiness → :mod:`aicr_pytest.core.inputs`,
selection → :mod:`aicr_pytest.core.catalog`, outcomes → :mod:`aicr_pytest.report.outcome`,
report → :mod:`aicr_pytest.report.ctrf`.

The plugin is inert unless ``--recipe`` is given, so installing it never changes other test
suites.  With ``--recipe`` and no test paths, the checks bundled in the wheel are collected.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from aicr_pytest.core import catalog
from aicr_pytest.core.errors import CheckSkip, Inconclusive, UsageError
from aicr_pytest.core.settings import Settings, build_settings
from aicr_pytest.plugin import bundled, evidence_wiring  # evidence wiring (#15)
from aicr_pytest.plugin.check import CheckContext
from aicr_pytest.plugin.ledger import PhaseLedger
from aicr_pytest.report import ctrf, outcome
from aicr_pytest.report.results import ResultAccumulator, build_ctrf, phase_table

if TYPE_CHECKING:
    from aicr_pytest.core.inputs import RunState
    from aicr_pytest.core.policy import AllocationPolicy
    from aicr_pytest.core.recipe import Recipe
    from aicr_pytest.core.snapshot import Snapshot
    from aicr_pytest.kube.client import Cluster
    from aicr_pytest.kube.run import RunScope

log = logging.getLogger("aicr_pytest")

PHASE_MARKER_DOCS = catalog.PHASE_DESCRIPTIONS


@dataclass
class ItemInfo:
    name: str
    phase: str
    order: int
    kind: str  # "check" | "placeholder" | "constraint"


@dataclass
class PluginState:
    settings: Settings
    run: RunState | None = None
    run_id: str = ""
    start_ms: int = 0
    ledger: PhaseLedger | None = None
    items: list[ItemInfo] = field(default_factory=list)
    pending: dict[str, ResultAccumulator] = field(default_factory=dict)
    results: list[ResultAccumulator] = field(default_factory=list)
    cluster_handle: ClusterHandle | None = None
    usage_error_in_check: str | None = None
    report: dict[str, Any] | None = None
    cleanup_hints: list[str] = field(default_factory=list)
    evidence_plan: Any = None  # evidence wiring (#15)
    evidence_error: str | None = None  # evidence wiring (#15)

    @property
    def active(self) -> bool:
        return self.run is not None


STATE_KEY = pytest.StashKey[PluginState]()
ITEM_KEY = pytest.StashKey[ItemInfo]()
CTX_KEY = pytest.StashKey[CheckContext]()
HINTS_KEY = pytest.StashKey[list[str]]()


class ClusterHandle:
    """Connects on first use only: ``--no-cluster`` and ``--help`` never build a client."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._cluster: Cluster | None = None

    def get(self) -> Cluster:
        if self._cluster is None:
            from aicr_pytest.kube.client import connect

            self._cluster = connect(self._settings.kubeconfig, self._settings.kube_context)
        return self._cluster

    def read_configmap(self, namespace: str, name: str) -> dict[str, str]:
        return self.get().read_configmap(namespace, name)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _state(config: pytest.Config) -> PluginState | None:
    return config.stash.get(STATE_KEY, None)


# --------------------------------------------------------------------------------------------
# options and configuration
# --------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("aicr", "aicr-pytest: validate a GPU Kubernetes cluster against a recipe")
    group.addoption(
        "--recipe",
        "--aicr-recipe",
        dest="aicr_recipe",
        metavar="PATH|URL|cm://NS/NAME",
        help="recipe (RecipeResult) to validate against; activates the validator",
    )
    group.addoption(
        "--snapshot",
        dest="aicr_snapshot",
        metavar="PATH|URL|cm://NS/NAME",
        help="cluster snapshot for readiness and snapshot constraints",
    )
    group.addoption(
        "--phase",
        dest="aicr_phase",
        action="append",
        metavar="PHASE",
        help="deployment|conformance|performance|all (repeatable; run in the order given)",
    )
    group.addoption(
        "--no-cluster",
        dest="aicr_no_cluster",
        action="store_true",
        help="offline: evaluate the snapshot only, skip behavioral checks (needs --snapshot)",
    )
    group.addoption(
        "--fail-fast",
        dest="aicr_fail_fast",
        action="store_true",
        help="skip later phases after a phase ends failed or other",
    )
    group.addoption(
        "--data",
        dest="aicr_data",
        metavar="DIR",
        help="external data tree layered over the embedded recipes/ data",
    )
    group.addoption(
        "--node-selector",
        dest="aicr_node_selector",
        action="append",
        metavar="KEY=VALUE",
        help="node selector for inner GPU workloads (repeatable)",
    )
    group.addoption(
        "--toleration",
        dest="aicr_toleration",
        action="append",
        metavar="KEY=VALUE:EFFECT",
        help="toleration for inner GPU workloads (repeatable; '*' tolerates all)",
    )
    group.addoption(
        "--kubeconfig",
        dest="aicr_kubeconfig",
        metavar="PATH",
        help="kubeconfig (default: KUBECONFIG, then in-cluster config, then ~/.kube/config)",
    )
    group.addoption("--kube-context", dest="aicr_kube_context", metavar="NAME", help="kubeconfig context")
    group.addoption(
        "--no-cleanup",
        dest="aicr_no_cleanup",
        action="store_true",
        help="keep the objects a run creates and print kubectl commands to inspect/delete them",
    )
    group.addoption(
        "--ctrf-report", dest="aicr_ctrf", metavar="PATH", help="write a CTRF JSON report ('-' for stdout)"
    )
    group.addoption(
        "--nvidia-smi-image",
        dest="aicr_nvidia_smi_image",
        metavar="IMAGE",
        help="CUDA image for check-nvidia-smi (env AICR_NVIDIA_SMI_IMAGE)",
    )
    group.addoption(
        "--evidence-dir",
        dest="aicr_evidence_dir",
        metavar="DIR",
        help="write evidence files (plots, logs) here",
    )
    group.addoption(
        "--no-bundled-checks",
        dest="aicr_no_bundled",
        action="store_true",
        help="collect only the given paths, not the checks bundled with aicr-pytest",
    )
    evidence_wiring.add_options(parser)  # evidence wiring (#15)


def _settings_from(config: pytest.Config) -> Settings:
    opt = config.option
    return build_settings(
        recipe=opt.aicr_recipe,
        snapshot=opt.aicr_snapshot,
        phase=opt.aicr_phase,
        no_cluster=bool(opt.aicr_no_cluster),
        fail_fast=bool(opt.aicr_fail_fast),
        data=opt.aicr_data,
        node_selector=opt.aicr_node_selector,
        toleration=opt.aicr_toleration,
        kubeconfig=opt.aicr_kubeconfig,
        kube_context=opt.aicr_kube_context,
        no_cleanup=bool(opt.aicr_no_cleanup),
        ctrf_report=opt.aicr_ctrf,
        nvidia_smi_image=opt.aicr_nvidia_smi_image,
        evidence_dir=opt.aicr_evidence_dir,
    )


#: the check families' hook modules (light; registered when the inputs are validated)
FAMILY_HOOKS = ("aicr_pytest.nccl.hooks", "aicr_pytest.inference.hooks")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    import aicr_pytest.plugin.hookspecs as hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def _register_markers(config: pytest.Config) -> None:
    for phase, doc in PHASE_MARKER_DOCS.items():
        config.addinivalue_line("markers", f"{phase}: {doc}")
    config.addinivalue_line(
        "markers",
        "check(*names): the catalog check name(s) this test implements; the recipe selects them",
    )
    config.addinivalue_line(
        "markers", "aicr_placeholder: stands in for catalog checks that have no implementation yet"
    )


def pytest_configure(config: pytest.Config) -> None:
    _register_markers(config)
    # fake_cluster / fake_cluster_factory for anyone testing checks (imports nothing of testing/ yet)
    config.pluginmanager.import_plugin("aicr_pytest.plugin.testkit")
    try:
        settings = _settings_from(config)
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    state = PluginState(settings=settings)
    config.stash[STATE_KEY] = state
    if not settings.active:
        return

    from aicr_pytest.core.inputs import load_run_state

    state.cluster_handle = ClusterHandle(settings)

    def prevalidate(checks: list[str], recipe: Recipe, data: Any) -> None:
        for module in FAMILY_HOOKS:
            if not config.pluginmanager.has_plugin(module):
                config.pluginmanager.import_plugin(module)
        config.hook.pytest_aicr_prevalidate(checks=checks, recipe=recipe, settings=settings, data=data)

    try:
        state.run = load_run_state(settings, state.cluster_handle.read_configmap, prevalidate)
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None

    if not _is_worker(config):
        evidence_wiring.configure(config, state)  # evidence wiring (#15)

    if _is_worker(config):
        winput: dict[str, Any] = config.workerinput  # type: ignore[attr-defined]
        state.run_id = str(winput.get("aicr_run_id", ""))
        ledger_dir = winput.get("aicr_ledger_dir")
        state.ledger = PhaseLedger(Path(ledger_dir) if ledger_dir else None)
    else:
        state.run_id = uuid.uuid4().hex[:8]
        state.start_ms = int(time.time() * 1000)
        state.ledger = PhaseLedger(_ledger_dir(config, state) if _uses_xdist(config) else None)
        config.pluginmanager.register(_ResultCollector(state), "aicr-result-collector")

    if not settings.recipe or config.option.aicr_no_bundled:
        return
    checks = str(bundled.checks_dir())
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = [checks]
    elif checks not in config.args:
        config.args = [*config.args, checks]


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if bundled.is_bundled(module_path):
        return bundled.BundledModule.from_parent(parent, path=module_path)
    return None


def _uses_xdist(config: pytest.Config) -> bool:
    numprocesses = getattr(config.option, "numprocesses", None)
    dist = getattr(config.option, "dist", "no")
    return bool(numprocesses) or (dist not in (None, "no"))


def _ledger_dir(config: pytest.Config, state: PluginState) -> Path:
    base = Path(os.environ.get("TMPDIR", "/tmp"))
    return base / f"aicr-pytest-ledger-{os.getpid()}-{state.run_id}"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: hand the run id and the ledger location to every worker."""
    state = _state(node.config)
    if state is None or not state.active:
        return
    node.workerinput["aicr_run_id"] = state.run_id
    node.workerinput["aicr_ledger_dir"] = str(_ledger_dir(node.config, state))


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = _state(config)
    if state is None or state.run is None:
        return None
    s = state.settings
    recipe = state.run.recipe
    mode = "--no-cluster (offline: snapshot only)" if s.no_cluster else "live cluster"
    if s.simulated and not s.no_cluster:
        mode = "SIMULATED cluster (aicr-pytest simulate; no real GPUs)"
    snapshot = s.snapshot or "none"
    lines = [f"aicr-pytest: {recipe.header_line()} | snapshot {snapshot} | {mode} | run {state.run_id}"]
    return lines


def pytest_sessionstart(session: pytest.Session) -> None:
    state = _state(session.config)
    if state is None or state.run is None or _is_worker(session.config):
        return
    from aicr_pytest.core.constraints import format_readiness_line

    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    write: Callable[[str], None]
    if tr is not None:
        write = lambda line: tr.write_line(line)  # noqa: E731
    else:
        write = lambda line: print(line, file=sys.stderr)  # noqa: E731
    for warning in state.run.warnings:
        write(f"warning: {warning}")
    for result in state.run.readiness.results:
        if not result.passed:
            prefix = "warning: " if result.severity == "warning" else ""
            write(prefix + format_readiness_line(result))
    if state.run.readiness.blocked:
        write("readiness pre-flight failed: no check runs and nothing touches the cluster")


# --------------------------------------------------------------------------------------------
# collection
# --------------------------------------------------------------------------------------------


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    state = _state(metafunc.config)
    if "check" in metafunc.fixturenames:
        if metafunc.definition.get_closest_marker("aicr_placeholder") is not None:
            names = [c.name for c in catalog.CATALOG]
        else:
            marker = metafunc.definition.get_closest_marker("check")
            if marker is None or not marker.args:
                raise pytest.UsageError(
                    f"{metafunc.definition.nodeid}: a test that uses the `check` fixture needs "
                    "@pytest.mark.check('<catalog name>', ...)"
                )
            names = [str(a) for a in marker.args]
            unknown = [n for n in names if n not in catalog.BY_NAME]
            if unknown:
                raise pytest.UsageError(
                    f"{metafunc.definition.nodeid}: unknown check name(s) {', '.join(unknown)}"
                )
        metafunc.parametrize("check", sorted(names), indirect=True, ids=sorted(names))
    if "snapshot_constraint" in metafunc.fixturenames:
        params: list[tuple[str, str, str]] = []
        if state is not None and state.run is not None:
            params = sorted(
                (sc.phase, sc.constraint.name, sc.constraint.value) for sc in state.run.snapshot_constraints
            )
        metafunc.parametrize(
            "snapshot_constraint", params, indirect=True, ids=[f"{p}:{n}" for p, n, _ in params]
        )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = _state(config)
    if state is None or state.run is None:
        return
    run = state.run
    phases = list(state.settings.phases)
    selected = {s.spec.name: s for s in run.selected}
    implemented: set[str] = set()
    for item in items:
        params = getattr(item, "callspec", None)
        name = params.params.get("check") if params is not None else None
        if name is not None and item.get_closest_marker("aicr_placeholder") is None:
            implemented.add(str(name))

    keep: list[tuple[tuple[int, int, int], pytest.Item]] = []
    others: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        info: ItemInfo | None = None
        if "check" in params:
            name = str(params["check"])
            placeholder = item.get_closest_marker("aicr_placeholder") is not None
            if name not in selected or (placeholder and name in implemented):
                deselected.append(item)
                continue
            sel = selected[name]
            info = ItemInfo(name, sel.spec.phase, 0, "placeholder" if placeholder else "check")
            key = (phases.index(sel.spec.phase), 0, catalog.CATALOG_INDEX[name])
        elif "snapshot_constraint" in params:
            if not isinstance(params["snapshot_constraint"], tuple):  # empty parameter set
                deselected.append(item)
                continue
            phase, name, _value = params["snapshot_constraint"]
            info = ItemInfo(str(name), str(phase), 0, "constraint")
            key = (phases.index(str(phase)), 1, len(keep))
        else:
            others.append(item)
            continue
        keep.append((key, item))
        item.stash[ITEM_KEY] = info

    keep.sort(key=lambda pair: pair[0])
    ordered: list[pytest.Item] = []
    for order, (_, item) in enumerate(keep):
        info = item.stash[ITEM_KEY]
        info.order = order
        item.add_marker(info.phase)
        item.user_properties.extend(
            [
                ("aicr.name", info.name),
                ("aicr.phase", info.phase),
                ("aicr.order", order),
                ("aicr.kind", info.kind),
            ]
        )
        ordered.append(item)
    state.items = [item.stash[ITEM_KEY] for item in ordered]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = ordered + others


# --------------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = _state(item.config)
    info = item.stash.get(ITEM_KEY, None)
    if state is None or state.run is None or info is None:
        return
    if state.run.readiness.blocked:
        pytest.skip(outcome.SKIP_READINESS)
    earlier = [
        i.order
        for i in state.items
        if state.settings.phases.index(i.phase) < state.settings.phases.index(info.phase)
    ]
    if state.ledger is not None and earlier:
        state.ledger.wait_for(earlier)
        if state.settings.fail_fast and state.ledger.failed_phases(earlier):
            pytest.skip(outcome.SKIP_FAIL_FAST)
    if state.settings.no_cluster and info.kind != "constraint":
        pytest.skip(outcome.SKIP_NO_CLUSTER)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Domain code signals deliberate skips with :class:`CheckSkip`; report them as skipped."""
    try:
        return (yield)
    except CheckSkip as skip:
        pytest.skip(skip.reason)


def _exception_message(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    exc = excinfo.value
    text = str(exc).strip()
    if isinstance(exc, AssertionError):
        # assertion rewriting appends "assert <expr>"; keep the author's message when there is one
        head = text.split("\nassert ", 1)[0].strip()
        return head or text or "assertion failed"
    if isinstance(exc, pytest.fail.Exception | pytest.skip.Exception):
        return text
    if isinstance(exc, Inconclusive):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
        return reason.removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    info = item.stash.get(ITEM_KEY, None)
    if info is None:
        return report
    status: str | None = None
    message: str | None = None
    if report.skipped:
        status, message = "skipped", _skip_reason(report)
    elif report.failed and call.excinfo is not None:
        exc = call.excinfo.value
        message = _exception_message(call.excinfo)
        if report.when == "teardown":
            report.user_properties.append(("aicr.cleanup_warning", message))
        if isinstance(exc, AssertionError | pytest.fail.Exception):
            status = "failed"
        else:
            status = "other"
            if isinstance(exc, UsageError):
                report.user_properties.append(("aicr.usage_error", message))
    elif report.when == "call":
        status = "passed"
    if report.when == "teardown":
        ctx = item.stash.get(CTX_KEY, None)
        if ctx is not None and ctx.extra:
            report.user_properties.append(("aicr.extra", dict(ctx.extra)))
        hints = item.stash.get(HINTS_KEY, None)
        if hints:
            report.user_properties.append(("aicr.hints", list(hints)))
        return report
    if status is not None:
        report.user_properties.append(("aicr.status", status))
        if message:
            report.user_properties.append(
                ("aicr.message", message.splitlines()[0] if status == "skipped" else message)
            )
    if report.when in ("call", "setup") and (status is not None):
        ctx = item.stash.get(CTX_KEY, None)
        if ctx is not None:
            report.user_properties.append(("aicr.stdout", list(ctx.lines)))
            if ctx.extra:
                report.user_properties.append(("aicr.extra", dict(ctx.extra)))
    return report


def _props(report: pytest.TestReport) -> dict[str, Any]:
    return {k: v for k, v in report.user_properties}


class _ResultCollector:
    """Registered on the controller (or the only process) of an active run: gathers reports."""

    def __init__(self, state: PluginState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.state
        props = _props(report)
        if "aicr.name" not in props:
            return
        acc = state.pending.get(report.nodeid)
        if acc is None:
            acc = ResultAccumulator(
                props["aicr.name"], props["aicr.phase"], int(props["aicr.order"]), props["aicr.kind"]
            )
            state.pending[report.nodeid] = acc
        acc.duration_s += report.duration
        if "aicr.status" in props and not acc.decided:
            acc.status = props["aicr.status"]
            acc.message = props.get("aicr.message")
            acc.decided = acc.status != "passed" or report.when == "call"
        if props.get("aicr.stdout"):
            acc.stdout = list(props["aicr.stdout"])
        if "aicr.extra" in props:
            acc.extra.update(props["aicr.extra"])
        if "aicr.usage_error" in props:
            state.usage_error_in_check = str(props["aicr.usage_error"])
        for hint in props.get("aicr.hints", ()):
            if hint not in state.cleanup_hints:
                state.cleanup_hints.append(hint)
        if "aicr.cleanup_warning" in props:
            acc.extra["aicr.cleanupWarning"] = props["aicr.cleanup_warning"]
        if report.when == "teardown":
            state.pending.pop(report.nodeid, None)
            state.results.append(acc)
            if state.ledger is not None:
                state.ledger.record(acc.order, acc.phase, acc.status)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, Any] | None:
    if report.when not in ("setup", "call") or not report.failed:
        return None
    if ("aicr.status", "other") in report.user_properties:
        return "other", "O", ("OTHER", {"yellow": True})
    return None


# --------------------------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------------------------


def _require_run(request: pytest.FixtureRequest) -> RunState:
    state = _state(request.config)
    if state is None or state.run is None:
        raise pytest.UsageError("aicr-pytest fixtures need --recipe")
    return state.run


@pytest.fixture(scope="session")
def aicr_settings(request: pytest.FixtureRequest) -> Settings:
    """Validated command-line settings of this run."""
    state = _state(request.config)
    assert state is not None
    return state.settings


@pytest.fixture(scope="session")
def recipe(request: pytest.FixtureRequest) -> Recipe:
    """The recipe (RecipeResult) given with ``--recipe``."""
    return _require_run(request).recipe


@pytest.fixture(scope="session")
def snapshot(request: pytest.FixtureRequest) -> Snapshot | None:
    """The snapshot given with ``--snapshot`` (``None`` when omitted)."""
    return _require_run(request).snapshot


@pytest.fixture(scope="session")
def allocation_policy(request: pytest.FixtureRequest) -> AllocationPolicy:
    """The GPU allocation policy resolved from the recipe's hydrated component values."""
    return _require_run(request).policy


@pytest.fixture(scope="session")
def data_tree(request: pytest.FixtureRequest) -> Any:
    """The data tree: ``--data`` layered over the embedded ``recipes/`` data."""
    return _require_run(request).data


@pytest.fixture
def check(request: pytest.FixtureRequest) -> CheckContext:
    """The check being run: name, phase, timeout, its phase constraints and an ``emit`` for evidence."""
    run = _require_run(request)
    name = str(request.param)
    spec = catalog.BY_NAME[name]
    ctx = CheckContext(
        name=name,
        phase=spec.phase,
        timeout_s=spec.timeout_s,
        constraints=list(run.recipe.phase_constraints(spec.phase)),
        node_selector=run.settings.node_selector,
        tolerations=run.settings.tolerations,
    )
    request.node.stash[CTX_KEY] = ctx
    return ctx


@pytest.fixture
def snapshot_constraint(request: pytest.FixtureRequest) -> tuple[str, str, str]:
    """(phase, name, expression) of a phase constraint that addresses the snapshot."""
    phase, name, value = request.param
    ctx = CheckContext(name=str(name), phase=str(phase), timeout_s=0, constraints=[])
    request.node.stash[CTX_KEY] = ctx
    return str(phase), str(name), str(value)


class WallClock:
    """The clock checks use for deadlines and polling; tests override the ``aicr_clock`` fixture."""

    def time(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


@pytest.fixture(scope="session")
def aicr_clock() -> WallClock:
    """Time source for checks (``time()``/``sleep()``); override it to inject a fake clock."""
    return WallClock()


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Cluster:
    """The cluster facade (connected lazily, on first use by a check)."""
    state = _state(request.config)
    if state is None or state.cluster_handle is None:
        raise pytest.UsageError("the cluster fixture needs --recipe")
    if state.settings.no_cluster:
        raise Inconclusive("--no-cluster: no cluster access in this run")
    return state.cluster_handle.get()


@pytest.fixture
def run(request: pytest.FixtureRequest) -> Iterator[RunScope]:
    """Run-scoped names, labels and a cleanup registry; everything created is deleted afterwards.

    The cluster connects on first use.  Cleanup runs on success, failure, timeout, Ctrl-C and
    SIGTERM; ``--no-cleanup`` keeps the objects and prints kubectl commands instead.
    """
    from aicr_pytest.kube.run import RunScope, defer_signals, install_signal_handlers

    state = _state(request.config)
    if state is None or state.cluster_handle is None:
        raise pytest.UsageError("the run fixture needs --recipe")
    handle = state.cluster_handle
    worker = getattr(request.config, "workerinput", {}).get("workerid")
    scope = RunScope(handle.get, run_id=state.run_id, worker_id=worker, no_cleanup=state.settings.no_cleanup)
    with install_signal_handlers():
        try:
            yield scope
        finally:
            with defer_signals():
                report = scope.cleanup()
    ctx = request.node.stash.get(CTX_KEY, None)
    if report.warnings:
        for warning in report.warnings:
            log.warning("cleanup: %s", warning)
        if ctx is not None:
            ctx.extra["aicr.cleanupWarnings"] = list(report.warnings)
    request.node.stash[HINTS_KEY] = report.lines()


# --------------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------------


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = _state(config)
    if state is None or state.run is None or _is_worker(config):
        return
    tr = terminalreporter
    summaries: list[str] = []
    for acc in sorted(state.results, key=lambda a: a.order):
        summaries.extend(outcome.result_summaries(acc.stdout))
    if summaries:
        tr.section("aicr results", sep="-")
        for line in summaries:
            tr.write_line(line)
    tr.section("aicr phase summary", sep="-")
    tr.write_line(f"{'phase':<13} {'status':<8} {'passed':>6} {'failed':>6} {'skipped':>7} {'other':>5}")
    for phase, status, c in phase_table(state.settings.phases, state.results):
        tr.write_line(
            f"{phase:<13} {status:<8} {c['passed']:>6} {c['failed']:>6} {c['skipped']:>7} {c['other']:>5}"
        )
    if state.run.readiness.blocked:
        tr.write_line("readiness pre-flight failed: every check was skipped")
    for hint in state.cleanup_hints:
        tr.write_line(hint)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = _state(session.config)
    if state is None or state.run is None or _is_worker(session.config):
        return
    readiness = state.run.readiness.results if state.run.readiness.blocked else []
    state.report = build_ctrf(
        state.results, readiness=readiness, start_ms=state.start_ms, run_id=state.run_id
    )
    target = state.settings.ctrf_report
    if target == "-":
        sys.stdout.write(ctrf.dumps(state.report))
        sys.stdout.flush()
    elif target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text(ctrf.dumps(state.report), encoding="utf-8")
    if state.run.readiness.blocked and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    evidence_wiring.finish(session, state, exitstatus)  # evidence wiring (#15)
    if _uses_xdist(session.config):
        import shutil

        shutil.rmtree(_ledger_dir(session.config, state), ignore_errors=True)
