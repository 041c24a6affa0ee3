"""Bad nodes, labelled or tainted (``--label-bad-nodes``, ``--taint-bad-nodes``): what to change (pure).

After a run, :func:`node_verdicts` reads what the node-health checks and NCCL bad-node isolation
said about each node from their CTRF ``extra``:

* ``gpu-diagnostics`` and ``gpu-health``: the health table (``aicr.healthTable``): a node with a
  ``fail`` row failed, a node whose rows all pass (or skip) passed, anything else is undecided;
* ``gpu-inventory``: its per-node verdicts (``aicr.gpuInventory.verdicts``);
* NCCL bad-node isolation (``aicr.ncclIsolation``): the named suspects failed (the nodes it
  cleared are not node-health verdicts and are left alone).

A node any of them failed is ``failed``; a node at least one passed and none failed or left
undecided is ``passed``; every other node is left untouched (fail closed: an undecided node is
neither marked healthy nor bad).  A node the run did not check never appears.

:func:`plan_marks` then says, for one node as it is now, the merge patch that brings it to its
verdict and the changes that patch makes: label :data:`LABEL` = ``failed``/``passed``, annotation
:data:`REASON_ANNOTATION` (the checks and their one-line reasons; removed once the node passes),
and with ``taint`` the taint :data:`LABEL` = ``failed`` ``NoSchedule`` (added to a failed node,
removed from a node that passes).  The I/O is :mod:`.nodemarks_run`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

LABEL: Final = "aicr.run/validation"
REASON_ANNOTATION: Final = "aicr.run/validation-reason"
FAILED: Final = "failed"
PASSED: Final = "passed"
TAINT_EFFECT: Final = "NoSchedule"
#: the longest reason kept in the annotation (one line)
MAX_REASON: Final = 512

HEALTH_TABLE_KEY: Final = "aicr.healthTable"
INVENTORY_KEY: Final = "aicr.gpuInventory"
ISOLATION_KEY: Final = "aicr.ncclIsolation"
#: CTRF report-level ``extra`` key of the changes a run made
EXTRA_NODE_MARKS: Final = "aicr.nodeMarks"

Verdict = Literal["failed", "passed"]
_State = Literal["fail", "pass", "other"]


@dataclass(frozen=True)
class NodeVerdict:
    node: str
    verdict: Verdict
    #: ``check: reason`` per check that failed the node (empty when it passed)
    reasons: tuple[str, ...] = ()
    #: the checks that looked at the node
    checks: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        """The annotation's one line."""
        text = "; ".join(self.reasons).replace("\n", " ")
        return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


@dataclass
class _Seen:
    states: list[tuple[str, _State, str]] = field(default_factory=list)


def _row_states(rows: Any) -> dict[str, tuple[_State, str]]:
    """Per node of a health table: its state and the first failing row's text."""
    out: dict[str, tuple[_State, str]] = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, Mapping) or not isinstance(row.get("node"), str) or not row["node"]:
            continue
        node, result = row["node"], row.get("result")
        state: _State = "fail" if result == "fail" else "pass" if result in ("pass", "skip") else "other"
        gpu = f"GPU {row['gpu']} " if row.get("gpu") else ""
        detail = f"{gpu}{row.get('test', '')}: {row.get('detail', '')}".strip().rstrip(":")
        prev = out.get(node)
        if (
            prev is None
            or (prev[0] == "pass" and state != "pass")
            or (prev[0] == "other" and state == "fail")
        ):
            out[node] = (state, detail if state != "pass" else "")
    return out


def _inventory_states(raw: Any) -> dict[str, tuple[_State, str]]:
    verdicts = raw.get("verdicts") if isinstance(raw, Mapping) else None
    out: dict[str, tuple[_State, str]] = {}
    for node, v in (verdicts or {}).items() if isinstance(verdicts, Mapping) else ():
        result = v.get("result") if isinstance(v, Mapping) else None
        state: _State = result if result in ("fail", "pass") else "other"
        out[str(node)] = (state, str(v.get("detail", "")) if isinstance(v, Mapping) else "")
    return out


def _isolation_states(raw: Any) -> dict[str, tuple[_State, str]]:
    suspects = raw.get("suspects") if isinstance(raw, Mapping) else None
    return {
        str(node): ("fail", "named by bad-node isolation")
        for node in (suspects if isinstance(suspects, list) else [])
    }


