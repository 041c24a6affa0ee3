"""Inner test pods: tolerations, phase and stuck detection, watch-based waits, creation past
ServiceAccount admission, container logs, proof of execution (:func:`prove_ran`: a check that
passes on what its pods did calls it before it passes).

Waits are watch-based (:func:`aicr_pytest.kube.wait.observe`) on the injected clock, so on the fake
cluster they run in virtual time; AICR's 500 ms polls become watches with the same bounds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from aicr_pytest.conformance.defaults import POD_POLL_INTERVAL, SA_PROVISION_TIMEOUT
from aicr_pytest.conformance.failures import (
    JSON,
    ConformanceFailure,
    aicr_error,
    describe_cause,
    inconclusive,
    status_of,
)
from aicr_pytest.conformance.fields import meta, spec, status
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.core.goduration import format_go_duration
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import AccessDenied, ApiError, WaitTimeout
from aicr_pytest.kube.run import RunScope
from aicr_pytest.kube.wait import observe

__all__ = [
    "LOG_LIMIT_BYTES",
    "MSG_SA_TIMEOUT",
    "SA_NOT_FOUND_TEXT",
    "STUCK_REASONS",
    "TOLERATE_ALL",
    "create_pod_when_sa_ready",
    "inner_tolerations",
    "pod_log",
    "pod_phase",
    "pod_stuck_reason",
    "prove_ran",
    "wait_pod_bound",
    "wait_pod_terminal",
    "waiting_summary",
]

#: Tolerations of inner test pods when ``--toleration`` is not given: tolerate every taint.
TOLERATE_ALL: Final[tuple[dict[str, str], ...]] = ({"operator": "Exists"},)

#: Container waiting reasons that mean a pod will not make progress by itself.
STUCK_REASONS: Final = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CrashLoopBackOff")

MSG_SA_TIMEOUT = (
    "[TIMEOUT] namespace {ns} default ServiceAccount was not provisioned within {timeout} — pod creation "
    "kept failing SA admission: {cause}"
)
SA_NOT_FOUND_TEXT: Final = 'serviceaccount "default" not found'
#: cap on a container log read into evidence (the evidence copy is capped again, per line)
LOG_LIMIT_BYTES: Final = 1 << 20


def inner_tolerations(tolerations: Sequence[Mapping[str, str]] | None) -> list[dict[str, str]]:
    """``--toleration`` (``AICR_TOLERATIONS``) for inner test pods, else tolerate everything."""
    return [dict(t) for t in (TOLERATE_ALL if tolerations is None else tolerations)]


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str(status(pod).get("phase") or "Pending")


def pod_stuck_reason(pod: Mapping[str, Any], what: str) -> str | None:
    """Why ``pod`` will not progress as the failure text, or ``None``.

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
    """AICR's watch-based terminal-pod wait: the pod once it is Succeeded or Failed.

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


def prove_ran(run: RunScope, *pods: Mapping[str, Any]) -> None:
    """Every pod (as last read) really ran: :meth:`~aicr_pytest.kube.run.RunScope.prove` for each,
    or :class:`~aicr_pytest.kube.proof.NoProofOfExecution` (CTRF ``other``) naming the first without."""
    for pod in pods:
        run.prove(pod)


def pod_log(cluster: Cluster, namespace: str, name: str, container: str) -> str:
    """One container's log, or ``failed to read logs: <error>`` (AICR records it and goes on)."""
    from aicr_pytest.kube.logs import read_log

    try:
        return read_log(cluster, namespace, name, container, limit_bytes=LOG_LIMIT_BYTES)
    except (ApiError, Inconclusive) as err:
        return f"failed to read logs: {describe_cause(err)}"
