"""``gpu-cuda-smoke`` against a live cluster: one CUDA smoke pod per targeted GPU node.

1. list the Nodes and pick the targeted GPU nodes (:func:`aicr_pytest.health.cluster.targeted_gpu_nodes`);
   none at all skips the check; cordoned nodes are named, not tested;
2. create one pod per node through the run scope (run-scoped names and labels; cleanup is the
   ``run`` fixture's), all at once, so the nodes are tested in parallel;
3. wait for all of them with one label-selected watch on the injected clock
   (:data:`aicr_pytest.health.cudasmoke.BUDGET_S`); a pod whose image will not be pulled ends its wait early;
4. prove each pod ran (:mod:`aicr_pytest.kube.proof`), read its log and judge every node with
   :func:`aicr_pytest.health.cudasmoke.parse_smoke` and
   :func:`~aicr_pytest.health.cudasmoke.check_cuda_smoke`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from aicr_pytest.core import allocmode
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.errors import CheckSkip
from aicr_pytest.core.settings import Toleration
from aicr_pytest.health import cluster as hc
from aicr_pytest.health import cudasmoke as cs
from aicr_pytest.health.diagnostics_run import DiagPod, PodMessages, await_diag_pods, pod_log
from aicr_pytest.kube.client import RUN_ID_LABEL, Cluster
from aicr_pytest.kube.errors import ApiError
from aicr_pytest.kube.run import RunScope

log = logging.getLogger("aicr_pytest.health.cudasmoke")

Emit = Callable[[str], None]

LOG_LIMIT_BYTES: Final = 1 << 20
LINE_NODE: Final = "{node}: {gpus} GPUs, pod {pod}"
LINE_CORDONED: Final = "{node}: cordoned (spec.unschedulable), not tested"
SKIP_NO_GPU_NODES: Final = "no targeted GPU node: gpu-cuda-smoke has no GPU to run a CUDA kernel on"


@dataclass
class SmokeRun:
    """What the check did, for CTRF ``extra``."""

    namespace: str = ""
    image: str = ""
    pods: dict[str, str] = field(default_factory=dict)

    def as_extra(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "image": self.image, "pods": dict(self.pods)}


#: gpu-cuda-smoke's inconclusive lines (the pod wait and log reading are gpu-diagnostics')
SMOKE_MESSAGES: Final = PodMessages(
    cs.MSG_VANISHED, cs.MSG_IMAGE_PULL, cs.MSG_NOT_STARTED, cs.MSG_NO_LOG, cs.CONTAINER, LOG_LIMIT_BYTES
)


def judge_pod(
    cluster: Cluster,
    namespace: str,
    p: DiagPod,
    *,
    image: str,
    prove: Callable[..., object] | None = None,
) -> cs.SmokeResult | str:
    """The node's parsed report, or the one inconclusive line saying why there is none (any exit
    code is proof enough: the script exits non-zero when a device or a kernel failed)."""
    text, reason = pod_log(
        cluster, namespace, p, image=image, budget_s=cs.BUDGET_S, messages=SMOKE_MESSAGES, prove=prove
    )
    if text is None:
        return str(reason)
    try:
        return cs.parse_smoke(text, p.node, p.name, p.gpus)
    except cs.SmokeOutputError as err:
        return str(err)


def _targets(
    nodes: Sequence[Mapping[str, Any]], dra: Mapping[str, int], node_selector: Mapping[str, str] | None
) -> list[Mapping[str, Any]]:
    targeted = hc.targeted_gpu_nodes(nodes, dra, node_selector)
    if not targeted:
        raise CheckSkip(SKIP_NO_GPU_NODES)
    return targeted


def run_gpu_cuda_smoke(
    cluster: Cluster,
    run: RunScope,
    *,
    image: str,
    policy: str | None,
    node_selector: Mapping[str, str] | None,
    tolerations: Sequence[Toleration] | None,
    clock: Clock,
    emit: Emit,
    record: SmokeRun | None = None,
) -> str:
    """``gpu-cuda-smoke``: returns the pass message (also emitted) or raises (see ``health.cudasmoke``)."""
    rec = record if record is not None else SmokeRun()
    rec.image = image
    nodes, dra, _ = hc.gpu_nodes(cluster, policy)
    unsure: list[str] = []
    pods: list[DiagPod] = []
    for node in _targets(nodes, dra, node_selector):
        name = allocmode.node_name(node)
        gpus = allocmode.gpu_count((node.get("status") or {}).get("allocatable"))
        if allocmode.node_unschedulable(node):
            emit(LINE_CORDONED.format(node=name))
        elif gpus > 0:
            pods.append(DiagPod(name, gpus, cs.pod_base(name)))
        else:
            unsure.append(cs.MSG_NO_GPUS.format(node=name))
    if pods:
        rec.namespace = run.ensure_namespace()
    created: list[DiagPod] = []
    tols = [t.to_k8s() for t in tolerations] if tolerations is not None else None
    for p in pods:
        manifest = cs.smoke_pod(
            p.node,
            p.gpus,
            name=p.name,
            image=image,
            tolerations=tols,
            active_deadline_seconds=int(cs.BUDGET_S),
        )
        try:
            obj = run.create({**manifest, "metadata": {**manifest["metadata"], "namespace": rec.namespace}})
        except ApiError as err:
            unsure.append(cs.MSG_CREATE_FAILED.format(node=p.node, err=err))
            continue
        p.name = str(obj["metadata"]["name"])
        rec.pods[p.node] = p.name
        emit(LINE_NODE.format(node=p.node, gpus=p.gpus, pod=p.name))
        created.append(p)
    if created:
        selector = f"{RUN_ID_LABEL}={run.run_id},{cs.APP_LABEL[0]}={cs.APP_LABEL[1]}"
        await_diag_pods(
            cluster,
            rec.namespace,
            created,
            selector=selector,
            budget_s=cs.BUDGET_S,
            clock=clock,
            noun="CUDA smoke pods",
        )
    results: list[cs.SmokeResult] = []
    for p in created:
        judged = judge_pod(cluster, rec.namespace, p, image=image, prove=run.prove)
        if isinstance(judged, str):
            unsure.append(judged)
        else:
            results.append(judged)
    message = cs.check_cuda_smoke(results, unsure)
    emit(message)
    return message


__all__ = ["LINE_CORDONED", "LINE_NODE", "SKIP_NO_GPU_NODES", "SmokeRun", "judge_pod", "run_gpu_cuda_smoke"]
