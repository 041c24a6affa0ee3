"""Workload state as AICR reads it: Deployment availability (instant and a bounded wait),
DaemonSet readiness, ``status.conditions`` lookup.

Waits are watch-based (:func:`aicr_pytest.kube.wait.observe`) on the injected clock, so on the fake
cluster they run in virtual time; AICR's 500 ms polls become watches with the same bounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aicr_pytest.conformance.failures import JSON, failure, inconclusive, read_object
from aicr_pytest.conformance.fields import as_int, spec, status
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.goduration import format_go_duration
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError, WaitTimeout
from aicr_pytest.kube.wait import observe

__all__ = [
    "Condition",
    "daemonset_ready",
    "deployment_available",
    "deployment_replicas",
    "find_condition",
    "wait_deployment_available",
]


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
    """The condition ``ctype`` of an object; missing list or type are failures."""
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
