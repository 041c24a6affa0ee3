"""Component health checks: chainsaw-style assertion files, executed in-process.

A component's health check is YAML in one of two shapes (spec §5.2.1):

* a chainsaw ``Test`` (``apiVersion: chainsaw.kyverno.io/v1alpha1``, ``kind: Test``) whose
  ``spec.steps[].try[]`` may only use the read-only operations ``assert`` and ``error``;
* raw multi-document Kubernetes YAML, where every document is an ``assert`` by name.

We never shell out to a chainsaw binary.  Objects are read through an injected ``fetch``
callable, and time through an injected :class:`~aicr_pytest.core.clock.Clock`, so everything here runs
without a cluster and, with a fake clock, without waiting.

``fetch(api_version, kind, namespace, name, labels) -> list[dict]``:

* with ``name``: ``[]`` when the object does not exist, else ``[obj]``;
* without ``name``: the objects in ``namespace`` (``None`` = all namespaces / cluster-scoped)
  whose labels equal every pair in ``labels``;
* raises :class:`NotRegistered` when the API server has no mapping for the kind (CRD not
  installed) and any other exception for transport/RBAC errors.

The tree matcher (:func:`~aicr_pytest.deployment.treematch.match_tree`) and Go durations
(:mod:`aicr_pytest.core.goduration`) live in their own modules; this one re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import yaml

from aicr_pytest.core import progress, yamlio
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.goduration import format_go_duration, parse_go_duration
from aicr_pytest.deployment.treematch import AssertionEngineError, _one_line, _render, match_tree

__all__ = [
    "ABSENT_RESOURCE_GRACE",
    "ALLOWED_OPERATIONS",
    "ASSERT_RETRY_INTERVAL",
    "DEFAULT_TEST_TIMEOUT",
    "MAX_PARALLEL_COMPONENTS",
    "AssertionEngineError",
    "Fetch",
    "HealthCheck",
    "HealthCheckRejected",
    "HealthCheckResult",
    "NotRegistered",
    "ResourceAssertion",
    "TestCase",
    "TestStep",
    "evaluate_once",
    "format_go_duration",
    "go_map",
    "load_and_parse",
    "match_tree",
    "parse_go_duration",
    "parse_health_check",
    "registry_lookup",
    "resolve_health_check_source",
    "run_health_check",
    "run_health_checks",
]

# -- tunables (spec §5.2.1) ---------------------------------------------------------------------------
ASSERT_RETRY_INTERVAL = 5.0  # AssertRetryInterval
ABSENT_RESOURCE_GRACE = 30.0  # AbsentResourceGracePeriod (#1324)
DEFAULT_TEST_TIMEOUT = 360.0  # ChainsawAssertTimeout: budget when a Test declares no timeouts.assert
MAX_PARALLEL_COMPONENTS = 4

CHAINSAW_API_PREFIX = "chainsaw.kyverno.io/"
ALLOWED_OPERATIONS: tuple[str, ...] = ("assert", "error")
FORBIDDEN_BLOCKS: tuple[str, ...] = ("catch", "finally", "cleanup")
# Keys of a try[] entry that describe the operation rather than being one.
_OPERATION_META_KEYS = frozenset({"description"})

# -- messages (spec §5.2, §5.2.1) -------------------------------------------------------------------------
MSG_NOT_ALLOWLISTED = (
    '[INVALID_REQUEST] component "{component}" {where}: operation "{op}" is not in the read-only '
    "allowlist (assert, error)"
)
MSG_BLOCK_NOT_ALLOWLISTED = (
    '[INVALID_REQUEST] component "{component}" {where}: "{block}" block is not in the read-only '
    "allowlist (assert, error)"
)
MSG_MULTIPLE_OPERATIONS = (
    '[INVALID_REQUEST] component "{component}" {where}: a try entry must hold exactly one operation, '
    "got {ops}"
)
MSG_EMPTY_OPERATION = '[INVALID_REQUEST] component "{component}" {where}: empty operation'
MSG_MISSING_APIVERSION_KIND = (
    '[INVALID_REQUEST] resource missing apiVersion or kind (component "{component}" {where})'
)
MSG_RAW_MISSING_FIELDS = (
    '[INVALID_REQUEST] resource missing apiVersion, kind or metadata.name (component "{component}" {where})'
)
MSG_FILE_OPERAND = (
    '[INVALID_REQUEST] component "{component}" {where}: only inline "resource" assertions are supported '
    '(got "file")'
)
MSG_NOT_A_TEST = (
    '[INVALID_REQUEST] component "{component}" {where}: expected a chainsaw Test '
    "(apiVersion chainsaw.kyverno.io/v1alpha1, kind Test), got {got}"
)
MSG_BAD_SHAPE = '[INVALID_REQUEST] component "{component}" {where}: {problem}'
MSG_BAD_YAML = '[INVALID_REQUEST] component "{component}": health check is not valid YAML: {err}'
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
MSG_DATA_FILE_UNREADABLE = "[NOT_FOUND] health check file {path} for component {component}: {err}"
LINE_PASSED = "[chainsaw] {component}: health check passed"
LINE_FAILED = "[chainsaw] {component}: health check failed\nerror: {error}"


class NotRegistered(Exception):
    """``fetch`` raises this when the kind has no REST mapping (its CRD is not installed)."""


class HealthCheckRejected(Exception):
    """A health-check file that must not run (allowlist, malformed).  ``str()`` is the message."""


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


# ================================================================================================
# Model and loading
# ================================================================================================
@dataclass(frozen=True)
class ResourceAssertion:
    """One ``assert`` (``negative=False``) or ``error`` (``negative=True``) operation."""

    api_version: str
    kind: str
    name: str | None
    namespace: str | None
    labels: Mapping[str, str]
    tree: Mapping[str, Any]
    negative: bool = False
    where: str = ""

    @property
    def ref(self) -> str:
        """``ns/name``, or ``name`` for cluster-scoped/unnamespaced objects."""
        if self.namespace:
            return f"{self.namespace}/{self.name}"
        return str(self.name)

    @property
    def gvk(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"


@dataclass(frozen=True)
class TestStep:
    name: str
    assertions: tuple[ResourceAssertion, ...]

    __test__ = False  # not a pytest test class


@dataclass(frozen=True)
class TestCase:
    """One chainsaw ``Test`` (or the whole raw file).  ``timeout`` None = the caller's budget."""

    name: str
    timeout: float | None
    steps: tuple[TestStep, ...]

    __test__ = False  # not a pytest test class


