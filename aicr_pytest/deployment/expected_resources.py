"""``expected-resources``: namespaces, declared resources, readiness signals, health checks.

:func:`check_expected_resources` runs the four stages over the enabled component refs:
namespaces Active, overlay-declared ``expectedResources`` healthy, the GPU readiness signals
(Nodewright/Skyhook CRs, the DRA kubelet-plugin DaemonSet: :func:`wait_for_readiness_signals`,
one polling loop with overlapping dwell windows) and the component health checks
(:mod:`aicr_pytest.deployment.healthcheck`) at the same time.  Time comes from an injected
:class:`~aicr_pytest.core.clock.Clock`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from aicr_pytest.core import progress
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.goduration import format_go_duration
from aicr_pytest.core.gofmt import format_names, go_list
from aicr_pytest.deployment import healthcheck, rdma_fabric
from aicr_pytest.deployment.common import (
    CheckFailed,
    Emit,
    _describe_error,
    enabled_refs,
    log,
    ref_dict,
)
from aicr_pytest.deployment.healthcheck import Fetch, NotRegistered

MSG_ALL_HEALTHY = "All deployment resources and required readiness signals are healthy"
MSG_EXPECTED_FAILED = "[NOT_FOUND] expected resource check failed: {count} issue(s):\n{lines}"
MSG_CANCELED = "[TIMEOUT] deployment validation canceled during expected-resources iteration: {err}"
LINE_FAILED_HEADER = "Failed resources:"
LINE_NAMESPACE_OK = "  Namespace {ns}: Active"
MSG_NAMESPACE_ERROR = "namespace {ns}: {err}"
MSG_NAMESPACE_PHASE = "namespace {ns}: phase={phase} (want Active)"
MSG_NAMESPACE_NOT_FOUND = 'namespaces "{ns}" not found'

LINE_RESOURCE_OK = "  [expectedResources] {kind} {ns}/{name}: healthy"
MSG_RESOURCE_FAILED = "[expectedResources] {kind} {ns}/{name} ({component}): {err}"
MSG_RESOURCE_NOT_FOUND = "[NOT_FOUND] not found: {err}"
MSG_RESOURCE_OBJ_NOT_FOUND = '{resource} "{name}" not found'
MSG_DEPLOYMENT_UNHEALTHY = "not healthy: {available}/{expected} replicas available"
MSG_DAEMONSET_UNHEALTHY = "not healthy: {ready}/{desired} pods ready"
MSG_DAEMONSET_NONE_SCHEDULED = (
    "not healthy: 0/0 pods ready (desiredNumberScheduled is 0: the DaemonSet runs on no node)"
)
MSG_STATEFULSET_UNHEALTHY = "not healthy: {ready}/{expected} replicas ready"
MSG_UNSUPPORTED_KIND = '[INVALID_REQUEST] unsupported resource kind "{kind}"'

# kind -> (apiVersion, plural resource as the API server names it in NotFound errors)
EXPECTED_KINDS: Mapping[str, tuple[str, str]] = {
    "Deployment": ("apps/v1", "deployments.apps"),
    "DaemonSet": ("apps/v1", "daemonsets.apps"),
    "StatefulSet": ("apps/v1", "statefulsets.apps"),
    "Service": ("v1", "services"),
    "ConfigMap": ("v1", "configmaps"),
    "Secret": ("v1", "secrets"),
}

# -- GPU readiness signals --------------------------------------------------------------
NODEWRIGHT_COMPONENTS = ("nodewright-customizations", "skyhook-customizations")
DRA_COMPONENT = "nvidia-dra-driver-gpu"
DEFAULT_DRA_NAMESPACE = "nvidia-dra-driver"
SKYHOOK_API_VERSION = "skyhook.nvidia.com/v1alpha1"
KUBELET_PLUGIN_SUFFIX = "-kubelet-plugin"
SIGNAL_WINDOW = 480.0  # 8m
SIGNAL_DWELL = 60.0  # 1m stability window
SIGNAL_POLL_INTERVAL = 10.0
#: the check concludes this long (at most a tenth of what is left) before its budget runs out, so a
#: signal that never became ready ends with its own ``[TIMEOUT]`` line naming what it waited for, not
#: with the budget's inconclusive ``other`` (AICR's 8m signal window equals the check's 8m budget, so
#: upstream's pod is killed first: AICR #2187)
REPORT_MARGIN_S = 15.0

LINE_NODEWRIGHT_UNREGISTERED = "  Nodewright: skyhook.nvidia.com/v1alpha1 not registered, skipping"
LINE_NODEWRIGHT_OK = "  Nodewright {name}: complete (stable ≥{dwell})"
MSG_NODEWRIGHT_NO_NAMES = (
    "[NOT_FOUND] no Nodewright CR names could be extracted from component {component} manifestFiles={files}"
)
MSG_NODEWRIGHT_DISCOVERY = "[INTERNAL] failed to discover skyhook.nvidia.com/v1alpha1: {err}"
MSG_NODEWRIGHT_NOT_FOUND = "Nodewright {name}: not found (recipe declared it but the cluster has no such CR)"
MSG_NODEWRIGHT_GET_FAILED = "Nodewright {name}: failed to get: {err}"
MSG_NODEWRIGHT_NO_STATUS = "Nodewright {name}: missing status.status"
MSG_NODEWRIGHT_NOT_COMPLETE = "Nodewright {name}: status={status} (want complete)"
LABEL_NODEWRIGHT = "Nodewright CRs {names}"

LINE_DRA_OK = "  DaemonSet {ns}/{name}: healthy (stable ≥{dwell})"
MSG_DRA_AMBIGUOUS = (
    "ambiguous: {count} DaemonSets in namespace {ns} match kubelet-plugin role suffix "
    '"-kubelet-plugin": {names}'
)
MSG_DRA_NONE = (
    'no kubelet-plugin DaemonSet (name suffix "-kubelet-plugin") found in namespace {ns} '
    "(DaemonSets in namespace: {names})"
)
MSG_DRA_NOTHING_READY = (
    "DaemonSet {ns}/{name}: no ready kubelet-plugin pods scheduled ({ready}/{desired} pods ready)"
)
MSG_DRA_UNHEALTHY = "DaemonSet {ns}/{name}: not healthy: {ready}/{desired} pods ready"
MSG_DRA_LIST_FAILED = "failed to list DaemonSets in namespace {ns}: {err}"
LABEL_DRA = "{component} kubelet-plugin DaemonSet in namespace {ns}"

MSG_SIGNAL_NOT_READY = "[TIMEOUT] {label} not ready within {window}: {cause}"
MSG_SIGNAL_NOT_HELD = (
    "[TIMEOUT] {label} became healthy but did not hold it for the {dwell} stability window within {window} "
    "(reboot still settling)"
)
MSG_SIGNAL_BUDGET = (
    "[TIMEOUT] {label} became healthy but the parent check budget was exhausted before it held the {dwell} "
    "stability window"
)


class SignalFailed(Exception):
    """A readiness probe hit a condition that waiting cannot fix (e.g. an ambiguous DaemonSet)."""


@dataclass
class ProbeResult:
    """One sample of a signal: healthy (``cause is None``) or the problem; ``lines`` on success."""

    cause: str | None
    lines: tuple[str, ...] = ()


class Probe(Protocol):
    def __call__(self) -> ProbeResult: ...


@dataclass
class ReadinessSignal:
    label: str
    probe: Probe


@dataclass
class SignalOutcome:
    label: str
    ok: bool
    lines: tuple[str, ...] = ()
    failure: str | None = None


_SKYHOOK_DOC_SPLIT = re.compile(r"^---$", re.MULTILINE)
_SKYHOOK_KIND = re.compile(r"^kind: Skyhook$", re.MULTILINE)
_SKYHOOK_NAME = re.compile(r"^  name: (\S.*?)\s*$", re.MULTILINE)


def extract_skyhook_names(manifest_text: str) -> list[str]:
    """Skyhook CR names in a (possibly Helm-templated) manifest: documents split on ``---``
    lines, those with a ``kind: Skyhook`` line, name from the first two-space ``  name:`` line;
    templated names are skipped.  Order kept, duplicates dropped."""
    names: list[str] = []
    for doc in _SKYHOOK_DOC_SPLIT.split(manifest_text):
        if not _SKYHOOK_KIND.search(doc):
            continue
        m = _SKYHOOK_NAME.search(doc)
        if m is None:
            continue
        name = m.group(1).strip().strip("\"'")
        if not name or "{{" in name or "}}" in name:
            continue
        if name not in names:
            names.append(name)
    return names


def nodewright_probe(fetch: Fetch, names: Sequence[str], dwell: float) -> Probe:
    def probe() -> ProbeResult:
        problems: list[str] = []
        for name in names:
            try:
                items = fetch(SKYHOOK_API_VERSION, "Skyhook", None, name, None)
            except NotRegistered:
                items = []
            except Exception as err:
                problems.append(MSG_NODEWRIGHT_GET_FAILED.format(name=name, err=_describe_error(err)))
                continue
            if not items:
                problems.append(MSG_NODEWRIGHT_NOT_FOUND.format(name=name))
                continue
            status = (items[0].get("status") or {}).get("status")
            if status is None or status == "":
                problems.append(MSG_NODEWRIGHT_NO_STATUS.format(name=name))
            elif status != "complete":
                problems.append(MSG_NODEWRIGHT_NOT_COMPLETE.format(name=name, status=status))
        if problems:
            return ProbeResult("; ".join(problems))
        dwell_text = format_go_duration(dwell)
        return ProbeResult(None, tuple(LINE_NODEWRIGHT_OK.format(name=n, dwell=dwell_text) for n in names))

    return probe


def dra_probe(fetch: Fetch, namespace: str, dwell: float) -> Probe:
    def probe() -> ProbeResult:
        try:
            items = fetch("apps/v1", "DaemonSet", namespace, None, None)
        except Exception as err:
            return ProbeResult(MSG_DRA_LIST_FAILED.format(ns=namespace, err=_describe_error(err)))
        names = sorted(str((d.get("metadata") or {}).get("name", "")) for d in items)
        matches = [
            d for d in items if str((d.get("metadata") or {}).get("name", "")).endswith(KUBELET_PLUGIN_SUFFIX)
        ]
        if len(matches) > 1:
            matched = sorted(str(d["metadata"]["name"]) for d in matches)
            raise SignalFailed(
                MSG_DRA_AMBIGUOUS.format(count=len(matches), ns=namespace, names=format_names(matched))
            )
        if not matches:
            return ProbeResult(MSG_DRA_NONE.format(ns=namespace, names=format_names(names)))
        ds = matches[0]
        name = ds["metadata"]["name"]
        status = ds.get("status") or {}
        desired = int(status.get("desiredNumberScheduled") or 0)
        ready = int(status.get("numberReady") or 0)
        if desired <= 0 or ready <= 0:
            return ProbeResult(
                MSG_DRA_NOTHING_READY.format(ns=namespace, name=name, ready=ready, desired=desired)
            )
        if ready < desired:
            return ProbeResult(
                MSG_DRA_UNHEALTHY.format(ns=namespace, name=name, ready=ready, desired=desired)
            )
        return ProbeResult(
            None, (LINE_DRA_OK.format(ns=namespace, name=name, dwell=format_go_duration(dwell)),)
        )

    return probe


def rdma_probe(fetch: Fetch, resource: str, dwell: float) -> Probe:
    """The RDMA fabric gate (:mod:`aicr_pytest.deployment.rdma_fabric`) as a readiness probe."""

    def probe() -> ProbeResult:
        cause, lines = rdma_fabric.sample(fetch, resource, dwell)
        return ProbeResult(cause, lines)

    return probe


@dataclass
class _SignalState:
    signal: ReadinessSignal
    healthy_since: float | None = None
    ever_healthy: bool = False
    last_cause: str = "no observation yet"
    outcome: SignalOutcome | None = None


def wait_for_readiness_signals(
    signals: Sequence[ReadinessSignal],
    *,
    clock: Clock,
    deadline: float | None = None,
    window: float = SIGNAL_WINDOW,
    dwell: float = SIGNAL_DWELL,
    interval: float = SIGNAL_POLL_INTERVAL,
) -> list[SignalOutcome]:
    """Poll every signal until each has been healthy continuously for ``dwell`` seconds.

    All signals are polled in ONE loop, so their dwell windows overlap: N healthy signals cost
    one dwell of wall time, not N (AICR waits for them one after another).  A regression
    restarts that signal's dwell.  The loop gives up at ``min(start + window, deadline)``.
    """
    if not signals:
        return []
    start = clock.time()
    limit = start + window
    parent_limited = deadline is not None and deadline < limit
    if deadline is not None:
        limit = min(limit, deadline)
    states = [_SignalState(s) for s in signals]
    waiting = progress.Waiting(
        f"readiness signals to hold for {format_go_duration(dwell)}", clock=clock, deadline=limit
    )
    while True:
        now = clock.time()
        for st in states:
            if st.outcome is not None:
                continue
            try:
                result = st.signal.probe()
            except SignalFailed as err:
                st.outcome = SignalOutcome(st.signal.label, False, failure=str(err))
                continue
            if result.cause is None:
                st.ever_healthy = True
                if st.healthy_since is None:
                    st.healthy_since = now
                if now - st.healthy_since >= dwell:
                    st.outcome = SignalOutcome(st.signal.label, True, lines=result.lines)
            else:
                st.healthy_since = None
                st.last_cause = result.cause
        pending = [st for st in states if st.outcome is None]
        if not pending:
            break
        if now >= limit:
            window_text = format_go_duration(round(min(window, limit - start)))
            dwell_text = format_go_duration(dwell)
            for st in pending:
                label = st.signal.label
                if not st.ever_healthy:
                    failure = MSG_SIGNAL_NOT_READY.format(
                        label=label, window=window_text, cause=st.last_cause
                    )
                elif parent_limited:
                    failure = MSG_SIGNAL_BUDGET.format(label=label, dwell=dwell_text)
                else:
                    failure = MSG_SIGNAL_NOT_HELD.format(label=label, dwell=dwell_text, window=window_text)
                st.outcome = SignalOutcome(label, False, failure=failure)
            break
        waiting.tick(functools.partial(_signals_state, pending, clock.time(), dwell))
        clock.sleep(min(interval, limit - now))
    return [st.outcome for st in states if st.outcome is not None]


def _signals_state(pending: Sequence[_SignalState], now: float, dwell: float) -> str:
    """``gpu-operator healthy 20s/1m0s, network-operator not ready (no pods)`` for progress lines."""
    parts = []
    for st in pending:
        if st.healthy_since is not None:
            held = progress.format_left(now - st.healthy_since)
            parts.append(f"{st.signal.label} healthy {held}/{format_go_duration(dwell)}")
        else:
            parts.append(f"{st.signal.label} not ready ({st.last_cause})")
    return ", ".join(parts)


def _resource_line(kind: str, ns: str, name: str, component: str, err: str) -> str:
    return MSG_RESOURCE_FAILED.format(kind=kind, ns=ns, name=name, component=component, err=err)


def verify_expected_resource(fetch: Fetch, kind: str, namespace: str, name: str) -> str | None:
    """Health of one overlay-declared resource: ``None`` = healthy, else the error text.

    Unlike AICR, a DaemonSet with ``desiredNumberScheduled == 0`` is NOT healthy.
    """
    spec = EXPECTED_KINDS.get(kind)
    if spec is None:
        return MSG_UNSUPPORTED_KIND.format(kind=kind)
    api_version, resource = spec
    try:
        items = fetch(api_version, kind, namespace, name, None)
    except Exception as err:
        return MSG_RESOURCE_NOT_FOUND.format(err=_describe_error(err))
    if not items:
        return MSG_RESOURCE_NOT_FOUND.format(
            err=MSG_RESOURCE_OBJ_NOT_FOUND.format(resource=resource, name=name)
        )
    obj = items[0]
    obj_spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if kind == "Deployment":
        expected = obj_spec.get("replicas")
        expected = 1 if expected is None else int(expected)
        available = int(status.get("availableReplicas") or 0)
        if available < expected:
            return MSG_DEPLOYMENT_UNHEALTHY.format(available=available, expected=expected)
    elif kind == "DaemonSet":
        desired = int(status.get("desiredNumberScheduled") or 0)
        ready = int(status.get("numberReady") or 0)
        if desired == 0:
            return MSG_DAEMONSET_NONE_SCHEDULED
        if ready < desired:
            return MSG_DAEMONSET_UNHEALTHY.format(ready=ready, desired=desired)
    elif kind == "StatefulSet":
        expected = obj_spec.get("replicas")
        expected = 1 if expected is None else int(expected)
        ready = int(status.get("readyReplicas") or 0)
        if ready < expected:
            return MSG_STATEFULSET_UNHEALTHY.format(ready=ready, expected=expected)
    return None


def _readiness_signals(
    refs: Sequence[Mapping[str, Any]],
    fetch: Fetch,
    read_data_file: Callable[[str], str],
    dwell: float,
    emit: Emit,
    failures: list[str],
) -> list[ReadinessSignal]:
    signals: list[ReadinessSignal] = []
    for ref in refs:
        name = str(ref.get("name") or "")
        if name in NODEWRIGHT_COMPONENTS:
            files = [str(f) for f in ref.get("manifestFiles") or []]
            names: list[str] = []
            for path in files:
                try:
                    text = read_data_file(path)
                except Exception as err:
                    log.warning("component %s: cannot read manifest %s: %s", name, path, err)
                    continue
                names.extend(n for n in extract_skyhook_names(text) if n not in names)
            if not names:
                failures.append(MSG_NODEWRIGHT_NO_NAMES.format(component=name, files=go_list(files)))
                continue
            try:
                fetch(SKYHOOK_API_VERSION, "Skyhook", None, None, None)
            except NotRegistered:
                emit(LINE_NODEWRIGHT_UNREGISTERED)
                continue
            except Exception as err:
                failures.append(MSG_NODEWRIGHT_DISCOVERY.format(err=_describe_error(err)))
                continue
            signals.append(
                ReadinessSignal(
                    LABEL_NODEWRIGHT.format(names=go_list(names)), nodewright_probe(fetch, names, dwell)
                )
            )
        elif rdma_fabric.declares_rdma_fabric(ref):  # AICR main: the RDMA fabric readiness gate
            try:
                resource = rdma_fabric.fabric_resource(ref, read_data_file)
            except rdma_fabric.FabricDerivationError as err:
                failures.append(str(err))  # fail closed: never "skip the fabric gate"
                continue
            signals.append(
                ReadinessSignal(
                    rdma_fabric.LABEL.format(resource=resource), rdma_probe(fetch, resource, dwell)
                )
            )
        elif name == DRA_COMPONENT:
            ns = str(ref.get("namespace") or DEFAULT_DRA_NAMESPACE)
            signals.append(
                ReadinessSignal(LABEL_DRA.format(component=name, ns=ns), dra_probe(fetch, ns, dwell))
            )
    return signals


def _collect_health_checks(
    refs: Sequence[Mapping[str, Any]],
    read_data_file: Callable[[str], str],
    registry_entry: Callable[[str], Mapping[str, Any] | None] | None,
) -> list[healthcheck.HealthCheck | healthcheck.HealthCheckResult]:
    checks: list[healthcheck.HealthCheck | healthcheck.HealthCheckResult] = []
    lookup = registry_entry or healthcheck.registry_lookup(read_data_file)
    for ref in refs:
        component = str(ref.get("name") or "")
        try:
            source = healthcheck.resolve_health_check_source(ref, read_data_file, lookup)
        except healthcheck.HealthCheckRejected as err:
            checks.append(healthcheck.HealthCheckResult(component, False, str(err)))
            continue
        parsed = healthcheck.load_and_parse(component, source)
        if parsed is not None:
            checks.append(parsed)
    return checks


def _indent(line: str) -> str:
    return "  " + line.replace("\n", "\n    ")


def check_expected_resources(
    refs: Iterable[Mapping[str, Any] | Any],
    fetch: Fetch,
    *,
    read_data_file: Callable[[str], str],
    emit: Emit,
    clock: Clock,
    deadline: float | None = None,
    registry_entry: Callable[[str], Mapping[str, Any] | None] | None = None,
    signal_window: float = SIGNAL_WINDOW,
    signal_dwell: float = SIGNAL_DWELL,
    signal_interval: float = SIGNAL_POLL_INTERVAL,
    health_check_timeout: float = healthcheck.DEFAULT_TEST_TIMEOUT,
    max_parallel: int = healthcheck.MAX_PARALLEL_COMPONENTS,
) -> str:
    """``expected-resources`` over the ENABLED component refs.

    1. every distinct ref namespace exists and is Active;
    2. overlay-declared ``expectedResources`` are healthy;
    3. GPU readiness signals (Nodewright/Skyhook CRs, the DRA kubelet-plugin DaemonSet, the RDMA
       fabric a NicClusterPolicy declares) hold healthy for the dwell window, and
    4. component health checks (``healthCheckAsserts`` or the registry's ``assertFile`` read
       through ``read_data_file``) pass.

    Stages 3 and 4 run at the same time (signals in this thread, health checks in a pool of
    ``max_parallel``), so a healthy cluster costs one dwell window of wall time.  Both stages stop
    :data:`REPORT_MARGIN_S` before ``deadline``, so what they found is reported.  Never skips:
    returns :data:`MSG_ALL_HEALTHY` or raises :class:`CheckFailed` listing every problem.
    """
    enabled = enabled_refs(refs)
    failures: list[str] = []
    if deadline is not None:
        deadline -= min(REPORT_MARGIN_S, max(0.0, deadline - clock.time()) / 10)

    # 1. namespaces
    seen: list[str] = []
    for ref in enabled:
        ns = str(ref.get("namespace") or "")
        if ns and ns not in seen:
            seen.append(ns)
    for ns in seen:
        try:
            items = fetch("v1", "Namespace", None, ns, None)
        except Exception as err:
            failures.append(MSG_NAMESPACE_ERROR.format(ns=ns, err=_describe_error(err)))
            continue
        if not items:
            failures.append(MSG_NAMESPACE_ERROR.format(ns=ns, err=MSG_NAMESPACE_NOT_FOUND.format(ns=ns)))
            continue
        phase = str((items[0].get("status") or {}).get("phase") or "")
        if phase != "Active":
            failures.append(MSG_NAMESPACE_PHASE.format(ns=ns, phase=phase))
        else:
            emit(LINE_NAMESPACE_OK.format(ns=ns))

    # 2. overlay-declared expectedResources
    for ref in enabled:
        if deadline is not None and clock.time() >= deadline:
            failures.append(MSG_CANCELED.format(err="check budget exhausted"))
            break
        component = str(ref.get("name") or "")
        for er in ref.get("expectedResources") or []:
            er = ref_dict(er) if not isinstance(er, Mapping) else er
            kind, name = str(er.get("kind") or ""), str(er.get("name") or "")
            ns = str(er.get("namespace") or ref.get("namespace") or "default")
            problem = verify_expected_resource(fetch, kind, ns, name)
            if problem is None:
                emit(LINE_RESOURCE_OK.format(kind=kind, ns=ns, name=name))
            else:
                failures.append(_resource_line(kind, ns, name, component, problem))

    # 3 + 4, concurrently
    signals = _readiness_signals(enabled, fetch, read_data_file, signal_dwell, emit, failures)
    checks = _collect_health_checks(enabled, read_data_file, registry_entry)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="expected-resources") as background:
        hc_future = background.submit(
            healthcheck.run_health_checks,
            checks,
            fetch,
            clock=clock,
            max_parallel=max_parallel,
            default_timeout=health_check_timeout,
            deadline=deadline,
        )
        signal_outcomes = wait_for_readiness_signals(
            signals,
            clock=clock,
            deadline=deadline,
            window=signal_window,
            dwell=signal_dwell,
            interval=signal_interval,
        )
        hc_results = hc_future.result()
    for outcome in signal_outcomes:
        if outcome.ok:
            for line in outcome.lines:
                emit(line)
        else:
            failures.append(str(outcome.failure))
    for result in hc_results:
        if result.passed:
            emit("  " + result.line)
        else:
            failures.append(result.line)

    if failures:
        emit(LINE_FAILED_HEADER)
        for line in failures:
            emit(_indent(line))
        raise CheckFailed(
            MSG_EXPECTED_FAILED.format(count=len(failures), lines="\n".join(_indent(f) for f in failures))
        )
    emit(MSG_ALL_HEALTHY)
    return MSG_ALL_HEALTHY
