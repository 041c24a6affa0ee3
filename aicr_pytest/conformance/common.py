"""What the conformance checks share (conformance spec §1.5, §1.7): AICR's error text, bounded reads
and waits, pod helpers, the GPU work budget.

Outcomes. A check function raises

* :class:`ConformanceFailure` (an ``AssertionError``: CTRF ``failed``) when the cluster fails the
  check; ``str()`` is AICR's ``[CODE] message: cause`` text;
* :class:`~aicr_pytest.core.errors.Inconclusive` (CTRF ``other``) when it could not reach a verdict:
  an API error other than the NotFound a check expects (RBAC denial, transport, throttling past the
  retry budget), a timeout waiting for a workload, a pod deleted under it;
* :class:`~aicr_pytest.core.errors.CheckSkip` when the check does not apply.

AICR fails the check on every error; aicr-pytest keeps AICR's text but reports an unanswered
question as ``other``, never as a verdict on the cluster (fail closed: ``other`` is failing).

Waits are watch-based (:func:`aicr_pytest.kube.wait.observe`) on the injected clock, so on the fake
cluster they run in virtual time; AICR's 500 ms polls become watches with the same bounds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.core.clock import Clock
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.core.goduration import format_go_duration, parse_go_duration
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import AccessDenied, ApiError, ApiUnreachable, NotFound, WaitTimeout
from aicr_pytest.kube.run import RunScope
from aicr_pytest.kube.wait import observe

JSON = dict[str, Any]
Emit = Callable[[str], None]

# --- AICR's timeouts and intervals (pkg/defaults, spec §1.5), seconds ------------------------------
POD_POLL_INTERVAL: Final = 0.5
K8S_POD_READY_TIMEOUT: Final = 120.0
K8S_CLEANUP_TIMEOUT: Final = 30.0
DRA_TEST_POD_TIMEOUT: Final = 300.0
GANG_TEST_POD_TIMEOUT: Final = 300.0
CO_SCHEDULE_WINDOW: Final = 30.0
COLLECTOR_K8S_TIMEOUT: Final = 60.0
RESOURCE_VERIFICATION_TIMEOUT: Final = 10.0
SA_PROVISION_TIMEOUT: Final = 15.0
#: GPU checks: what the deadline must leave for cleanup (30 s cleanup + 60 s skew/flush) and work
GPU_CLEANUP_RESERVE: Final = 90.0
GPU_MIN_WORK: Final = 30.0

#: Tolerations of inner test pods when ``--toleration`` is not given: tolerate every taint.
TOLERATE_ALL: Final[tuple[dict[str, str], ...]] = ({"operator": "Exists"},)

#: Container waiting reasons that mean a pod will not make progress by itself.
STUCK_REASONS: Final = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CrashLoopBackOff")

MSG_WORK_BUDGET = (
    "[TIMEOUT] check timeout too short to guarantee cleanup: {remaining} remain until the deadline but at "
    "least {needed} is needed ({work} minimum work + {reserve} cleanup reserve) — no test resources were "
    "created; raise the check's catalog timeout"
)
MSG_SA_TIMEOUT = (
    "[TIMEOUT] namespace {ns} default ServiceAccount was not provisioned within {timeout} — pod creation "
    "kept failing SA admission: {cause}"
)
SA_NOT_FOUND_TEXT: Final = 'serviceaccount "default" not found'
#: cap on a container log read into evidence (the evidence copy is capped again, per line)
LOG_LIMIT_BYTES: Final = 1 << 20


class ConformanceFailure(AssertionError):
    """The cluster failed the check; ``str()`` is AICR's ``[CODE] …`` message (CTRF ``failed``)."""


# --- AICR's error strings ----------------------------------------------------------------------------


def one_line(text: str) -> str:
    """Whitespace (newlines included) collapsed to single spaces."""
    return " ".join(str(text).split())


def describe_cause(cause: BaseException | str) -> str:
    """The ``cause`` part of ``[CODE] msg: cause``: the error's one-line text (its type when empty)."""
    if isinstance(cause, BaseException):
        return one_line(str(cause)) or type(cause).__name__
    return one_line(cause)


def aicr_error(code: str, message: str, cause: BaseException | str | None = None) -> str:
    """AICR's structured error text: ``[CODE] message`` or ``[CODE] message: cause``."""
    text = f"[{code}] {message}"
    if cause is not None and (not isinstance(cause, str) or cause):
        text += f": {describe_cause(cause)}"
    return text