@dataclass(frozen=True)
class HealthCheck:
    component: str
    shape: Literal["chainsaw", "raw"]
    tests: tuple[TestCase, ...]


def _is_chainsaw(text: str) -> bool:
    return "chainsaw.kyverno.io" in text and "kind: Test" in text


def _labels_of(component: str, where: str, metadata: Mapping[str, Any]) -> dict[str, str]:
    labels = metadata.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise HealthCheckRejected(
            MSG_BAD_SHAPE.format(component=component, where=where, problem="metadata.labels must be a map")
        )
    return {str(k): "" if v is None else str(v) for k, v in labels.items()}


def _resource_assertion(
    component: str, where: str, resource: Any, negative: bool, *, require_name: bool
) -> ResourceAssertion:
    if not isinstance(resource, Mapping):
        raise HealthCheckRejected(MSG_MISSING_APIVERSION_KIND.format(component=component, where=where))
    api_version, kind = resource.get("apiVersion"), resource.get("kind")
    metadata = resource.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        metadata = {}
    name = metadata.get("name")
    if require_name and not (api_version and kind and name):
        raise HealthCheckRejected(MSG_RAW_MISSING_FIELDS.format(component=component, where=where))
    if not api_version or not kind:
        raise HealthCheckRejected(MSG_MISSING_APIVERSION_KIND.format(component=component, where=where))
    namespace = metadata.get("namespace")
    return ResourceAssertion(
        api_version=str(api_version),
        kind=str(kind),
        name=str(name) if name else None,
        namespace=str(namespace) if namespace else None,
        labels=_labels_of(component, where, metadata),
        tree=dict(resource),
        negative=negative,
        where=where,
    )


