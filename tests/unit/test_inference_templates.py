"""runtimes/inference templates render for both routing modes and both GPU wirings."""

from __future__ import annotations

from typing import Any

import pytest
from _gpu_objects import node

from aicr_pytest import inference as inf
from aicr_pytest.core.recipe import Constraint

RUN = "abcd1234"
NS = "aicr-inference-perf-abcd1234"


def knobs(routing: str, **env: str) -> inf.InferenceKnobs:
    return inf.resolve_knobs([Constraint(name="inference-routing-mode", value=routing)], env)


def choice(dra: bool, free: int = 3) -> inf.NodeChoice:
    return inf.NodeChoice(
        node=node("gpu-1"), name="gpu-1", free_gpus=free, node_gpus=8, dra_wiring=dra, candidates=1
    )


def kinds(manifests: list[dict[str, Any]]) -> list[str]:
    return [m["kind"] for m in manifests]


def by_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [m for m in manifests if m["kind"] == kind]
    return found


@pytest.mark.parametrize("routing", ["dynamo-router", "gateway-epp"])
@pytest.mark.parametrize("dra", [False, True])
@pytest.mark.parametrize("cache", ["100Gi", "off"])
def test_workload_renders(routing: str, dra: bool, cache: str) -> None:
    manifests = inf.render_workload(
        RUN, knobs(routing, AICR_INFERENCE_PERF_MODEL_CACHE_SIZE=cache), choice(dra), [], "v1beta2"
    )
    expected = ["Namespace"]
    if cache != "off":
        expected += ["PersistentVolumeClaim", "Job"]
    expected += ["Queue"]
    if dra:
        expected += ["ResourceClaimTemplate"]
    expected += ["DynamoGraphDeployment"]
    if routing == "gateway-epp":
        expected += ["HTTPRoute"]
    assert kinds(manifests) == expected
    for m in manifests:
        assert m["metadata"]["labels"]["aicr.run/run-id"] == RUN
        if m["kind"] != "Namespace":
            assert m["metadata"]["namespace"] == NS
    dgd = by_kind(manifests, "DynamoGraphDeployment")
    assert dgd["apiVersion"] == "nvidia.com/v1beta1" and dgd["metadata"]["name"] == "aicr-inference-perf"
    components = {c["name"]: c for c in dgd["spec"]["components"]}
    worker = components["VllmDecodeWorker"]
    assert worker["replicas"] == 3
    for c in components.values():
        spec = c["podTemplate"]["spec"]
        assert spec["nodeSelector"] == {"kubernetes.io/hostname": "gpu-1"}
        mounts = [m for ct in spec["containers"] for m in ct.get("volumeMounts", [])]
        assert bool(mounts) is (cache != "off")
    main = next(ct for ct in worker["podTemplate"]["spec"]["containers"] if ct["name"] == "main")
    if dra:
        assert worker["podTemplate"]["spec"]["resourceClaims"] == [
            {"name": "gpu", "resourceClaimTemplateName": "aicr-inference-gpu-claim"}
        ]
        assert main["resources"]["claims"] == [{"name": "gpu"}]
        assert "limits" not in main["resources"]
    else:
        assert main["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    if routing == "dynamo-router":
        assert set(components) == {"Frontend", "VllmDecodeWorker"}
        env = {
            e["name"]: e.get("value")
            for e in components["Frontend"]["podTemplate"]["spec"]["containers"][0]["env"]
        }
        assert env["DYN_ROUTER_MODE"] == "least-loaded" and env["SERVED_MODEL_NAME"] == "Qwen/Qwen3-8B"
    else:
        assert set(components) == {"Epp", "VllmDecodeWorker"}
        assert components["Epp"]["type"] == "epp" and worker["type"] == "decode"
        assert worker["frontendSidecar"] == "sidecar-frontend"
        route = by_kind(manifests, "HTTPRoute")
        assert route["metadata"]["name"] == "aicr-inference-perf-route"
        backend = route["spec"]["rules"][0]["backendRefs"][0]
        assert (backend["kind"], backend["name"], backend["port"]) == (
            "InferencePool",
            "aicr-inference-perf-pool",
            8000,
        )
        assert route["spec"]["parentRefs"][0]["namespace"] == "agentgateway-system"


@pytest.mark.parametrize("mode", ["kv", "device-aware-weighted"])
def test_the_router_mode_knob_reaches_the_dynamo_frontend_only(mode: str) -> None:
    manifests = inf.render_workload(
        RUN, knobs("dynamo-router", AICR_INFERENCE_PERF_ROUTER_MODE=mode), choice(False), [], "v1"
    )
    frontend = next(
        c
        for c in by_kind(manifests, "DynamoGraphDeployment")["spec"]["components"]
        if c["type"] == "frontend"
    )
    env = {e["name"]: e.get("value") for e in frontend["podTemplate"]["spec"]["containers"][0]["env"]}
    assert env["DYN_ROUTER_MODE"] == mode
    # gateway-epp: EPP selects the endpoint; no component carries a router mode
    epp = inf.render_workload(
        RUN, knobs("gateway-epp", AICR_INFERENCE_PERF_ROUTER_MODE=mode), choice(False), [], "v1"
    )
    assert "DYN_ROUTER_MODE" not in str(by_kind(epp, "DynamoGraphDeployment"))


def test_the_cache_storage_class_constraint_reaches_the_pvc() -> None:
    recipe = [
        Constraint(name="inference-routing-mode", value="dynamo-router"),
        Constraint(name="inference-model-cache-storage-class", value="a4x-compatible"),
    ]
    picked = inf.resolve_knobs(recipe, {"AICR_INFERENCE_PERF_MODEL_CACHE_STORAGE_CLASS": "gp3"})
    pvc = by_kind(inf.render_workload(RUN, picked, choice(False), [], "v1"), "PersistentVolumeClaim")
    assert pvc["spec"]["storageClassName"] == "a4x-compatible"
    default = by_kind(
        inf.render_workload(RUN, knobs("dynamo-router"), choice(False), [], "v1"), "PersistentVolumeClaim"
    )
    assert "storageClassName" not in default["spec"]  # the cluster's default StorageClass


@pytest.mark.parametrize(("version", "inline"), [("v1", False), ("v1beta2", False), ("v1beta1", True)])
def test_claim_template_per_served_version(version: str, inline: bool) -> None:
    manifests = inf.render_workload(RUN, knobs("dynamo-router"), choice(True), [], version)
    rct = by_kind(manifests, "ResourceClaimTemplate")
    assert rct["apiVersion"] == f"resource.k8s.io/{version}"
    assert rct["metadata"]["name"] == "aicr-inference-gpu-claim"
    request = rct["spec"]["spec"]["devices"]["requests"][0]
    fields = request if inline else request["exactly"]
    assert (fields["deviceClassName"], fields["allocationMode"], fields["count"]) == (
        "gpu.nvidia.com",
        "ExactCount",
        1,
    )
    assert ("exactly" in request) is not inline


def test_queue_and_cache_objects() -> None:
    manifests = inf.render_workload(
        RUN,
        knobs("dynamo-router", AICR_INFERENCE_PERF_MODEL_CACHE_STORAGE_CLASS="gp3"),
        choice(False),
        [],
        None,
    )
    queue = by_kind(manifests, "Queue")
    assert (
        queue["apiVersion"] == "scheduling.run.ai/v2"
        and queue["spec"]["parentQueue"] == "default-parent-queue"
    )
    assert queue["spec"]["resources"]["gpu"] == {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    pvc = by_kind(manifests, "PersistentVolumeClaim")
    assert pvc["spec"]["storageClassName"] == "gp3"
    assert pvc["spec"]["resources"]["requests"]["storage"] == "100Gi"
    job = by_kind(manifests, "Job")
    assert job["metadata"]["name"] == "aicr-model-cache-populate-abcd1234"
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/hostname": "gpu-1"}
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "100m", "memory": "512Mi"}}


