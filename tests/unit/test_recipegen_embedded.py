"""The embedded overlay tree: every service × accelerator × intent the guide names generates a recipe
that loads, validates cleanly and declares the checks the guide says apply."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import inference, nccl
from aicr_pytest.core import catalog, yamlio
from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.inputs import load_run_state
from aicr_pytest.core.policy import DEVICE_PLUGIN
from aicr_pytest.core.recipe import Recipe, parse_recipe
from aicr_pytest.core.settings import Settings
from aicr_pytest.nccl import CHECK_VARIANTS, SUPPORTED_COMBINATIONS
from aicr_pytest.recipegen import criteria as crit
from aicr_pytest.recipegen.build import generate
from aicr_pytest.recipegen.store import OverlayStore, load_store

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
NCCL_CHECKS = set(CHECK_VARIANTS)
INFERENCE_GATES = {
    "inference-throughput": ">= 50000",
    "inference-ttft-p99": "<= 2000",
    "inference-model": "Qwen/Qwen3-8B",
    "inference-concurrency-per-gpu": "256",
    "inference-routing-mode": "dynamo-router",
}
TRAINING_CONFORMANCE = {
    "platform-health",
    "gpu-operator-health",
    "dra-support",
    "accelerator-metrics",
    "ai-service-metrics",
    "gang-scheduling",
    "pod-autoscaling",
    "cluster-autoscaling",
    "robust-controller",
    "secure-accelerator-access",
}


@functools.cache
def embedded() -> tuple[DataTree, OverlayStore]:
    tree = DataTree.default()
    return tree, load_store(tree)


def generated(**query: Any) -> tuple[dict[str, Any], Recipe]:
    tree, store = embedded()
    document = generate(store, tree, crit.build(store.registry, None, **query)).document
    recipe, warnings = parse_recipe(document, "generated")
    assert warnings == []
    return document, recipe


def perf(recipe: Recipe) -> dict[str, str]:
    return {c.name: c.value for c in recipe.phase_constraints("performance")}


def readiness(recipe: Recipe) -> dict[str, str]:
    return {c.name: c.value for c in recipe.constraints}


BASE_CONFORMANCE = [
    "platform-health",
    "gpu-operator-health",
    "dra-support",
    "accelerator-metrics",
    "ai-service-metrics",
]
#: AICR's GB200 training overlays (EKS and OKE) and OKE's others leave out the last two.
EIGHT = [*BASE_CONFORMANCE, "gang-scheduling", "pod-autoscaling", "cluster-autoscaling"]
DYNAMO_CONFORMANCE = [
    *BASE_CONFORMANCE,
    "inference-gateway",
    "gang-scheduling",
    "pod-autoscaling",
    "cluster-autoscaling",
    "robust-controller",
    "secure-accelerator-access",
]
TRAINING = [*EIGHT, "robust-controller", "secure-accelerator-access"]

# The facts of AICR's recipes for the combinations the guide names (query, performance checks,
# performance constraints, K8s floor, GPU operator floor, conformance checks).  Where the guide says
# otherwise, AICR's recipe wins (docs/differences.md, "Embedded recipe data").
GUIDE_CASES: list[tuple[dict[str, str], list[str], dict[str, str], str, str, list[str]]] = [
    # Training: the NCCL variant table.
    (dict(service="eks", accelerator="h100", intent="training", os="ubuntu", platform="kubeflow"),
     ["nccl-all-reduce-bw"], {"nccl-all-reduce-bw": ">= 300"}, ">= 1.32.4", ">= v24.6.0", TRAINING),
    # The guide lists h200/eks as a benchmark pair; AICR ships no H200 training overlay for EKS.
    (dict(service="eks", accelerator="h200", intent="training"),
     [], {}, ">= 1.30", ">= v24.6.0", BASE_CONFORMANCE),
    (dict(service="gke", accelerator="h100", intent="training", os="cos", platform="kubeflow"),
     ["nccl-all-reduce-bw"], {"nccl-all-reduce-bw": ">= 300"}, ">= 1.32", ">= v24.6.0", TRAINING),
    (dict(service="aks", accelerator="h100", intent="training", os="ubuntu"),
     ["nccl-all-reduce-bw"], {"nccl-all-reduce-bw": ">= 150"}, ">= 1.32.4", ">= v24.6.0", TRAINING),
    (dict(service="eks", accelerator="gb200", intent="training", os="ubuntu", platform="kubeflow"),
     ["nccl-all-reduce-bw-net", "nccl-all-reduce-bw-nvls"],
     {"nccl-all-reduce-bw-net": ">= 40", "nccl-all-reduce-bw-nvls": ">= 500"},
     ">= 1.32.4", ">= v25.10.0", EIGHT),
    # AICR's OKE overlays are OS-gated (ol or ubuntu).
    (dict(service="oke", accelerator="gb200", intent="training", os="ol"),
     ["nccl-all-reduce-bw-nvls"], {"nccl-all-reduce-bw-nvls": ">= 500"}, ">= 1.34", ">= v25.10.0", EIGHT),
    # The guide says GB200/EKS recipes of both intents run -net and -nvls; AICR's inference overlay
    # declares no NCCL check.  GB200/OKE inference: none either.
    (dict(service="eks", accelerator="gb200", intent="inference"),
     [], {}, ">= 1.32.4", ">= v25.10.0", BASE_CONFORMANCE),
    (dict(service="oke", accelerator="gb200", intent="inference", os="ol"),
     [], {}, ">= 1.32.4", ">= v25.10.0", BASE_CONFORMANCE),
    # Self-managed Blackwell: the accelerator overlay only (deployment checks, base's K8s floor).
    (dict(accelerator="b200", intent="training", platform="kubeflow"), [], {}, ">= 1.25", ">= v25.10.0", []),
    (dict(accelerator="gb200", intent="training"), [], {}, ">= 1.25", ">= v25.10.0", []),
    # Inference without a platform: nothing to benchmark.
    (dict(service="eks", accelerator="h100", intent="inference", os="ubuntu"),
     [], {}, ">= 1.32.4", ">= v24.6.0", BASE_CONFORMANCE),
    # Inference on Dynamo: inference-perf with its gates and inputs, Kubernetes 1.34.
    (dict(service="eks", accelerator="h100", intent="inference", os="ubuntu", platform="dynamo"),
     ["inference-perf"], INFERENCE_GATES, ">= 1.34", ">= v24.6.0", DYNAMO_CONFORMANCE),
    (dict(service="aks", accelerator="h100", intent="inference", os="ubuntu", platform="dynamo"),
     ["inference-perf"], INFERENCE_GATES, ">= 1.34", ">= v24.6.0", DYNAMO_CONFORMANCE),
    (dict(service="gke", accelerator="h100", intent="inference", os="cos", platform="dynamo"),
     ["inference-perf"], INFERENCE_GATES, ">= 1.34", ">= v24.6.0", DYNAMO_CONFORMANCE),
    (dict(service="eks", accelerator="gb200", intent="inference", os="ubuntu", platform="dynamo"),
     ["inference-perf"], INFERENCE_GATES, ">= 1.34", ">= v25.10.0",
     [*BASE_CONFORMANCE, "inference-gateway", "robust-controller", "secure-accelerator-access",
      "pod-autoscaling", "cluster-autoscaling"]),
    # Dynamo where AICR ships no Dynamo overlay (H200/EKS, GB200/OKE, self-managed B200): the
    # platform selects nothing, the recipe is the inference one.
    (dict(service="eks", accelerator="h200", intent="inference", platform="dynamo"),
     [], {}, ">= 1.32.4", ">= v24.6.0", BASE_CONFORMANCE),
    (dict(service="oke", accelerator="gb200", intent="inference", os="ol", platform="dynamo"),
     [], {}, ">= 1.32.4", ">= v25.10.0", BASE_CONFORMANCE),
    (dict(accelerator="b200", intent="inference", platform="dynamo"), [], {}, ">= 1.25", ">= v25.10.0", []),
]  # fmt: skip


def _id(case: tuple[dict[str, str], Any, Any, Any, Any, Any]) -> str:
    return "-".join(case[0].values())


@pytest.mark.parametrize(
    ("query", "checks", "perf_constraints", "k8s", "operator", "conformance"),
    GUIDE_CASES,
    ids=[_id(c) for c in GUIDE_CASES],
)
def test_guide_combinations(
    query: dict[str, str],
    checks: list[str],
    perf_constraints: dict[str, str],
    k8s: str,
    operator: str,
    conformance: list[str],
) -> None:
    document, recipe = generated(**query)
    assert recipe.phase_checks("performance") == checks
    assert perf(recipe) == perf_constraints
    assert readiness(recipe)["K8s.server.version"] == k8s
    assert recipe.phase_checks("deployment") == [
        "operator-health",
        "expected-resources",
        "gpu-operator-version",
        "check-nvidia-smi",
    ]
    gate = recipe.phase_constraint("deployment", "Deployment.gpu-operator.version")
    assert gate is not None and gate.value == operator
    assert recipe.phase_checks("conformance") == conformance
    names = {r.name for r in recipe.component_refs}
    if any(c in NCCL_CHECKS for c in checks) or (query.get("platform") == "kubeflow" and "service" in query):
        assert "kubeflow-trainer" in names  # the NCCL benchmark is a TrainJob
    if "inference-perf" in checks:
        assert "dynamo-platform" in names
    else:
        assert "dynamo-platform" not in names
    if query.get("intent") == "inference" and query.get("service"):
        assert {"agentgateway", "agentgateway-crds"} <= names
    if query.get("os") == "ubuntu":
        assert readiness(recipe)["OS.release.ID"] == "ubuntu"
        assert readiness(recipe)["OS.sysctl./proc/sys/kernel/osrelease"] == ">= 6.8"
    if query.get("os") in ("cos", "ol"):
        assert "OS.release.ID" not in readiness(recipe)  # AICR declares no OS constraint for them
    assert document["criteria"] == {f: query.get(f, "any") for f in crit.FIELDS}


def _leaf_queries() -> list[dict[str, Any]]:
    _, store = embedded()
    queries = []
    for name in sorted(store.overlays):
        c = store.overlays[name].spec.criteria
        if c is not None:
            queries.append({f: getattr(c, f) for f in crit.FIELDS} | {"nodes": c.nodes, "name": name})
    return queries


def _prevalidate(checks: list[str], recipe: Recipe, data: DataTree) -> None:
    """What the NCCL and inference families' ``pytest_aicr_prevalidate`` hooks run."""
    settings = Settings(no_cluster=True)
    if any(c in NCCL_CHECKS for c in checks):
        nccl.prevalidate(recipe, settings, data)
    if "inference-perf" in checks:
        inference.prevalidate(recipe, settings, data)


