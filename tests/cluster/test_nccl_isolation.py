"""``--isolate-bad-nodes`` end to end: the NCCL check fails, reruns on node subsets name the bad node.

The bundled check runs through pytester against the ``h100-eks-training`` profile (four H100 nodes,
``h100-0`` … ``h100-3``) on a fake clock, as in tests/cluster/test_nccl_check.py.  The simulator's
``nccl-slow-node`` fault makes every run ``h100-3`` (the last GPU node in name order) takes part in
slow; ``fc.state["nccl"]["slow_node_sets"]`` scripts link faults (slow only when all of a set take
part).  Every launch the NCCL player served is in ``fc.state["nccl_launches"]``.
"""

from __future__ import annotations

from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.nccl
import aicr_pytest.nccl.cluster
import aicr_pytest.nccl.rerun
import aicr_pytest.plugin
from aicr_pytest.nccl.isolation import round_budget
from aicr_pytest.testing.cluster import FakeCluster
from tests.cluster.test_nccl_check import (
    BW,
    INTERRUPTING_CONFTEST,
    NET,
    NVLS,
    RUN_LABEL,
    bandwidth,
    gb200_recipe,
    leftovers,
    run_nccl,
)

NODES = ["h100-0", "h100-1", "h100-2", "h100-3"]
FLAG = "--aicr-isolate-bad-nodes"
FABRIC = "every subset passes alone, so the fault is in the links or the fabric between them"


def floor_missed(t: dict[str, Any]) -> str:
    _, bw = bandwidth(t["stdout"])
    return f'NCCL bandwidth {bw:.2f} GB/s does not satisfy constraint ">= 300"'


def launched_nodes(fc: FakeCluster) -> list[list[str]]:
    """The worker nodes of every NCCL launch the player served, in launch order."""
    return [sorted(r["nodes"]) for r in fc.state.get("nccl_launches") or []]


@pytest.fixture
def slow(aicr_fake_cluster_factory: Any) -> FakeCluster:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training", faults=["nccl-slow-node"])
    return fc