def test_tolerations_and_scalar_looking_model_survive_yaml() -> None:
    tolerations = [{"key": "dedicated", "operator": "Equal", "value": "a: b # {c}", "effect": "NoSchedule"}]
    k = inf.resolve_knobs([Constraint(name="inference-model", value="1.10")])
    manifests = inf.render_workload(RUN, k, choice(False), tolerations, None)
    dgd = by_kind(manifests, "DynamoGraphDeployment")
    worker = dgd["spec"]["components"][1]
    assert worker["podTemplate"]["spec"]["tolerations"] == tolerations
    assert worker["podTemplate"]["spec"]["containers"][0]["args"][1] == "1.10"  # a string, not 1.1


def test_gateway_model_quoting() -> None:
    k = inf.resolve_knobs(
        [
            Constraint(name="inference-routing-mode", value="gateway-epp"),
            Constraint(name="inference-model", value="true"),
        ]
    )
    dgd = by_kind(inf.render_workload(RUN, k, choice(False), [], None), "DynamoGraphDeployment")
    env = {
        e["name"]: e.get("value")
        for e in dgd["spec"]["components"][0]["podTemplate"]["spec"]["containers"][0]["env"]
    }
    assert env["DYN_MODEL_NAME"] == "true"


def test_missing_components_is_a_failure() -> None:
    with pytest.raises(inf.InferenceFailure):
        inf.apply_worker_scheduling({"spec": {}}, "n", [], False, False)


