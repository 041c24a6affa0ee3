"""Domain logic of the four deployment-phase checks (spec §5): no pytest, no cluster client.

Objects are plain Kubernetes JSON dicts.  Where a check must look objects up it takes a
:class:`~aicr_pytest.deployment.healthcheck.Fetch` callable (``fetch(api_version, kind, namespace, name,
labels) -> list[dict]``); time comes from injected ``clock``/``sleep`` callables; evidence lines
go to an injected ``emit`` callable (``CheckContext.emit``).

Outcomes: a check function returns its pass message, raises :class:`CheckFailed` (an
``AssertionError``, so pytest reports ``failed``), :class:`~aicr_pytest.core.errors.CheckSkip`
(``skipped``) or :class:`~aicr_pytest.core.errors.Inconclusive` (``other``: the API could not answer).

Component refs may be plain dicts (recipe YAML keys: ``overrides``, ``expectedResources``,
``manifestFiles``, ``healthCheckAsserts``...) or :class:`aicr_pytest.core.recipe.ComponentRef` models.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from aicr_pytest.core.allocmode import gpu_count
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.deployment import healthcheck
from aicr_pytest.deployment.healthcheck import Fetch, NotRegistered, format_go_duration

log = logging.getLogger("aicr_pytest.deployment")

Emit = Callable[[str], None]

__all__ = [
    "CheckFailed",
    "CheckSkip",
    "GpuNode",
    "GpuNodeInventory",
    "NodeResult",
    "build_verify_claim",
    "build_verify_pod",
    "check_expected_resources",
    "check_gpu_operator_version",
    "check_operator_health",
    "discover_gpu_nodes",
    "dra_probe",
    "enabled_refs",
    "evaluate_operator_health",
    "extract_operator_version",
    "extract_skyhook_names",
    "format_pod_failure",
    "gpu_busy_reasons",
    "is_enabled",
    "nodewright_probe",
    "operator_namespace",
    "parse_nvidia_smi_output",
    "plan_nvidia_smi",
    "summarize_nvidia_smi",
    "verify_node_output",
    "verify_pod_name",
    "wait_for_readiness_signals",
]


class CheckFailed(AssertionError):
    """The cluster failed the check; ``str()`` is the user-facing message."""


# ================================================================================================
# Component refs
# ================================================================================================
def ref_dict(ref: Mapping[str, Any] | Any) -> dict[str, Any]:
    """A component ref as a dict with the recipe's (camelCase) keys."""
    if isinstance(ref, Mapping):
        return dict(ref)
    dump = getattr(ref, "model_dump", None)
    if callable(dump):
        data = dump(by_alias=True)
        if isinstance(data, dict):
            return data
    raise TypeError(f"not a component ref: {ref!r}")


def is_enabled(ref: Mapping[str, Any] | Any) -> bool:
    """Enabled unless ``overrides.enabled`` is the boolean ``false`` (a non-bool warns, counts as on)."""
    data = ref_dict(ref)
    overrides = data.get("overrides") or {}
    if not isinstance(overrides, Mapping) or "enabled" not in overrides:
        return True
    value = overrides["enabled"]
    if not isinstance(value, bool):
        log.warning(
            "component %s: overrides.enabled is not a boolean (%r); treating as enabled",
            data.get("name"),
            value,
        )
        return True
    return value


def enabled_refs(refs: Iterable[Mapping[str, Any] | Any]) -> list[dict[str, Any]]:
    """The enabled refs, as dicts, in recipe order."""
    return [d for d in (ref_dict(r) for r in refs) if is_enabled(d)]


def _go_list(items: Iterable[str]) -> str:
    """Go's ``%v`` rendering of a string slice: ``[a b c]``."""
    return "[" + " ".join(items) + "]"