def is_structured(text: str) -> bool:
    """Whether ``text`` already reads ``[CODE] …`` (AICR's ``PropagateOrWrap`` keeps such errors)."""
    head, sep, _ = text.partition("] ")
    return bool(sep) and head.startswith("[") and head[1:].replace("_", "").isalpha() and head[1:].isupper()


def failure(code: str, message: str, cause: BaseException | str | None = None) -> ConformanceFailure:
    return ConformanceFailure(aicr_error(code, message, cause))


def inconclusive(code: str, message: str, cause: BaseException | str | None = None) -> Inconclusive:
    return Inconclusive(aicr_error(code, message, cause))


def is_timeout(err: BaseException) -> bool:
    """A transport timeout, a 504, or a wait that ran out (AICR's "timeout forms")."""
    if isinstance(err, WaitTimeout | TimeoutError):
        return True
    if isinstance(err, ApiError) and err.status == 504:
        return True
    return isinstance(err, ApiUnreachable) and "timed out" in str(err).lower()


def status_of(err: ApiError) -> tuple[int, str, str]:
    """(HTTP code, ``Status`` reason, ``Status`` message) of an API error, from the response body."""
    reason, message = err.reason, ""
    try:
        body = json.loads(err.body) if err.body else {}
    except ValueError:
        body = {}
    if isinstance(body, dict):
        reason = str(body.get("reason") or reason)
        message = str(body.get("message") or "")
    code = err.status
    if isinstance(body, dict) and isinstance(body.get("code"), int):
        code = int(body["code"])
    return code, reason, message or one_line(str(err))


def read_error(err: BaseException, subject: str) -> BaseException:
    """AICR's classified GET error for ``subject`` (``deployment <ns>/<name>``…): NotFound is a
    failure (``[NOT_FOUND] <subject> not found: …``); a timeout or any other error is ``other``."""
    if isinstance(err, NotFound):
        return failure("NOT_FOUND", f"{subject} not found", err)
    if is_timeout(err):
        return inconclusive("TIMEOUT", f"timed out reading {subject}", err)
    return inconclusive("INTERNAL", f"failed to read {subject}", err)


def read_object(
    cluster: Cluster, api_version: str, kind: str, name: str, namespace: str | None, subject: str
) -> JSON:
    """GET one object; errors classified by :func:`read_error`."""
    try:
        return cluster.get(api_version, kind, name, namespace)
    except ApiError as err:
        raise read_error(err, subject) from err


def list_objects(
    cluster: Cluster,
    api_version: str,
    kind: str,
    namespace: str | None,
    message: str,
    *,
    label_selector: str | None = None,
    not_found_empty: bool = False,
) -> list[JSON]:
    """Every matching object; an API error is ``other`` with ``[INTERNAL] <message>: <cause>``
    (``not_found_empty``: a 404 — namespace or resource not served — reads as no objects)."""
    try:
        return list(cluster.list(api_version, kind, namespace, label_selector=label_selector))
    except NotFound as err:
        if not_found_empty:
            return []
        raise inconclusive("INTERNAL", message, err) from err
    except ApiError as err:
        raise inconclusive("INTERNAL", message, err) from err


# --- small readers ---------------------------------------------------------------------------------


def as_int(value: object) -> int:
    """An integer field; absent or malformed reads as 0 (counts then fail closed)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return 0


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("status")
    return s if isinstance(s, Mapping) else {}


def first_image(obj: Mapping[str, Any]) -> str:
    """The first container image of a workload's pod template (``""`` when there is none)."""
    containers = spec(spec(obj).get("template") or {}).get("containers") or []
    if containers and isinstance(containers[0], Mapping):
        return str(containers[0].get("image") or "")
    return ""


# --- workloads (§1.7) --------------------------------------------------------------------------------


def deployment_replicas(dep: Mapping[str, Any]) -> tuple[int, int]:
    """(available, expected): ``status.availableReplicas`` and ``spec.replicas`` (absent → 1)."""
    replicas = spec(dep).get("replicas")
    expected = 1 if replicas is None else as_int(replicas)
    return as_int(status(dep).get("availableReplicas")), expected


def deployment_available(cluster: Cluster, namespace: str, name: str) -> JSON:
    """AICR's instant availability: GET (classified) and ``availableReplicas >= 1`` (not all)."""
    dep = read_object(cluster, "apps/v1", "Deployment", name, namespace, f"deployment {namespace}/{name}")
    available, expected = deployment_replicas(dep)
    if available < 1:
        raise failure(
            "INTERNAL", f"deployment {namespace}/{name} not available: {available}/{expected} replicas"
        )
    return dep


