"""``operator-health``: at least one gpu-operator pod is Running.

:func:`check_operator_health` lists the pods through the injected ``fetch`` in the recipe's operator
namespace; :func:`evaluate_operator_health` decides over the listed pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.deployment.common import CheckFailed, Emit, _describe_error, enabled_refs, log
from aicr_pytest.deployment.healthcheck import Fetch

DEFAULT_OPERATOR_NAMESPACE = "gpu-operator"
OPERATOR_COMPONENTS = ("gpu-operator", "gpu-operator-ocp")
OPERATOR_POD_LABELS: Mapping[str, str] = {"app": "gpu-operator"}

MSG_OPERATOR_LIST_FAILED = "[INTERNAL] failed to list gpu-operator pods: {err}"
MSG_OPERATOR_NO_PODS = "[NOT_FOUND] no gpu-operator pods found"
MSG_OPERATOR_NONE_RUNNING = "[INTERNAL] no gpu-operator pods are in Running state ({total} total)"
MSG_OPERATOR_PASSED = "operator-health: passed running={running}"
LINE_OPERATOR_FOUND = "Found {total} gpu-operator pod(s):"
LINE_OPERATOR_POD = "  {name}: {phase}"
LINE_OPERATOR_RUNNING = "Running: {running}/{total}"


def operator_namespace(refs: Iterable[Mapping[str, Any] | Any]) -> str:
    """Namespace of the enabled ``gpu-operator`` ref, else of an enabled ``gpu-operator-ocp``
    ref, else ``gpu-operator`` (AICR hard-codes ``gpu-operator``)."""
    enabled = {d.get("name"): d for d in enabled_refs(refs)}
    for name in OPERATOR_COMPONENTS:
        ref = enabled.get(name)
        if ref is not None:
            return str(ref.get("namespace") or DEFAULT_OPERATOR_NAMESPACE)
    return DEFAULT_OPERATOR_NAMESPACE


def evaluate_operator_health(pods: Sequence[Mapping[str, Any]], *, emit: Emit) -> str:
    """Verdict over the ``app=gpu-operator`` pods: pass iff at least one is Running."""
    if not pods:
        raise CheckFailed(MSG_OPERATOR_NO_PODS)
    emit(LINE_OPERATOR_FOUND.format(total=len(pods)))
    running = 0
    for pod in pods:
        phase = str((pod.get("status") or {}).get("phase") or "")
        if phase == "Running":
            running += 1
        emit(LINE_OPERATOR_POD.format(name=(pod.get("metadata") or {}).get("name", "?"), phase=phase))
    emit(LINE_OPERATOR_RUNNING.format(running=running, total=len(pods)))
    if running == 0:
        raise CheckFailed(MSG_OPERATOR_NONE_RUNNING.format(total=len(pods)))
    return MSG_OPERATOR_PASSED.format(running=running)


def check_operator_health(
    fetch: Fetch,
    refs: Iterable[Mapping[str, Any] | Any] = (),
    *,
    emit: Emit,
    namespace: str | None = None,
) -> str:
    """``operator-health``: list ``app=gpu-operator`` pods in the operator namespace.

    A list error raises :class:`Inconclusive` with the spec's text (the API, not the cluster's
    health, is the problem).
    """
    ns = namespace or operator_namespace(refs)
    log.info("listing pods namespace=%s label=app=gpu-operator", ns)
    try:
        pods = fetch("v1", "Pod", ns, None, OPERATOR_POD_LABELS)
    except Exception as err:
        raise Inconclusive(MSG_OPERATOR_LIST_FAILED.format(err=_describe_error(err))) from err
    return evaluate_operator_health(pods, emit=emit)
