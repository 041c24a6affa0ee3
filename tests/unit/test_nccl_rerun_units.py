"""Bad-node isolation's plain functions: node pinning, rerun names, round lines, the up-front refusal,
and the simulator's slow-node model."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.inputs import MSG_ISOLATE_NO_NCCL, require_isolation_target
from aicr_pytest.nccl.isolation import isolate
from aicr_pytest.nccl.render import benchmark_names, pin_to_nodes
from aicr_pytest.nccl.rerun import round_lines
from aicr_pytest.nccl.variant import NcclCheckFailure
from aicr_pytest.testing.players.nccl_launcher import (
    SLOW_NODE_FACTOR,
    bandwidth_factor,
    last_gpu_node,
    slow_node_sets,
)

PIN = "requiredDuringSchedulingIgnoredDuringExecution"


def runtime(pod: dict[str, Any]) -> dict[str, Any]:
    job = {"name": "node", "template": {"spec": {"template": {"spec": pod}}}}
    return {"spec": {"template": {"spec": {"replicatedJobs": [{"name": "launcher"}, job]}}}}


def terms(rt: dict[str, Any]) -> list[dict[str, Any]]:
    pod = rt["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    result: list[dict[str, Any]] = pod["affinity"]["nodeAffinity"][PIN]["nodeSelectorTerms"]
    return result


def test_pin_to_nodes_requires_the_subset_by_node_name() -> None:
    rt = runtime({"nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"}})
    pin_to_nodes(rt, ["h100-2", "h100-0"])
    assert terms(rt) == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["h100-0", "h100-2"]}]}
    ]


def test_pin_to_nodes_narrows_every_term_the_runtime_already_requires() -> None:
    existing = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, {}]
    rt = runtime(
        {"affinity": {"nodeAffinity": {PIN: {"nodeSelectorTerms": existing}}, "podAffinity": {"x": 1}}}
    )
    pin_to_nodes(rt, ["n1"])
    field = {"key": "metadata.name", "operator": "In", "values": ["n1"]}
    assert terms(rt) == [{**existing[0], "matchFields": [field]}, {"matchFields": [field]}]
    assert existing[1] == {}  # the input terms are copied, not changed


def test_pin_to_nodes_without_a_worker_pod_spec_fails() -> None:
    with pytest.raises(NcclCheckFailure, match="worker pod spec not found"):
        pin_to_nodes({"spec": {"template": {"spec": {"replicatedJobs": [{"name": "launcher"}]}}}}, ["n1"])


def test_rerun_names_differ_per_tag_and_the_untagged_names_are_unchanged() -> None:
    base = benchmark_names("run1", "nccl-all-reduce-bw")
    assert base == benchmark_names("run1", "nccl-all-reduce-bw", None, None)
    one, two = (benchmark_names("run1", "nccl-all-reduce-bw", None, f"rerun-{i}") for i in (1, 2))
    assert len({base.trainjob, one.trainjob, two.trainjob}) == 3
    assert len(one.trainjob) == len(base.trainjob)  # pod hostnames stay as short


def test_round_lines_name_every_subset_and_its_verdict() -> None:
    outcome = {("a",): True, ("b",): None, ("c",): False}
    result = isolate(["a", "b", "c"], lambda subsets: {s: outcome[s] for s in subsets})
    assert round_lines(result) == ["bad-node isolation round 1: a passed; b not judged; c failed"]


@pytest.mark.parametrize(
    ("selected", "skipped"),
    [
        ([], ()),
        (["operator-health", "nccl-cre-all-reduce-bw"], ()),
        (["nccl-all-reduce-bw"], ("nccl-all-reduce-bw",)),
    ],
)
def test_isolation_without_an_nccl_all_reduce_check_is_refused(
    selected: list[str], skipped: tuple[str, ...]
) -> None:
    checks = "nccl-all-reduce-bw, nccl-all-reduce-bw-net, nccl-all-reduce-bw-nvls"
    with pytest.raises(UsageError) as err:
        require_isolation_target(selected, skipped)
    assert str(err.value) == MSG_ISOLATE_NO_NCCL.format(checks=checks)


def test_isolation_with_an_nccl_check_is_accepted() -> None:
    require_isolation_target(["operator-health", "nccl-all-reduce-bw-net"], ("nccl-all-reduce-bw",))


def node(name: str, gpus: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"nvidia.com/gpu.count": "8"} if gpus else {}}}


def test_the_slow_node_is_the_last_gpu_node_in_name_order() -> None:
    nodes = [node("gpu-b"), node("gpu-a"), node("zz-cpu", gpus=False)]
    assert last_gpu_node(nodes) == "gpu-b"
    assert last_gpu_node([node("cpu", gpus=False)]) is None
    assert slow_node_sets(["nccl-slow-node"], nodes) == [frozenset({"gpu-b"})]
    assert slow_node_sets([], nodes) == []
    assert slow_node_sets([], nodes, [["gpu-a", "gpu-b"], []]) == [frozenset({"gpu-a", "gpu-b"})]


def test_a_run_is_slow_only_when_it_holds_all_of_a_slow_set() -> None:
    link = [frozenset({"a", "b"})]
    assert bandwidth_factor({"a", "b", "c"}, link) == SLOW_NODE_FACTOR
    assert bandwidth_factor({"a", "c"}, link) == 1.0
    assert bandwidth_factor({"a"}, []) == 1.0
