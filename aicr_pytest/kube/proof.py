"""Proof of execution: did the pod a check read really run?

A check that passes on what a pod printed must first know the pod ran.  :func:`prove_execution`
reads the pod object (as the API returns it) and requires, for every container it names (default:
every container of ``spec.containers``):

* a terminated state — ``state.terminated``, or ``lastState.terminated`` after a restart — with a
  ``startedAt`` time (the container really started);
* a non-empty ``imageID`` (an image was pulled and run);
* exit code 0.

and that the pod's node is not one KWOK simulates: KWOK manages nodes carrying the annotation (or
label) ``kwok.x-k8s.io/node: fake`` (its selector flags ``--manage-nodes-with-annotation-selector`` /
``--manage-nodes-with-label-selector``, https://kwok.sigs.k8s.io/docs/user/kwok-manage-nodes-and-pods/);
nothing executes there, however the pod's status reads; and that the node's GPUs are not a
simulator's (:mod:`aicr_pytest.kube.simulators`: NVIDIA's NVML mock, Run:ai's fake-gpu-operator), whose
pods really run but answer ``nvidia-smi`` and NVML from a mock.  Such a node is refused, naming the
simulator, unless ``allow_fake_nodes`` (the run expects fake nodes); the container checks still apply
then.

Anything missing raises :class:`NoProofOfExecution` (an
:class:`~aicr_pytest.core.errors.Inconclusive`: CTRF ``other``) with one line saying what is missing.

:func:`prove_pod` is the cluster-side entry every family calls (through
:meth:`aicr_pytest.kube.run.RunScope.prove`, which carries the run's ``--allow-fake-nodes``): it reads
the pod's Node object and the pods bound to it when fake nodes are not allowed, then applies
:func:`prove_execution`.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.core.errors import Inconclusive, first_line
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError
from aicr_pytest.kube.simulators import Simulated, detect_simulator

KWOK_NODE_KEY: Final = "kwok.x-k8s.io/node"
KWOK_FAKE: Final = "fake"

MSG_NO_PROOF: Final = "no proof of execution for pod {pod} on node {node}: {why}"
WHY_FAKE_NODE: Final = (
    "KWOK marks the node as fake (kwok.x-k8s.io/node=fake), so nothing ran there "
    "(--allow-fake-nodes accepts fake nodes)"
)
WHY_SIMULATED: Final = (
    "{simulator} simulates its GPUs ({evidence}), so no GPU ran the pod "
    "(--allow-fake-nodes accepts simulated nodes)"
)
WHY_NODE_PODS_UNREADABLE: Final = (
    "the pods on its node could not be read to rule out a GPU simulator ({error})"
)
WHY_UNSCHEDULED: Final = "the pod was never scheduled"
WHY_NO_STATUSES: Final = "no container status (the pod never started)"
WHY_NO_CONTAINERS: Final = "the pod has no containers"
WHY_NO_STATUS: Final = "container {c} has no status (it never started)"
WHY_RUNNING: Final = "container {c} has not finished (running)"
WHY_WAITING: Final = "container {c} never ran (waiting: {reason})"
WHY_NOT_TERMINATED: Final = "container {c} has no terminated state"
WHY_NO_START: Final = "container {c} never started (no startedAt)"
WHY_NO_IMAGE_ID: Final = "container {c} has an empty imageID"
WHY_EXIT: Final = "container {c} exited with code {code}{reason}"
WHY_NODE_UNREADABLE: Final = "its node could not be read to rule out a KWOK fake node ({error})"
NO_NODE: Final = "(none)"


class NoProofOfExecution(Inconclusive):
    """The pod cannot be shown to have run; ``str()`` is the one-line reason."""


@dataclass(frozen=True)
class ContainerProof:
    name: str
    image_id: str
    started_at: str
    finished_at: str | None
    exit_code: int


@dataclass(frozen=True)
class ExecutionProof:
    pod: str
    node: str
    containers: tuple[ContainerProof, ...]

    def as_extra(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "node": self.node,
            "containers": [
                {
                    "name": c.name,
                    "imageID": c.image_id,
                    "startedAt": c.started_at,
                    "finishedAt": c.finished_at,
                    "exitCode": c.exit_code,
                }
                for c in self.containers
            ],
        }


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def is_fake_node(node: Mapping[str, Any]) -> bool:
    """The node carries KWOK's ``kwok.x-k8s.io/node: fake`` annotation or label."""
    meta = _map(node.get("metadata"))
    return any(_map(meta.get(k)).get(KWOK_NODE_KEY) == KWOK_FAKE for k in ("annotations", "labels"))


