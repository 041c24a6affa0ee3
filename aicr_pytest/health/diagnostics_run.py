"""``gpu-diagnostics`` against a live cluster: one DCGM diagnostic pod per targeted GPU node.

1. list the Nodes (and ResourceSlices, to name DRA-only GPU nodes) and pick the targeted GPU nodes
   (:func:`aicr_pytest.health.cluster.targeted_gpu_nodes`); cordoned nodes are named, not diagnosed;
2. create one pod per node through the run scope (run-scoped names and labels; cleanup is the
   ``run`` fixture's), all at once, so the nodes are diagnosed in parallel;
3. wait for all of them with one label-selected watch, on the injected clock, for the level's time
   budget (:data:`aicr_pytest.health.dcgm.LEVELS`); a pod whose image will not be pulled ends its
   wait early;
4. read each pod's log and judge every node's document with
   :func:`aicr_pytest.health.dcgm.check_diagnostics`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from aicr_pytest.core import allocmode
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.records import HealthRow
from aicr_pytest.core.settings import Toleration
from aicr_pytest.health import cluster as hc
from aicr_pytest.health import dcgm, table
from aicr_pytest.health import diagnostics as dg
from aicr_pytest.kube.client import RUN_ID_LABEL, Cluster
from aicr_pytest.kube.errors import ApiError
from aicr_pytest.kube.logs import read_log
from aicr_pytest.kube.proof import NoProofOfExecution
from aicr_pytest.kube.run import RunScope
from aicr_pytest.kube.wait import await_pod_outcomes, summarize

log = logging.getLogger("aicr_pytest.health.diagnostics")

JSON = dict[str, Any]
Emit = Callable[[str], None]
Outcome = Literal["ended", "pull", "vanished", "timeout"]

#: upper bound on one diag log (a level-4 document on 8 GPUs is well under this)
LOG_LIMIT_BYTES: Final = 8 << 20
_PARALLEL_REQUESTS: Final = 8
LINE_NODE: Final = "{node}: {gpus} GPUs, pod {pod}"
LINE_CORDONED: Final = "{node}: cordoned (spec.unschedulable), not diagnosed"


@dataclass
class DiagPod:
    node: str
    gpus: int
    name: str
    outcome: Outcome | None = None
    last: JSON | None = None


@dataclass
class DiagnosticsRun:
    """What the check did, for CTRF ``extra``."""

    namespace: str = ""
    image: str = ""
    level: int = 0
    pods: dict[str, str] = field(default_factory=dict)
    #: the per-node, per-GPU health table (CTRF ``aicr.healthTable``, :mod:`aicr_pytest.health.table`)
    rows: list[HealthRow] = field(default_factory=list)

    def as_extra(self) -> JSON:
        return {
            "namespace": self.namespace,
            "image": self.image,
            "level": self.level,
            "pods": dict(self.pods),
        }


def _gpus(node: Mapping[str, Any]) -> int:
    return allocmode.gpu_count((node.get("status") or {}).get("allocatable"))


def await_diag_pods(
    cluster: Cluster,
    namespace: str,
    pods: Sequence[DiagPod],
    *,
    selector: str,
    budget_s: float,
    clock: Clock,
    noun: str = "DCGM diagnostic pods",
) -> None:
    """Wait until every pod ended, vanished or cannot pull its image, or the budget; sets ``outcome``.

    Every one-pod-per-GPU-node check waits this way (``noun`` names its pods in the wait's lines)."""

    def outcome_of(pod: JSON) -> str | None:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return "ended"
        return "pull" if dg.pull_failure(pod) is not None else None

    ended = await_pod_outcomes(
        cluster,
        namespace,
        [p.name for p in pods],
        outcome_of,
        selector=selector,
        timeout=budget_s,
        clock=clock,
        what=f"{noun} {selector}",
        noun=noun,
    )
    for p in pods:
        outcome, p.last = ended[p.name]
        p.outcome = cast(Outcome, outcome)


@dataclass(frozen=True)
class PodMessages:
    """A per-node pod check's inconclusive lines (each formatted with ``node`` and ``pod``)."""

    vanished: str
    image_pull: str
    not_started: str
    no_log: str
    container: str
    limit_bytes: int


DIAG_MESSAGES: Final = PodMessages(
    dg.MSG_VANISHED, dg.MSG_IMAGE_PULL, dg.MSG_NOT_STARTED, dg.MSG_NO_LOG, dg.CONTAINER, LOG_LIMIT_BYTES
)


def pod_log(
    cluster: Cluster,
    namespace: str,
    p: DiagPod,
    *,
    image: str,
    budget_s: float,
    messages: PodMessages,
    prove: Callable[..., object] | None = None,
) -> tuple[str | None, str | None]:
    """``(log, None)`` for a pod that ran and wrote a log, else ``(None, the one inconclusive line)``.

    ``prove`` (the run's :meth:`~aicr_pytest.kube.run.RunScope.prove`) must accept the pod that
    ended: it started from a pulled image (any exit code: a failing tool exits non-zero)."""
    if p.outcome == "vanished":
        return None, messages.vanished.format(node=p.node, pod=p.name)
    if p.outcome == "pull":
        reason, why = dg.pull_failure(p.last) or ("", "")
        return None, messages.image_pull.format(node=p.node, image=image, pod=p.name, reason=reason, why=why)
    if p.outcome != "ended":
        state = summarize(p.last)
        return None, messages.not_started.format(node=p.node, pod=p.name, budget=budget_s, state=state)
    if prove is not None:
        try:
            prove(p.last or {}, exit_zero=False)
        except NoProofOfExecution as err:
            return None, str(err)
    try:
        text = read_log(cluster, namespace, p.name, messages.container, limit_bytes=messages.limit_bytes)
    except ApiError as err:
        return None, messages.no_log.format(node=p.node, pod=p.name, why=err)
    if not text.strip():
        return None, messages.no_log.format(node=p.node, pod=p.name, why="empty")
    return text, None


def judge_pod(
    cluster: Cluster,
    namespace: str,
    p: DiagPod,
    *,
    image: str,
    budget_s: float,
    prove: Callable[..., object] | None = None,
) -> dcgm.DcgmDiag | str:
    """The node's parsed diag, or the one inconclusive line saying why there is none."""
    text, reason = pod_log(
        cluster, namespace, p, image=image, budget_s=budget_s, messages=DIAG_MESSAGES, prove=prove
    )
    if text is None:
        return str(reason)
    try:
        return dcgm.parse_diag(text, p.node)
    except dcgm.DcgmDocumentError as err:
        return str(err)


def run_gpu_diagnostics(
    cluster: Cluster,
    run: RunScope,
    *,
    image: str,
    level: dcgm.DiagLevel,
    policy: str | None,
    node_selector: Mapping[str, str] | None,
    tolerations: Sequence[Toleration] | None,
    clock: Clock,
    emit: Emit,
    record: DiagnosticsRun | None = None,
) -> str:
    """``gpu-diagnostics``: returns the pass message (also emitted) or raises (see ``health.dcgm``)."""
    rec = record if record is not None else DiagnosticsRun()
    rec.image, rec.level = image, level.level
    nodes, dra, _ = hc.gpu_nodes(cluster, policy)
    unsure: list[str] = []
    rows: list[HealthRow] = []

    def not_judged(node: str, line: str) -> None:
        unsure.append(line)
        rows.append(table.node_row(node, table.DIAG_TEST, line))

    pods: list[DiagPod] = []
    for node in hc.targeted_gpu_nodes(nodes, dra, node_selector):
        name = allocmode.node_name(node)
        if allocmode.node_unschedulable(node):
            emit(LINE_CORDONED.format(node=name))
        elif _gpus(node) > 0:
            pods.append(DiagPod(name, _gpus(node), dg.pod_base(name)))
        else:
            not_judged(name, (dg.MSG_DRA_ONLY if dra.get(name) else dg.MSG_NO_GPUS).format(node=name))
    if pods:
        rec.namespace = run.ensure_namespace()
    created: list[DiagPod] = []
    tols = [t.to_k8s() for t in tolerations] if tolerations is not None else None
    for p in pods:
        manifest = dg.diag_pod(
            p.node,
            p.gpus,
            name=p.name,
            image=image,
            level=level,
            tolerations=tols,
            active_deadline_seconds=max(1, int(level.budget_s)),
        )
        try:
            obj = run.create({**manifest, "metadata": {**manifest["metadata"], "namespace": rec.namespace}})
        except ApiError as err:
            not_judged(p.node, dg.MSG_CREATE_FAILED.format(node=p.node, err=err))
            continue
        p.name = str(obj["metadata"]["name"])
        rec.pods[p.node] = p.name
        emit(LINE_NODE.format(node=p.node, gpus=p.gpus, pod=p.name))
        created.append(p)
    selector = f"{RUN_ID_LABEL}={run.run_id},{dg.APP_LABEL[0]}={dg.APP_LABEL[1]}"
    await_diag_pods(cluster, rec.namespace, created, selector=selector, budget_s=level.budget_s, clock=clock)
    with ThreadPoolExecutor(max_workers=max(1, min(_PARALLEL_REQUESTS, len(created)))) as pool:
        judged = list(
            pool.map(
                lambda p: judge_pod(
                    cluster, rec.namespace, p, image=image, budget_s=level.budget_s, prove=run.prove
                ),
                created,
            )
        )
    diags: list[dcgm.DcgmDiag] = []
    for p, d in zip(created, judged, strict=True):
        if isinstance(d, str):
            not_judged(p.node, d)
        else:
            diags.append(d)
            rows.extend(table.diag_rows(d))
    rec.rows = table.sort_rows(rows)
    message = dcgm.check_diagnostics(
        diags,
        level=level.level,
        expected_gpus={p.node: p.gpus for p in created},
        inconclusive=unsure,
    )
    emit(message)
    return message


__all__ = [
    "DIAG_MESSAGES",
    "DiagPod",
    "DiagnosticsRun",
    "PodMessages",
    "await_diag_pods",
    "judge_pod",
    "pod_log",
    "run_gpu_diagnostics",
]
