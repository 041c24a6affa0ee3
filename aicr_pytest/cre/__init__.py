"""The two CRE performance checks: ``nccl-cre-all-reduce-bw`` and ``cre-training-goodput``.

Both drive NVIDIA's Cluster Readiness Engine (NVCRE) through one namespaced ``Certification``
(group ``nvcre.nvidia.com/v1alpha1``, the public schema in NVIDIA/cluster-readiness-engine
``api/v1alpha1/certification_types.go``), as upstream AICR's ``validators/performance``
``cre_certification.go``, ``cre_nccl.go``, ``cre_goodput.go``, ``cre_measurement.go`` and
``cre_qualification.go`` do:

1. the recipe's constraint named like the check (none: skip, ``no <check> constraint in recipe``);
2. the qualification record: only ``eks × h100`` is measured end to end (anything else skips);
3. the schedulable GPU nodes (``--node-selector`` narrows them), at least two, capped at the node
   count the combination was qualified at, sorted by name;
4. one Certification with one category (``communication/nccl-all-reduce`` or
   ``training/nemotron5-8b``), ``gpusPerNode``, ``nodesPerJob`` = the capped node count,
   ``timeoutPerJob`` and ``target.nodeNames`` (plus the NoSchedule/NoExecute taints every target
   node shares, as ``taintSelectors``);
5. a wait (watch) until its ``Succeeded`` or ``Failed`` condition is ``True``;
6. the category's ``workflowRef`` in ``status.categoryStatuses``, then the measurements the
   Workflow owns and that are not older than the Certification: the largest ``busBW`` of the
   ``BandwidthMeasurement`` results, or the ``GoodputMeasurement`` ``status.result`` ratio (with
   ``avgTFLOPSPerGPU``, ``avgStepTimeSec``, ``interruptionCount``, ``lostWorkTimeSec`` reported);
7. the verdict: measured ``>=`` the constraint's number (upstream applies no tolerance here).

This module is pure (no cluster I/O); :mod:`.cluster` does the cluster work.  Differences from
upstream, on purpose: the Certification gets a run-scoped name and the run's labels and is deleted
by the run's cleanup (upstream: ``<prefix>-<8 hex>`` and its own teardown); a wait that times out and
a status that cannot be read are ``other`` (no verdict), not failures; the NCCL check does not read
the CRE launcher's log for the NET transport banner (upstream does) — NVCRE's own thresholds and
the measured bandwidth decide.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.core import records
from aicr_pytest.core.constraints import parse_threshold
from aicr_pytest.core.errors import CheckFailed, CheckSkip, Inconclusive
from aicr_pytest.core.gofmt import format_go_float

JSON = dict[str, Any]

GROUP: Final = "nvcre.nvidia.com"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
LABEL_CERTIFICATION: Final = f"{GROUP}/certification"
LABEL_WORKFLOW: Final = f"{GROUP}/workflow"

NCCL_CHECK: Final = "nccl-cre-all-reduce-bw"
GOODPUT_CHECK: Final = "cre-training-goodput"
GPU_RESOURCE: Final = "nvidia.com/gpu"
#: ``timeoutPerJob`` of the Certification (a Go duration)
TIMEOUT_PER_JOB: Final = "30m0s"
GOODPUT_METRICS: Final = ("avgTFLOPSPerGPU", "avgStepTimeSec", "interruptionCount", "lostWorkTimeSec")

MSG_NO_CONSTRAINT: Final = "no {check} constraint in recipe"
MSG_NOT_QUALIFIED: Final = "skipped - {check} is not qualified on {service} × {accelerator}"
MSG_GOODPUT_UNSUPPORTED: Final = "{check} currently supports only eks × h100, got {service} × {accelerator}"
MSG_NCCL_FEW_NODES: Final = (
    "recipe declares the {check} NCCL benchmark but the cluster has fewer than 2 GPU nodes required for "
    "the East-West fabric test — provision at least 2 GPU nodes or remove the constraint"
)
MSG_GOODPUT_FEW_NODES: Final = "recipe declares {check} but the cluster has fewer than 2 GPU nodes"
MSG_API_MISSING: Final = (
    "{check}: the NVCRE Certification API ({api}, certifications) is not served — "
    "install the nvcre component (NVIDIA Cluster Readiness Engine)"
)
MSG_NCCL_FAILED: Final = "CRE Certification failed"
MSG_TRAINING_FAILED: Final = "CRE training Certification failed: {summary}"
MSG_STATUSES_EMPTY: Final = "Certification category statuses are empty"
MSG_CATEGORY_MISSING: Final = "Certification {domain}/{variant} category status not found"
MSG_WORKFLOW_EMPTY: Final = "Certification {domain}/{variant} workflow reference is empty"
MSG_NO_BANDWIDTH: Final = "no BandwidthMeasurement with busBW results"
MSG_BAD_BUSBW: Final = "invalid busBW: {value!r}"
MSG_NO_GOODPUT: Final = "no GoodputMeasurement status for CRE training Certification"
MSG_GOODPUT_EMPTY: Final = "GoodputMeasurement status.result is empty"
MSG_BAD_GOODPUT: Final = "invalid goodput result: {value!r}"
MSG_TIMEOUT: Final = "timed out waiting for Certification {name}: {state}"
MSG_BW_LINE: Final = "NCCL All Reduce bandwidth ({check}): {actual}"
MSG_BW_NOT_SATISFIED: Final = 'NCCL bandwidth {actual} does not satisfy constraint "{constraint}"'
MSG_GOODPUT_LINE: Final = "CRE NeMo training goodput ratio: {actual}"
MSG_GOODPUT_NOT_SATISFIED: Final = 'goodput ratio {actual} does not satisfy constraint "{constraint}"'
MSG_CONSTRAINT_LINE: Final = "Constraint: {constraint} → {verdict}"


class CreCheckFailure(CheckFailed):
    """The check fails (CTRF ``failed``) with ``str(exc)`` as its message."""


@dataclass(frozen=True)
class CatalogEntry:
    """The NVCRE catalog entry a check drives on one combination, and the node footprint it was
    qualified at (upstream ``creCatalogEntry``)."""

    domain: str
    variant: str
    max_nodes: int
    run_name: str  #: base of the Certification's name


#: Upstream's qualification record (``creQualifiedEntries``): eks × h100, measured on 2x p5.48xlarge.
QUALIFIED: Final[Mapping[str, Mapping[tuple[str, str], CatalogEntry]]] = {
    NCCL_CHECK: {("eks", "h100"): CatalogEntry("communication", "nccl-all-reduce", 2, "aicr-cre-nccl")},
    GOODPUT_CHECK: {("eks", "h100"): CatalogEntry("training", "nemotron5-8b", 2, "aicr-cre-nemo")},
}


@dataclass(frozen=True)
class Plan:
    """What a check will run: its entry, the constraint, the threshold and the target nodes."""

    check: str
    entry: CatalogEntry
    constraint: str
    threshold: float
    nodes: tuple[str, ...]
    gpus_per_node: int
    taint_selectors: tuple[JSON, ...]


def qualification(
    check: str, constraint: str | None, service: str | None, accelerator: str | None
) -> CatalogEntry:
    """The catalog entry for ``check`` on the recipe's criteria, or :class:`CheckSkip` (no constraint,
    or a combination upstream has not qualified, with upstream's message)."""
    if constraint is None:
        raise CheckSkip(MSG_NO_CONSTRAINT.format(check=check))
    svc, acc = service or "", accelerator or ""
    entry = QUALIFIED.get(check, {}).get((svc, acc))
    if entry is None:
        template = MSG_GOODPUT_UNSUPPORTED if check == GOODPUT_CHECK else MSG_NOT_QUALIFIED
        raise CheckSkip(template.format(check=check, service=svc, accelerator=acc))
    return entry