def _parse_chainsaw_test(component: str, index: int, doc: Any) -> TestCase:
    where_doc = f"doc[{index}]"
    if not isinstance(doc, Mapping):
        raise HealthCheckRejected(
            MSG_NOT_A_TEST.format(component=component, where=where_doc, got=_render(doc))
        )
    api_version, kind = str(doc.get("apiVersion", "")), str(doc.get("kind", ""))
    if not api_version.startswith(CHAINSAW_API_PREFIX) or kind != "Test":
        raise HealthCheckRejected(
            MSG_NOT_A_TEST.format(
                component=component, where=where_doc, got=f"{api_version or '?'} {kind or '?'}"
            )
        )
    metadata = doc.get("metadata") or {}
    test_name = str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""
    spec = doc.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise HealthCheckRejected(
            MSG_BAD_SHAPE.format(component=component, where=where_doc, problem="spec must be a map")
        )
    for block in FORBIDDEN_BLOCKS:
        if spec.get(block):
            raise HealthCheckRejected(
                MSG_BLOCK_NOT_ALLOWLISTED.format(component=component, where=where_doc, block=block)
            )
    timeout: float | None = None
    timeouts = spec.get("timeouts") or {}
    if isinstance(timeouts, Mapping) and timeouts.get("assert") is not None:
        try:
            timeout = parse_go_duration(str(timeouts["assert"]))
        except ValueError as err:
            raise HealthCheckRejected(
                MSG_BAD_SHAPE.format(
                    component=component, where=where_doc, problem=f"spec.timeouts.assert: {err}"
                )
            ) from err
    raw_steps = spec.get("steps") or []
    if not isinstance(raw_steps, list):
        raise HealthCheckRejected(
            MSG_BAD_SHAPE.format(component=component, where=where_doc, problem="spec.steps must be a list")
        )
    steps: list[TestStep] = []
    for s_index, raw_step in enumerate(raw_steps):
        if not isinstance(raw_step, Mapping):
            raise HealthCheckRejected(
                MSG_BAD_SHAPE.format(
                    component=component, where=f"{where_doc} step[{s_index}]", problem="a step must be a map"
                )
            )
        step_name = str(raw_step.get("name") or f"step-{s_index + 1}")
        where_step = f'{where_doc} step "{step_name}"'
        for block in FORBIDDEN_BLOCKS:
            if raw_step.get(block):
                raise HealthCheckRejected(
                    MSG_BLOCK_NOT_ALLOWLISTED.format(component=component, where=where_step, block=block)
                )
        if raw_step.get("use"):
            raise HealthCheckRejected(
                MSG_NOT_ALLOWLISTED.format(component=component, where=where_step, op="use")
            )
        tries = raw_step.get("try") or []
        if not isinstance(tries, list):
            raise HealthCheckRejected(
                MSG_BAD_SHAPE.format(component=component, where=where_step, problem="try must be a list")
            )
        assertions: list[ResourceAssertion] = []
        for t_index, entry in enumerate(tries):
            where = f"{where_step} try[{t_index}]"
            if not isinstance(entry, Mapping):
                raise HealthCheckRejected(MSG_EMPTY_OPERATION.format(component=component, where=where))
            ops = [str(k) for k in entry if str(k) not in _OPERATION_META_KEYS]
            for op in ops:
                if op not in ALLOWED_OPERATIONS:
                    raise HealthCheckRejected(
                        MSG_NOT_ALLOWLISTED.format(component=component, where=where, op=op)
                    )
            if not ops:
                raise HealthCheckRejected(MSG_EMPTY_OPERATION.format(component=component, where=where))
            if len(ops) > 1:
                raise HealthCheckRejected(
                    MSG_MULTIPLE_OPERATIONS.format(component=component, where=where, ops=", ".join(ops))
                )
            body = entry[ops[0]]
            if isinstance(body, Mapping) and "file" in body and "resource" not in body:
                raise HealthCheckRejected(MSG_FILE_OPERAND.format(component=component, where=where))
            resource = body.get("resource") if isinstance(body, Mapping) else None
            assertions.append(
                _resource_assertion(component, where, resource, ops[0] == "error", require_name=False)
            )
        steps.append(TestStep(name=step_name, assertions=tuple(assertions)))
    return TestCase(name=test_name, timeout=timeout, steps=tuple(steps))


