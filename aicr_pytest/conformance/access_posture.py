"""The cluster's authn/authz posture for AI workloads (``secure-accelerator-access``, first step).

The guide's feature table: "Cluster authn/authz posture for AI workloads". Asked of the API server's
authorizer with one ``SubjectAccessReview`` per request below, as an unauthenticated client
(``system:anonymous`` in ``system:unauthenticated``): may it read secrets or nodes, start pods, or
see DRA claims? Every answer must be "denied"; any "allowed" fails the check (the binding that
allows it is named where the authorizer gives one). A review that cannot be made or read -- the
validator may not create reviews, the API is not served, the answer has no ``status.allowed`` -- is
``other``: the posture is unknown, never passed. The reviews create nothing in the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.conformance.common import failure, inconclusive
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.kube.errors import ApiError
from aicr_pytest.kube.transport import Target

__all__ = [
    "ANONYMOUS_GROUPS",
    "ANONYMOUS_PROBES",
    "ANONYMOUS_USER",
    "MSG_ANONYMOUS_ALLOWED",
    "REVIEW_PATH",
    "Probe",
    "review_body",
    "review_verdict",
    "verify_anonymous_denied",
]

REVIEW_PATH: Final = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
ANONYMOUS_USER: Final = "system:anonymous"
ANONYMOUS_GROUPS: Final = ("system:unauthenticated",)
MSG_ANONYMOUS_ALLOWED: Final = (
    "unauthenticated requests are authorized: {user} may {what} — the API server must not grant "
    "anonymous access to workloads, secrets or GPU resources"
)
MSG_REVIEW_FAILED: Final = "failed to review anonymous access (SubjectAccessReview)"
LABEL: Final = "Anonymous access (SubjectAccessReview as system:anonymous)"


@dataclass(frozen=True)
class Probe:
    """One request an unauthenticated client must not be allowed."""

    verb: str
    group: str
    resource: str
    namespace: str | None
    what: str


ANONYMOUS_PROBES: Final[tuple[Probe, ...]] = (
    Probe("list", "", "secrets", None, "list secrets in all namespaces"),
    Probe("create", "", "pods", "default", "create pods in namespace default"),
    Probe("list", "", "nodes", None, "list nodes"),
    Probe("list", "resource.k8s.io", "resourceclaims", None, "list ResourceClaims in all namespaces"),
)


def review_body(probe: Probe) -> dict[str, Any]:
    attrs: dict[str, Any] = {"verb": probe.verb, "group": probe.group, "resource": probe.resource}
    if probe.namespace:
        attrs["namespace"] = probe.namespace
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": ANONYMOUS_USER, "groups": list(ANONYMOUS_GROUPS), "resourceAttributes": attrs},
    }


def review_verdict(answer: Mapping[str, Any]) -> tuple[bool, str] | None:
    """(allowed, reason) of a review answer; ``None`` when ``status.allowed`` is not a boolean."""
    status = answer.get("status")
    if not isinstance(status, Mapping) or not isinstance(status.get("allowed"), bool):
        return None
    return bool(status["allowed"]), str(status.get("reason") or "")


def _review(ctx: ConformanceContext, probe: Probe) -> tuple[bool, str]:
    target = Target("create", "authorization.k8s.io", "subjectaccessreviews")
    try:
        doc = ctx.cluster.request("POST", REVIEW_PATH, target, body=review_body(probe)).json()
    except ApiError as err:
        raise inconclusive("INTERNAL", MSG_REVIEW_FAILED, err) from err
    except ValueError as err:
        raise inconclusive("INTERNAL", MSG_REVIEW_FAILED, f"unparsable answer: {err}") from err
    verdict = review_verdict(doc) if isinstance(doc, Mapping) else None
    if verdict is None:
        raise inconclusive("INTERNAL", MSG_REVIEW_FAILED, "the answer has no status.allowed")
    return verdict


def verify_anonymous_denied(ctx: ConformanceContext) -> None:
    """Ask each of :data:`ANONYMOUS_PROBES`; record the answers; fail on any allowed."""
    lines: list[str] = []
    allowed: list[str] = []
    for probe in ANONYMOUS_PROBES:
        ok, reason = _review(ctx, probe)
        lines.append(
            f"{probe.what}: {'ALLOWED' if ok else 'denied'}" + (f" ({reason})" if ok and reason else "")
        )
        if ok:
            allowed.append(probe.what + (f" ({reason})" if reason else ""))
    ctx.record(LABEL, lines, "kubectl auth can-i --as=system:anonymous --list")
    if allowed:
        raise failure("INTERNAL", MSG_ANONYMOUS_ALLOWED.format(user=ANONYMOUS_USER, what=", ".join(allowed)))
