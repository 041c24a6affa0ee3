"""Catalog ∩ recipe → items: parametrization, selection, run order, phase markers, phase gates.

* a test that uses the ``aicr_check`` fixture is parametrized once per catalog check it implements:
  a bundled test with the checks whose catalog row names it (``CheckSpec.test``), any other test
  with the names of its ``@pytest.mark.check(...)``;
* ``aicr_snapshot_constraint`` is parametrized with the recipe's phase constraints that address the
  snapshot;
* items the recipe does not select are deselected; a selected check that no collected test
  implements (only possible with ``--no-bundled-checks``) is named in a warning, never dropped
  silently; the rest run phase by phase (``--phase`` order),
  checks in catalog order before the phase's snapshot constraints, and carry their phase marker;
* :func:`gate` says why an item must not run (readiness blocked, an earlier phase failed under
  ``--fail-fast``, ``--no-cluster``); under xdist the scheduler starts an item only after the
  earlier phases (:mod:`~aicr_pytest.plugin.phasesched`), and :func:`share_plan` tells it each
  item's phase.
"""

from __future__ import annotations

import warnings

import pytest

from aicr_pytest.core import catalog
from aicr_pytest.core.runflags import SKIP_CHECK_REASON
from aicr_pytest.plugin import bundled, options
from aicr_pytest.plugin.state import ITEM_KEY, ItemInfo, PluginState, is_simulated
from aicr_pytest.report import outcome
from aicr_pytest.report.results import (
    EXTRA_SIMULATED,
    PROP_FILE,
    PROP_KIND,
    PROP_NAME,
    PROP_ORDER,
    PROP_PHASE,
)

PHASE_MARKER_DOCS = catalog.PHASE_DESCRIPTIONS

#: the indirectly parametrized fixtures of :mod:`aicr_pytest.plugin.fixtures`
CHECK_FIXTURE = "aicr_check"
CONSTRAINT_FIXTURE = "aicr_snapshot_constraint"


def register_markers(config: pytest.Config) -> None:
    for phase, doc in PHASE_MARKER_DOCS.items():
        config.addinivalue_line("markers", f"{phase}: {doc}")
    for group in catalog.GROUPS:
        config.addinivalue_line("markers", f"{group}: {catalog.group_marker_doc(group)}")
    config.addinivalue_line(
        "markers",
        "check(*names): the catalog check name(s) this test implements; the recipe selects them",
    )


def markexpr_asks_for(markexpr: str, group: str) -> bool:
    """Whether ``-m markexpr`` asks for the opt-in ``group`` by name: it selects a check carrying the
    group's marker and its phase marker, and not one carrying the phase marker alone."""
    if not markexpr.strip():
        return False
    from _pytest.mark.expression import Expression

    try:
        expr = Expression.compile(markexpr)
    except Exception:  # pytest reports a malformed -m itself
        return False

    def selects(markers: frozenset[str]) -> bool:
        def matcher(name: str, /, **kwargs: str | int | bool | None) -> bool:
            return name in markers

        return expr.evaluate(matcher)

    phases = {c.phase for c in catalog.CATALOG if c.group == group}
    return any(selects(frozenset({p, group})) and not selects(frozenset({p})) for p in phases)


def opt_in_by_marker(config: pytest.Config, state: PluginState) -> None:
    """``-m health`` asks for the node-health checks as ``--node-health`` does, ``-m cncf-should``
    for the CNCF SHOULD checks as ``--cncf-should`` does (before inputs load)."""
    markexpr = str(getattr(config.option, "markexpr", "") or "")
    for group, spec in catalog.GROUPS.items():
        setting = spec.setting
        if not getattr(state.settings, setting) and markexpr_asks_for(markexpr, group):
            state.settings = state.settings.model_copy(update={setting: True})


def add_bundled_checks(config: pytest.Config, state: PluginState) -> None:
    """With ``--recipe``, collect the bundled checks: alone without paths, else with the paths."""
    if not state.active or not state.settings.recipe:
        return
    if options.session_run(config).no_bundled_checks:
        return
    checks = str(bundled.checks_dir())
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = [checks]
    elif checks not in config.args:
        config.args = [*config.args, checks]


def only_bundled_checks(config: pytest.Config) -> bool:
    """Whether the run collects the bundled checks alone (no test paths of the user's)."""
    return [str(a) for a in config.args] == [str(bundled.checks_dir())]


def parametrize(metafunc: pytest.Metafunc, state: PluginState | None) -> None:
    if CHECK_FIXTURE in metafunc.fixturenames:
        names = _check_names(metafunc)
        metafunc.parametrize(CHECK_FIXTURE, sorted(names), indirect=True, ids=sorted(names))
    if CONSTRAINT_FIXTURE in metafunc.fixturenames:
        params: list[tuple[str, str, str]] = []
        if state is not None and state.run is not None:
            params = sorted(
                (sc.phase, sc.constraint.name, sc.constraint.value) for sc in state.run.snapshot_constraints
            )
        metafunc.parametrize(
            CONSTRAINT_FIXTURE, params, indirect=True, ids=[f"{p}:{n}" for p, n, _ in params]
        )


