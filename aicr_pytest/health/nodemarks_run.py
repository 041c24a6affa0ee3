"""Bad nodes, labelled or tainted: the node reads and patches (see :mod:`.nodemarks` for what changes).

:func:`mark_nodes` reads each node with a verdict, plans its change and sends it as a merge patch
that carries the node's ``resourceVersion``; a conflict (someone changed the node meanwhile) is
read again and retried, at most :data:`ATTEMPTS` times.  A node that cannot be read or patched
(gone, refused) is recorded with its error and the others go on: marking never changes the run's
verdict.  Only the nodes in ``verdicts`` are ever touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from aicr_pytest.health.nodemarks import NodeVerdict, plan_marks
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError, Conflict

ATTEMPTS: Final = 3


def mark_node(cluster: Cluster, verdict: NodeVerdict, *, label: bool, taint: bool) -> dict[str, Any]:
    """Bring one node to its verdict; the record of what changed (``error`` when it could not)."""
    record: dict[str, Any] = {
        "node": verdict.node,
        "verdict": verdict.verdict,
        "checks": list(verdict.checks),
    }
    if verdict.reasons:
        record["reason"] = verdict.reason
    for attempt in range(1, ATTEMPTS + 1):
        try:
            node = cluster.get("v1", "Node", verdict.node)
            plan = plan_marks(node, verdict, label=label, taint=taint)
            if plan.patch is not None:
                cluster.patch("v1", "Node", verdict.node, plan.patch)
        except Conflict as exc:
            if attempt < ATTEMPTS:
                continue
            record["error"] = str(exc)
        except ApiError as exc:
            record["error"] = str(exc)
        else:
            record["changes"] = list(plan.changes)
        break
    return record


def mark_nodes(
    cluster: Cluster, verdicts: Mapping[str, NodeVerdict], *, label: bool, taint: bool
) -> list[dict[str, Any]]:
    """:func:`mark_node` for every node with a verdict, in name order."""
    return [mark_node(cluster, verdicts[name], label=label, taint=taint) for name in sorted(verdicts)]


__all__ = ["ATTEMPTS", "mark_node", "mark_nodes"]