def test_default_storage_class() -> None:
    default = {
        "metadata": {"name": "gp3", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}
    }
    beta = {
        "metadata": {
            "name": "old",
            "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"},
        }
    }
    assert inf.find_default_storage_class([{"metadata": {"name": "gp2"}}, default]) == "gp3"
    assert inf.find_default_storage_class([beta]) == "old"
    assert inf.find_default_storage_class([{"metadata": {"name": "gp2"}}]) is None
    with pytest.raises(inf.InferenceFailure) as exc:  # a failed check (exit 8), not a usage error
        inf.require_cache_storage(knobs("dynamo-router"), [{"metadata": {"name": "gp2"}}])
    assert str(exc.value) == f"[INVALID_REQUEST] {inf.MSG_NO_DEFAULT_STORAGE_CLASS}"
    inf.require_cache_storage(knobs("dynamo-router", AICR_INFERENCE_PERF_MODEL_CACHE_SIZE="off"), [])
    inf.require_cache_storage(knobs("dynamo-router", AICR_INFERENCE_PERF_MODEL_CACHE_STORAGE_CLASS="x"), [])


# --- readiness helpers ---------------------------------------------------------------------------


def dgd(status: dict[str, Any] | None, replicas: Any = 8) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "spec": {
            "components": [
                {"name": "Frontend", "replicas": 1},
                {"name": "VllmDecodeWorker", "replicas": replicas},
            ]
        }
    }
    if status is not None:
        obj["status"] = status
    return obj


def comps(worker: dict[str, int] | None, frontend: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {"Frontend": {"readyReplicas": frontend}}
    if worker is not None:
        out["VllmDecodeWorker"] = worker
    return {"state": "successful", "components": out}


@pytest.mark.parametrize(
    ("obj", "ready"),
    [
        (dgd(None), False),
        (dgd({"state": "pending", "components": {}}), False),
        (dgd({"state": "successful", "components": {}}), False),
        (dgd(comps(None)), False),
        (dgd(comps({"readyReplicas": 5})), False),
        (dgd(comps({"readyReplicas": 8})), True),
        (dgd(comps({"availableReplicas": 8})), True),
        (dgd(comps({"readyReplicas": 8}), replicas="eight"), False),
        (dgd(comps({"readyReplicas": 0}), replicas=0), True),
        (
            {
                "spec": {"components": [{"name": "W"}]},
                "status": {"state": "successful", "components": {"W": {"readyReplicas": 1}}},
            },
            True,
        ),
        (
            {
                "spec": {"services": {"W": {"replicas": 2}}},
                "status": {"state": "successful", "services": {"W": {"readyReplicas": 2}}},
            },
            True,
        ),
    ],
)
def test_dgd_ready(obj: dict[str, Any], ready: bool) -> None:
    assert inf.dgd_ready(obj) is ready


@pytest.mark.parametrize(
    ("code", "body", "ready"),
    [
        (503, b"", False),
        (200, b'{"choices":[{"message":{"content":""}}]}', False),
        (200, b'{"choices":[]}', False),
        (200, b'{"choices":[{"message":{"content":"hi"}}]}', True),
        (200, b"not json", False),
        (200, b'{"choices":[{"message":{"content":"' + b"x" * 9000 + b'"}}]}', False),
    ],
)
def test_chat_completion_ready(code: int, body: bytes, ready: bool) -> None:
    assert inf.chat_completion_ready(code, body) is ready
    assert inf.chat_probe_body("m") == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 4,
    }