def _check_names(metafunc: pytest.Metafunc) -> list[str]:
    marker = metafunc.definition.get_closest_marker("check")
    if bundled.is_bundled(metafunc.definition.path):
        return _bundled_check_names(metafunc, has_marker=marker is not None)
    if marker is None or not marker.args:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: a test that uses the `{CHECK_FIXTURE}` fixture needs "
            "@pytest.mark.check('<catalog name>', ...)"
        )
    names = [str(a) for a in marker.args]
    unknown = [n for n in names if n not in catalog.BY_NAME]
    if unknown:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: unknown check name(s) {', '.join(unknown)}")
    return names


def _bundled_check_names(metafunc: pytest.Metafunc, *, has_marker: bool) -> list[str]:
    """A bundled test implements the checks whose catalog row names it, and only those."""
    function = metafunc.function.__name__
    if metafunc.cls is not None:
        function = f"{metafunc.cls.__name__}::{function}"
    ref = bundled.catalog_ref(metafunc.definition.path, function)
    if has_marker:
        raise pytest.UsageError(
            f"bundled test {ref}: its check names come from the catalog rows that name it "
            "(CheckSpec.test), not from a check marker"
        )
    names = catalog.names_of_test(ref)
    if not names:
        raise pytest.UsageError(f"bundled test {ref}: no catalog row names it (CheckSpec.test)")
    return names


def select_and_order(config: pytest.Config, items: list[pytest.Item], state: PluginState) -> None:
    """Keep the selected items, in run order, before any other test; report the rest deselected."""
    assert state.run is not None
    phases = list(state.settings.phases)
    selected = {s.spec.name: s for s in state.run.selected}
    implemented: set[str] = set()
    for item in items:
        params = getattr(item, "callspec", None)
        name = params.params.get(CHECK_FIXTURE) if params is not None else None
        if name is not None:
            implemented.add(str(name))
    missing = [n for n in selected if n not in implemented]
    if missing:
        warnings.warn(
            pytest.PytestWarning(
                "declared check(s) with no collected implementation, not run: " + ", ".join(missing)
            ),
            stacklevel=2,
        )

    keep: list[tuple[tuple[int, int, int], pytest.Item]] = []
    others: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        info: ItemInfo | None = None
        if CHECK_FIXTURE in params:
            name = str(params[CHECK_FIXTURE])
            if name not in selected:
                deselected.append(item)
                continue
            sel = selected[name]
            info = ItemInfo(name, sel.spec.phase, 0, "check")
            key = (phases.index(sel.spec.phase), 0, catalog.CATALOG_INDEX[name])
        elif CONSTRAINT_FIXTURE in params:
            if not isinstance(params[CONSTRAINT_FIXTURE], tuple):  # empty parameter set
                deselected.append(item)
                continue
            phase, name, _value = params[CONSTRAINT_FIXTURE]
            info = ItemInfo(str(name), str(phase), 0, "constraint")
            key = (phases.index(str(phase)), 1, len(keep))
        else:
            others.append(item)
            continue
        keep.append((key, item))
        item.stash[ITEM_KEY] = info

    keep.sort(key=lambda pair: pair[0])
    simulated = is_simulated(state.settings)
    ordered: list[pytest.Item] = []
    for order, (_, item) in enumerate(keep):
        info = item.stash[ITEM_KEY]
        info.order = order
        item.add_marker(info.phase)
        group = catalog.BY_NAME[info.name].group if info.kind == "check" else None
        if group is not None:
            item.add_marker(group)
        item.user_properties.extend(
            [
                (PROP_NAME, info.name),
                (PROP_PHASE, info.phase),
                (PROP_ORDER, order),
                (PROP_KIND, info.kind),
                (PROP_FILE, file_path(item)),
            ]
        )
        if simulated:  # JUnit and every other reader of the item's properties see it too
            item.user_properties.append((EXTRA_SIMULATED, "true"))
        ordered.append(item)
    state.items = [item.stash[ITEM_KEY] for item in ordered]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = ordered + others


def file_path(item: pytest.Item) -> str:
    """CTRF ``filePath``: a bundled check's module as ``checks/<folder>/<file>.py`` (wherever the
    package is installed), any other test's path as pytest shows it."""
    if bundled.is_bundled(item.path):
        return "checks/" + bundled.relative(item.path)
    return item.location[0]


def share_plan(session: pytest.Session, state: PluginState | None, worker: str) -> None:
    """An xdist worker's collection as phases, for the controller's scheduler (before the worker
    reports its collection)."""
    if state is None or state.ledger is None:
        return
    plan = []
    for item in session.items:
        info = item.stash.get(ITEM_KEY, None)
        plan.append(info.phase if info is not None else None)
    state.ledger.write_plan(worker, plan)


def gate(item: pytest.Item, state: PluginState) -> str | None:
    """Why ``item`` must be skipped before it runs (``None``: run it).

    Every item of the earlier phases has finished by now: in one process they ran before it, under
    xdist the scheduler started it only after them.
    """
    info = item.stash.get(ITEM_KEY, None)
    if state.run is None or info is None:
        return None
    if state.run.readiness.blocked:
        return outcome.SKIP_READINESS
    phases = state.settings.phases
    earlier = set(phases[: phases.index(info.phase)])
    if state.settings.fail_fast and state.ledger is not None and state.ledger.failed_phases() & earlier:
        return outcome.SKIP_FAIL_FAST
    if info.kind != "constraint" and info.name in state.settings.skip_checks:
        return SKIP_CHECK_REASON
    if state.settings.no_cluster and info.kind != "constraint":
        return outcome.SKIP_NO_CLUSTER
    return None
