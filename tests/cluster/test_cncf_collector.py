"""``--cncf-submission``'s collector on the simulated cluster, called directly (virtual time):
every feature's file carries exactly one valid verdict, SKIP/FAIL follow the cluster, the recipe's
allocation policy reaches the checks, and nothing secret or ELB-shaped survives in a file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.conformance import cluster_autoscaling
from aicr_pytest.core.settings import Settings
from aicr_pytest.evidence.cncf import collector, features
from aicr_pytest.evidence.cncf.collector import SubmissionPlan, SubmissionResult
from aicr_pytest.evidence.cncf.verdict import ELB_REDACTED, PREFIX, file_verdict
from aicr_pytest.kube import RunScope, connect
from aicr_pytest.kube.client import RUN_ID_LABEL
from aicr_pytest.plugin import cncf_wiring
from aicr_pytest.testing import FakeCluster
from aicr_pytest.testing.profiles import resolve_profile
from tests.cluster.shared_clock import ClusterClock

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "recipes" / "examples"
RUN_ID = "c0c1f0e1"


def recipe_inputs(name: str) -> cncf_wiring.SubmissionInputs:
    class NoConfigMaps:
        def read_configmap(self, namespace: str, name: str) -> dict[str, str]:
            raise AssertionError("no cm:// recipe here")

    return cncf_wiring.load_inputs(Settings(recipe=str(EXAMPLES / name)), NoConfigMaps())  # type: ignore[arg-type]


def collect_on(
    fc: FakeCluster,
    directory: Path,
    names: Sequence[str] = (),
    *,
    recipe: str | None = "h100-eks-training.yaml",
    policy: str | None = None,
    secrets: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> tuple[SubmissionResult, list[str]]:
    inputs = recipe_inputs(recipe) if recipe else cncf_wiring.SubmissionInputs()
    plan = SubmissionPlan(
        features=features.resolve_features(names),
        evidence_dir=directory,
        component_refs=inputs.component_refs,
        has_recipe=inputs.has_recipe,
        allocation_policy=policy or inputs.allocation_policy,
        env=env or {},
        secrets=secrets,
    )
    cluster = connect(str(fc.kubeconfig_path), sleep=fc.clock.sleep)
    lines: list[str] = []
    clock = ClusterClock(fc)

    def new_run() -> RunScope:
        return RunScope(lambda: cluster, RUN_ID, clock=clock)

    try:
        with fc.auto_advancing():
            result = collector.collect(plan, cluster, new_run, clock=clock, emit=lines.append)
    finally:
        cluster.close()
    assert fc.advancer is None or fc.advancer.errors == []
    return result, lines


def statuses(result: SubmissionResult) -> dict[str, str]:
    return {r.feature.name: r.status for r in result.results}


def text_of(directory: Path, feature: str) -> str:
    return (directory / features.BY_NAME[feature].file).read_text()


def assert_one_valid_verdict(text: str) -> None:
    assert sum(1 for line in text.splitlines() if line.startswith(PREFIX)) == 1, text
    assert file_verdict(text).problem is None, text


def assert_header(text: str, title: str) -> None:
    lines = text.splitlines()
    assert lines[0] == f"# {title}"
    assert lines[2] == "**Cluster:** `EKS / p5.48xlarge / NVIDIA-H100-80GB-HBM3`"
    assert lines[3].startswith("**Generated:** ") and lines[3].endswith(" UTC")
    assert lines[4].startswith("**Kubernetes Version:** v1.")
    assert lines[5] == "**Platform:** linux/amd64"
    assert lines[7] == "---"


def test_every_feature_on_a_healthy_training_cluster_has_exactly_one_valid_verdict(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    result, lines = collect_on(fc, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.file for f in features.FEATURES)
    for feature in features.FEATURES:
        text = text_of(tmp_path, feature.name)
        assert_header(text, feature.title)
        assert_one_valid_verdict(text)
        assert file_verdict(text).status == statuses(result)[feature.name]
    assert statuses(result) == {
        "dra-support": "PASS",
        "gang-scheduling": "PASS",
        "secure-access": "PASS",
        "accelerator-metrics": "PASS",
        "ai-service-metrics": "PASS",
        "inference-gateway": "SKIP",  # no agentgateway on a training cluster
        "robust-operator": "PASS",
        "pod-autoscaling": "PASS",
        "cluster-autoscaling": "PASS",
    }
    assert result.exit_code() == 0 and not result.canceled
    assert lines[-1].startswith("cncf: cluster-autoscaling: PASS")
    gateway = text_of(tmp_path, "inference-gateway")
    assert "**Result: SKIP (prerequisite absent)** — agentgateway not in recipe" in gateway
    # the behavioural work left nothing behind
    assert fc.list("v1", "Namespace", label_selector=f"{RUN_ID_LABEL}={RUN_ID}") == []
    assert fc.list("v1", "Pod", label_selector=f"{RUN_ID_LABEL}={RUN_ID}") == []
    assert "## Cleanup" in text_of(tmp_path, "gang-scheduling")


def test_the_gateway_feature_passes_on_an_inference_gateway_cluster_without_a_recipe(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    """No recipe: agentgateway and the AI operator are detected on the cluster."""
    fc = aicr_fake_cluster_factory("h100-eks-inference-gateway")
    result, _ = collect_on(fc, tmp_path, ["gateway", "operator"], recipe=None)
    assert statuses(result) == {"inference-gateway": "PASS", "robust-operator": "PASS"}
    text = text_of(tmp_path, "inference-gateway")
    assert "- `agentgateway`: not in the recipe; detected in namespace `agentgateway-system`" in text
    assert "**Inference Gateway Exposure**" in text
    assert_one_valid_verdict(text)


def test_no_karpenter_on_an_unsupported_platform_skips_cluster_autoscaling(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    """No Karpenter and neither EKS nor GKE (an on-prem cluster): the prerequisite is absent."""
    fc = aicr_fake_cluster_factory("h100-eks-training")
    for node in fc.list("v1", "Node"):
        node["spec"]["providerID"] = f"kind://docker/onprem/{node['metadata']['name']}"
        fc.add(node)
    result, _ = collect_on(fc, tmp_path, ["cluster-autoscaling"])
    assert statuses(result) == {"cluster-autoscaling": "SKIP"}
    text = text_of(tmp_path, "cluster-autoscaling")
    verdict = file_verdict(text)
    assert verdict.qualifier == "prerequisite absent"
    assert verdict.explanation == cluster_autoscaling.SKIP_UNSUPPORTED
    assert "**Cluster:** `p5.48xlarge / NVIDIA-H100-80GB-HBM3`" in text
    assert result.exit_code() == 0  # a SKIP does not fail the run


def test_no_karpenter_and_eks_nodes_without_a_node_group_fail(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    """EKS GPU nodes are there but nothing can scale them: present but not autoscaled -> FAIL."""
    fc = aicr_fake_cluster_factory("h100-eks-training", faults=["no-managed-node-group"])
    result, _ = collect_on(fc, tmp_path, ["cluster-autoscaling"])
    assert statuses(result) == {"cluster-autoscaling": "FAIL"} and result.exit_code() == 8
    assert "no node group label or Cluster Autoscaler detected" in text_of(tmp_path, "cluster-autoscaling")


def test_karpenter_is_preferred_and_an_unhealthy_one_fails(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training-karpenter")
    result, _ = collect_on(fc, tmp_path / "ok", ["cluster-autoscaling"])
    assert statuses(result) == {"cluster-autoscaling": "PASS"}
    assert "Karpenter" in text_of(tmp_path / "ok", "cluster-autoscaling")
    bad = aicr_fake_cluster_factory("h100-eks-training-karpenter", faults=["karpenter-unhealthy"])
    result, _ = collect_on(bad, tmp_path / "bad", ["cluster-autoscaling"])
    assert statuses(result) == {"cluster-autoscaling": "FAIL"} and result.exit_code() == 8


def test_a_dcgm_exporter_without_gpu_series_fails_accelerator_metrics_and_the_run(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training", faults=["dcgm-exporter-no-gpu-series"])
    result, _ = collect_on(fc, tmp_path, ["metrics", "gang"])
    assert statuses(result) == {"accelerator-metrics": "FAIL", "gang-scheduling": "PASS"}
    assert result.exit_code() == 8
    text = text_of(tmp_path, "accelerator-metrics")
    assert_one_valid_verdict(text)
    assert "**Result: FAIL** — [NOT_FOUND] DCGM metrics missing: DCGM_FI_DEV_GPU_UTIL" in text
    assert "DCGM_FI_DEV_GPU_UTIL           MISSING" in text


def test_an_exporter_that_is_gone_fails_too(aicr_fake_cluster_factory: Any, tmp_path: Path) -> None:
    profile = resolve_profile("h100-eks-training")
    fc = aicr_fake_cluster_factory(profile)
    fc.delete("v1", "Service", "nvidia-dcgm-exporter", "gpu-operator")
    result, _ = collect_on(fc, tmp_path, ["accelerator-metrics"])
    assert statuses(result) == {"accelerator-metrics": "FAIL"} and result.exit_code() == 8
    assert_one_valid_verdict(text_of(tmp_path, "accelerator-metrics"))


def test_two_features_write_exactly_two_files_and_stale_files_of_others_stay(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    (tmp_path / "gang-scheduling.md").write_text("**Result: PASS** — stale from an earlier run\n")
    result, _ = collect_on(fc, tmp_path, ["gang-scheduling", "pod-autoscaling"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gang-scheduling.md", "pod-autoscaling.md"]
    assert [r.feature.name for r in result.results] == ["gang-scheduling", "pod-autoscaling"]
    assert "stale" not in text_of(tmp_path, "gang-scheduling")


def test_the_recipes_allocation_policy_reaches_the_checks(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    """A dra-resource-claim policy on a cluster without full-GPU DRA slices is a mismatch: FAIL,
    where capability detection (no policy) passes on the device plugin."""
    fc = aicr_fake_cluster_factory("h100-eks-training", faults=["dra-gpu-slices-missing"])
    detected, _ = collect_on(fc, tmp_path / "unspecified", ["dra"], recipe=None)
    assert statuses(detected) == {"dra-support": "PASS"}
    assert "- Configured policy: `unspecified` (no recipe: detected from the cluster)" in text_of(
        tmp_path / "unspecified", "dra-support"
    )
    forced, _ = collect_on(fc, tmp_path / "dra", ["dra"], policy="dra-resource-claim")
    assert statuses(forced) == {"dra-support": "FAIL"}
    text = text_of(tmp_path / "dra", "dra-support")
    assert "- Configured policy: `dra-resource-claim` (the recipe)" in text
    assert_one_valid_verdict(text)


def test_a_dra_only_recipe_policy_comes_from_the_recipe(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    inputs = recipe_inputs("h100-eks-training-dra.yaml")
    assert inputs.allocation_policy == "dra-resource-claim" and inputs.has_recipe
    fc = aicr_fake_cluster_factory("h100-eks-training-dra")
    result, _ = collect_on(fc, tmp_path, ["dra", "secure"], recipe="h100-eks-training-dra.yaml")
    assert statuses(result) == {"dra-support": "PASS", "secure-access": "PASS"}
    assert "`dra-resource-claim` (the recipe)" in text_of(tmp_path, "secure-access")


def test_secret_values_and_elb_hostnames_never_reach_a_file(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    """Values the run knows to be secret are scrubbed from what the checks recorded (here a node
    name stands in for one, since it is certain to be recorded), and every ``*.md`` of the directory
    loses its ELB hostnames, also files the collector did not write."""
    fc = aicr_fake_cluster_factory("h100-eks-training")
    node = next(
        n["metadata"]["name"]
        for n in fc.list("v1", "Node")
        if n["metadata"].get("labels", {}).get("nvidia.com/gpu.present") == "true"
    )
    elb = "a1b2c3d4e5f6-1234567890.us-west-2.elb.amazonaws.com"
    (tmp_path / "README.md").write_text(f"gateway at {elb}\n")
    result, _ = collect_on(fc, tmp_path, ["cluster-autoscaling"], secrets=(node,))
    text = text_of(tmp_path, "cluster-autoscaling")
    assert node not in text and "<redacted>" in text
    assert_one_valid_verdict(text)
    assert (tmp_path / "README.md").read_text() == f"gateway at {ELB_REDACTED}\n"
    assert statuses(result) == {"cluster-autoscaling": "PASS"}


def test_an_unreachable_cluster_fails_every_feature_with_a_file(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    cluster = connect(str(kubeconfig), sleep=lambda s: None)
    plan = SubmissionPlan(features=features.resolve_features(["dra", "hpa"]), evidence_dir=tmp_path / "ev")
    result = collector.collect(plan, cluster, lambda: RunScope(lambda: cluster, RUN_ID), emit=lambda s: None)
    assert statuses(result) == {"dra-support": "FAIL", "pod-autoscaling": "FAIL"}
    text = text_of(tmp_path / "ev", "dra-support")
    assert_one_valid_verdict(text)
    assert "**Result: FAIL** — Cannot connect to Kubernetes cluster. Check KUBECONFIG." in text
    assert "**Cluster:** `unknown`" in text


def test_the_overall_budget_cancels_the_features_not_started(
    aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    cluster = connect(str(fc.kubeconfig_path), sleep=fc.clock.sleep)
    clock = ClusterClock(fc)
    (tmp_path / "pod-autoscaling.md").write_text("**Result: PASS** — from an earlier run\n")
    plan = SubmissionPlan(
        features=features.resolve_features(["gang", "metrics", "hpa"]),
        evidence_dir=tmp_path,
        overall_budget_s=5.0,  # gang scheduling alone takes longer than this
    )
    with fc.auto_advancing():
        result = collector.collect(
            plan,
            cluster,
            lambda: RunScope(lambda: cluster, RUN_ID, clock=clock),
            clock=clock,
            emit=lambda s: None,
        )
    cluster.close()
    assert [r.feature.name for r in result.results] == ["gang-scheduling"]
    assert [f.name for f in result.canceled] == ["accelerator-metrics", "pod-autoscaling"]
    assert result.exit_code() == 5
    assert result.summary_lines()[-1] == (
        f"{collector.MSG_CANCELED}: not collected: accelerator-metrics, pod-autoscaling"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gang-scheduling.md"]
    assert_one_valid_verdict(text_of(tmp_path, "gang-scheduling"))


@pytest.mark.parametrize("feature", ["gang-scheduling", "secure-access"])
def test_a_check_that_cannot_finish_in_its_budget_fails(
    aicr_fake_cluster_factory: Any, tmp_path: Path, feature: str
) -> None:
    """A budget cut short by the overall deadline: the check refuses or runs out of time -> FAIL."""
    fc = aicr_fake_cluster_factory("h100-eks-training")
    cluster = connect(str(fc.kubeconfig_path), sleep=fc.clock.sleep)
    clock = ClusterClock(fc)
    plan = SubmissionPlan(features=(features.BY_NAME[feature],), evidence_dir=tmp_path, overall_budget_s=3.0)
    with fc.auto_advancing():
        result = collector.collect(
            plan,
            cluster,
            lambda: RunScope(lambda: cluster, RUN_ID, clock=clock),
            clock=clock,
            emit=lambda s: None,
        )
    cluster.close()
    assert statuses(result) == {feature: "FAIL"} and result.exit_code() == 8
    assert_one_valid_verdict(text_of(tmp_path, feature))