@pytest.mark.parametrize("query", _leaf_queries(), ids=lambda q: q["name"])
def test_every_embedded_overlay_generates_a_clean_recipe(query: dict[str, Any], tmp_path: Path) -> None:
    """Each overlay's own criteria: the written recipe goes through validate's input loading
    (recipe file, snapshot, constraint expressions, check selection, the families' prevalidation,
    the GPU allocation policy) without an error; the policy is the device plugin with no warning;
    only NCCL variants the benchmark implements for the service/accelerator are declared."""
    name = query.pop("name")
    document, recipe = generated(**query)
    assert name in document["metadata"]["appliedOverlays"]
    path = tmp_path / "recipe.yaml"
    path.write_text(yamlio.dump(document))
    settings = Settings(recipe=str(path), snapshot=str(SNAPSHOT), no_cluster=True)
    state = load_run_state(settings, prevalidate=_prevalidate)
    assert (state.policy.mode, state.policy.warnings, state.warnings) == (DEVICE_PLUGIN, [], [])
    declared = [c for p in catalog.PHASES for c in recipe.phase_checks(p)]
    assert sorted(s.spec.name for s in state.selected) == sorted(declared)
    for check in recipe.phase_checks("performance"):
        if check in NCCL_CHECKS:
            accelerators = SUPPORTED_COMBINATIONS[CHECK_VARIANTS[check]].get(
                recipe.criteria.service or "", set()
            )
            assert recipe.criteria.accelerator in accelerators, (check, recipe.criteria)
            assert recipe.phase_constraint("performance", check) is not None
    order = {n: i for i, n in enumerate(recipe.deployment_order)}
    assert sorted(order) == sorted(r.name for r in recipe.enabled_components())
    for ref in recipe.enabled_components():
        assert all(order[dep] < order[ref.name] for dep in ref.dependency_refs), ref.name