def wait_deployment_available(
    cluster: Cluster,
    namespace: str,
    name: str,
    timeout: float,
    clock: Clock,
    *,
    remaining: float | None = None,
) -> JSON:
    """AICR's bounded availability wait (``availableReplicas >= 1`` within ``timeout``).

    A Deployment that does not exist yet is waited for. On expiry: never seen ⇒ ``[NOT_FOUND]
    deployment <ns>/<n> not found after <T>``; seen ⇒ ``[INTERNAL] … not available after <T>: a/e
    replicas`` (failures). When the check's own deadline (``remaining``) cuts the wait short it is
    ``other``: ``[TIMEOUT] waiting for deployment <ns>/<n> canceled: …``. An API error is ``other``
    (``[INTERNAL] failed to get deployment <ns>/<n>: …``).
    """
    bound = timeout if remaining is None else max(0.0, min(timeout, remaining))
    key = f"{namespace}/{name}"
    seen: list[JSON] = []

    def check(view: dict[str, JSON]) -> JSON | None:
        dep = view.get(key)
        if dep is None:
            return None
        seen[:] = [dep]
        return dep if deployment_replicas(dep)[0] >= 1 else None

    def describe(view: dict[str, JSON]) -> str:
        dep = view.get(key)
        if dep is None:
            return "not found"
        available, expected = deployment_replicas(dep)
        return f"{available}/{expected} replicas available"

    what = f"deployment {key}"
    try:
        return observe(
            cluster,
            "apps/v1",
            "deployments",
            namespace,
            check,
            timeout=bound,
            clock=clock,
            what=what,
            describe=describe,
            field_selector=f"metadata.name={name}",
        )
    except WaitTimeout as err:
        if bound < timeout:
            raise inconclusive("TIMEOUT", f"waiting for {what} canceled", "check deadline reached") from err
        after = format_go_duration(timeout)
        if not seen:
            raise failure("NOT_FOUND", f"{what} not found after {after}") from err
        available, expected = deployment_replicas(seen[0])
        raise failure(
            "INTERNAL", f"{what} not available after {after}: {available}/{expected} replicas"
        ) from err
    except ApiError as err:
        raise inconclusive("INTERNAL", f"failed to get {what}", err) from err


def daemonset_ready(cluster: Cluster, namespace: str, name: str) -> JSON:
    """AICR's DaemonSet readiness: GET (classified) and ``numberReady >= 1``."""
    ds = read_object(cluster, "apps/v1", "DaemonSet", name, namespace, f"daemonset {namespace}/{name}")
    ready = as_int(status(ds).get("numberReady"))
    desired = as_int(status(ds).get("desiredNumberScheduled"))
    if ready < 1:
        raise failure("INTERNAL", f"daemonset {namespace}/{name} not ready: {ready}/{desired} pods")
    return ds


@dataclass(frozen=True)
class Condition:
    """One ``status.conditions`` entry; empty reason/message read ``unknown`` (AICR)."""

    type: str
    status: str
    reason: str
    message: str


def find_condition(obj: Mapping[str, Any], ctype: str) -> Condition:
    """The condition ``ctype`` of an object (§1.7); missing list or type are failures."""
    conds = status(obj).get("conditions")
    if not isinstance(conds, list):
        raise failure("INTERNAL", "status.conditions not found")
    for cond in conds:
        if isinstance(cond, Mapping) and cond.get("type") == ctype:
            return Condition(
                ctype,
                str(cond.get("status") or ""),
                str(cond.get("reason") or "") or "unknown",
                str(cond.get("message") or "") or "unknown",
            )
    raise failure("NOT_FOUND", f"condition {ctype} not found")


# --- pods --------------------------------------------------------------------------------------------


def inner_tolerations(tolerations: Sequence[Mapping[str, str]] | None) -> list[dict[str, str]]:
    """``--toleration`` (``AICR_TOLERATIONS``) for inner test pods, else tolerate everything."""
    return [dict(t) for t in (TOLERATE_ALL if tolerations is None else tolerations)]


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str(status(pod).get("phase") or "Pending")


