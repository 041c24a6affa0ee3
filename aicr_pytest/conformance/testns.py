"""The per-run GPU test namespace of dra-support and secure-accelerator-access.

One :class:`GpuTestNamespace` per check invocation: a 128-bit token names the namespace and the
objects in it, and an ownership label ties the namespace to this invocation. Names are run-scoped
(:meth:`aicr_pytest.kube.run.RunScope.name`): ``aicr-gpu-test-<token>-<run id>[-<worker>]``, and
everything carries the run's labels, so ``kubectl get ns -l aicr.run/run-id=<id>`` finds them.

Ownership (:func:`ownership`, a pure decision): a create that answers AlreadyExists looks at the
namespace; this invocation's token adopts it, anything else is *foreign* and is never reused or
deleted. A create refused outright (403, 400/422...) created nothing; any other create error leaves
it *ambiguous* (the request may have landed), so cleanup looks again before deleting.

Cleanup (:meth:`GpuTestNamespace.cleanup`, its own 30 s budget, run from ``finally`` so a failure,
timeout or Ctrl-C still cleans up): the tracked pods are deleted first, then the ResourceClaims,
then the namespace with a UID precondition (never someone else's namespace of the same name), and
the result is confirmed by a GET. The returned :class:`CleanupStatus` is recorded as an artifact; a
namespace whose deletion was never accepted is ``CLEANUP FAILED``, which fails an otherwise passing
check (a primary error is never replaced by a cleanup error).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from aicr_pytest.conformance.common import (
    K8S_CLEANUP_TIMEOUT,
    POD_POLL_INTERVAL,
    ConformanceFailure,
    aicr_error,
    describe_cause,
    meta,
)
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.core.goduration import format_go_duration
from aicr_pytest.kube.errors import AccessDenied, ApiError, Conflict, Invalid, NotFound
from aicr_pytest.kube.run import RunScope

JSON = dict[str, Any]

OWNER_LABEL: Final = "aicr.run/gpu-test-run"
NAMESPACE_PREFIX: Final = "aicr-gpu-test-"
POD_PREFIX: Final = "gpu-alloc-test-"
CLAIM_PREFIX: Final = "gpu-claim-"
PROBE_PREFIX: Final = "no-alloc-probe-"

MSG_FOREIGN = (
    "[CONFLICT] test namespace {ns} already exists without this run's aicr.run/gpu-test-run ownership "
    "label — refusing to reuse or delete a foreign namespace"
)
MSG_UNVERIFIED = "test namespace {ns} already exists and its ownership could not be verified"
MSG_CREATE_FAILED = "failed to create test namespace"
STATUS_DELETED = "namespace {ns} deleted — confirmed absent (all test resources removed with it)"
STATUS_REUSED = (
    "namespace {ns} deleted — confirmed absent (name since reused by a namespace with another UID, "
    "which was left alone)"
)
STATUS_FOREIGN = (
    "namespace {ns} is owned by another party (no {label}={token} label) — deliberately left untouched "
    "by cleanup"
)
STATUS_NEVER_CREATED = "namespace {ns} was never created — nothing to clean up"
STATUS_KEPT = "cleanup disabled (--no-cleanup): namespace {ns} and its test resources were kept"
STATUS_IN_PROGRESS = (
    "WARNING: namespace {ns} deletion accepted but not confirmed within the {budget} cleanup budget — "
    "deletion in progress (the namespace controller finishes it)"
)
STATUS_NEVER_OBSERVED = (
    "WARNING: namespace {ns} was never observed within the {budget} cleanup budget — the create may not "
    "have landed; nothing was deleted"
)
STATUS_FAILED = (
    "CLEANUP FAILED: namespace {ns} still exists and its deletion was never accepted within the {budget} "
    "cleanup budget — test resources may be leaked (last error: {error})"
)


class Ownership(Enum):
    """What this invocation knows about the namespace it asked for."""

    PENDING = "pending"  #: nothing tried yet
    OWNED = "owned"  #: created (or adopted) by this invocation: its UID is known
    FOREIGN = "foreign"  #: exists without our token: never touched
    NEVER_CREATED = "never-created"  #: the create was refused outright
    AMBIGUOUS = "ambiguous"  #: the create failed in a way that may have created it


#: create errors that prove nothing was created (AICR: Forbidden, Unauthorized, Invalid, BadRequest,
#: MethodNotSupported, NotAcceptable, UnsupportedMediaType, EntityTooLarge)
_REFUSED_STATUS: Final = frozenset({400, 401, 403, 405, 406, 413, 415, 422})


def ownership(labels: dict[str, str] | None, token: str) -> Ownership:
    """An existing namespace's ownership: ours iff it carries this invocation's token."""
    return Ownership.OWNED if (labels or {}).get(OWNER_LABEL) == token else Ownership.FOREIGN


def create_error_ownership(err: ApiError) -> Ownership:
    """After a failed create (not AlreadyExists): refused outright, or ambiguous."""
    if isinstance(err, AccessDenied | Invalid) or err.status in _REFUSED_STATUS:
        return Ownership.NEVER_CREATED
    return Ownership.AMBIGUOUS


@dataclass(frozen=True)
class CleanupStatus:
    """What cleanup found; ``failed`` turns a passing check into a failure."""

    text: str
    failed: bool = False


@dataclass
class GpuTestNamespace:
    """One invocation's test namespace (see the module docstring)."""

    run: RunScope
    clock: Clock
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    state: Ownership = Ownership.PENDING
    uid: str | None = None
    #: (apiVersion, kind, name) of objects in the namespace, deleted before it (pods, then claims)
    tracked: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.run.name(NAMESPACE_PREFIX + self.token)

    @property
    def pod_name(self) -> str:
        return self.run.name(POD_PREFIX + self.token)

    @property
    def claim_name(self) -> str:
        return self.run.name(CLAIM_PREFIX + self.token)

    @property
    def probe_name(self) -> str:
        return self.run.name(PROBE_PREFIX + self.token)

    def labels(self) -> dict[str, str]:
        return {**self.run.labels(), OWNER_LABEL: self.token}

    def track(self, api_version: str, kind: str, name: str) -> None:
        """Delete this object (explicitly, before the namespace) at cleanup."""
        self.tracked.append((api_version, kind, name))

    # -- create ---------------------------------------------------------------------------------------
    def create(self) -> str:
        """Create (or adopt) the namespace; raises ``other`` for a foreign or unverifiable one."""
        cluster = self.run.cluster
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": self.name, "labels": self.labels()},
        }
        try:
            created = self.run.create(body)
        except Conflict:
            try:
                existing = cluster.get("v1", "Namespace", self.name)
            except ApiError as err:
                self.state = Ownership.AMBIGUOUS
                raise Inconclusive(aicr_error("INTERNAL", MSG_UNVERIFIED.format(ns=self.name), err)) from err
            self.state = ownership(dict(meta(existing).get("labels") or {}), self.token)
            if self.state is Ownership.FOREIGN:
                raise Inconclusive(MSG_FOREIGN.format(ns=self.name)) from None
            self.uid = str(meta(existing).get("uid") or "") or None
            self.run.adopt("v1", "Namespace", self.name)
            return self.name
        except ApiError as err:
            self.state = create_error_ownership(err)
            raise Inconclusive(aicr_error("INTERNAL", MSG_CREATE_FAILED, err)) from err
        self.state = Ownership.OWNED
        self.uid = str(meta(created).get("uid") or "") or None
        return self.name

    # -- cleanup --------------------------------------------------------------------------------------
    def _delete_tracked(self) -> None:
        cluster = self.run.cluster
        for api_version, kind, name in sorted(self.tracked, key=lambda t: t[1] != "Pod"):
            try:
                cluster.delete(
                    api_version,
                    kind,
                    name,
                    self.name,
                    propagation="Background",
                    missing_ok=True,
                    grace_period_seconds=0 if kind == "Pod" else None,
                )
            except ApiError:
                continue  # the namespace delete below removes it anyway

    def cleanup(self, budget: float = K8S_CLEANUP_TIMEOUT) -> CleanupStatus:
        """Delete what the invocation created, bounded by ``budget`` (see the module docstring)."""
        budget_text = format_go_duration(budget)
        if self.state is Ownership.FOREIGN:
            return CleanupStatus(STATUS_FOREIGN.format(ns=self.name, label=OWNER_LABEL, token=self.token))
        if self.state in (Ownership.PENDING, Ownership.NEVER_CREATED):
            return CleanupStatus(STATUS_NEVER_CREATED.format(ns=self.name))
        if self.run.no_cleanup:
            return CleanupStatus(STATUS_KEPT.format(ns=self.name))
        cluster = self.run.cluster
        deadline = self.clock.time() + budget
        accepted = terminating = observed = False
        last_error = "none"
        if self.state is Ownership.OWNED:
            self._delete_tracked()
        while True:
            try:
                if self.uid is None:  # ambiguous create: adopt it only if it surfaced with our token
                    found = cluster.get_or_none("v1", "Namespace", self.name)
                    if found is not None:
                        observed = True
                        if ownership(dict(meta(found).get("labels") or {}), self.token) is Ownership.FOREIGN:
                            return CleanupStatus(
                                STATUS_FOREIGN.format(ns=self.name, label=OWNER_LABEL, token=self.token)
                            )
                        self.uid = str(meta(found).get("uid") or "") or None
                        self._delete_tracked()
                if self.uid is not None:
                    observed = True
                    try:
                        cluster.delete(
                            "v1",
                            "Namespace",
                            self.name,
                            propagation="Background",
                            preconditions={"uid": self.uid},
                        )
                        accepted = True
                    except NotFound:
                        accepted = True
                    # a 409 (UID precondition) proves nothing about absence: confirm with a GET
                    current = cluster.get_or_none("v1", "Namespace", self.name)
                    if current is None:
                        return CleanupStatus(STATUS_DELETED.format(ns=self.name))
                    if str(meta(current).get("uid") or "") != self.uid:
                        return CleanupStatus(STATUS_REUSED.format(ns=self.name))
                    if meta(current).get("deletionTimestamp"):
                        terminating = True
            except (ApiError, Inconclusive) as err:
                last_error = describe_cause(err)
            if self.clock.time() + POD_POLL_INTERVAL > deadline:
                break
            self.clock.sleep(POD_POLL_INTERVAL)
        if accepted or terminating:
            return CleanupStatus(STATUS_IN_PROGRESS.format(ns=self.name, budget=budget_text))
        if not observed:
            return CleanupStatus(STATUS_NEVER_OBSERVED.format(ns=self.name, budget=budget_text))
        return CleanupStatus(
            STATUS_FAILED.format(ns=self.name, budget=budget_text, error=last_error), failed=True
        )


def raise_cleanup_failure(status: CleanupStatus, primary: BaseException | None) -> None:
    """Fail a check that otherwise passed when cleanup failed; never replace a primary error."""
    if status.failed and primary is None:
        raise ConformanceFailure(aicr_error("INTERNAL", status.text))


@contextmanager
def cleaned_up(ns: GpuTestNamespace, record: Callable[[str, str], object]) -> Iterator[GpuTestNamespace]:
    """``ns`` for the body; afterwards (also on failure, timeout or Ctrl-C) its cleanup, recorded as
    ``Cleanup test namespace``, failing a body that passed when the cleanup failed."""
    primary: BaseException | None = None
    try:
        yield ns
    except BaseException as err:
        primary = err
        raise
    finally:
        status = ns.cleanup()
        record("Cleanup test namespace", status.text)
        raise_cleanup_failure(status, primary)


__all__ = [
    "CLAIM_PREFIX",
    "NAMESPACE_PREFIX",
    "OWNER_LABEL",
    "POD_PREFIX",
    "PROBE_PREFIX",
    "CleanupStatus",
    "GpuTestNamespace",
    "Ownership",
    "cleaned_up",
    "create_error_ownership",
    "ownership",
    "raise_cleanup_failure",
]