def test_gke_needs_an_os() -> None:
    with pytest.raises(UsageError) as exc:
        generated(service="gke", accelerator="h100", intent="training")
    assert (
        str(exc.value)
        == "service 'gke' has no OS-agnostic recipe for accelerator 'h100'; specify an OS (valid: cos)"
    )


@pytest.mark.parametrize(("service", "valid"), [("gke", "cos"), ("oke", "ol, ubuntu")])
def test_os_gated_services_need_an_os(service: str, valid: str) -> None:
    """AICR's GKE and OKE overlays are all OS-gated: without an OS the guard refuses, naming them."""
    with pytest.raises(UsageError) as exc:
        generated(service=service, accelerator="gb200", intent="training")
    assert str(exc.value) == (
        f"service '{service}' has no OS-agnostic recipe for accelerator 'gb200'; "
        f"specify an OS (valid: {valid})"
    )


def test_main_example_is_the_generated_recipe() -> None:
    """The shipped example equals `recipe --service eks --accelerator h100 --os ubuntu --intent training
    --platform kubeflow`, compared as parsed YAML.  Ignored: metadata.version (the generating tool's
    version, which is run-specific)."""
    document, _ = generated(
        service="eks", accelerator="h100", os="ubuntu", intent="training", platform="kubeflow"
    )
    shipped = yamlio.load(EXAMPLE.read_bytes())
    document["metadata"].pop("version")
    shipped["metadata"].pop("version")
    assert document == shipped


@pytest.mark.parametrize(
    ("query", "present", "disabled"),
    [
        (dict(service="eks", accelerator="h100", intent="training", os="ubuntu", platform="slurm"),
         {"slinky-slurm", "slinky-slurm-operator", "slinky-slurm-operator-crds"}, set()),
        (dict(service="eks", accelerator="h100", intent="inference", os="ubuntu", platform="nim"),
         {"k8s-nim-operator", "agentgateway"}, set()),
        (dict(service="ocp", accelerator="h100", intent="training"),
         {"gpu-operator-ocp"}, {"gpu-operator", "nfd", "kube-prometheus-stack", "nvidia-dra-driver-gpu"}),
    ],
)  # fmt: skip
def test_platform_and_service_components(
    query: dict[str, str], present: set[str], disabled: set[str]
) -> None:
    """The components the checks of these recipes look for come with them (slinky-slurm-* skip
    without ``slinky-slurm``; operator-health reads OpenShift's operator from ``gpu-operator-ocp``)."""
    _, recipe = generated(**query)
    enabled = {r.name for r in recipe.enabled_components()}
    assert present <= enabled
    assert not disabled & enabled
    assert disabled <= {r.name for r in recipe.component_refs}
