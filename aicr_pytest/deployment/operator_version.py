"""``gpu-operator-version``: the running GPU Operator version against the recipe's constraint.

:func:`detect_operator_version` probes the usual namespaces × Deployment names (the recipe's
operator namespace first) and reads the version from the label, the image tag or the annotation;
:func:`check_gpu_operator_version` compares it with ``Deployment.gpu-operator.version``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.deployment.common import CheckFailed, Emit, _describe_error
from aicr_pytest.deployment.expected_resources import MSG_RESOURCE_OBJ_NOT_FOUND
from aicr_pytest.deployment.healthcheck import Fetch
from aicr_pytest.deployment.operator_health import operator_namespace

VERSION_CONSTRAINT = "Deployment.gpu-operator.version"
VERSION_NAMESPACES = ("gpu-operator", "nvidia-gpu-operator", "kube-system")
VERSION_DEPLOYMENT_NAMES = ("gpu-operator", "nvidia-gpu-operator")
VERSION_LABEL = "app.kubernetes.io/version"
VERSION_ANNOTATION = "nvidia.com/gpu-operator-version"

MSG_VERSION_NOT_FOUND = (
    "[INTERNAL] failed to detect GPU operator version: [NOT_FOUND] could not find GPU operator deployment "
    "in common namespaces: {err}"
)
MSG_VERSION_UNDETERMINED = "could not determine version from deployment {ns}/{name}"
MSG_VERSION_SKIP = "no Deployment.gpu-operator.version constraint in recipe; detected {version}"
MSG_VERSION_BAD_EXPRESSION = "[INVALID_REQUEST] invalid constraint expression: {err}"
MSG_VERSION_EVAL_FAILED = "[INTERNAL] constraint evaluation failed: {err}"
MSG_VERSION_UNSATISFIED = '[INTERNAL] GPU Operator version {version} does not satisfy constraint "{expr}"'
MSG_VERSION_SATISFIED = 'GPU Operator version {version} satisfies constraint "{expr}"'
LINE_VERSION_DETECTED = "Detected GPU Operator version: {version}"
LINE_VERSION_CONSTRAINT = "Constraint: {expr} → {result}"


def normalize_version(raw: str) -> str:
    """Trim and prefix ``v`` (``25.3.0`` → ``v25.3.0``); empty stays empty."""
    text = raw.strip()
    if text and not text.startswith("v"):
        text = "v" + text
    return text


def _image_tag(image: str) -> str | None:
    """The tag of an image reference (digest dropped; a registry port is not a tag)."""
    ref = image.split("@", 1)[0]
    colon = ref.rfind(":")
    if colon < 0 or colon < ref.rfind("/"):
        return None
    return ref[colon + 1 :] or None


def extract_operator_version(deployment: Mapping[str, Any]) -> str | None:
    """Label ``app.kubernetes.io/version``, else the tag of the first ``gpu-operator`` container
    image cut at the first ``-`` (``v25.3.0-ubi9`` → ``v25.3.0``), else the annotation
    ``nvidia.com/gpu-operator-version``; normalized.  ``None`` when none is usable."""
    metadata = deployment.get("metadata") or {}
    label = str((metadata.get("labels") or {}).get(VERSION_LABEL) or "").strip()
    if label:
        return normalize_version(label)
    pod_spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in pod_spec.get("containers") or []:
        image = str((container or {}).get("image") or "")
        if "gpu-operator" in image:
            tag = _image_tag(image)
            if tag:
                version = tag.split("-", 1)[0].strip()
                if version:
                    return normalize_version(version)
            break
    annotation = str((metadata.get("annotations") or {}).get(VERSION_ANNOTATION) or "").strip()
    if annotation:
        return normalize_version(annotation)
    return None


def detect_operator_version(fetch: Fetch, *, preferred_namespace: str | None = None) -> str:
    """Probe namespaces × names (the recipe's operator namespace first) for the operator
    Deployment; first one with a version wins.  Raises :class:`CheckFailed` with the spec's text
    when none is found, or :class:`Inconclusive` when every probe was an API error."""
    namespaces = list(VERSION_NAMESPACES)
    if preferred_namespace and preferred_namespace not in namespaces:
        namespaces.insert(0, preferred_namespace)
    elif preferred_namespace:
        namespaces.remove(preferred_namespace)
        namespaces.insert(0, preferred_namespace)
    last_error = ""
    api_errors = 0
    probes = 0
    for ns in namespaces:
        for name in VERSION_DEPLOYMENT_NAMES:
            probes += 1
            try:
                items = fetch("apps/v1", "Deployment", ns, name, None)
            except Exception as err:
                api_errors += 1
                last_error = _describe_error(err)
                continue
            if not items:
                last_error = MSG_RESOURCE_OBJ_NOT_FOUND.format(resource="deployments.apps", name=name)
                continue
            version = extract_operator_version(items[0])
            if version:
                return version
            last_error = MSG_VERSION_UNDETERMINED.format(ns=ns, name=name)
    message = MSG_VERSION_NOT_FOUND.format(err=last_error)
    if api_errors == probes:
        raise Inconclusive(message)
    raise CheckFailed(message)


def find_constraint(constraints: Iterable[Mapping[str, Any] | Any], name: str) -> str | None:
    """Value of the first constraint called exactly ``name`` (dicts or objects with name/value)."""
    for c in constraints:
        c_name = c.get("name") if isinstance(c, Mapping) else getattr(c, "name", None)
        if c_name == name:
            value = c.get("value") if isinstance(c, Mapping) else getattr(c, "value", None)
            return "" if value is None else str(value)
    return None


def _strip_code(text: str) -> str:
    """Drop a leading ``[CODE] `` so wrapped causes do not carry two codes."""
    return re.sub(r"^\[[A-Z_]+\]\s*", "", text)


def check_gpu_operator_version(
    fetch: Fetch,
    constraints: Iterable[Mapping[str, Any] | Any],
    *,
    emit: Emit,
    parse_expression: Callable[[str], Any],
    evaluate: Callable[[Any, str], bool],
    refs: Iterable[Mapping[str, Any] | Any] = (),
) -> str:
    """``gpu-operator-version``: detect the running version, then compare it with the deployment
    phase constraint ``Deployment.gpu-operator.version``.

    ``parse_expression(expr)`` raises on an invalid expression; ``evaluate(parsed, actual)``
    returns the verdict or raises when it cannot compare (both from the constraint language
    module).  No constraint → :class:`CheckSkip` (never a pass).
    """
    version = detect_operator_version(fetch, preferred_namespace=operator_namespace(refs))
    emit(LINE_VERSION_DETECTED.format(version=version))
    expr = find_constraint(constraints, VERSION_CONSTRAINT)
    if expr is None:
        raise CheckSkip(MSG_VERSION_SKIP.format(version=version))
    try:
        parsed = parse_expression(expr)
    except Exception as err:
        raise CheckFailed(MSG_VERSION_BAD_EXPRESSION.format(err=_strip_code(_describe_error(err)))) from err
    try:
        ok = bool(evaluate(parsed, version))
    except Exception as err:
        raise CheckFailed(MSG_VERSION_EVAL_FAILED.format(err=_strip_code(_describe_error(err)))) from err
    emit(LINE_VERSION_CONSTRAINT.format(expr=expr, result="true" if ok else "false"))
    if not ok:
        raise CheckFailed(MSG_VERSION_UNSATISFIED.format(version=version, expr=expr))
    return MSG_VERSION_SATISFIED.format(version=version, expr=expr)