def _describe_error(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


# ================================================================================================
# operator-health (spec §5.1)
# ================================================================================================
DEFAULT_OPERATOR_NAMESPACE = "gpu-operator"
OPERATOR_COMPONENTS = ("gpu-operator", "gpu-operator-ocp")
OPERATOR_POD_LABELS: Mapping[str, str] = {"app": "gpu-operator"}

MSG_OPERATOR_LIST_FAILED = "[INTERNAL] failed to list gpu-operator pods: {err}"
MSG_OPERATOR_NO_PODS = "[NOT_FOUND] no gpu-operator pods found"
MSG_OPERATOR_NONE_RUNNING = "[INTERNAL] no gpu-operator pods are in Running state ({total} total)"
MSG_OPERATOR_PASSED = "operator-health: passed running={running}"
LINE_OPERATOR_FOUND = "Found {total} gpu-operator pod(s):"
LINE_OPERATOR_POD = "  {name}: {phase}"
LINE_OPERATOR_RUNNING = "Running: {running}/{total}"


def operator_namespace(refs: Iterable[Mapping[str, Any] | Any]) -> str:
    """Namespace of the enabled ``gpu-operator`` ref, else of an enabled ``gpu-operator-ocp``
    ref, else ``gpu-operator`` (AICR hard-codes ``gpu-operator``)."""
    enabled = {d.get("name"): d for d in enabled_refs(refs)}
    for name in OPERATOR_COMPONENTS:
        ref = enabled.get(name)
        if ref is not None:
            return str(ref.get("namespace") or DEFAULT_OPERATOR_NAMESPACE)
    return DEFAULT_OPERATOR_NAMESPACE


def evaluate_operator_health(pods: Sequence[Mapping[str, Any]], *, emit: Emit) -> str:
    """Verdict over the ``app=gpu-operator`` pods: pass iff at least one is Running."""
    if not pods:
        raise CheckFailed(MSG_OPERATOR_NO_PODS)
    emit(LINE_OPERATOR_FOUND.format(total=len(pods)))
    running = 0
    for pod in pods:
        phase = str((pod.get("status") or {}).get("phase") or "")
        if phase == "Running":
            running += 1
        emit(LINE_OPERATOR_POD.format(name=(pod.get("metadata") or {}).get("name", "?"), phase=phase))
    emit(LINE_OPERATOR_RUNNING.format(running=running, total=len(pods)))
    if running == 0:
        raise CheckFailed(MSG_OPERATOR_NONE_RUNNING.format(total=len(pods)))
    return MSG_OPERATOR_PASSED.format(running=running)


def check_operator_health(
    fetch: Fetch,
    refs: Iterable[Mapping[str, Any] | Any] = (),
    *,
    emit: Emit,
    namespace: str | None = None,
) -> str:
    """``operator-health``: list ``app=gpu-operator`` pods in the operator namespace.

    A list error raises :class:`Inconclusive` with the spec's text (the API, not the cluster's
    health, is the problem).
    """
    ns = namespace or operator_namespace(refs)
    log.info("listing pods namespace=%s label=app=gpu-operator", ns)
    try:
        pods = fetch("v1", "Pod", ns, None, OPERATOR_POD_LABELS)
    except Exception as err:
        raise Inconclusive(MSG_OPERATOR_LIST_FAILED.format(err=_describe_error(err))) from err
    return evaluate_operator_health(pods, emit=emit)


# ================================================================================================
# expected-resources (spec §5.2)
# ================================================================================================
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

# -- GPU readiness signals (§5.2 stage 3) --------------------------------------------------------------
NODEWRIGHT_COMPONENTS = ("nodewright-customizations", "skyhook-customizations")
DRA_COMPONENT = "nvidia-dra-driver-gpu"
DEFAULT_DRA_NAMESPACE = "nvidia-dra-driver"
SKYHOOK_API_VERSION = "skyhook.nvidia.com/v1alpha1"
KUBELET_PLUGIN_SUFFIX = "-kubelet-plugin"
SIGNAL_WINDOW = 480.0  # 8m
SIGNAL_DWELL = 60.0  # 1m stability window
SIGNAL_POLL_INTERVAL = 10.0

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
                MSG_DRA_AMBIGUOUS.format(count=len(matches), ns=namespace, names=_go_list(matched))
            )
        if not matches:
            return ProbeResult(MSG_DRA_NONE.format(ns=namespace, names=_go_list(names)))
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
    clock: Callable[[], float],
    sleep: Callable[[float], None],
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
    start = clock()
    limit = start + window
    parent_limited = deadline is not None and deadline < limit
    if deadline is not None:
        limit = min(limit, deadline)
    states = [_SignalState(s) for s in signals]
    while True:
        now = clock()
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
        sleep(min(interval, limit - now))
    return [st.outcome for st in states if st.outcome is not None]


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
                failures.append(MSG_NODEWRIGHT_NO_NAMES.format(component=name, files=_go_list(files)))
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
                    LABEL_NODEWRIGHT.format(names=_go_list(names)), nodewright_probe(fetch, names, dwell)
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
    clock: Callable[[], float],
    sleep: Callable[[float], None],
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
    3. GPU readiness signals (Nodewright/Skyhook CRs, the DRA kubelet-plugin DaemonSet) hold
       healthy for the dwell window, and
    4. component health checks (``healthCheckAsserts`` or the registry's ``assertFile`` read
       through ``read_data_file``) pass.

    Stages 3 and 4 run at the same time (signals in this thread, health checks in a pool of
    ``max_parallel``), so a healthy cluster costs one dwell window of wall time.  Never skips:
    returns :data:`MSG_ALL_HEALTHY` or raises :class:`CheckFailed` listing every problem.
    """
    enabled = enabled_refs(refs)
    failures: list[str] = []

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
        if deadline is not None and clock() >= deadline:
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
            sleep=sleep,
            max_parallel=max_parallel,
            default_timeout=health_check_timeout,
            deadline=deadline,
        )
        signal_outcomes = wait_for_readiness_signals(
            signals,
            clock=clock,
            sleep=sleep,
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


# ================================================================================================
# gpu-operator-version (spec §5.3)
# ================================================================================================
VERSION_CONSTRAINT = "Deployment.gpu-operator.version"
VERSION_NAMESPACES = ("gpu-operator", "nvidia-gpu-operator", "kube-system")
VERSION_DEPLOYMENT_NAMES = ("gpu-operator", "nvidia-gpu-operator")
VERSION_LABEL = "app.kubernetes.io/version"
VERSION_ANNOTATION = "nvidia.com/gpu-operator-version"

MSG_VERSION_NOT_FOUND = (
    "[INTERNAL] failed to detect GPU operator version: [NOT_FOUND] could not find GPU operator deployment "
    "in common namespaces: {err}"
)
MSG_VERSION_UNDETERMINED = "could not determine version from deployment {ns}/{name}"
MSG_VERSION_SKIP = "no Deployment.gpu-operator.version constraint in recipe; detected {version}"
MSG_VERSION_BAD_EXPRESSION = "[INVALID_REQUEST] invalid constraint expression: {err}"
MSG_VERSION_EVAL_FAILED = "[INTERNAL] constraint evaluation failed: {err}"
MSG_VERSION_UNSATISFIED = '[INTERNAL] GPU Operator version {version} does not satisfy constraint "{expr}"'
MSG_VERSION_SATISFIED = 'GPU Operator version {version} satisfies constraint "{expr}"'
LINE_VERSION_DETECTED = "Detected GPU Operator version: {version}"
LINE_VERSION_CONSTRAINT = "Constraint: {expr} → {result}"


def normalize_version(raw: str) -> str:
    """Trim and prefix ``v`` (``25.3.0`` → ``v25.3.0``); empty stays empty."""
    text = raw.strip()
    if text and not text.startswith("v"):
        text = "v" + text
    return text


def _image_tag(image: str) -> str | None:
    """The tag of an image reference (digest dropped; a registry port is not a tag)."""
    ref = image.split("@", 1)[0]
    colon = ref.rfind(":")
    if colon < 0 or colon < ref.rfind("/"):
        return None
    return ref[colon + 1 :] or None


def extract_operator_version(deployment: Mapping[str, Any]) -> str | None:
    """Label ``app.kubernetes.io/version``, else the tag of the first ``gpu-operator`` container
    image cut at the first ``-`` (``v25.3.0-ubi9`` → ``v25.3.0``), else the annotation
    ``nvidia.com/gpu-operator-version``; normalized.  ``None`` when none is usable."""
    metadata = deployment.get("metadata") or {}
    label = str((metadata.get("labels") or {}).get(VERSION_LABEL) or "").strip()
    if label:
        return normalize_version(label)
    pod_spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in pod_spec.get("containers") or []:
        image = str((container or {}).get("image") or "")
        if "gpu-operator" in image:
            tag = _image_tag(image)
            if tag:
                version = tag.split("-", 1)[0].strip()
                if version:
                    return normalize_version(version)
            break
    annotation = str((metadata.get("annotations") or {}).get(VERSION_ANNOTATION) or "").strip()
    if annotation:
        return normalize_version(annotation)
    return None


def detect_operator_version(fetch: Fetch, *, preferred_namespace: str | None = None) -> str:
    """Probe namespaces × names (the recipe's operator namespace first) for the operator
    Deployment; first one with a version wins.  Raises :class:`CheckFailed` with the spec's text
    when none is found, or :class:`Inconclusive` when every probe was an API error."""
    namespaces = list(VERSION_NAMESPACES)
    if preferred_namespace and preferred_namespace not in namespaces:
        namespaces.insert(0, preferred_namespace)
    elif preferred_namespace:
        namespaces.remove(preferred_namespace)
        namespaces.insert(0, preferred_namespace)
    last_error = ""
    api_errors = 0
    probes = 0
    for ns in namespaces:
        for name in VERSION_DEPLOYMENT_NAMES:
            probes += 1
            try:
                items = fetch("apps/v1", "Deployment", ns, name, None)
            except Exception as err:
                api_errors += 1
                last_error = _describe_error(err)
                continue
            if not items:
                last_error = MSG_RESOURCE_OBJ_NOT_FOUND.format(resource="deployments.apps", name=name)
                continue
            version = extract_operator_version(items[0])
            if version:
                return version
            last_error = MSG_VERSION_UNDETERMINED.format(ns=ns, name=name)
    message = MSG_VERSION_NOT_FOUND.format(err=last_error)
    if api_errors == probes:
        raise Inconclusive(message)
    raise CheckFailed(message)


def find_constraint(constraints: Iterable[Mapping[str, Any] | Any], name: str) -> str | None:
    """Value of the first constraint called exactly ``name`` (dicts or objects with name/value)."""
    for c in constraints:
        c_name = c.get("name") if isinstance(c, Mapping) else getattr(c, "name", None)
        if c_name == name:
            value = c.get("value") if isinstance(c, Mapping) else getattr(c, "value", None)
            return "" if value is None else str(value)
    return None


def _strip_code(text: str) -> str:
    """Drop a leading ``[CODE] `` so wrapped causes do not carry two codes."""
    return re.sub(r"^\[[A-Z_]+\]\s*", "", text)


def check_gpu_operator_version(
    fetch: Fetch,
    constraints: Iterable[Mapping[str, Any] | Any],
    *,
    emit: Emit,
    parse_expression: Callable[[str], Any],
    evaluate: Callable[[Any, str], bool],
    refs: Iterable[Mapping[str, Any] | Any] = (),
) -> str:
    """``gpu-operator-version``: detect the running version, then compare it with the deployment
    phase constraint ``Deployment.gpu-operator.version``.

    ``parse_expression(expr)`` raises on an invalid expression; ``evaluate(parsed, actual)``
    returns the verdict or raises when it cannot compare (both from the constraint language
    module).  No constraint → :class:`CheckSkip` (never a pass).
    """
    version = detect_operator_version(fetch, preferred_namespace=operator_namespace(refs))
    emit(LINE_VERSION_DETECTED.format(version=version))
    expr = find_constraint(constraints, VERSION_CONSTRAINT)
    if expr is None:
        raise CheckSkip(MSG_VERSION_SKIP.format(version=version))
    try:
        parsed = parse_expression(expr)
    except Exception as err:
        raise CheckFailed(MSG_VERSION_BAD_EXPRESSION.format(err=_strip_code(_describe_error(err)))) from err
    try:
        ok = bool(evaluate(parsed, version))
    except Exception as err:
        raise CheckFailed(MSG_VERSION_EVAL_FAILED.format(err=_strip_code(_describe_error(err)))) from err
    emit(LINE_VERSION_CONSTRAINT.format(expr=expr, result="true" if ok else "false"))
    if not ok:
        raise CheckFailed(MSG_VERSION_UNSATISFIED.format(version=version, expr=expr))
    return MSG_VERSION_SATISFIED.format(version=version, expr=expr)


# ================================================================================================
# check-nvidia-smi (spec §5.4)
# ================================================================================================
GPU_RESOURCE = "nvidia.com/gpu"
DRA_GPU_DRIVER = "gpu.nvidia.com"
DRA_POLICY = "dra-resource-claim"
DEFAULT_NVIDIA_SMI_IMAGE = "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04"
VERIFY_POD_PREFIX = "nvidia-smi-verify-"
VERIFY_CONTAINER = "nvidia-smi-verify-container"
SUCCESS_SENTINEL = "GPU_CHECK_SUCCESS"
QUERY_BEGIN = "AICR_GPU_QUERY_BEGIN"
QUERY_END = "AICR_GPU_QUERY_END"
VERIFY_SCRIPT = (
    "set -e\n"
    f"echo {QUERY_BEGIN}\n"
    "nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader\n"
    f"echo {QUERY_END}\n"
    "nvidia-smi\n"
    f"echo {SUCCESS_SENTINEL}\n"
)
CLAIM_NAME_IN_POD = "gpu"

MSG_NODES_QUERY_FAILED = "[INTERNAL] failed to query for GPU nodes: {err}"
MSG_NO_GPU_NODES = "no GPU nodes found in the cluster"
MSG_ONLY_CORDONED = "no schedulable GPU nodes found in the cluster (cordoned: {nodes})"
MSG_SELECTOR_MATCHES_NONE = "[INVALID_REQUEST] --node-selector {selector} matches zero of {total} GPU nodes"
MSG_NODES_BUSY = "GPU nodes busy with existing workloads: {nodes}"
LINE_FOUND_NODES = "Found {count} GPU node(s):"
LINE_NODE = "  {node}"
LINE_NODE_CORDONED = "  {node}: cordoned (spec.unschedulable), not verified"
LINE_NODE_DRA_UNVERIFIED = (
    "  {node}: DRA-only GPU node (no nvidia.com/gpu allocatable), verified only under the "
    "dra-resource-claim policy"
)
LINE_NODES_AVAILABLE = "All {count} GPU node(s) available. Verifying..."
LINE_NODE_OK = "  {node}: OK ({gpus} GPU(s), driver {driver})"
LINE_NODE_FAILED = "  {node}: FAILED ({err})"
LINE_NODES_VALIDATED = "nodesValidated: {ok}/{total}"
MSG_CREATE_FAILED = "[INTERNAL] failed to create verification pod: {err}"
MSG_POD_FAILED = "[INTERNAL] pod failed on node {node}\n{debug}\nFirst 20 lines:\n{logs}: {cause}"
MSG_NO_DEBUG = "no additional debug info available"
MSG_LOG_VERIFICATION = "[INTERNAL] log verification failed for pod {ns}/{pod}: missing {missing}"
MSG_TOO_FEW_GPUS = (
    "[INTERNAL] nvidia-smi on node {node} shows {seen} GPU(s), but the node advertises {expected} ({source})"
)
MSG_VERIFY_FAILED = "[INTERNAL] GPU verification failed on {failed}/{total} nodes: {details}"
MSG_VERIFIED = "Successfully verified GPU on all {count} nodes"
MSG_VERIFIED_CORDONED = "; {count} cordoned GPU node(s) not verified: {nodes}"
# Either spelling: newer drivers print "KMD Version:" / "CUDA UMD Version:" (#1667).
LOG_MARKERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("NVIDIA-SMI", ("nvidia-smi",)),
    ("Driver Version:", ("driver version:", "kmd version:")),
    ("CUDA Version:", ("cuda version:", "cuda umd version:")),
    (SUCCESS_SENTINEL, (SUCCESS_SENTINEL.lower(),)),
)


@dataclass(frozen=True)
class GpuNode:
    """A node to verify: ``gpus`` = allocatable ``nvidia.com/gpu`` or DRA GPU devices."""

    name: str
    gpus: int
    mode: Literal["device-plugin", "dra"] = "device-plugin"
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GpuNodeInventory:
    nodes: tuple[GpuNode, ...]
    cordoned: tuple[str, ...] = ()
    dra_unverified: tuple[str, ...] = ()
    total_gpu_nodes: int = 0


def dra_gpu_devices(resource_slices: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """GPU devices per node from ``gpu.nvidia.com`` ResourceSlices (newest pool generation only;
    devices typed ``type: gpu`` when the driver types them, else every device)."""
    newest: dict[tuple[str, str], int] = {}
    slices = [s for s in resource_slices if (s.get("spec") or {}).get("driver") == DRA_GPU_DRIVER]
    for s in slices:
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (str(spec.get("nodeName") or ""), str(pool.get("name") or ""))
        newest[key] = max(newest.get(key, 0), int(pool.get("generation") or 0))
    counts: dict[str, int] = {}
    for s in slices:
        spec = s.get("spec") or {}
        node = str(spec.get("nodeName") or "")
        pool = spec.get("pool") or {}
        if not node or int(pool.get("generation") or 0) != newest[(node, str(pool.get("name") or ""))]:
            continue
        for device in spec.get("devices") or []:
            attrs = (
                (device or {}).get("attributes") or (device or {}).get("basic", {}).get("attributes") or {}
            )
            dtype = (
                (attrs.get("type") or {}).get("string") if isinstance(attrs.get("type"), Mapping) else None
            )
            if dtype is None or dtype == "gpu":
                counts[node] = counts.get(node, 0) + 1
    return counts


def _matches_selector(labels: Mapping[str, str], selector: Mapping[str, str] | None) -> bool:
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def discover_gpu_nodes(
    nodes: Sequence[Mapping[str, Any]],
    resource_slices: Sequence[Mapping[str, Any]] = (),
    *,
    policy: str = "device-plugin-extended-resource",
    node_selector: Mapping[str, str] | None = None,
) -> GpuNodeInventory:
    """GPU nodes to verify.

    A node is a GPU node when it has ``nvidia.com/gpu`` allocatable (device-plugin mode) or
    ``gpu.nvidia.com`` ResourceSlice devices (DRA-only).  ``--node-selector`` narrows the set
    (zero matches raises :class:`CheckFailed`).  Cordoned GPU nodes are returned in
    ``cordoned`` (reported, not verified); DRA-only nodes are verified only under the
    ``dra-resource-claim`` policy, else returned in ``dra_unverified``.
    """
    dra = dra_gpu_devices(resource_slices)
    gpu_nodes: list[tuple[Mapping[str, Any], GpuNode]] = []
    for node in nodes:
        meta = node.get("metadata") or {}
        name = str(meta.get("name") or "")
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        allocatable = gpu_count((node.get("status") or {}).get("allocatable"))
        if allocatable > 0:
            gpu_nodes.append((node, GpuNode(name, allocatable, "device-plugin", labels)))
        elif dra.get(name, 0) > 0:
            gpu_nodes.append((node, GpuNode(name, dra[name], "dra", labels)))
    total = len(gpu_nodes)
    if node_selector:
        selected = [(n, g) for n, g in gpu_nodes if _matches_selector(g.labels, node_selector)]
        if gpu_nodes and not selected:
            text = ",".join(f"{k}={v}" for k, v in node_selector.items())
            raise CheckFailed(MSG_SELECTOR_MATCHES_NONE.format(selector=text, total=total))
        gpu_nodes = selected
    verify: list[GpuNode] = []
    cordoned: list[str] = []
    dra_unverified: list[str] = []
    for node, gpu in gpu_nodes:
        if (node.get("spec") or {}).get("unschedulable") is True:
            cordoned.append(gpu.name)
        elif gpu.mode == "dra" and policy != DRA_POLICY:
            dra_unverified.append(gpu.name)
        else:
            verify.append(gpu)
    return GpuNodeInventory(
        nodes=tuple(sorted(verify, key=lambda g: g.name)),
        cordoned=tuple(sorted(cordoned)),
        dra_unverified=tuple(sorted(dra_unverified)),
        total_gpu_nodes=total,
    )


def _claim_names(pod: Mapping[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    by_pod_name: dict[str, str] = {}
    for st in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if st.get("resourceClaimName"):
            by_pod_name[str(st.get("name"))] = str(st["resourceClaimName"])
    names = []
    for rc in spec.get("resourceClaims") or []:
        claim = rc.get("resourceClaimName") or by_pod_name.get(str(rc.get("name")))
        names.append(str(claim) if claim else f"<unresolved {rc.get('name')}>")
    return names


def _claim_uses_gpu(claim: Mapping[str, Any]) -> bool:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    if results:
        return any(r.get("driver") == DRA_GPU_DRIVER for r in results)
    for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        exactly = req.get("exactly") or req
        if exactly.get("deviceClassName") == DRA_GPU_DRIVER:
            return True
    return False


def _gpu_quantity(container: Mapping[str, Any]) -> int:
    res = container.get("resources") or {}
    return max(gpu_count(res.get("limits")), gpu_count(res.get("requests")))


def gpu_busy_reasons(
    node: str,
    pods: Sequence[Mapping[str, Any]] | None,
    resource_claims: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """Why ``node``'s GPUs are in use (empty = free).

    Counts every non-terminal pod on the node with ``nvidia.com/gpu`` on any container,
    init container included, and pods holding a ResourceClaim for ``gpu.nvidia.com`` devices
    (an unresolvable claim counts as busy).  ``pods=None`` (the list failed) is busy.
    """
    if pods is None:
        return ["could not list pods on the node"]
    claims = {
        ((c.get("metadata") or {}).get("namespace"), (c.get("metadata") or {}).get("name")): c
        for c in resource_claims
    }
    reasons: list[str] = []
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("nodeName") not in (None, node):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        meta = pod.get("metadata") or {}
        ref = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
        if any(_gpu_quantity(c) > 0 for c in containers):
            reasons.append(f"{ref} requests {GPU_RESOURCE}")
            continue
        for claim_name in _claim_names(pod):
            claim = claims.get((meta.get("namespace"), claim_name))
            if claim is None or _claim_uses_gpu(claim):
                reasons.append(f"{ref} holds ResourceClaim {claim_name}")
                break
    return reasons


def plan_nvidia_smi(
    inventory: GpuNodeInventory,
    pods_by_node: Mapping[str, Sequence[Mapping[str, Any]] | None],
    resource_claims: Sequence[Mapping[str, Any]] = (),
    *,
    emit: Emit,
) -> list[GpuNode]:
    """Report the node set, run the busy test, and return the nodes to verify.

    Raises :class:`CheckSkip` when there is nothing to verify or any node is busy.
    """
    if not inventory.nodes:
        for node in inventory.cordoned:
            emit(LINE_NODE_CORDONED.format(node=node))
        for node in inventory.dra_unverified:
            emit(LINE_NODE_DRA_UNVERIFIED.format(node=node))
        if inventory.cordoned:
            raise CheckSkip(MSG_ONLY_CORDONED.format(nodes=_go_list(inventory.cordoned)))
        raise CheckSkip(MSG_NO_GPU_NODES)
    emit(LINE_FOUND_NODES.format(count=len(inventory.nodes)))
    for gpu in inventory.nodes:
        emit(LINE_NODE.format(node=gpu.name))
    for node in inventory.cordoned:
        emit(LINE_NODE_CORDONED.format(node=node))
    for node in inventory.dra_unverified:
        emit(LINE_NODE_DRA_UNVERIFIED.format(node=node))
    busy = [
        g.name for g in inventory.nodes if gpu_busy_reasons(g.name, pods_by_node.get(g.name), resource_claims)
    ]
    if busy:
        raise CheckSkip(MSG_NODES_BUSY.format(nodes=_go_list(busy)))
    emit(LINE_NODES_AVAILABLE.format(count=len(inventory.nodes)))
    return list(inventory.nodes)


_DNS_INVALID = re.compile(r"[^a-z0-9-]+")


def verify_pod_name(node: str, run_id: str) -> str:
    """``nvidia-smi-verify-<node>-<run_id>``, DNS-1123, at most 63 characters (long node names
    are cut and disambiguated with a hash)."""
    suffix = _DNS_INVALID.sub("-", node.lower().replace(".", "-")).strip("-")
    run = _DNS_INVALID.sub("-", run_id.lower()).strip("-")
    name = f"{VERIFY_POD_PREFIX}{suffix}-{run}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(node.encode()).hexdigest()[:8]
    room = 63 - len(VERIFY_POD_PREFIX) - len(run) - len(digest) - 2
    return f"{VERIFY_POD_PREFIX}{suffix[: max(room, 1)].rstrip('-')}-{digest}-{run}"[:63].rstrip("-")


def _toleration_dicts(tolerations: Sequence[Mapping[str, Any] | Any] | None) -> list[dict[str, Any]]:
    if tolerations is None:
        return [{"operator": "Exists"}]
    out: list[dict[str, Any]] = []
    for t in tolerations:
        to_k8s = getattr(t, "to_k8s", None)
        out.append(dict(to_k8s()) if callable(to_k8s) else dict(t))
    return out


def build_verify_pod(
    node: GpuNode,
    *,
    name: str,
    namespace: str,
    image: str = DEFAULT_NVIDIA_SMI_IMAGE,
    labels: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any] | Any] | None = None,
    node_selector: Mapping[str, str] | None = None,
    claim_name: str | None = None,
    active_deadline_seconds: int = 600,
) -> dict[str, Any]:
    """The verification Pod for one node.

    Device-plugin nodes: pinned with ``nodeName``, requesting every allocatable GPU so
    nvidia-smi can show them all.  DRA nodes (``node.mode == "dra"``, ``claim_name`` required):
    the scheduler must allocate the claim, so the pod is pinned with a ``kubernetes.io/hostname``
    node selector instead.  ``tolerations=None`` tolerates everything (``--toleration`` replaces
    it); ``node_selector`` (``--node-selector``) is added to the pod's selector.
    """
    container: dict[str, Any] = {
        "name": VERIFY_CONTAINER,
        "image": image,
        "command": ["/bin/sh", "-c"],
        "args": [VERIFY_SCRIPT],
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
    }
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "activeDeadlineSeconds": active_deadline_seconds,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "tolerations": _toleration_dicts(tolerations),
    }
    selector = dict(node_selector or {})
    if node.mode == "dra":
        if not claim_name:
            raise ValueError("a DRA verification pod needs claim_name")
        container["resources"] = {"claims": [{"name": CLAIM_NAME_IN_POD}]}
        spec["resourceClaims"] = [{"name": CLAIM_NAME_IN_POD, "resourceClaimName": claim_name}]
        selector["kubernetes.io/hostname"] = node.name
    else:
        count = str(node.gpus)
        container["resources"] = {"limits": {GPU_RESOURCE: count}, "requests": {GPU_RESOURCE: count}}
        spec["nodeName"] = node.name
    if selector:
        spec["nodeSelector"] = selector
    all_labels = {
        "app.kubernetes.io/name": "nvidia-smi-verify",
        "app.kubernetes.io/managed-by": "aicr-pytest",
        "source": "e2e-tests",
        **dict(labels or {}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": all_labels,
            "annotations": {"aicr.run/node": node.name},
        },
        "spec": spec,
    }


def build_verify_claim(
    node: GpuNode,
    *,
    name: str,
    namespace: str,
    api_version: str = "resource.k8s.io/v1",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ResourceClaim for all of a DRA node's GPUs (``ExactCount``; ``v1beta1`` puts the
    request fields inline, ``v1``/``v1beta2`` under ``exactly``)."""
    request: dict[str, Any] = {
        "deviceClassName": DRA_GPU_DRIVER,
        "allocationMode": "ExactCount",
        "count": node.gpus,
    }
    if api_version.endswith("/v1beta1"):
        req = {"name": CLAIM_NAME_IN_POD, **request}
    else:
        req = {"name": CLAIM_NAME_IN_POD, "exactly": request}
    return {
        "apiVersion": api_version,
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "aicr-pytest", **dict(labels or {})},
        },
        "spec": {"devices": {"requests": [req]}},
    }