def check_states(extra: Mapping[str, Any]) -> dict[str, tuple[_State, str]]:
    """What one check's CTRF ``extra`` says about each node it looked at."""
    states: dict[str, tuple[_State, str]] = {}
    for part in (
        _row_states(extra.get(HEALTH_TABLE_KEY)),
        _inventory_states(extra.get(INVENTORY_KEY)),
        _isolation_states(extra.get(ISOLATION_KEY)),
    ):
        for node, (state, detail) in part.items():
            prev = states.get(node)
            if prev is None or prev[0] == "pass" or (prev[0] == "other" and state == "fail"):
                states[node] = (state, detail)
    return states


def node_verdicts(results: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, NodeVerdict]:
    """Per node, from ``(check name, CTRF extra)`` pairs: the nodes with a verdict (see the module)."""
    seen: dict[str, _Seen] = {}
    for check, extra in results:
        for node, (state, detail) in check_states(extra).items():
            seen.setdefault(node, _Seen()).states.append((check, state, detail))
    out: dict[str, NodeVerdict] = {}
    for node in sorted(seen):
        states = seen[node].states
        checks = tuple(dict.fromkeys(c for c, _, _ in states))
        failed = [f"{c}: {d}" if d else c for c, s, d in states if s == "fail"]
        if failed:
            out[node] = NodeVerdict(node, FAILED, tuple(dict.fromkeys(failed)), checks)
        elif all(s == "pass" for _, s, _ in states):
            out[node] = NodeVerdict(node, PASSED, (), checks)
    return out


@dataclass(frozen=True)
class MarkPlan:
    """The merge patch for one node (``None``: nothing to change) and the changes it makes."""

    node: str
    patch: dict[str, Any] | None
    changes: tuple[str, ...]


def _taint_key(taint: Mapping[str, Any]) -> tuple[Any, Any]:
    return taint.get("key"), taint.get("effect")


def plan_marks(node: Mapping[str, Any], verdict: NodeVerdict, *, label: bool, taint: bool) -> MarkPlan:
    """What to change on ``node`` (the Node object as read) for ``verdict``.

    ``label``: the validation label and the reason annotation; ``taint``: the NoSchedule taint.
    The patch carries the node's ``resourceVersion``, so a concurrent change is a conflict, not a
    lost update.
    """
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    taints: list[Mapping[str, Any]] = list((node.get("spec") or {}).get("taints") or [])
    patch_meta: dict[str, Any] = {}
    changes: list[str] = []
    failed = verdict.verdict == FAILED
    if label:
        was = labels.get(LABEL)
        if was != verdict.verdict:
            patch_meta["labels"] = {LABEL: verdict.verdict}
            changes.append(f"label {LABEL}={verdict.verdict}" + (f" (was {was})" if was is not None else ""))
        reason = verdict.reason if failed else None
        if annotations.get(REASON_ANNOTATION) != reason:
            patch_meta["annotations"] = {REASON_ANNOTATION: reason}
            changes.append(
                f"annotation {REASON_ANNOTATION} set" if reason else f"annotation {REASON_ANNOTATION} removed"
            )
    patch: dict[str, Any] = {}
    if taint:
        ours = (LABEL, TAINT_EFFECT)
        has = any(_taint_key(t) == ours for t in taints)
        if failed and not has:
            patch["spec"] = {"taints": [*taints, {"key": LABEL, "value": FAILED, "effect": TAINT_EFFECT}]}
            changes.append(f"taint {LABEL}={FAILED}:{TAINT_EFFECT} added")
        elif not failed and has:
            patch["spec"] = {"taints": [t for t in taints if _taint_key(t) != ours]}
            changes.append(f"taint {LABEL}={FAILED}:{TAINT_EFFECT} removed")
    if patch_meta or patch:
        rv = meta.get("resourceVersion")
        patch["metadata"] = {**patch_meta, **({"resourceVersion": rv} if rv else {})}
        return MarkPlan(verdict.node, patch, tuple(changes))
    return MarkPlan(verdict.node, None, ())


def change_lines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The terminal lines of :func:`~.nodemarks_run.mark_nodes`' records, one per node."""
    lines = []
    for r in records:
        what = "; ".join(r.get("changes") or []) or "unchanged"
        if r.get("error"):
            what = f"not changed: {r['error']}"
        lines.append(f"node {r['node']} {r['verdict']}: {what}")
    return lines


__all__ = [
    "EXTRA_NODE_MARKS",
    "FAILED",
    "LABEL",
    "PASSED",
    "REASON_ANNOTATION",
    "TAINT_EFFECT",
    "MarkPlan",
    "NodeVerdict",
    "change_lines",
    "check_states",
    "node_verdicts",
    "plan_marks",
]
