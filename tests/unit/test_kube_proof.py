"""kube.proof: a pod counts as run only with a started, terminated container, an imageID and exit 0,
on a node KWOK does not fake."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.core.errors import Inconclusive, first_line
from aicr_pytest.kube import proof, simulators

STARTED = "2026-01-05T10:00:00Z"
FINISHED = "2026-01-05T10:00:09Z"
IMAGE_ID = "nvcr.io/nvidia/cuda@sha256:" + "ab" * 32
PREFIX = "no proof of execution for pod ns/verify on node gpu-1: "


def status(
    name: str = "main",
    *,
    exit_code: int | None = 0,
    started: str | None = STARTED,
    image_id: str | None = IMAGE_ID,
    state: dict[str, Any] | None = None,
    last: dict[str, Any] | None = None,
) -> dict[str, Any]:
    term: dict[str, Any] = {"finishedAt": FINISHED, "reason": "Completed" if exit_code == 0 else "Error"}
    if exit_code is not None:
        term["exitCode"] = exit_code
    if started is not None:
        term["startedAt"] = started
    out: dict[str, Any] = {"name": name, "state": state if state is not None else {"terminated": term}}
    if last is not None:
        out["lastState"] = last
    if image_id is not None:
        out["imageID"] = image_id
    return out


def pod(
    *statuses: dict[str, Any], node: str | None = "gpu-1", containers: tuple[str, ...] = ("main",)
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": c, "image": "cuda"} for c in containers]}
    if node:
        spec["nodeName"] = node
    st: dict[str, Any] = {"phase": "Succeeded"}
    if statuses:
        st["containerStatuses"] = list(statuses)
    return {"metadata": {"name": "verify", "namespace": "ns"}, "spec": spec, "status": st}


def kwok_node(where: str = "annotations") -> dict[str, Any]:
    return {"metadata": {"name": "gpu-1", where: {"kwok.x-k8s.io/node": "fake"}}}


def test_a_real_run_is_proven() -> None:
    p = proof.prove_execution(pod(status()), node={"metadata": {"name": "gpu-1"}})
    assert (p.pod, p.node) == ("ns/verify", "gpu-1")
    assert p.as_extra()["containers"] == [
        {"name": "main", "imageID": IMAGE_ID, "startedAt": STARTED, "finishedAt": FINISHED, "exitCode": 0}
    ]


def test_a_restarted_container_is_proven_from_its_last_state() -> None:
    last = {"terminated": {"exitCode": 0, "startedAt": STARTED, "finishedAt": FINISHED}}
    p = proof.prove_execution(pod(status(state={"waiting": {"reason": "CrashLoopBackOff"}}, last=last)))
    assert p.containers[0].exit_code == 0


@pytest.mark.parametrize(
    ("the_pod", "why"),
    [
        (pod(status(image_id="")), "container main has an empty imageID"),
        (pod(status(image_id=None)), "container main has an empty imageID"),
        (pod(status(started=None)), "container main never started (no startedAt)"),
        (pod(status(started="")), "container main never started (no startedAt)"),
        (pod(status(exit_code=3)), "container main exited with code 3 (Error)"),
        (pod(status(exit_code=None)), "container main exited with code unknown (Error)"),
        (pod(status(state={"running": {"startedAt": STARTED}})), "container main has not finished (running)"),
        (
            pod(status(state={"waiting": {"reason": "ImagePullBackOff"}})),
            "container main never ran (waiting: ImagePullBackOff)",
        ),
        (pod(status(state={})), "container main has no terminated state"),
        (pod(), "no container status (the pod never started)"),
        (pod(status("other")), "container main has no status (it never started)"),
        (pod(status(), containers=()), "the pod has no containers"),
    ],
)
def test_missing_evidence_is_one_inconclusive_line(the_pod: dict[str, Any], why: str) -> None:
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_execution(the_pod)
    assert str(err.value) == PREFIX + why
    assert isinstance(err.value, Inconclusive) and "\n" not in str(err.value)


def test_an_unscheduled_pod_has_no_node() -> None:
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_execution(pod(status(), node=None))
    assert (
        str(err.value)
        == "no proof of execution for pod ns/verify on node (none): the pod was never scheduled"
    )


def test_every_named_container_must_prove_itself() -> None:
    the_pod = pod(status("a"), status("b", image_id=""), status("c", exit_code=1), containers=("a", "b", "c"))
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_execution(the_pod)
    assert (
        str(err.value) == PREFIX + "container b has an empty imageID; container c exited with code 1 (Error)"
    )
    assert [c.name for c in proof.prove_execution(the_pod, containers=["a"]).containers] == ["a"]


@pytest.mark.parametrize("where", ["annotations", "labels"])
def test_kwok_fake_nodes_are_refused_unless_allowed(where: str) -> None:
    assert proof.is_fake_node(kwok_node(where))
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_execution(pod(status()), node=kwok_node(where))
    assert str(err.value) == PREFIX + (
        "KWOK marks the node as fake (kwok.x-k8s.io/node=fake), so nothing ran there "
        "(--allow-fake-nodes accepts fake nodes)"
    )
    assert proof.prove_execution(pod(status()), node=kwok_node(where), allow_fake_nodes=True).node == "gpu-1"


def test_allowing_fake_nodes_still_requires_a_real_container_status() -> None:
    # the shape AICR accepted on KWOK nodes: nothing started, no image
    empty = {"name": "main", "imageID": "", "started": False, "state": {"waiting": {}}}
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_execution(pod(empty), node=kwok_node(), allow_fake_nodes=True)
    assert str(err.value) == PREFIX + "container main never ran (waiting: no reason given)"


def test_prove_all_reports_every_pod_without_proof() -> None:
    good = pod(status(), node="gpu-3")
    bad = pod(status(image_id=""), node="gpu-2")
    bad["metadata"]["name"] = "verify-2"
    fake = pod(status(), node="gpu-1")
    nodes = {"gpu-1": kwok_node(), "gpu-3": {"metadata": {"name": "gpu-3"}}}
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_all([good, bad, fake], nodes=nodes)
    assert str(err.value).splitlines() == [
        "no proof of execution for pod ns/verify-2 on node gpu-2: container main has an empty imageID",
        PREFIX + "KWOK marks the node as fake (kwok.x-k8s.io/node=fake), so nothing ran there "
        "(--allow-fake-nodes accepts fake nodes)",
    ]
    proofs = proof.prove_all([good, fake], nodes=nodes, allow_fake_nodes=True)
    assert [p.node for p in proofs] == ["gpu-3", "gpu-1"]


def test_a_failing_tool_that_ran_is_proven_when_any_exit_code_is_accepted() -> None:
    p = proof.prove_execution(pod(status(exit_code=226)), exit_zero=False)
    assert p.containers[0].exit_code == 226
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_execution(pod(status(exit_code=None)), exit_zero=False)
    assert str(err.value) == PREFIX + "container main exited with code unknown (Error)"


class Nodes:
    """The reads :func:`proof.prove_pod` makes: ``get_or_none`` of the pod's Node, then the pods on it."""

    def __init__(
        self,
        node: dict[str, Any] | None = None,
        error: Exception | None = None,
        pods: list[dict[str, Any]] | None = None,
        pods_error: Exception | None = None,
    ) -> None:
        self.node, self.error, self.reads = node, error, 0
        self.pods, self.pods_error, self.pod_lists = pods or [], pods_error, 0

    def list(
        self, api_version: str, kind: str, namespace: str | None, *, field_selector: str
    ) -> list[dict[str, Any]]:
        self.pod_lists += 1
        assert (api_version, kind, namespace, field_selector) == ("v1", "pods", None, "spec.nodeName=gpu-1")
        if self.pods_error is not None:
            raise self.pods_error
        return self.pods

    def get_or_none(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        self.reads += 1
        assert (api_version, kind, name) == ("v1", "nodes", "gpu-1")
        if self.error is not None:
            raise self.error
        return self.node


def test_prove_pod_reads_the_node_only_when_fake_nodes_are_refused() -> None:
    from aicr_pytest.kube.errors import ApiError

    cluster = Nodes(kwok_node())
    with pytest.raises(proof.NoProofOfExecution, match="KWOK marks the node as fake"):
        proof.prove_pod(cluster, pod(status()))  # type: ignore[arg-type]
    assert proof.prove_pod(cluster, pod(status()), allow_fake_nodes=True).node == "gpu-1"  # type: ignore[arg-type]
    assert cluster.reads == 1
    assert proof.prove_pod(Nodes(None), pod(status())).node == "gpu-1"  # type: ignore[arg-type]  # node gone
    denied = Nodes(error=ApiError('nodes "gpu-1" is forbidden\nmore', status=403))
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_pod(denied, pod(status()))  # type: ignore[arg-type]
    assert str(err.value) == PREFIX + (
        'its node could not be read to rule out a KWOK fake node (nodes "gpu-1" is forbidden)'
    )


# -- GPU simulators: real pods, mock GPUs ---------------------------------------------------------
def node_pod(
    name: str, image: str = "registry.k8s.io/pause:3.10", host_path: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": "gpu-1", "containers": [{"name": "c", "image": image}]}
    if host_path is not None:
        spec["volumes"] = [{"name": "v", "hostPath": {"path": host_path}}]
    return {"metadata": {"namespace": "sim", "name": name}, "spec": spec}


NVML_MOCK_WHY = (
    "NVIDIA's NVML mock simulates its GPUs (pod sim/nvml-mock-x runs image ghcr.io/nvidia/nvml-mock:v0.1.0), "
    "so no GPU ran the pod (--allow-fake-nodes accepts simulated nodes)"
)


@pytest.mark.parametrize(
    ("node", "pods", "simulator", "evidence"),
    [
        (
            {"metadata": {"labels": {"run.ai/simulated-gpu-node-pool": "default"}}},
            [],
            "Run:ai's fake-gpu-operator",
            "node label run.ai/simulated-gpu-node-pool=default",
        ),
        (
            {},
            [node_pod("device-plugin-x", "ghcr.io/run-ai/fake-gpu-operator/device-plugin:0.2.0")],
            "Run:ai's fake-gpu-operator",
            "pod sim/device-plugin-x runs image ghcr.io/run-ai/fake-gpu-operator/device-plugin:0.2.0",
        ),
        (
            {},
            [
                node_pod("a-real", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
                node_pod("gpu-mock-x", "gpu-mock:local"),
            ],
            "NVIDIA's NVML mock",
            "pod sim/gpu-mock-x runs image gpu-mock:local",
        ),
        (
            {},
            [node_pod("plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", "/var/lib/nvml-mock/driver")],
            "NVIDIA's NVML mock",
            "pod sim/plugin mounts host path /var/lib/nvml-mock/driver",
        ),
        (
            {},
            [node_pod("m", "example.com/nvml-mock@sha256:" + "0" * 64)],
            "NVIDIA's NVML mock",
            "pod sim/m runs image example.com/nvml-mock@sha256:" + "0" * 64,
        ),
    ],
)
def test_the_gpu_simulators_are_recognised(
    node: dict[str, Any], pods: list[dict[str, Any]], simulator: str, evidence: str
) -> None:
    found = simulators.detect_simulator(node, pods)
    assert found == simulators.Simulated(simulator, evidence)


@pytest.mark.parametrize(
    "pods",
    [
        [],
        [node_pod("plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", "/var/lib/kubelet/device-plugins")],
        [
            node_pod("lookalike", "example.com/my-nvml-mock-exporter:1")
        ],  # only the repository's own name counts
        [node_pod("lookalike", "example.com/x", "/var/lib/nvml-mockery")],
    ],
)
def test_a_real_gpu_node_is_no_simulator(pods: list[dict[str, Any]]) -> None:
    assert (
        simulators.detect_simulator({"metadata": {"labels": {"nvidia.com/gpu.present": "true"}}}, pods)
        is None
    )


def test_a_pod_on_a_simulated_node_is_other_naming_the_simulator_unless_allowed() -> None:
    cluster = Nodes({}, pods=[node_pod("nvml-mock-x", "ghcr.io/nvidia/nvml-mock:v0.1.0")])
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_pod(cluster, pod(status()))  # type: ignore[arg-type]
    assert str(err.value) == PREFIX + NVML_MOCK_WHY
    assert proof.prove_pod(cluster, pod(status()), allow_fake_nodes=True).node == "gpu-1"  # type: ignore[arg-type]
    assert (cluster.reads, cluster.pod_lists) == (1, 1)  # allowed: nothing read


def test_the_node_reading_is_cached_per_run() -> None:
    cluster = Nodes({})
    cache: proof.NodeVerdicts = {}
    for _ in range(3):
        proof.prove_pod(cluster, pod(status()), cache=cache)  # type: ignore[arg-type]
    assert (cluster.reads, cluster.pod_lists) == (1, 1)


def test_pods_that_cannot_be_listed_are_no_proof() -> None:
    from aicr_pytest.kube.errors import ApiError

    cluster = Nodes({}, pods_error=ApiError("pods is forbidden: cannot list\nmore", status=403))
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_pod(cluster, pod(status()))  # type: ignore[arg-type]
    assert str(err.value) == PREFIX + (
        "the pods on its node could not be read to rule out a GPU simulator (pods is forbidden: cannot list)"
    )


def test_a_node_only_proof_judges_the_node_and_no_container() -> None:
    # an NCCL worker: the launcher prints its bandwidth, so only where it ran matters
    running = pod(status(state={"running": {"startedAt": STARTED}}))
    cluster = Nodes({}, pods=[node_pod("nvml-mock-x", "ghcr.io/nvidia/nvml-mock:v0.1.0")])
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_pod(cluster, running, node_only=True)  # type: ignore[arg-type]
    assert str(err.value) == PREFIX + NVML_MOCK_WHY
    with pytest.raises(proof.NoProofOfExecution) as err:
        proof.prove_execution(running, node=kwok_node(), node_only=True)
    assert "KWOK marks the node as fake" in str(err.value)
    real = proof.prove_pod(Nodes({}), running, node_only=True)  # type: ignore[arg-type]
    assert (real.node, real.containers) == ("gpu-1", ())


# -- nodes whose reports a check judges (no pod of its own) -----------------------------------------
def named(node: dict[str, Any]) -> dict[str, Any]:
    return {**node, "metadata": {**node.get("metadata", {}), "name": "gpu-1"}}


def test_simulated_gpu_nodes_name_the_simulator_then_kwok_in_one_line_per_node() -> None:
    from aicr_pytest.kube.errors import ApiError

    mock = Nodes(pods=[node_pod("nvml-mock-x", "ghcr.io/nvidia/nvml-mock:v0.1.0")])
    assert proof.simulated_gpu_nodes(mock, [named(kwok_node())], allow_fake_nodes=False) == {  # type: ignore[arg-type]
        "gpu-1": "node gpu-1: NVIDIA's NVML mock simulates its GPUs (pod sim/nvml-mock-x runs image "
        "ghcr.io/nvidia/nvml-mock:v0.1.0), so what it reports comes from no GPU "
        "(--allow-fake-nodes accepts simulated nodes)"
    }
    assert proof.simulated_gpu_nodes(Nodes(), [named(kwok_node())], allow_fake_nodes=False) == {  # type: ignore[arg-type]
        "gpu-1": "node gpu-1: KWOK marks the node as fake (kwok.x-k8s.io/node=fake), so it has no GPUs to "
        "report on (--allow-fake-nodes accepts fake nodes)"
    }
    denied = Nodes(pods_error=ApiError("pods is forbidden: cannot list\nmore", status=403))
    assert proof.simulated_gpu_nodes(denied, [named({})], allow_fake_nodes=False) == {  # type: ignore[arg-type]
        "gpu-1": "node gpu-1: its pods could not be read to rule out a GPU simulator "
        "(pods is forbidden: cannot list)"
    }
    assert proof.simulated_gpu_nodes(Nodes(), [named({})], allow_fake_nodes=False) == {}  # type: ignore[arg-type]
    assert proof.simulated_gpu_nodes(mock, [named(kwok_node())], allow_fake_nodes=True) == {}  # type: ignore[arg-type]
    assert mock.pod_lists == 1  # allowed: nothing read


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (RuntimeError("\n  pods is forbidden\nmore"), "pods is forbidden"),
        (RuntimeError(""), "RuntimeError"),
        (ValueError("one line"), "one line"),
    ],
)
def test_an_error_is_quoted_by_its_first_line(exc: Exception, line: str) -> None:
    assert first_line(exc) == line