def _allocatable_gpus(node: Mapping[str, Any]) -> int:
    raw = ((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE, "0")
    try:
        return int(str(raw))
    except ValueError:
        return 0


def _node_name(node: Mapping[str, Any]) -> str:
    return str((node.get("metadata") or {}).get("name") or "")


def gpu_nodes(nodes: Iterable[Mapping[str, Any]], node_selector: Mapping[str, str] | None) -> list[JSON]:
    """Schedulable nodes with allocatable GPUs (matching ``--node-selector`` when given)."""
    out: list[JSON] = []
    for node in nodes:
        if (node.get("spec") or {}).get("unschedulable") or _allocatable_gpus(node) <= 0:
            continue
        labels = (node.get("metadata") or {}).get("labels") or {}
        if node_selector and any(labels.get(k) != v for k, v in node_selector.items()):
            continue
        out.append(dict(node))
    return out


def common_taint_selectors(nodes: Sequence[Mapping[str, Any]]) -> tuple[JSON, ...]:
    """The NoSchedule/NoExecute taints every node carries, sorted, as NVCRE ``taintSelectors``."""
    shared: dict[tuple[str, str, str], None] | None = None
    for node in nodes:
        seen = {
            (str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", ""))): None
            for t in (node.get("spec") or {}).get("taints") or []
            if t.get("effect") in ("NoSchedule", "NoExecute")
        }
        shared = seen if shared is None else {k: None for k in shared if k in seen}
    out: list[JSON] = []
    for key, value, effect in sorted(shared or {}):
        sel: JSON = {"key": key}
        if value:
            sel["value"] = value
        sel["effect"] = effect
        out.append(sel)
    return tuple(out)


def plan(check: str, entry: CatalogEntry, constraint: str, nodes: Sequence[Mapping[str, Any]]) -> Plan:
    """Cap the GPU nodes at the qualified footprint; fewer than two fails (the recipe declared it)."""
    threshold = parse_threshold(constraint, check)
    if len(nodes) < 2:
        template = MSG_GOODPUT_FEW_NODES if check == GOODPUT_CHECK else MSG_NCCL_FEW_NODES
        raise CreCheckFailure(template.format(check=check))
    chosen = sorted(nodes, key=_node_name)[: max(1, entry.max_nodes)]
    return Plan(
        check=check,
        entry=entry,
        constraint=constraint,
        threshold=threshold,
        nodes=tuple(_node_name(n) for n in chosen),
        gpus_per_node=max(_allocatable_gpus(n) for n in chosen),
        taint_selectors=common_taint_selectors(chosen),
    )


def build_certification(p: Plan, name: str, namespace: str) -> JSON:
    """The Certification for ``p`` (upstream ``buildCRECertification``)."""
    target: JSON = {"nodeNames": list(p.nodes)}
    if p.taint_selectors:
        target["taintSelectors"] = [dict(s) for s in p.taint_selectors]
    return {
        "apiVersion": API_VERSION,
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "categories": [{"domain": p.entry.domain, "variant": p.entry.variant}],
            "gpusPerNode": p.gpus_per_node,
            "nodesPerJob": len(p.nodes),
            "timeoutPerJob": TIMEOUT_PER_JOB,
            "target": target,
        },
    }


def condition_true(obj: Mapping[str, Any] | None, cond_type: str) -> bool:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == cond_type and str(cond.get("status")) == "True":
            return True
    return False


def terminal(obj: Mapping[str, Any]) -> bool | str:
    """Wait predicate: ``True`` once ``Succeeded`` or ``Failed`` is ``True``, else the state."""
    if condition_true(obj, "Succeeded") or condition_true(obj, "Failed"):
        return True
    true = [
        str(c.get("type"))
        for c in (obj.get("status") or {}).get("conditions") or []
        if isinstance(c, Mapping) and str(c.get("status")) == "True"
    ]
    return ", ".join(true) if true else "no condition yet"


def progress_line(name: str, obj: Mapping[str, Any] | None) -> str:
    """One progress line while the Certification runs."""
    if obj is None:
        return f"Certification {name}: not seen yet"
    state = terminal(obj)
    statuses = [
        f"{s.get('domain')}/{s.get('variant')}={s.get('status') or '-'}"
        for s in (obj.get("status") or {}).get("categoryStatuses") or []
        if isinstance(s, Mapping)
    ]
    tail = f" ({', '.join(statuses)})" if statuses else ""
    return f"Certification {name}: {state if state is not True else 'terminal'}{tail}"


def failure_summary(obj: Mapping[str, Any]) -> str:
    """The ``True`` conditions with reason and message (upstream ``creTerminalConditionSummary``)."""
    conds = (obj.get("status") or {}).get("conditions")
    if not isinstance(conds, list):
        return "no status.conditions"
    parts: list[str] = []
    for c in conds:
        if not isinstance(c, Mapping) or str(c.get("status") or "").strip() != "True":
            continue
        typ, reason, msg = (
            str(c.get("type")),
            str(c.get("reason") or "").strip(),
            str(c.get("message") or "").strip(),
        )
        if reason and msg:
            parts.append(f"{typ} ({reason}): {msg}")
        elif reason:
            parts.append(f"{typ} ({reason})")
        elif msg:
            parts.append(f"{typ}: {msg}")
        else:
            parts.append(typ)
    return "; ".join(parts) if parts else "Failed with empty condition reason/message"


def check_failed(check: str, obj: Mapping[str, Any]) -> None:
    """A ``Failed`` Certification fails the check with upstream's message."""
    if condition_true(obj, "Failed"):
        if check == GOODPUT_CHECK:
            raise CreCheckFailure(MSG_TRAINING_FAILED.format(summary=failure_summary(obj)))
        raise CreCheckFailure(MSG_NCCL_FAILED)


def workflow_name(obj: Mapping[str, Any], entry: CatalogEntry) -> str:
    """The category's ``workflowRef.name``; missing or empty is :class:`Inconclusive`."""
    statuses = (obj.get("status") or {}).get("categoryStatuses")
    if not isinstance(statuses, list) or not statuses:
        raise Inconclusive(MSG_STATUSES_EMPTY)
    for status in statuses:
        if not isinstance(status, Mapping):
            continue
        if status.get("domain") != entry.domain or status.get("variant") != entry.variant:
            continue
        ref = status.get("workflowRef")
        name = ref.get("name") if isinstance(ref, Mapping) else None
        if not isinstance(name, str) or not name:
            raise Inconclusive(MSG_WORKFLOW_EMPTY.format(domain=entry.domain, variant=entry.variant))
        return name
    raise Inconclusive(MSG_CATEGORY_MISSING.format(domain=entry.domain, variant=entry.variant))


def belongs_to_run(obj: Mapping[str, Any], workflow: str, created_at: str) -> bool:
    """Owned by Workflow ``workflow`` and not created before the Certification (RFC 3339 times)."""
    meta = obj.get("metadata") or {}
    if str(meta.get("creationTimestamp") or "") < created_at:
        return False
    return any(
        o.get("kind") == "Workflow" and o.get("name") == workflow for o in meta.get("ownerReferences") or []
    )


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def max_bus_bandwidth(measurements: Iterable[Mapping[str, Any]], workflow: str, created_at: str) -> float:
    """The largest ``busBW`` among this run's ``BandwidthMeasurement`` results (upstream
    ``listMaxBusBandwidth``: a measurement without results is passed over; an unparsable busBW in
    one is ``other``)."""
    best: float | None = None
    for m in measurements:
        if not belongs_to_run(m, workflow, created_at):
            continue
        rows = [r for r in (m.get("status") or {}).get("results") or [] if isinstance(r, Mapping)]
        for row in rows:
            bw = _number(row.get("busBW"))
            if bw is None or not math.isfinite(bw):
                raise Inconclusive(MSG_BAD_BUSBW.format(value=row.get("busBW")))
            best = bw if best is None else max(best, bw)
    if best is None:
        raise Inconclusive(MSG_NO_BANDWIDTH)
    return best


def goodput_status(measurements: Iterable[Mapping[str, Any]], workflow: str, created_at: str) -> JSON:
    """The ``status`` of this run's first ``GoodputMeasurement`` that has one."""
    for m in measurements:
        if belongs_to_run(m, workflow, created_at) and isinstance(m.get("status"), Mapping):
            return dict(m["status"])
    raise Inconclusive(MSG_NO_GOODPUT)


def goodput_ratio(status: Mapping[str, Any]) -> float:
    raw = status.get("result")
    if raw is None or raw == "":
        raise Inconclusive(MSG_GOODPUT_EMPTY)
    ratio = _number(raw)
    if ratio is None or not math.isfinite(ratio):
        raise Inconclusive(MSG_BAD_GOODPUT.format(value=raw))
    return ratio


@dataclass(frozen=True)
class Verdict:
    passed: bool
    lines: tuple[str, ...]  #: the stdout lines upstream prints
    failure: str | None
    measurement: records.Measurement


def _metric(value: object) -> str:
    if isinstance(value, float):
        return format_go_float(value)
    return str(value)


def evaluate(p: Plan, measured: float, status: Mapping[str, Any] | None = None) -> Verdict:
    """Measured ``>=`` threshold, no tolerance; the lines and the failure as upstream words them."""
    passed = measured >= p.threshold
    verdict = "true" if passed else "false"
    constraint_line = MSG_CONSTRAINT_LINE.format(constraint=p.constraint, verdict=verdict)
    if p.check == GOODPUT_CHECK:
        actual = f"{measured:.4f}"
        lines = [MSG_GOODPUT_LINE.format(actual=actual), constraint_line]
        lines += [f"{k}: {_metric((status or {})[k])}" for k in GOODPUT_METRICS if k in (status or {})]
        failure = MSG_GOODPUT_NOT_SATISFIED.format(actual=actual, constraint=p.constraint)
        name, unit = "goodput ratio", ""
    else:
        actual = f"{measured:.2f}"
        lines = [MSG_BW_LINE.format(check=p.check, actual=actual), constraint_line]
        failure = MSG_BW_NOT_SATISFIED.format(actual=actual, constraint=p.constraint)
        name, unit = "bus bandwidth", "GB/s"
    measurement = records.Measurement(
        name=name,
        value=measured,
        unit=unit,
        constraint=p.constraint,
        tolerance=0.0,
        effective_threshold=p.threshold,
        passed=passed,
    )
    return Verdict(
        passed=passed, lines=tuple(lines), failure=None if passed else failure, measurement=measurement
    )


def goodput_metrics(status: Mapping[str, Any]) -> JSON:
    """The goodput metrics NVCRE reported (CTRF ``extra``)."""
    return {k: status[k] for k in ("result", "trainingTimeSec", *GOODPUT_METRICS) if k in status}
