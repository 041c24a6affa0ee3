"""``check-nvidia-smi`` against a live cluster: the API side.

The verdicts (which nodes count, the busy test, pod and claim manifests, log parsing, the
summary) are pure functions in :mod:`aicr_pytest.deployment.nvidia_smi_plan`; this module only talks to the
cluster through the facade:

1. list Nodes (paginated), and ``gpu.nvidia.com`` ResourceSlices when ``resource.k8s.io`` is
   served, and hand them to :func:`~aicr_pytest.deployment.nvidia_smi_plan.discover_gpu_nodes`;
2. list the non-terminal pods of every GPU node (field selector ``spec.nodeName``), plus the
   ResourceClaims when one of them holds a claim, for the busy test;
3. create one run-scoped verify Pod per node (and, for a DRA-only node under the
   ``dra-resource-claim`` policy, a ResourceClaim for it) through :class:`RunScope`, so
   names never collide with a concurrent run or a leftover and cleanup is the ``aicr_run`` fixture's;
4. wait for *all* pods at once within the check's budget: one label-selected watch over the run's
   verify pods (:func:`~aicr_pytest.kube.wait.await_pod_outcomes`: list, then watch from its
   resourceVersion, resume, re-list on 410 Gone), with the deadline on the injected clock (the
   fake cluster's auto-advance moves that clock while the watch blocks, so a never-starting pod
   costs no real time), instead of AICR's sequential per-node waits;
5. read each pod's log by container name and summarize.

Outcomes: API failures while discovering are :class:`~aicr_pytest.core.errors.Inconclusive`
(``other``) with AICR's ``failed to query for GPU nodes`` text; a verify pod that vanished, never
finished within the budget, or could not be created is inconclusive for that node; a pod that
failed, printed incomplete output or showed too few GPUs fails the check naming the node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from aicr_pytest.core.clock import Clock
from aicr_pytest.core.errors import CheckFailed, CheckSkip, Inconclusive
from aicr_pytest.deployment import driver_floor
from aicr_pytest.deployment.nvidia_smi_plan import (
    DRA_GPU_DRIVER,
    MSG_CREATE_FAILED,
    MSG_NODES_QUERY_FAILED,
    VERIFY_CONTAINER,
    GpuNode,
    GpuNodeInventory,
    NodeResult,
    build_verify_claim,
    build_verify_pod,
    discover_gpu_nodes,
    format_pod_failure,
    plan_nvidia_smi,
    summarize_nvidia_smi,
    verify_node_output,
    verify_pod_name,
)
from aicr_pytest.kube.client import RUN_ID_LABEL, Cluster
from aicr_pytest.kube.errors import MSG_VANISHED, MSG_WAIT_TIMEOUT, ApiError
from aicr_pytest.kube.logs import read_log
from aicr_pytest.kube.proof import NoProofOfExecution
from aicr_pytest.kube.run import RunScope
from aicr_pytest.kube.wait import await_pod_outcomes, summarize

log = logging.getLogger("aicr_pytest.deployment.nvidia_smi")

JSON = dict[str, Any]
Emit = Callable[[str], None]

#: ``resource.k8s.io`` versions tried, newest first.
DRA_API_VERSIONS = ("v1", "v1beta2", "v1beta1")
#: Label every verify pod carries (set by :func:`~aicr_pytest.deployment.build_verify_pod`).
VERIFY_APP_LABEL = "app.kubernetes.io/name=nvidia-smi-verify"
#: Part of the check's budget kept for reading logs and events after the wait.
FINISH_RESERVE_S = 30.0
#: Upper bound on one verify log read (nvidia-smi prints a few KiB).
LOG_LIMIT_BYTES = 1 << 20
_PARALLEL_REQUESTS = 8
_NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"

MSG_POD_FAILED_CAUSE = "pod {ns}/{name} failed (phase Failed)"

Outcome = Literal["succeeded", "failed", "vanished", "timeout"]


@dataclass
class PodWait:
    """One verify pod being waited on and how its wait ended."""

    node: GpuNode
    name: str
    outcome: Outcome | None = None
    last: JSON | None = None


@dataclass
class NvidiaSmiRun:
    """Everything the check did, for CTRF ``extra`` and tests."""

    namespace: str = ""
    image: str = ""
    pods: dict[str, str] = field(default_factory=dict)  # node -> pod name
    message: str = ""

    def as_extra(self) -> JSON:
        return {"namespace": self.namespace, "image": self.image, "pods": dict(self.pods)}


def dra_api_version(cluster: Cluster) -> str | None:
    """The newest served ``resource.k8s.io`` version with ResourceSlices, or None."""
    for version in DRA_API_VERSIONS:
        if cluster.has_resource("resource.k8s.io", version, "resourceslices"):
            return f"resource.k8s.io/{version}"
    return None


def gpu_inventory(
    cluster: Cluster, *, policy: str, node_selector: Mapping[str, str] | None
) -> tuple[GpuNodeInventory, str | None]:
    """Discover GPU nodes, DRA-only nodes included, and report cordoned ones."""
    try:
        nodes = list(cluster.list("v1", "nodes"))
        dra_version = dra_api_version(cluster)
        slices = (
            list(cluster.list(dra_version, "resourceslices", field_selector=f"spec.driver={DRA_GPU_DRIVER}"))
            if dra_version
            else []
        )
    except ApiError as err:
        raise Inconclusive(MSG_NODES_QUERY_FAILED.format(err=err)) from err
    inventory = discover_gpu_nodes(nodes, slices, policy=policy, node_selector=node_selector)
    return inventory, dra_version


def _pods_on_node(cluster: Cluster, node: str) -> list[JSON] | None:
    try:
        return list(cluster.list("v1", "pods", None, field_selector=f"spec.nodeName={node},{_NON_TERMINAL}"))
    except ApiError as err:  # AICR: a node whose pods cannot be listed counts as busy
        log.warning("could not list pods on node %s, treating it as busy: %s", node, err)
        return None


def node_workloads(
    cluster: Cluster, nodes: Sequence[GpuNode], dra_version: str | None
) -> tuple[dict[str, list[JSON] | None], list[JSON]]:
    """Non-terminal pods per GPU node, and the ResourceClaims if any of those pods holds one."""
    names = [n.name for n in nodes]
    with ThreadPoolExecutor(max_workers=max(1, min(_PARALLEL_REQUESTS, len(names)))) as pool:
        pods_by_node = dict(zip(names, pool.map(lambda n: _pods_on_node(cluster, n), names), strict=True))
    claims: list[JSON] = []
    holds_claim = any(
        (p.get("spec") or {}).get("resourceClaims") for pods in pods_by_node.values() for p in pods or []
    )
    if holds_claim and dra_version:
        try:
            claims = list(cluster.list(dra_version, "resourceclaims"))
        except ApiError as err:  # unresolvable claims count as busy
            log.warning("could not list ResourceClaims, treating claim holders as busy: %s", err)
    return pods_by_node, claims


def run_token(run: RunScope) -> str:
    """The run-unique suffix :class:`RunScope` puts on names (``<run id>[-<worker>]``)."""
    return f"{run.run_id}-{run.worker_id}" if run.worker_id else run.run_id


def create_verify_pods(
    run: RunScope,
    nodes: Sequence[GpuNode],
    *,
    namespace: str,
    image: str,
    dra_version: str | None,
    node_selector: Mapping[str, str] | None,
    tolerations: Sequence[Any] | None,
    active_deadline_seconds: int,
) -> tuple[list[PodWait], list[NodeResult]]:
    """Create a verify pod (and for DRA nodes its claim) per node; creation errors are node results."""
    waits: list[PodWait] = []
    errors: list[NodeResult] = []
    token = run_token(run)
    for gpu in nodes:
        name = verify_pod_name(gpu.name, token)
        try:
            claim_name: str | None = None
            if gpu.mode == "dra":
                if dra_version is None:  # pragma: no cover - DRA nodes come from listed slices
                    raise Inconclusive("resource.k8s.io is not served")
                claim = run.create(
                    build_verify_claim(gpu, name=name, namespace=namespace, api_version=dra_version)
                )
                claim_name = str(claim["metadata"]["name"])
            pod = run.create(
                build_verify_pod(
                    gpu,
                    name=name,
                    namespace=namespace,
                    image=image,
                    tolerations=tolerations,
                    node_selector=node_selector,
                    claim_name=claim_name,
                    active_deadline_seconds=active_deadline_seconds,
                )
            )
        except ApiError as err:
            errors.append(NodeResult(gpu.name, False, MSG_CREATE_FAILED.format(err=err), inconclusive=True))
            continue
        waits.append(PodWait(gpu, str(pod["metadata"]["name"])))
    return waits, errors


def await_pods(
    cluster: Cluster,
    namespace: str,
    waits: Sequence[PodWait],
    *,
    selector: str,
    deadline: float,
    clock: Clock,
) -> None:
    """Wait for every pod to end (Succeeded/Failed), vanish, or the deadline; sets ``outcome``.

    One watch over the run's verify pods (``selector``) answers for all of them; the deadline is
    read from the injected clock. A pod missing from the watched view (never listed, or deleted
    while waiting) has vanished.
    """
    phases: dict[str, Outcome] = {"Succeeded": "succeeded", "Failed": "failed"}
    ended = await_pod_outcomes(
        cluster,
        namespace,
        [w.name for w in waits],
        lambda pod: phases.get(str((pod.get("status") or {}).get("phase"))),
        selector=selector,
        timeout=max(0.0, deadline - clock.time()),
        clock=clock,
        what=f"verify pods {selector}",
        noun="verify pods",
    )
    for w in waits:
        outcome, last = ended[w.name]
        w.outcome = cast(Outcome, outcome)
        if last is not None:
            w.last = last


def _read_log_or_empty(cluster: Cluster, namespace: str, pod: str) -> str:
    try:
        return read_log(cluster, namespace, pod, VERIFY_CONTAINER, limit_bytes=LOG_LIMIT_BYTES)
    except ApiError as err:  # e.g. the container never started
        log.info("no log for %s/%s: %s", namespace, pod, err)
        return ""


def _warning_events(cluster: Cluster, namespace: str, pod: str) -> list[JSON]:
    try:
        return list(cluster.list("v1", "events", namespace, field_selector=f"involvedObject.name={pod}"))
    except ApiError as err:
        log.info("no events for %s/%s: %s", namespace, pod, err)
        return []


def node_result(
    cluster: Cluster,
    namespace: str,
    w: PodWait,
    *,
    budget_s: float,
    prove: Callable[[Mapping[str, Any]], object] | None = None,
    floor: str | None = None,
) -> NodeResult:
    """The verdict for one node from how its pod's wait ended (logs/events read as needed).

    ``prove`` (the run's :meth:`~aicr_pytest.kube.run.RunScope.prove`) is asked first about a pod
    that succeeded: without proof of execution the node is ``other``, whatever its log says."""
    node = w.node.name
    if w.outcome == "succeeded":
        if prove is not None:
            try:
                prove(w.last or {})
            except NoProofOfExecution as err:
                return NodeResult(node, False, str(err), inconclusive=True)
        logs = _read_log_or_empty(cluster, namespace, w.name)
        return verify_node_output(w.node, namespace=namespace, pod_name=w.name, logs=logs, floor=floor)
    events = _warning_events(cluster, namespace, w.name)
    if w.outcome == "vanished":
        cause = MSG_VANISHED.format(what=f"pod {namespace}/{w.name}")
        return NodeResult(node, False, format_pod_failure(node, w.last, events, "", cause), inconclusive=True)
    logs = _read_log_or_empty(cluster, namespace, w.name)
    if w.outcome == "failed":
        cause = MSG_POD_FAILED_CAUSE.format(ns=namespace, name=w.name)
        return NodeResult(node, False, format_pod_failure(node, w.last, events, logs, cause))
    cause = MSG_WAIT_TIMEOUT.format(
        timeout=budget_s, what=f"pod {namespace}/{w.name}", state=summarize(w.last)
    )
    return NodeResult(node, False, format_pod_failure(node, w.last, events, logs, cause), inconclusive=True)


def check_nvidia_smi(
    cluster: Cluster,
    run: RunScope,
    *,
    image: str,
    policy: str,
    node_selector: Mapping[str, str] | None,
    tolerations: Sequence[Any] | None,
    budget_s: float,
    clock: Clock,
    emit: Emit,
    record: NvidiaSmiRun | None = None,
    floor: str | None = None,
) -> str:
    """Run ``check-nvidia-smi``; returns the pass message or raises (see the module docstring).

    ``budget_s`` is the check's timeout: pods get it as ``activeDeadlineSeconds`` and the wait
    ends :data:`FINISH_RESERVE_S` before it. ``floor``: the recipe's ``Deployment.gpu-driver.version``
    (:mod:`~aicr_pytest.deployment.driver_floor`); with one, a run that would skip fails instead.
    """
    start = clock.time()
    rec = record if record is not None else NvidiaSmiRun()
    rec.image = image
    inventory, dra_version = gpu_inventory(cluster, policy=policy, node_selector=node_selector)
    pods_by_node, claims = node_workloads(cluster, inventory.nodes, dra_version)
    try:
        nodes = plan_nvidia_smi(inventory, pods_by_node, claims, emit=emit)
    except CheckSkip as skip:
        if floor is None:
            raise
        raise CheckFailed(driver_floor.unmeasurable(floor, skip.reason)) from skip

    namespace = run.ensure_namespace()
    rec.namespace = namespace
    waits, results = create_verify_pods(
        run,
        nodes,
        namespace=namespace,
        image=image,
        dra_version=dra_version,
        node_selector=node_selector,
        tolerations=tolerations,
        active_deadline_seconds=max(1, int(budget_s)),
    )
    rec.pods.update({w.node.name: w.name for w in waits})
    wait_budget = max(1.0, budget_s - FINISH_RESERVE_S)
    await_pods(
        cluster,
        namespace,
        waits,
        selector=f"{RUN_ID_LABEL}={run.run_id},{VERIFY_APP_LABEL}",
        deadline=start + wait_budget,
        clock=clock,
    )
    with ThreadPoolExecutor(max_workers=max(1, min(_PARALLEL_REQUESTS, len(waits)))) as pool:
        results += list(
            pool.map(
                lambda w: node_result(
                    cluster, namespace, w, budget_s=wait_budget, prove=run.prove, floor=floor
                ),
                waits,
            )
        )
    rec.message = summarize_nvidia_smi(results, emit=emit, cordoned=inventory.cordoned)
    return rec.message


__all__ = [
    "DRA_API_VERSIONS",
    "MSG_POD_FAILED_CAUSE",
    "NvidiaSmiRun",
    "PodWait",
    "await_pods",
    "check_nvidia_smi",
    "create_verify_pods",
    "dra_api_version",
    "gpu_inventory",
    "node_result",
    "node_workloads",
    "run_token",
]