def pod_stuck_reason(pod: Mapping[str, Any], what: str) -> str | None:
    """Why ``pod`` will not progress (§1.7), as the failure text, or ``None``.

    A container or init container waiting in :data:`STUCK_REASONS`, or ``PodScheduled=False`` with
    reason ``Unschedulable`` (AICR fails at once, even when it might be transient).
    """
    st = status(pod)
    for key, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        for cs in st.get(key) or []:
            waiting = ((cs or {}).get("state") or {}).get("waiting") or {}
            reason = str(waiting.get("reason") or "")
            if reason in STUCK_REASONS:
                where = "init container, image" if init else "image"
                detail = f"{waiting.get('message') or ''} ({where}: {cs.get('image') or ''})"
                return aicr_error("INTERNAL", f"{what} stuck: {reason}: {detail}")
    for cond in st.get("conditions") or []:
        if (
            isinstance(cond, Mapping)
            and cond.get("type") == "PodScheduled"
            and cond.get("status") == "False"
            and cond.get("reason") == "Unschedulable"
        ):
            return aicr_error("INTERNAL", f"{what} stuck: Unschedulable: {cond.get('message') or ''}")
    return None


def waiting_summary(pod: Mapping[str, Any] | None) -> str:
    """``<reason>: <message>`` of the first waiting container, else ``none`` (timeout messages)."""
    for cs in status(pod or {}).get("containerStatuses") or []:
        waiting = ((cs or {}).get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return f"{waiting.get('reason')}: {waiting.get('message') or ''}".rstrip(": ")
    return "none"


def wait_pod_terminal(
    cluster: Cluster,
    namespace: str,
    name: str,
    what: str,
    timeout: float,
    clock: Clock,
) -> JSON:
    """AICR's watch-based terminal-pod wait (§1.7): the pod once it is Succeeded or Failed.

    A pod not created yet is waited for; one that was seen and is deleted is ``other`` (``[INTERNAL]
    <what> was deleted while waiting for completion``); a stuck pod (:func:`pod_stuck_reason`) fails;
    the bound running out is ``other`` (``[TIMEOUT] <what> did not complete in time (last
    phase=<p>, status=<waiting reason: msg|none>): …``); a watch that cannot be set up is ``other``
    (``[INTERNAL] failed to watch <what>: …``).
    """
    key = f"{namespace}/{name}"
    last: list[JSON] = []

    def check(view: dict[str, JSON]) -> JSON | None:
        pod = view.get(key)
        if pod is None:
            if last:
                raise inconclusive("INTERNAL", f"{what} was deleted while waiting for completion")
            return None
        last[:] = [pod]
        if pod_phase(pod) in ("Succeeded", "Failed"):
            return pod
        stuck = pod_stuck_reason(pod, what)
        if stuck is not None:
            raise ConformanceFailure(stuck)
        return None

    def describe(view: dict[str, JSON]) -> str:
        return pod_phase(view.get(key) or {})

    try:
        return observe(
            cluster,
            "v1",
            "pods",
            namespace,
            check,
            timeout=max(0.0, timeout),
            clock=clock,
            what=what,
            describe=describe,
            field_selector=f"metadata.name={name}",
        )
    except WaitTimeout as err:
        pod = last[0] if last else None
        phase = pod_phase(pod) if pod is not None else "unknown"
        raise inconclusive(
            "TIMEOUT",
            f"{what} did not complete in time (last phase={phase}, status={waiting_summary(pod)})",
            f"no terminal phase within {format_go_duration(timeout)}",
        ) from err
    except ApiError as err:
        raise inconclusive("INTERNAL", f"failed to watch {what}", err) from err


def wait_pod_bound(
    cluster: Cluster,
    namespace: str,
    name: str,
    what: str,
    timeout: float,
    clock: Clock,
) -> JSON:
    """The pod once the scheduler has bound it (``spec.nodeName``) or it ended; the same failure and
    ``other`` rules as :func:`wait_pod_terminal` (stuck fails, deleted/timeout/watch errors are ``other``)."""
    key = f"{namespace}/{name}"
    last: list[JSON] = []

    def check(view: dict[str, JSON]) -> JSON | None:
        pod = view.get(key)
        if pod is None:
            if last:
                raise inconclusive("INTERNAL", f"{what} was deleted while waiting for it to be scheduled")
            return None
        last[:] = [pod]
        if spec(pod).get("nodeName") or pod_phase(pod) in ("Succeeded", "Failed"):
            return pod
        stuck = pod_stuck_reason(pod, what)
        if stuck is not None:
            raise ConformanceFailure(stuck)
        return None

    try:
        return observe(
            cluster,
            "v1",
            "pods",
            namespace,
            check,
            timeout=max(0.0, timeout),
            clock=clock,
            what=what,
            describe=lambda view: pod_phase(view.get(key) or {}),
            field_selector=f"metadata.name={name}",
        )
    except WaitTimeout as err:
        pod = last[0] if last else None
        raise inconclusive(
            "TIMEOUT",
            f"{what} was not scheduled in time "
            f"(last phase={pod_phase(pod or {})}, status={waiting_summary(pod)})",
            f"no node within {format_go_duration(timeout)}",
        ) from err
    except ApiError as err:
        raise inconclusive("INTERNAL", f"failed to watch {what}", err) from err


def create_pod_when_sa_ready(
    run: RunScope, pod: Mapping[str, Any], clock: Clock, *, timeout: float = SA_PROVISION_TIMEOUT
) -> JSON:
    """Create ``pod`` through the run scope, retrying every 500 ms for up to ``timeout`` while
    admission refuses it because the fresh namespace's ``default`` ServiceAccount does not exist yet.
    Any other error propagates unchanged."""
    namespace = str(meta(pod).get("namespace") or run.namespace)
    deadline = clock.time() + timeout
    while True:
        try:
            return run.create(pod)
        except AccessDenied as err:
            text = status_of(err)[2]
            if SA_NOT_FOUND_TEXT not in text and SA_NOT_FOUND_TEXT not in str(err):
                raise
            if clock.time() + POD_POLL_INTERVAL > deadline:
                raise Inconclusive(
                    MSG_SA_TIMEOUT.format(ns=namespace, timeout=format_go_duration(timeout), cause=text)
                ) from err
            clock.sleep(POD_POLL_INTERVAL)


def pod_log(cluster: Cluster, namespace: str, name: str, container: str) -> str:
    """One container's log, or ``failed to read logs: <error>`` (AICR records it and goes on)."""
    from aicr_pytest.kube.logs import read_log

    try:
        return read_log(cluster, namespace, name, container, limit_bytes=LOG_LIMIT_BYTES)
    except (ApiError, Inconclusive) as err:
        return f"failed to read logs: {describe_cause(err)}"


# --- the GPU work budget (§1.7) --------------------------------------------------------------------


def gpu_work_budget(remaining: float | None, fallback: float) -> float:
    """Seconds the GPU checks may spend before cleanup: ``remaining - 90 s``; at least 30 s must be
    left, else ``other`` before anything is created. ``remaining`` ``None`` (no deadline) → ``fallback``."""
    if remaining is None:
        return fallback
    budget = remaining - GPU_CLEANUP_RESERVE
    if budget < GPU_MIN_WORK:
        raise Inconclusive(
            MSG_WORK_BUDGET.format(
                remaining=format_go_duration(max(0.0, remaining)),
                needed=format_go_duration(GPU_MIN_WORK + GPU_CLEANUP_RESERVE),
                work=format_go_duration(GPU_MIN_WORK),
                reserve=format_go_duration(GPU_CLEANUP_RESERVE),
            )
        )
    return budget


__all__ = [
    "COLLECTOR_K8S_TIMEOUT",
    "CO_SCHEDULE_WINDOW",
    "DRA_TEST_POD_TIMEOUT",
    "GANG_TEST_POD_TIMEOUT",
    "GPU_CLEANUP_RESERVE",
    "GPU_MIN_WORK",
    "JSON",
    "K8S_CLEANUP_TIMEOUT",
    "K8S_POD_READY_TIMEOUT",
    "MSG_SA_TIMEOUT",
    "MSG_WORK_BUDGET",
    "POD_POLL_INTERVAL",
    "RESOURCE_VERIFICATION_TIMEOUT",
    "SA_PROVISION_TIMEOUT",
    "STUCK_REASONS",
    "TOLERATE_ALL",
    "CheckSkip",
    "Condition",
    "ConformanceFailure",
    "Emit",
    "Inconclusive",
    "aicr_error",
    "as_int",
    "create_pod_when_sa_ready",
    "daemonset_ready",
    "deployment_available",
    "deployment_replicas",
    "describe_cause",
    "failure",
    "find_condition",
    "first_image",
    "format_go_duration",
    "gpu_work_budget",
    "inconclusive",
    "inner_tolerations",
    "is_structured",
    "is_timeout",
    "list_objects",
    "meta",
    "one_line",
    "parse_go_duration",
    "pod_log",
    "pod_phase",
    "pod_stuck_reason",
    "read_error",
    "read_object",
    "spec",
    "status",
    "status_of",
    "wait_deployment_available",
    "wait_pod_bound",
    "wait_pod_terminal",
    "waiting_summary",
]