def _container(name: str, status: Mapping[str, Any] | None, exit_zero: bool = True) -> ContainerProof | str:
    """The proof for one container, or why there is none (``exit_zero=False``: any exit code)."""
    if status is None:
        return WHY_NO_STATUS.format(c=name)
    state, last = _map(status.get("state")), _map(status.get("lastState"))
    term = _map(state.get("terminated")) or _map(last.get("terminated"))
    if not term:
        if "running" in state:
            return WHY_RUNNING.format(c=name)
        if "waiting" in state:
            reason = str(_map(state.get("waiting")).get("reason") or "no reason given")
            return WHY_WAITING.format(c=name, reason=reason)
        return WHY_NOT_TERMINATED.format(c=name)
    started = term.get("startedAt")
    if not isinstance(started, str) or not started.strip():
        return WHY_NO_START.format(c=name)
    image_id = status.get("imageID")
    if not isinstance(image_id, str) or not image_id.strip():
        return WHY_NO_IMAGE_ID.format(c=name)
    code = term.get("exitCode")
    if not isinstance(code, int) or isinstance(code, bool) or (exit_zero and code != 0):
        reason = f" ({term['reason']})" if term.get("reason") else ""
        return WHY_EXIT.format(c=name, code=code if code is not None else "unknown", reason=reason)
    finished = term.get("finishedAt")
    return ContainerProof(name, image_id, started, finished if isinstance(finished, str) else None, code)


def prove_execution(
    pod: Mapping[str, Any],
    *,
    node: Mapping[str, Any] | None = None,
    containers: Sequence[str] | None = None,
    allow_fake_nodes: bool = False,
    exit_zero: bool = True,
    simulated: Simulated | None = None,
    node_only: bool = False,
) -> ExecutionProof:
    """The proof that ``pod`` ran (see the module docstring), or :class:`NoProofOfExecution`.

    ``node`` is the pod's Node object when the caller has it (needed for the KWOK check);
    ``simulated``: the GPU simulator behind that node
    (:func:`~aicr_pytest.kube.simulators.detect_simulator`);
    ``exit_zero=False`` accepts any exit code (a check that judges a failing tool's output itself);
    ``node_only``: only the node is judged (a pod whose work another pod reports, such as an NCCL
    worker whose bandwidth the launcher prints): the proof then names no container.
    """
    meta, spec, status = _map(pod.get("metadata")), _map(pod.get("spec")), _map(pod.get("status"))
    name = f"{meta.get('namespace') or 'default'}/{meta.get('name') or '?'}"
    node_name = str(spec.get("nodeName") or "") or NO_NODE

    def refuse(why: str) -> NoProofOfExecution:
        return NoProofOfExecution(MSG_NO_PROOF.format(pod=name, node=node_name, why=why))

    if node_name == NO_NODE:
        raise refuse(WHY_UNSCHEDULED)
    if simulated is not None and not allow_fake_nodes:
        raise refuse(WHY_SIMULATED.format(simulator=simulated.simulator, evidence=simulated.evidence))
    if node is not None and not allow_fake_nodes and is_fake_node(node):
        raise refuse(WHY_FAKE_NODE)
    if node_only:
        return ExecutionProof(name, node_name, ())
    wanted = (
        list(containers)
        if containers is not None
        else [str(_map(c).get("name")) for c in spec.get("containers") or []]
    )
    if not wanted:
        raise refuse(WHY_NO_CONTAINERS)
    statuses = [s for s in status.get("containerStatuses") or [] if isinstance(s, Mapping)]
    if not statuses:
        raise refuse(WHY_NO_STATUSES)
    by_name = {str(s.get("name")): s for s in statuses}
    proofs: list[ContainerProof] = []
    problems: list[str] = []
    for c in wanted:
        result = _container(c, by_name.get(c), exit_zero)
        if isinstance(result, str):
            problems.append(result)
        else:
            proofs.append(result)
    if problems:
        raise refuse("; ".join(problems))
    return ExecutionProof(name, node_name, tuple(proofs))


#: node name -> (its Node object, the simulator behind it): what :func:`prove_pod` read, per run
NodeVerdicts = MutableMapping[str, tuple[Mapping[str, Any] | None, Simulated | None]]


def _refuse_unreadable(pod: Mapping[str, Any], node_name: str, why: str, err: ApiError) -> NoProofOfExecution:
    meta = _map(pod.get("metadata"))
    pod_name = f"{meta.get('namespace') or 'default'}/{meta.get('name') or '?'}"
    why_text = why.format(error=first_line(err))
    return NoProofOfExecution(MSG_NO_PROOF.format(pod=pod_name, node=node_name, why=why_text))


def _pods_on(cluster: Cluster, node_name: str) -> list[Mapping[str, Any]]:
    """The pods bound to ``node_name`` (what tells a GPU simulator); raises :class:`ApiError`."""
    return list(cluster.list("v1", "pods", None, field_selector=f"spec.nodeName={node_name}"))


def read_node_verdict(
    cluster: Cluster, pod: Mapping[str, Any], node_name: str
) -> tuple[Mapping[str, Any] | None, Simulated | None]:
    """The pod's Node and the GPU simulator behind it (from the pods bound to the node)."""
    try:
        node = cluster.get_or_none("v1", "nodes", node_name)
    except ApiError as err:
        raise _refuse_unreadable(pod, node_name, WHY_NODE_UNREADABLE, err) from err
    try:
        pods = _pods_on(cluster, node_name)
    except ApiError as err:
        raise _refuse_unreadable(pod, node_name, WHY_NODE_PODS_UNREADABLE, err) from err
    return node, detect_simulator(node, pods)