@dataclass(frozen=True)
class NvidiaSmiReport:
    gpus: tuple[tuple[str, str, str], ...]  # (index, name, driver_version)

    @property
    def count(self) -> int:
        return len(self.gpus)

    @property
    def driver_versions(self) -> tuple[str, ...]:
        return tuple(sorted({g[2] for g in self.gpus}))


def parse_nvidia_smi_output(logs: str) -> tuple[NvidiaSmiReport, list[str]]:
    """Parse the verify container's output: the CSV block between the query markers, and the
    list of missing required markers (empty = complete)."""
    lower = logs.lower()
    missing = [label for label, spellings in LOG_MARKERS if not any(s in lower for s in spellings)]
    rows: list[tuple[str, str, str]] = []
    begin = logs.find(QUERY_BEGIN)
    end = logs.find(QUERY_END, begin + 1) if begin >= 0 else -1
    if begin < 0 or end < 0:
        missing.append("GPU query block")
    else:
        for line in logs[begin + len(QUERY_BEGIN) : end].splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 3 and parts[0]:
                rows.append((parts[0], ", ".join(parts[1:-1]), parts[-1]))
    return NvidiaSmiReport(tuple(rows)), missing


@dataclass(frozen=True)
class NodeResult:
    node: str
    ok: bool
    error: str | None = None
    gpus: int | None = None
    driver_version: str | None = None
    inconclusive: bool = False  # pod vanished / wait timed out: CTRF "other" if nothing else failed


