"""Exceptions raised by the cluster facade.

Every API problem a check does not handle itself is an infrastructure problem, not a verdict on the
cluster, so all of them derive from :class:`aicr_pytest.core.errors.Inconclusive` (CTRF ``other``).
Checks that expect an object to be missing catch :class:`NotFound` explicitly.
"""

from __future__ import annotations

from aicr_pytest.core.errors import Inconclusive

#: ``AccessDenied`` message; users grep for it, so keep the wording stable.
MSG_ACCESS_DENIED = "RBAC denied: cannot {verb} {resource}{where} ({status} {reason})"
#: a 403 an admission plugin or webhook gave (not RBAC): what it said is the useful part
MSG_ADMISSION_DENIED = "admission denied: cannot {verb} {resource}{where}: {detail} ({status} {reason})"
MSG_UNREACHABLE = "API unreachable: {method} {path}: {cause} (gave up after {attempts} attempts)"
MSG_WAIT_TIMEOUT = "timed out after {timeout:g}s waiting for {what}: {state}"
MSG_VANISHED = "{what} vanished while waiting for it"


class ApiError(Inconclusive):
    """A Kubernetes API request failed.

    ``verb`` is the RBAC verb (``get``, ``list``, ``watch``, ``create``, ``patch``, ``delete``...),
    ``resource`` the plural resource (with ``/subresource``), ``group`` its API group (``""`` for
    core).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        reason: str = "",
        verb: str = "",
        group: str = "",
        resource: str = "",
        namespace: str | None = None,
        name: str | None = None,
        body: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.verb = verb
        self.group = group
        self.resource = resource
        self.namespace = namespace
        self.name = name
        self.body = body


class AccessDenied(ApiError):
    """401 Unauthorized or 403 Forbidden. Never retried; the message names the verb and resource."""


class AdmissionDenied(AccessDenied):
    """403 from admission (a webhook, a ValidatingAdmissionPolicy, PodSecurity, ResourceQuota, a
    terminating namespace), not from RBAC: granting more RBAC would not help."""


class NotFound(ApiError):
    """404 Not Found."""


class Conflict(ApiError):
    """409 Conflict: AlreadyExists on create, or a stale ``resourceVersion`` on update."""


class Invalid(ApiError):
    """400 Bad Request / 422 Unprocessable Entity: the object or request was rejected as invalid."""


class Gone(ApiError):
    """410 Gone: a watch or list ``continue`` token refers to an expired resourceVersion."""


class ApiUnreachable(ApiError):
    """Transient failures (429, 5xx, dropped connections) persisted past the retry budget."""


class ClusterUnreachable(ApiUnreachable):
    """The reachability probe (:mod:`aicr_pytest.kube.reach`) found the cluster unreachable: the
    message is the probe's one line; ``reach`` the :class:`~aicr_pytest.kube.reach.Reach` verdict.
    Once raised on a client every later request raises it at once (no retry budget is spent)."""

    def __init__(self, message: str, *, reach: object = None) -> None:
        super().__init__(message)
        self.reach = reach


class WaitTimeout(Inconclusive):
    """A wait reached its deadline; the message carries the last observed state."""

    def __init__(self, message: str, *, last_seen: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.last_seen = last_seen


class ObjectVanished(Inconclusive):
    """The object being waited on was deleted while waiting."""


__all__ = [
    "MSG_ACCESS_DENIED",
    "MSG_ADMISSION_DENIED",
    "MSG_UNREACHABLE",
    "MSG_VANISHED",
    "MSG_WAIT_TIMEOUT",
    "AccessDenied",
    "AdmissionDenied",
    "ApiError",
    "ApiUnreachable",
    "ClusterUnreachable",
    "Conflict",
    "Gone",
    "Invalid",
    "NotFound",
    "ObjectVanished",
    "WaitTimeout",
]
