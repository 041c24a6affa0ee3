"""The DCGM diag player's per-node durations (``fc.state["dcgm_diag"]["run_for_s"]``), which the
gpu-diagnostics benchmark uses to give one node the slowest diag."""

from __future__ import annotations

from typing import Any

from aicr_pytest.health import dcgm
from aicr_pytest.health import diagnostics as dg
from aicr_pytest.kube import connect
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.players.dcgm_diag import RUN_FOR_S, START_AFTER_S


def phases(fc: FakeCluster) -> dict[str, str]:
    return {p["metadata"]["name"]: p["status"].get("phase", "") for p in fc.list("v1", "Pod", "default")}


def test_a_node_given_a_duration_runs_its_diag_that_long(aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training")
    gpu = sorted(
        n["metadata"]["name"]
        for n in fc.list("v1", "Node")
        if "nvidia.com/gpu.count" in n["metadata"]["labels"]
    )
    fc.state["dcgm_diag"] = {"run_for_s": {gpu[0]: 40.0}}
    cluster = connect(kubeconfig=str(fc.kubeconfig_path))
    level = dcgm.diag_level("1")
    for i, node in enumerate(gpu[:2]):
        pod = dg.diag_pod(
            node,
            8,
            name=f"diag-{i}",
            image="dcgm:1",
            level=level,
            tolerations=None,
            active_deadline_seconds=100,
        )
        cluster.create({**pod, "metadata": {**pod["metadata"], "namespace": "default"}})
    fc.advance(START_AFTER_S + RUN_FOR_S[1] + 1.0)
    assert phases(fc) == {"diag-0": "Running", "diag-1": "Succeeded"}  # the default: level 1's 3 s
    fc.advance(40.0 - RUN_FOR_S[1] - 2.0)
    assert phases(fc)["diag-0"] == "Running"
    fc.advance(3.0)
    assert phases(fc)["diag-0"] == "Succeeded"
