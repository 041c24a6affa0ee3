"""Readiness and leader-election posture of an AI operator's controller (``robust-controller``).

Pure decisions over API objects, used by :mod:`.robust_controller`:

* **readiness** -- every desired replica of the controller Deployment is ready (AICR only asks for one
  available replica);
* **leader election** -- a ``coordination.k8s.io`` Lease in the operator's namespace is held by one of
  the controller's pods (controller-runtime writes ``<pod name>_<uuid>`` as the holder) and was renewed
  within its ``leaseDurationSeconds``. A Lease with no renew time or duration cannot be judged: it
  fails (fail closed), as does one held by a pod that no longer exists;
* **something to reconcile** -- the operator's custom resources exist; none at all is a skip (the
  operator is installed but idle).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.conformance.fields import as_int, meta, spec, status
from aicr_pytest.conformance.gang_scheduling import parse_time
from aicr_pytest.core.goduration import format_go_duration

__all__ = [
    "MSG_LEASE_STALE",
    "MSG_LEASE_UNREADABLE",
    "MSG_NOTHING_TO_RECONCILE",
    "MSG_NOT_READY",
    "MSG_NO_LEASE",
    "LeaseVerdict",
    "controller_pods",
    "holder_pod",
    "lease_verdict",
    "pick_lease",
    "readiness_problem",
]

MSG_NOT_READY: Final = "{title} controller not ready: {ready}/{desired} replicas ready"
MSG_NO_LEASE: Final = "no leader-election Lease in namespace {ns} is held by a {title} controller pod"
MSG_LEASE_STALE: Final = (
    "leader-election Lease {ns}/{name} held by {holder} was last renewed {age} ago "
    "(lease duration {duration}): the {title} controller is not renewing it"
)
MSG_LEASE_UNREADABLE: Final = (
    "leader-election Lease {ns}/{name} has no renewTime or leaseDurationSeconds — cannot verify renewal"
)
MSG_NOTHING_TO_RECONCILE: Final = "{title} operator is installed but has nothing to reconcile (no {kinds})"


def readiness_problem(deployment: Mapping[str, Any], title: str) -> str | None:
    """``None`` when every desired replica is ready, else the failure text."""
    desired = spec(deployment).get("replicas")
    want = 1 if desired is None else as_int(desired)
    ready = as_int(status(deployment).get("readyReplicas"))
    if ready < 1 or ready < want:
        return MSG_NOT_READY.format(title=title, ready=ready, desired=want)
    return None


def controller_pods(pods: Sequence[Mapping[str, Any]], deployment: str) -> list[str]:
    """Names of the Deployment's pods (``<deployment>-<rs hash>-<id>``) that are not being deleted."""
    return [
        str(meta(p).get("name"))
        for p in pods
        if str(meta(p).get("name") or "").startswith(f"{deployment}-")
        and not meta(p).get("deletionTimestamp")
    ]


def holder_pod(lease: Mapping[str, Any]) -> str:
    """The pod part of a Lease's ``holderIdentity`` (controller-runtime: ``<pod>_<uuid>``)."""
    return str(spec(lease).get("holderIdentity") or "").split("_", 1)[0]


def pick_lease(leases: Sequence[Mapping[str, Any]], pods: Sequence[str]) -> Mapping[str, Any] | None:
    """The most recently renewed Lease held by one of ``pods`` (``None`` when none is)."""
    held = [lease for lease in leases if holder_pod(lease) and holder_pod(lease) in pods]
    if not held:
        return None

    def renewed(lease: Mapping[str, Any]) -> float:
        when = parse_time(spec(lease).get("renewTime"))
        return when.timestamp() if when is not None else float("-inf")

    return max(held, key=renewed)


@dataclass(frozen=True)
class LeaseVerdict:
    """``problem`` is ``None`` when the Lease is live; ``report`` is the evidence lines either way."""

    problem: str | None
    report: list[str]


def lease_verdict(lease: Mapping[str, Any], now: float, title: str) -> LeaseVerdict:
    """Whether ``lease`` was renewed within its duration as of ``now`` (epoch seconds)."""
    ns, name = str(meta(lease).get("namespace") or ""), str(meta(lease).get("name") or "")
    holder = str(spec(lease).get("holderIdentity") or "")
    renew = parse_time(spec(lease).get("renewTime"))
    duration = spec(lease).get("leaseDurationSeconds")
    report = [f"Lease: {ns}/{name}", f"Holder: {holder}"]
    if renew is None or not isinstance(duration, int) or isinstance(duration, bool) or duration <= 0:
        report.append("Renewal: unknown")
        return LeaseVerdict(MSG_LEASE_UNREADABLE.format(ns=ns, name=name), report)
    age = max(0.0, now - renew.timestamp())
    report += [
        f"Last renewed: {format_go_duration(round(age))} ago",
        f"Lease duration: {format_go_duration(duration)}",
        f"Transitions: {as_int(spec(lease).get('leaseTransitions'))}",
    ]
    if age > duration:
        text = MSG_LEASE_STALE.format(
            ns=ns,
            name=name,
            holder=holder,
            age=format_go_duration(round(age)),
            duration=format_go_duration(duration),
            title=title,
        )
        return LeaseVerdict(text, report)
    return LeaseVerdict(None, report)