def verify_node_output(node: GpuNode, *, namespace: str, pod_name: str, logs: str) -> NodeResult:
    """Verdict for one node from its pod's logs: markers present, and at least as many GPUs
    as the node advertises."""
    report, missing = parse_nvidia_smi_output(logs)
    if missing:
        return NodeResult(
            node.name,
            False,
            MSG_LOG_VERIFICATION.format(ns=namespace, pod=pod_name, missing=_go_list(missing)),
        )
    driver = ",".join(report.driver_versions)
    if report.count < node.gpus:
        source = (
            f"allocatable {GPU_RESOURCE}"
            if node.mode == "device-plugin"
            else f"{DRA_GPU_DRIVER} ResourceSlice devices"
        )
        return NodeResult(
            node.name,
            False,
            MSG_TOO_FEW_GPUS.format(node=node.name, seen=report.count, expected=node.gpus, source=source),
            gpus=report.count,
            driver_version=driver,
        )
    return NodeResult(node.name, True, gpus=report.count, driver_version=driver)


def format_pod_failure(
    node: str,
    pod: Mapping[str, Any] | None,
    events: Sequence[Mapping[str, Any]],
    logs: str,
    cause: str,
) -> str:
    """``[INTERNAL] pod failed on node <n>\\n<debug>\\nFirst 20 lines:\\n<logs>: <cause>``."""
    debug: list[str] = []
    status = (pod or {}).get("status") or {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            state = cs.get("state") or {}
            name = cs.get("name", "?")
            if state.get("waiting"):
                w = state["waiting"]
                debug.append(f"Container {name}: waiting ({w.get('reason', '')}: {w.get('message', '')})")
            elif state.get("terminated"):
                t = state["terminated"]
                debug.append(
                    f"Container {name}: terminated (reason={t.get('reason', '')} "
                    f"exitCode={t.get('exitCode', '')} message={t.get('message', '')})"
                )
    for ev in events:
        if ev.get("type", "Warning") == "Warning":
            debug.append(f"Event: {ev.get('reason', '')} — {ev.get('message', '')}")
    first = "\n".join(logs.splitlines()[:20])
    return MSG_POD_FAILED.format(node=node, debug="\n".join(debug) or MSG_NO_DEBUG, logs=first, cause=cause)


def summarize_nvidia_smi(
    results: Sequence[NodeResult],
    *,
    emit: Emit,
    cordoned: Sequence[str] = (),
) -> str:
    """Emit per-node lines and decide.  Raises :class:`CheckFailed` when any node failed,
    :class:`Inconclusive` when the only problems were inconclusive (pod vanished, timeout)."""
    ordered = sorted(results, key=lambda r: r.node)
    for r in ordered:
        if r.ok:
            emit(LINE_NODE_OK.format(node=r.node, gpus=r.gpus, driver=r.driver_version or "unknown"))
        else:
            emit(LINE_NODE_FAILED.format(node=r.node, err=r.error))
    bad = [r for r in ordered if not r.ok]
    emit(LINE_NODES_VALIDATED.format(ok=len(ordered) - len(bad), total=len(ordered) + len(cordoned)))
    if bad:
        details = _go_list(f"{r.node} ({r.error})" for r in bad)
        message = MSG_VERIFY_FAILED.format(failed=len(bad), total=len(ordered), details=details)
        if all(r.inconclusive for r in bad):
            raise Inconclusive(message)
        raise CheckFailed(message)
    message = MSG_VERIFIED.format(count=len(ordered))
    emit(message)
    if cordoned:
        message += MSG_VERIFIED_CORDONED.format(count=len(cordoned), nodes=_go_list(cordoned))
    return message
