"""Running health checks: one evaluation of an operation, the retry loop, components in parallel.

Objects are read through an injected ``fetch`` callable, and time through an injected
:class:`~aicr_pytest.core.clock.Clock`, so everything here runs without a cluster and, with a fake
clock, without waiting.

``fetch(api_version, kind, namespace, name, labels) -> list[dict]``:

* with ``name``: ``[]`` when the object does not exist, else ``[obj]``;
* without ``name``: the objects in ``namespace`` (``None`` = all namespaces / cluster-scoped)
  whose labels equal every pair in ``labels``;
* raises :class:`NotRegistered` when the API server has no mapping for the kind (CRD not
  installed) and any other exception for transport/RBAC errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from aicr_pytest.core import progress
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.gofmt import go_map
from aicr_pytest.deployment.healthcheck.model import (
    HealthCheck,
    HealthCheckRejected,
    ResourceAssertion,
    parse_health_check,
)
from aicr_pytest.deployment.treematch import AssertionEngineError, _one_line, match_tree

__all__ = [
    "ABSENT_RESOURCE_GRACE",
    "ASSERT_RETRY_INTERVAL",
    "DEFAULT_TEST_TIMEOUT",
    "MAX_PARALLEL_COMPONENTS",
    "Attempt",
    "Fetch",
    "HealthCheckResult",
    "NotRegistered",
    "Timing",
    "evaluate_once",
    "load_and_parse",
    "run_assertion",
    "run_health_check",
    "run_health_checks",
]

# -- tunables (AICR's chainsaw runner) ----------------------------------------------------------------
ASSERT_RETRY_INTERVAL = 5.0  # AssertRetryInterval
ABSENT_RESOURCE_GRACE = 30.0  # AbsentResourceGracePeriod (AICR #1324)
DEFAULT_TEST_TIMEOUT = 360.0  # ChainsawAssertTimeout: budget when a Test declares no timeouts.assert
MAX_PARALLEL_COMPONENTS = 4

# -- messages ----------------------------------------------------------------------------------------
MSG_ENGINE_ERROR = "[INVALID_REQUEST] {kind} {ref}: assertion engine error: {err}"
MSG_NOT_FOUND_BY_NAME = "[NOT_FOUND] {kind} {ref} not found"
MSG_NO_REST_MAPPING = "[NOT_FOUND] no REST mapping for {gvk}"
MSG_GET_FAILED = "[SERVICE_UNAVAILABLE] failed to get {kind} {ref}: {err}"
MSG_LIST_FAILED = '[INTERNAL] failed to list {kind} in "{namespace}": {err}'
MSG_SHAPE_MISMATCH = "[INTERNAL] {kind} {ref} does not match: {reasons}"
MSG_LIST_EMPTY = '[NOT_FOUND] {kind} in "{namespace}": no resources found (labels={labels})'
MSG_LIST_NO_MATCH = '[INTERNAL] no {kind} in "{namespace}" matched (last reason: {reason})'
MSG_FORBIDDEN_BY_NAME = "[INTERNAL] {kind} {ref}: forbidden shape matched"
MSG_FORBIDDEN_IN_LIST = (
    "[INTERNAL] {kind} {namespace}/{name} matches forbidden shape "
    "(phase={phase}, waiting={waiting}, node={node})"
)
LINE_PASSED = "[chainsaw] {component}: health check passed"
LINE_FAILED = "[chainsaw] {component}: health check failed\nerror: {error}"


class NotRegistered(Exception):
    """``fetch`` raises this when the kind has no REST mapping (its CRD is not installed)."""


class Fetch(Protocol):
    """``fetch(api_version, kind, namespace, name, labels) -> list[dict]`` (positional)."""

    def __call__(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str | None,
        labels: Mapping[str, str] | None,
        /,
    ) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Attempt:
    """One evaluation of one operation."""

    passed: bool
    message: str = ""
    absent: bool = False  # NotFound / no REST mapping: subject to the absent-resource grace
    observed: bool = False  # the object was seen (shape mismatch): the full budget applies


_PASS = Attempt(passed=True)


def _is_ghost(obj: Mapping[str, Any]) -> bool:
    """Terminating or NodeLost objects: ignored by negative list assertions (AICR #1643)."""
    metadata = obj.get("metadata") or {}
    status = obj.get("status") or {}
    return bool(metadata.get("deletionTimestamp")) or status.get("reason") == "NodeLost"


def _waiting_reasons(obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    reasons: list[str] = []
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            waiting = ((cs or {}).get("state") or {}).get("waiting") or {}
            if waiting.get("reason"):
                reasons.append(f"{cs.get('name', '?')}:{waiting['reason']}")
    return ",".join(reasons)


def _engine(a: ResourceAssertion, expected: Mapping[str, Any], obj: Any) -> list[str]:
    try:
        return match_tree(expected, obj)
    except AssertionEngineError as err:
        raise AssertionEngineError(MSG_ENGINE_ERROR.format(kind=a.kind, ref=a.ref, err=err)) from err


def evaluate_once(a: ResourceAssertion, fetch: Fetch) -> Attempt:
    """Evaluate one operation once.  Raises :class:`AssertionEngineError` (terminal)."""
    namespace_label = a.namespace or ""
    labels = dict(a.labels) or None
    if a.name:
        try:
            items = fetch(a.api_version, a.kind, a.namespace, a.name, None)
        except NotRegistered:
            if a.negative:
                return _PASS
            return Attempt(False, MSG_NO_REST_MAPPING.format(gvk=a.gvk), absent=True)
        except Exception as err:  # transport/RBAC: retry, do not latch; error ops fail closed
            return Attempt(False, MSG_GET_FAILED.format(kind=a.kind, ref=a.ref, err=_one_line(err)))
        if not items:
            if a.negative:
                return _PASS
            return Attempt(False, MSG_NOT_FOUND_BY_NAME.format(kind=a.kind, ref=a.ref), absent=True)
        mismatches = _engine(a, a.tree, items[0])
        if a.negative:
            if mismatches:
                return _PASS
            return Attempt(False, MSG_FORBIDDEN_BY_NAME.format(kind=a.kind, ref=a.ref), observed=True)
        if mismatches:
            return Attempt(
                False,
                MSG_SHAPE_MISMATCH.format(kind=a.kind, ref=a.ref, reasons="; ".join(mismatches)),
                observed=True,
            )
        return _PASS

    try:
        items = fetch(a.api_version, a.kind, a.namespace, None, labels)
    except NotRegistered:
        if a.negative:
            return _PASS
        return Attempt(False, MSG_NO_REST_MAPPING.format(gvk=a.gvk), absent=True)
    except Exception as err:
        return Attempt(
            False, MSG_LIST_FAILED.format(kind=a.kind, namespace=namespace_label, err=_one_line(err))
        )
    if a.negative:
        offenders = [obj for obj in items if not _is_ghost(obj) and not _engine(a, a.tree, obj)]
        if not offenders:
            return _PASS
        first = offenders[0]
        meta = first.get("metadata") or {}
        message = MSG_FORBIDDEN_IN_LIST.format(
            kind=a.kind,
            namespace=meta.get("namespace", namespace_label),
            name=meta.get("name", "?"),
            phase=(first.get("status") or {}).get("phase", ""),
            waiting=_waiting_reasons(first),
            node=(first.get("spec") or {}).get("nodeName", ""),
        )
        if len(offenders) > 1:
            message += f" (+{len(offenders) - 1} more)"
        return Attempt(False, message, observed=True)
    if not items:
        return Attempt(
            False,
            MSG_LIST_EMPTY.format(kind=a.kind, namespace=namespace_label, labels=go_map(a.labels)),
            absent=True,
        )
    last_reason = ""
    for obj in items:
        mismatches = _engine(a, a.tree, obj)
        if not mismatches:
            return _PASS
        name = (obj.get("metadata") or {}).get("name", "?")
        last_reason = f"{name}: {'; '.join(mismatches)}"
    return Attempt(
        False,
        MSG_LIST_NO_MATCH.format(kind=a.kind, namespace=namespace_label, reason=last_reason),
        observed=True,
    )


@dataclass(frozen=True)
class Timing:
    """Injected time (:class:`~aicr_pytest.core.clock.Clock`) and the retry pacing."""

    clock: Clock
    retry_interval: float = ASSERT_RETRY_INTERVAL
    absent_grace: float = ABSENT_RESOURCE_GRACE


def run_assertion(a: ResourceAssertion, fetch: Fetch, deadline: float, timing: Timing) -> str | None:
    """Retry one operation until it passes or time runs out; ``None`` = passed, else the last
    substantive failure (never a bare "deadline exceeded").  Engine errors stop at once."""
    start = timing.clock.time()
    observed = False
    waiting = progress.Waiting(
        f"{a.kind} {a.ref} to match its health check", clock=timing.clock, deadline=deadline
    )
    while True:
        try:
            attempt = evaluate_once(a, fetch)
        except AssertionEngineError as err:
            return str(err)
        if attempt.passed:
            return None
        waiting.tick(attempt.message)
        observed = observed or attempt.observed
        now = timing.clock.time()
        limit = deadline
        if attempt.absent and not observed:
            limit = min(deadline, start + timing.absent_grace)
        if now >= limit:
            return attempt.message
        timing.clock.sleep(min(timing.retry_interval, limit - now))


@dataclass(frozen=True)
class HealthCheckResult:
    component: str
    passed: bool
    error: str | None = None
    step: str | None = None

    @property
    def line(self) -> str:
        """``[chainsaw] <component>: health check passed|failed\\nerror: <err>``."""
        if self.passed:
            return LINE_PASSED.format(component=self.component)
        return LINE_FAILED.format(component=self.component, error=self.error)


def run_health_check(
    check: HealthCheck,
    fetch: Fetch,
    *,
    clock: Clock,
    default_timeout: float = DEFAULT_TEST_TIMEOUT,
    deadline: float | None = None,
    retry_interval: float = ASSERT_RETRY_INTERVAL,
    absent_grace: float = ABSENT_RESOURCE_GRACE,
) -> HealthCheckResult:
    """Run one component's health check.

    Each ``Test`` has ONE budget (``spec.timeouts.assert``, else ``default_timeout``) shared by
    all its steps and retries, capped by the caller's absolute ``deadline``.  Steps run in order;
    the first failing operation fails the component.
    """
    timing = Timing(clock=clock, retry_interval=retry_interval, absent_grace=absent_grace)
    for test in check.tests:
        budget = test.timeout if test.timeout is not None else default_timeout
        test_deadline = clock.time() + budget
        if deadline is not None:
            test_deadline = min(test_deadline, deadline)
        for step in test.steps:
            for a in step.assertions:
                failure = run_assertion(a, fetch, test_deadline, timing)
                if failure is not None:
                    label = f'step "{step.name}"' if check.shape == "chainsaw" else a.where
                    return HealthCheckResult(check.component, False, f"{label}: {failure}", step.name)
    return HealthCheckResult(check.component, True)


def run_health_checks(
    checks: Sequence[HealthCheck | HealthCheckResult],
    fetch: Fetch,
    *,
    clock: Clock,
    max_parallel: int = MAX_PARALLEL_COMPONENTS,
    default_timeout: float = DEFAULT_TEST_TIMEOUT,
    deadline: float | None = None,
    retry_interval: float = ASSERT_RETRY_INTERVAL,
    absent_grace: float = ABSENT_RESOURCE_GRACE,
) -> list[HealthCheckResult]:
    """Run several components' checks, at most ``max_parallel`` at a time; results keep input order.

    Entries that are already :class:`HealthCheckResult` (e.g. a rejected file) pass through.
    """

    def one(item: HealthCheck | HealthCheckResult) -> HealthCheckResult:
        if isinstance(item, HealthCheckResult):
            return item
        return run_health_check(
            item,
            fetch,
            clock=clock,
            default_timeout=default_timeout,
            deadline=deadline,
            retry_interval=retry_interval,
            absent_grace=absent_grace,
        )

    runnable = [c for c in checks if isinstance(c, HealthCheck)]
    if len(runnable) <= 1:
        return [one(c) for c in checks]
    with ThreadPoolExecutor(
        max_workers=max(1, min(max_parallel, len(runnable))), thread_name_prefix="healthcheck"
    ) as pool:
        futures = [pool.submit(one, c) for c in checks]
        return [f.result() for f in futures]


def load_and_parse(component: str, source: tuple[str, str] | None) -> HealthCheck | HealthCheckResult | None:
    """Parse resolved source text; a rejected file becomes a failed :class:`HealthCheckResult`."""
    if source is None:
        return None
    try:
        return parse_health_check(component, source[0])
    except HealthCheckRejected as err:
        return HealthCheckResult(component, False, str(err))