def parse_health_check(component: str, text: str) -> HealthCheck:
    """Parse and allowlist-check a component health-check file (either shape).

    Every document is checked before anything runs; a violation raises
    :class:`HealthCheckRejected` (terminal).
    """
    try:
        docs = list(yamlio.load_all(text))
    except yaml.YAMLError as err:
        raise HealthCheckRejected(MSG_BAD_YAML.format(component=component, err=_one_line(err))) from err
    if _is_chainsaw(text):
        tests = tuple(
            _parse_chainsaw_test(component, i, doc) for i, doc in enumerate(docs) if doc is not None
        )
        return HealthCheck(component=component, shape="chainsaw", tests=tests)
    assertions = tuple(
        _resource_assertion(component, f"doc[{i}]", doc, False, require_name=True)
        for i, doc in enumerate(docs)
        if doc is not None
    )
    steps = (TestStep(name="assert", assertions=assertions),) if assertions else ()
    return HealthCheck(
        component=component, shape="raw", tests=(TestCase(name=component, timeout=None, steps=steps),)
    )


# ================================================================================================
# Resolution through the data root
# ================================================================================================
def _ref_get(ref: Any, key: str) -> Any:
    if isinstance(ref, Mapping):
        return ref.get(key)
    dump = getattr(ref, "model_dump", None)
    if callable(dump):
        data = dump(by_alias=True)
        if isinstance(data, Mapping):
            return data.get(key)
    return None


def resolve_health_check_source(
    ref: Mapping[str, Any] | Any,
    read_data_file: Callable[[str], str],
    registry_entry: Callable[[str], Mapping[str, Any] | None] | None = None,
) -> tuple[str, str] | None:
    """The health-check YAML for a component ref and where it came from, or ``None``.

    * inline ``healthCheckAsserts`` (non-empty) wins: ``(text, "inline")``;
    * ``healthCheckSkip: true`` opts out of the registry lookup;
    * otherwise the registry entry's ``healthCheck.assertFile`` is read through
      ``read_data_file`` (data-root relative, so a ``--data`` layer can override it):
      ``(text, assertFile)``.

    ``registry_entry(name)`` defaults to reading ``registry.yaml`` through ``read_data_file``.
    A registered file that cannot be read raises :class:`HealthCheckRejected`.
    """
    name = str(_ref_get(ref, "name") or "")
    inline = _ref_get(ref, "healthCheckAsserts")
    if isinstance(inline, str) and inline.strip():
        return inline, "inline"
    if _ref_get(ref, "healthCheckSkip") is True:
        return None
    lookup = registry_entry or registry_lookup(read_data_file)
    entry = lookup(name)
    if not entry:
        return None
    hc = entry.get("healthCheck") or {}
    path = hc.get("assertFile") if isinstance(hc, Mapping) else None
    if not path:
        return None
    try:
        return read_data_file(str(path)), str(path)
    except Exception as err:
        raise HealthCheckRejected(
            MSG_DATA_FILE_UNREADABLE.format(path=path, component=name, err=_one_line(err))
        ) from err


def registry_lookup(read_data_file: Callable[[str], str]) -> Callable[[str], Mapping[str, Any] | None]:
    """``name -> registry entry`` over ``registry.yaml`` read (once, lazily) through ``read_data_file``."""
    cache: dict[str, Mapping[str, Any]] = {}
    loaded = False

    def lookup(name: str) -> Mapping[str, Any] | None:
        nonlocal loaded
        if not loaded:
            loaded = True
            try:
                doc = yamlio.load(read_data_file("registry.yaml")) or {}
            except Exception:  # no registry in the data root: no registered checks
                doc = {}
            components = doc.get("components") if isinstance(doc, Mapping) else None
            for comp in components or []:
                if isinstance(comp, Mapping) and comp.get("name"):
                    cache[str(comp["name"])] = comp
        return cache.get(name)

    return lookup


# ================================================================================================
# Evaluation and the retry loop
# ================================================================================================
@dataclass(frozen=True)
class Attempt:
    """One evaluation of one operation."""

    passed: bool
    message: str = ""
    absent: bool = False  # NotFound / no REST mapping: subject to the absent-resource grace
    observed: bool = False  # the object was seen (shape mismatch): the full budget applies


_PASS = Attempt(passed=True)


def _is_ghost(obj: Mapping[str, Any]) -> bool:
    """Terminating or NodeLost objects: ignored by negative list assertions (#1643)."""
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


def go_map(labels: Mapping[str, str] | None) -> str:
    """Go's ``%v`` rendering of a ``map[string]string`` (sorted keys)."""
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted((labels or {}).items())) + "]"


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
