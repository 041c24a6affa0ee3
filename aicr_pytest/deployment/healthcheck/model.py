"""Health-check files: the model and the loader, with its read-only allowlist.

A component's health check is YAML in one of two shapes:

* a chainsaw ``Test`` (``apiVersion: chainsaw.kyverno.io/v1alpha1``, ``kind: Test``) whose
  ``spec.steps[].try[]`` may only use the read-only operations ``assert`` and ``error``;
* raw multi-document Kubernetes YAML, where every document is an ``assert`` by name.

:func:`parse_health_check` checks every document before anything runs; a violation raises
:class:`HealthCheckRejected`, whose ``str()`` is the user-facing ``[INVALID_REQUEST]`` message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from aicr_pytest.core import yamlio
from aicr_pytest.core.goduration import parse_go_duration
from aicr_pytest.deployment.treematch import _one_line, _render

__all__ = [
    "ALLOWED_OPERATIONS",
    "HealthCheck",
    "HealthCheckRejected",
    "ResourceAssertion",
    "TestCase",
    "TestStep",
    "parse_health_check",
]

CHAINSAW_API_PREFIX = "chainsaw.kyverno.io/"
ALLOWED_OPERATIONS: tuple[str, ...] = ("assert", "error")
FORBIDDEN_BLOCKS: tuple[str, ...] = ("catch", "finally", "cleanup")
# Keys of a try[] entry that describe the operation rather than being one.
_OPERATION_META_KEYS = frozenset({"description"})

# -- messages ----------------------------------------------------------------------------------------
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


class HealthCheckRejected(Exception):
    """A health-check file that must not run (allowlist, malformed).  ``str()`` is the message."""


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