def prove_pod(
    cluster: Cluster,
    pod: Mapping[str, Any],
    *,
    containers: Sequence[str] | None = None,
    allow_fake_nodes: bool = False,
    exit_zero: bool = True,
    cache: NodeVerdicts | None = None,
    node_only: bool = False,
) -> ExecutionProof:
    """:func:`prove_execution` with the pod's Node and the pods bound to it read from ``cluster`` (not
    read when fake nodes are allowed); a node that is gone is no KWOK node, one (or its pods) that
    cannot be read is no proof. ``cache`` keeps each node's reading for the run."""
    spec = _map(pod.get("spec"))
    node_name = str(spec.get("nodeName") or "")
    node: Mapping[str, Any] | None = None
    simulated: Simulated | None = None
    if node_name and not allow_fake_nodes:
        if cache is not None and node_name in cache:
            node, simulated = cache[node_name]
        else:
            node, simulated = read_node_verdict(cluster, pod, node_name)
            if cache is not None:
                cache[node_name] = (node, simulated)
    return prove_execution(
        pod,
        node=node,
        containers=containers,
        allow_fake_nodes=allow_fake_nodes,
        exit_zero=exit_zero,
        simulated=simulated,
        node_only=node_only,
    )


#: One node's line when a check reads what the node reports (no pod of ours ran there).
MSG_NODE_NOT_REAL: Final = "node {node}: {why}"
WHY_NODE_FAKE: Final = (
    "KWOK marks the node as fake (kwok.x-k8s.io/node=fake), so it has no GPUs to report on "
    "(--allow-fake-nodes accepts fake nodes)"
)
WHY_NODE_SIMULATED: Final = (
    "{simulator} simulates its GPUs ({evidence}), so what it reports comes from no GPU "
    "(--allow-fake-nodes accepts simulated nodes)"
)
WHY_NODE_PODS_NOT_READ: Final = "its pods could not be read to rule out a GPU simulator ({error})"


def simulated_gpu_nodes(
    cluster: Cluster, nodes: Sequence[Mapping[str, Any]], *, allow_fake_nodes: bool
) -> dict[str, str]:
    """Node name -> one ``node X: ...`` line, for each of ``nodes`` whose GPUs are not real: KWOK's
    fake nodes and those a GPU simulator stands in for (read from the pods bound to the node). A node
    whose pods cannot be read gets a line too: it cannot be ruled out. Empty when fake nodes are
    allowed. For checks that judge what a node reports (its allocatable GPUs, its DCGM exporter)
    rather than a pod of their own, whose proof of execution is :func:`prove_pod`'s."""
    if allow_fake_nodes:
        return {}
    lines: dict[str, str] = {}
    for node in nodes:
        name = str(_map(node.get("metadata")).get("name") or "")
        if not name:
            continue
        try:
            pods = _pods_on(cluster, name)
        except ApiError as err:
            why = WHY_NODE_PODS_NOT_READ.format(error=first_line(err))
            lines[name] = MSG_NODE_NOT_REAL.format(node=name, why=why)
            continue
        found = detect_simulator(node, pods)  # the simulator first, as prove_execution names it
        if found is not None:
            why = WHY_NODE_SIMULATED.format(simulator=found.simulator, evidence=found.evidence)
            lines[name] = MSG_NODE_NOT_REAL.format(node=name, why=why)
        elif is_fake_node(node):
            lines[name] = MSG_NODE_NOT_REAL.format(node=name, why=WHY_NODE_FAKE)
    return lines


def prove_all(
    pods: Sequence[Mapping[str, Any]],
    *,
    nodes: Mapping[str, Mapping[str, Any]] | None = None,
    containers: Sequence[str] | None = None,
    allow_fake_nodes: bool = False,
) -> tuple[ExecutionProof, ...]:
    """:func:`prove_execution` for every pod (``nodes``: node name → Node object); one line per pod
    without proof, all of them in one :class:`NoProofOfExecution`."""
    proofs: list[ExecutionProof] = []
    problems: list[str] = []
    for pod in pods:
        node_name = str(_map(pod.get("spec")).get("nodeName") or "")
        try:
            proofs.append(
                prove_execution(
                    pod,
                    node=(nodes or {}).get(node_name),
                    containers=containers,
                    allow_fake_nodes=allow_fake_nodes,
                )
            )
        except NoProofOfExecution as exc:
            problems.append(str(exc))
    if problems:
        raise NoProofOfExecution("\n".join(problems))
    return tuple(proofs)


__all__ = [
    "KWOK_FAKE",
    "KWOK_NODE_KEY",
    "ContainerProof",
    "ExecutionProof",
    "NoProofOfExecution",
    "is_fake_node",
    "prove_all",
    "prove_execution",
    "prove_pod",
    "read_node_verdict",
    "simulated_gpu_nodes",
]
