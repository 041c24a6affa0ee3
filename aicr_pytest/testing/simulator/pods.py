"""Pods: :class:`PodScript` (the scripted life of matching pods) and the scheduling predicates."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aicr_pytest.testing.selectors import label_selector_from_match
from aicr_pytest.testing.simulator.nodes import parse_quantity
from aicr_pytest.testing.store import Obj

TERMINAL = ("Succeeded", "Failed")


# ------------------------------------------------------------------------------ pod scripts --
@dataclass
class PodScript:
    """The scripted life of matching pods once bound to a node.

    Matching: every given criterion must hold (``name_prefix``, ``namespace``, ``labels`` subset,
    ``predicate``); ``times`` limits how many pods the script applies to.
    Timeline (clock seconds): ``start_after`` from binding to Running; ``run_for`` from Running to
    termination (``None``: runs until deleted). ``logs`` (one string for every container or a
    mapping container -> text) is written when the containers start; ``log_lines`` appends
    ``(seconds after start, text)`` chunks to the first container (or ``log_container``).
    Termination: ``exit_code`` and ``reason`` (default ``Completed`` for 0, else ``Error``; use
    ``OOMKilled`` with exit code 137 for OOM), ``message`` as the termination message;
    ``exit_codes`` gives containers their own exit code (the others keep ``exit_code``), and the pod
    fails when any container does.
    ``waiting_reason`` (e.g. ``ImagePullBackOff``) keeps the pod Pending with that waiting state.
    ``crashloop`` leaves the container in ``CrashLoopBackOff`` with ``restart_count`` restarts
    after a non-zero exit (pods that restart: ``restartPolicy`` Always/OnFailure, not Jobs).
    """

    name_prefix: str | None = None
    namespace: str | None = None
    labels: Mapping[str, str] | None = None
    predicate: Callable[[Obj], bool] | None = None
    start_after: float = 1.0
    run_for: float | None = 1.0
    exit_code: int = 0
    exit_codes: Mapping[str, int] | None = None
    reason: str | None = None
    message: str | None = None
    logs: str | Mapping[str, str] = ""
    log_lines: Sequence[tuple[float, str]] = ()
    log_container: str | None = None
    waiting_reason: str | None = None
    crashloop: bool = False
    restart_count: int = 5
    times: int | None = None
    used: int = 0

    def container_exit_code(self, container: str) -> int:
        return (self.exit_codes or {}).get(container, self.exit_code)

    def matches(self, pod: Obj) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        meta = pod.get("metadata") or {}
        if self.name_prefix is not None and not str(meta.get("name", "")).startswith(self.name_prefix):
            return False
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if self.labels:
            have = meta.get("labels") or {}
            if any(have.get(k) != v for k, v in self.labels.items()):
                return False
        return not (self.predicate is not None and not self.predicate(pod))


# ---------------------------------------------------------------------------- pod helpers --
def pod_requests(pod: Obj) -> dict[str, float]:
    """Effective requests: sum over containers (requests, defaulting to limits), max with init."""
    spec = pod.get("spec") or {}
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        merged = dict(res.get("limits") or {})
        merged.update(res.get("requests") or {})
        for k, v in merged.items():
            total[k] = total.get(k, 0.0) + parse_quantity(v)
    for c in spec.get("initContainers") or []:
        res = c.get("resources") or {}
        merged = dict(res.get("limits") or {})
        merged.update(res.get("requests") or {})
        for k, v in merged.items():
            total[k] = max(total.get(k, 0.0), parse_quantity(v))
    return total


def _tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        op = tol.get("operator", "Equal")
        if not tol.get("key"):
            if op == "Exists":
                return True
            continue
        if tol.get("key") != taint.get("key"):
            continue
        if op == "Exists" or tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _node_ready(node: Obj) -> bool:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def _match_node_selector_term(term: Mapping[str, Any], labels: Mapping[str, str], node: Obj) -> bool:
    for expr in term.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator"), list(expr.get("values") or [])
        have = labels.get(key)
        ok = {
            "In": have is not None and have in values,
            "NotIn": have is None or have not in values,
            "Exists": have is not None,
            "DoesNotExist": have is None,
            "Gt": have is not None and values and _int_or(have) > _int_or(values[0]),
            "Lt": have is not None and values and _int_or(have) < _int_or(values[0]),
        }.get(str(op), False)
        if not ok:
            return False
    for expr in term.get("matchFields") or []:
        if expr.get("key") == "metadata.name":
            name = node["metadata"]["name"]
            values = list(expr.get("values") or [])
            if (expr.get("operator") == "In") != (name in values):
                return False
    return True


def _int_or(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _affinity_ok(pod: Obj, node: Obj) -> bool:
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms")
    if required:
        return any(_match_node_selector_term(t, labels, node) for t in required)
    return True


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """True when ``labels`` satisfy a ``metav1.LabelSelector``."""
    return label_selector_from_match(selector).matches(labels)
