"""Trainer's objects and their pods, read and shaped without the cluster: run-scoped names,
pod-template labels, launcher termination and container state, eviction, Trainer's webhook
admission race, ``--toleration`` values.  :mod:`.cluster` does the I/O with them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from aicr_pytest.kube.run import RunScope
from aicr_pytest.nccl.parse import DIAGNOSTIC_TAIL_LINES
from aicr_pytest.nccl.render import BenchmarkNames, benchmark_names

__all__ = [
    "ADMISSION_RACE_MARKER",
    "DIAG_TAIL_LINES",
    "LAUNCHER_CONTAINER",
    "add_pod_template_labels",
    "admission_race",
    "eviction_detail",
    "scoped_names",
    "termination_message",
    "tolerations_k8s",
]

JSON = dict[str, Any]

LAUNCHER_CONTAINER = "node"  #: Kubeflow MPI plugin contract: the container is named ``node``
DIAG_TAIL_LINES = DIAGNOSTIC_TAIL_LINES
_EVICTION_REASONS = frozenset({"Evicted", "Preempting", "NodeLost", "Shutdown", "Terminated"})
_DISRUPTION_CONDITION = "DisruptionTarget"


def scoped_names(run: RunScope, check: str, tag: str | None = None) -> BenchmarkNames:
    """:func:`benchmark_names` made run-scoped, so :meth:`RunScope.create` keeps them as-is."""
    base = benchmark_names(run.run_id, check, run.worker_id, tag)
    return replace(
        base,
        trainjob=run.name(base.trainjob),
        runtime=run.name(base.runtime),
        compute_domain=run.name(base.compute_domain),
        imex_claim_template=run.name(base.imex_claim_template),
        roce_claim_template=run.name(base.roce_claim_template),
    )


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    return dict(meta.get("labels") or {})


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _container_status(pod: Mapping[str, Any], container: str) -> JSON:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == container:
            return dict(cs)
    return {}


def termination_message(pod: Mapping[str, Any], container: str = LAUNCHER_CONTAINER) -> str:
    state = _container_status(pod, container).get("state") or {}
    return str((state.get("terminated") or {}).get("message") or "")


def eviction_detail(pod: Mapping[str, Any]) -> str | None:
    """Why the pod was evicted/disrupted (status reason or ``DisruptionTarget``), else ``None``."""
    status = pod.get("status") or {}
    reason = str(status.get("reason") or "")
    if reason in _EVICTION_REASONS:
        return f"{reason}: {status.get('message') or 'no message'}"
    for cond in status.get("conditions") or []:
        if cond.get("type") == _DISRUPTION_CONDITION and cond.get("status") == "True":
            return f"{cond.get('reason') or _DISRUPTION_CONDITION}: {cond.get('message') or 'no message'}"
    return None


def add_pod_template_labels(runtime: JSON, labels: Mapping[str, str]) -> None:
    """Put ``labels`` on every replicatedJob's pod template, so the pods carry the run's labels."""
    jobs = ((runtime.get("spec") or {}).get("template") or {}).get("spec", {}).get("replicatedJobs")
    for job in jobs or []:
        if not isinstance(job, dict):
            continue
        pod_template = (((job.get("template") or {}).get("spec") or {}).get("template")) or None
        if not isinstance(pod_template, dict):
            continue
        meta = pod_template.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), **labels}


def _tail(text: str, lines: int = DIAG_TAIL_LINES) -> list[str]:
    body = text.splitlines()
    return body[-lines:]


#: Trainer's webhook denial while its informer cache lacks the TrainJob's runtime (AICR #1670).
ADMISSION_RACE_MARKER = "must be created before the TrainJob is created"
_INVALID_BAD_REQUEST_FORBIDDEN = frozenset({400, 403, 422})


def admission_race(status: int, text: str, runtime: str) -> bool:
    """Whether a refused TrainJob create is Trainer's webhook cache race, worth retrying.

    Either the text carries Trainer's own wording (:data:`ADMISSION_RACE_MARKER`, whatever the
    status), or an Invalid/BadRequest/Forbidden answer says the run's ``runtime`` is ``not found``.
    """
    if ADMISSION_RACE_MARKER in text:
        return True
    return status in _INVALID_BAD_REQUEST_FORBIDDEN and runtime in text and "not found" in text


def _describe_state(cs: Mapping[str, Any]) -> str:
    state = cs.get("state") or {}
    if "terminated" in state:
        t = state["terminated"] or {}
        msg = f" {t['message']}" if t.get("message") else ""
        return f"terminated reason={t.get('reason', '')} exitCode={t.get('exitCode', '')}{msg}"
    if "waiting" in state:
        w = state["waiting"] or {}
        msg = f" {w['message']}" if w.get("message") else ""
        return f"waiting reason={w.get('reason', '')}{msg}"
    return f"running (ready={str(bool(cs.get('ready'))).lower()})"


def tolerations_k8s(tolerations: Iterable[Any] | None) -> list[dict[str, str]] | None:
    """``--toleration`` values as Kubernetes dicts; ``None`` (no flag) stays ``None``."""
    if tolerations is None:
        return None
    out: list[dict[str, str]] = []
    for t in tolerations:
        to_k8s: Callable[[], dict[str, str]] | None = getattr(t, "to_k8s", None)
        out.append(to_k8s() if to_k8s is not None else dict(t))
    return out