@pytest.fixture
def pins(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record the pins of every rerun's runtime as it is rendered (cleanup deletes the objects)."""
    pins: list[list[str]] = []
    real = aicr_pytest.nccl.rerun.pin_to_nodes

    def spy(runtime: dict[str, Any], nodes: Any) -> None:
        real(runtime, nodes)
        pins.append(list(nodes))

    monkeypatch.setattr(aicr_pytest.nccl.rerun, "pin_to_nodes", spy)
    return pins


# ------------------------------------------------------------------------------------ a bad node --
def test_slow_node_is_named_in_message_extra_stdout_and_terminal(
    pytester: pytest.Pytester, slow: FakeCluster, pins: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the failure line is cut at the terminal's width (uncut on CI): a wide terminal, the same everywhere
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    monkeypatch.setenv("COLUMNS", "400")
    tests, result = run_nccl(pytester, slow, FLAG)
    t = tests[BW]
    assert t["status"] == "failed"
    finding = "suspect node h100-3: fails alone against the intra-node floor (isolation: 1 round, 4 reruns)"
    assert t["message"] == f"{floor_missed(t)}; bad-node isolation: {finding}"
    # the original run, then one round: every node alone, in parallel, each pinned to its node
    assert launched_nodes(slow) == [NODES, *[[n] for n in NODES]]
    assert pins == [[n] for n in NODES]
    assert t["stdout"][1] == "Constraint: >= 300 → false"
    assert t["stdout"][2:] == [
        "bad-node isolation round 1: h100-0 passed; h100-1 passed; h100-2 passed; h100-3 failed"
    ]
    extra = t["extra"][aicr_pytest.nccl.EXTRA_ISOLATION]
    assert extra["suspects"] == ["h100-3"] and extra["fabric_suspected"] is False
    assert extra["reruns"] == 4 and extra["budget"] == round_budget(4) == 3
    assert extra["rounds"][0][3] == {"nodes": ["h100-3"], "passed": False}
    assert any(
        line.startswith("FAILED nccl-all-reduce-bw (performance): NCCL bandwidth")
        and "suspect node h100-3" in line
        for line in result.outlines
    ), result.outlines[-20:]
    assert leftovers(slow) == []  # every rerun's TrainJob, runtime and pods are gone too


def test_label_bad_nodes_labels_the_suspect_and_only_it(pytester: pytest.Pytester, slow: FakeCluster) -> None:
    from aicr_pytest.health.nodemarks import LABEL, REASON_ANNOTATION

    _, result = run_nccl(pytester, slow, FLAG, "--aicr-label-bad-nodes", "--aicr-taint-bad-nodes")
    meta = slow.get("v1", "Node", "h100-3")["metadata"]
    assert meta["labels"][LABEL] == "failed"
    assert meta["annotations"][REASON_ANNOTATION] == "nccl-all-reduce-bw: named by bad-node isolation"
    assert {"key": LABEL, "value": "failed", "effect": "NoSchedule"} in slow.get("v1", "Node", "h100-3")[
        "spec"
    ]["taints"]
    for node in NODES[:-1]:  # the nodes it cleared are not node-health verdicts: left alone
        assert LABEL not in (slow.get("v1", "Node", node)["metadata"].get("labels") or {})
    assert any(
        line.startswith("aicr-pytest: node h100-3 failed: label aicr.run/validation=failed")
        for line in result.outlines
    )


def test_without_the_flag_nothing_is_rerun(pytester: pytest.Pytester, slow: FakeCluster) -> None:
    tests, _ = run_nccl(pytester, slow)
    t = tests[BW]
    assert t["status"] == "failed"
    assert t["message"] == floor_missed(t)
    assert len(t["stdout"]) == 2
    assert aicr_pytest.nccl.EXTRA_ISOLATION not in t["extra"]
    assert launched_nodes(slow) == [NODES]
    assert leftovers(slow) == []


def test_a_healthy_run_with_the_flag_reruns_nothing(pytester: pytest.Pytester, h100: FakeCluster) -> None:
    tests, _ = run_nccl(pytester, h100, FLAG)
    t = tests[BW]
    assert t["status"] == "passed", t.get("message")
    assert len(t["stdout"]) == 2 and aicr_pytest.nccl.EXTRA_ISOLATION not in t["extra"]
    assert launched_nodes(h100) == [NODES]


def test_the_config_key_turns_isolation_on(pytester: pytest.Pytester, slow: FakeCluster) -> None:
    config = pytester.path / "aicr-config.yaml"
    config.write_text("kind: AICRConfig\nspec:\n  validate:\n    execution: {isolateBadNodes: true}\n")
    tests, _ = run_nccl(pytester, slow, "--aicr-config", str(config))
    assert tests[BW]["extra"][aicr_pytest.nccl.EXTRA_ISOLATION]["suspects"] == ["h100-3"]


# ----------------------------------------------------------------------------------- link faults --
def test_slow_only_all_together_reports_the_fabric(pytester: pytest.Pytester, h100: FakeCluster) -> None:
    h100.state["nccl"] = {"slow_node_sets": [NODES]}
    tests, _ = run_nccl(pytester, h100, FLAG)
    t = tests[BW]
    assert t["status"] == "failed"
    finding = f"no single node at fault among {', '.join(NODES)}: {FABRIC} (isolation: 2 rounds, 6 reruns)"
    assert t["message"] == f"{floor_missed(t)}; bad-node isolation: {finding}"
    extra = t["extra"][aicr_pytest.nccl.EXTRA_ISOLATION]
    assert extra["suspects"] == [] and extra["fabric_suspected"] is True
    assert [[r["nodes"] for r in rnd] for rnd in extra["rounds"]] == [
        [[n] for n in NODES],
        [["h100-0", "h100-1"], ["h100-2", "h100-3"]],
    ]
    assert leftovers(h100) == []


def test_a_slow_pair_is_narrowed_to_its_link_within_the_budget(
    pytester: pytest.Pytester, h100: FakeCluster
) -> None:
    h100.state["nccl"] = {"slow_node_sets": [["h100-2", "h100-3"]]}
    tests, _ = run_nccl(pytester, h100, FLAG)
    t = tests[BW]
    extra = t["extra"][aicr_pytest.nccl.EXTRA_ISOLATION]
    assert len(extra["rounds"]) <= extra["budget"] == 3
    assert t["message"].endswith(
        f"; bad-node isolation: no single node at fault among h100-2, h100-3: {FABRIC} "
        "(isolation: 3 rounds, 8 reruns)"
    )
    # the third round pads each of the pair with a node already cleared
    assert [r["nodes"] for r in extra["rounds"][2]] == [["h100-0", "h100-2"], ["h100-0", "h100-3"]]
    assert leftovers(h100) == []


# ------------------------------------------------------------------------------------ interrupted --
def test_ctrl_c_during_the_reruns_cleans_everything_up(pytester: pytest.Pytester, slow: FakeCluster) -> None:
    flag: list[bool] = []
    seen: dict[str, str] = {}

    def interrupt_at_the_second_rerun(sim: Any, pod: dict[str, Any]) -> None:
        labels = pod["metadata"].get("labels") or {}
        launcher = labels.get("jobset.sigs.k8s.io/replicatedjob-name") == "launcher"
        if launcher and not seen and len(slow.state.get("nccl_launches") or []) >= 3:
            seen["run"] = labels[RUN_LABEL]
            flag.append(True)

    slow.sim.on_update("", "v1", "pods", interrupt_at_the_second_rerun)
    _, result = run_nccl(pytester, slow, FLAG, conftest=INTERRUPTING_CONFTEST, flag=flag)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert seen and not flag
    assert leftovers(slow, f"{RUN_LABEL}={seen['run']}") == []
    assert leftovers(slow) == []


@pytest.fixture
def h100(aicr_fake_cluster_factory: Any) -> FakeCluster:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training")
    return fc


_ = (aicr_pytest.core.inputs, aicr_pytest.nccl.cluster, aicr_pytest.plugin)  # one copy across runs


# ------------------------------------------------------------------------------- a worker fails --
def test_a_failed_launcher_is_isolated_too(pytester: pytest.Pytester, h100: FakeCluster) -> None:
    """The launcher fails (a worker on ``h100-3`` broke the job) whenever ``h100-3`` takes part; it
    stays Failed (the simulated kubelet would end it Succeeded later)."""
    failed: list[str] = []

    def fail_launchers_with_h100_3(sim: Any, pod: dict[str, Any]) -> None:
        meta, phase = pod["metadata"], (pod.get("status") or {}).get("phase")
        labels = meta.get("labels") or {}
        if labels.get("jobset.sigs.k8s.io/replicatedjob-name") != "launcher" or phase == "Failed":
            return
        if meta["name"] not in failed:  # a launcher starting: do its workers include h100-3?
            jobset = labels["jobset.sigs.k8s.io/jobset-name"]
            selector = f"jobset.sigs.k8s.io/jobset-name={jobset},jobset.sigs.k8s.io/replicatedjob-name=node"
            workers = h100.list("v1", "Pod", meta["namespace"], label_selector=selector)
            if phase != "Running" or "h100-3" not in {w["spec"].get("nodeName") for w in workers}:
                return
            failed.append(meta["name"])

        def fail(obj: dict[str, Any]) -> None:
            obj["status"]["phase"] = "Failed"
            obj["status"]["containerStatuses"] = [
                {
                    "name": "node",
                    "ready": False,
                    "state": {
                        "terminated": {"exitCode": 1, "reason": "Error", "message": "worker h100-3 lost"}
                    },
                }
            ]

        sim.store.mutate(sim.rt("v1", "Pod"), meta["namespace"], meta["name"], fail)

    h100.sim.on_update("", "v1", "pods", fail_launchers_with_h100_3)
    tests, _ = run_nccl(pytester, h100, FLAG)
    t = tests[BW]
    assert t["status"] == "failed", t.get("message")
    assert t["message"].startswith(
        f"NCCL launcher pod aicr-validation/{failed[0]} failed to complete successfully: "
    )
    assert t["message"].endswith(
        "; bad-node isolation: suspect node h100-3: fails alone against the intra-node floor "
        "(isolation: 1 round, 4 reruns)"
    )
    assert "NCCL worker pods" in t["extra"]["aicr.diagnostics"]  # the failed run's diagnostics stay
    assert len(failed) == 2  # the failed run and the rerun on h100-3 alone
    assert leftovers(h100) == []


def test_net_and_nvls_reruns_name_the_slow_gb200_node(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    """-net reruns keep their transport rule across nodes; -nvls reruns each get a ComputeDomain."""
    fc: FakeCluster = aicr_fake_cluster_factory("gb200-eks-training", faults=["nccl-slow-node"])
    tests, _ = run_nccl(pytester, fc, FLAG, recipe=gb200_recipe())
    gpu = sorted(
        n["metadata"]["name"]
        for n in fc.list("v1", "Node")
        if "nvidia.com/gpu.count" in n["metadata"]["labels"]
    )
    for name in (NET, NVLS):
        t = tests[name]
        assert t["status"] == "failed", (name, t.get("message"))
        assert t["extra"][aicr_pytest.nccl.EXTRA_ISOLATION]["suspects"] == [gpu[-1]], t["message"]
        assert f"; bad-node isolation: suspect node {gpu[-1]}: fails alone" in t["message"]
    assert leftovers(fc) == []
