"""inference-perf workload (step 4 of a run): run-scoped names, secrets, templates, readiness.

:func:`render_workload` renders every manifest of the workload namespace from
``runtimes/inference``; :func:`dgd_ready` and
:func:`chat_completion_ready` decide when the deployed workload serves.

Secrets: the HF token reaches the cluster only in the Secret built by
:func:`build_hf_token_secret`; anything printed goes through :func:`redact` or
:func:`printable_manifest`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets as _secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from aicr_pytest.core import templates, yamlio
from aicr_pytest.core.allocmode import GPU_RESOURCE
from aicr_pytest.inference.knobs import (
    AIPERF_JOB_PREFIX,
    CLAIM_TEMPLATE_NAME,
    DEPLOYMENT_NAME,
    EPP_IMAGE,
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    HF_SECRET_KEY,
    HF_SECRET_NAME,
    HF_TOKEN_ENV_NAMES,
    HOSTNAME_LABEL,
    HTTP_ROUTE_NAME,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    MODEL_CACHE_MOUNT,
    MODEL_CACHE_PVC,
    NAMESPACE_PREFIX,
    POPULATE_JOB_PREFIX,
    QUEUE_NAME,
    ROUTING_DYNAMO,
    ROUTING_GATEWAY,
    RUN_ID_LABEL,
    RUNTIME_IMAGE,
    InferenceFailure,
    InferenceKnobs,
)
from aicr_pytest.inference.nodes import NodeChoice

MSG_NO_DEFAULT_STORAGE_CLASS: Final = (
    "model-weights cache is enabled but the cluster has no default StorageClass and "
    "AICR_INFERENCE_PERF_MODEL_CACHE_STORAGE_CLASS is unset; set "
    "AICR_INFERENCE_PERF_MODEL_CACHE_STORAGE_CLASS=<name> (e.g. gp2/gp3 on EKS, standard-rwo on GKE) or "
    "disable the cache with AICR_INFERENCE_PERF_MODEL_CACHE_SIZE=off"
)
REDACTED: Final = "<redacted>"
MSG_DGD_NOT_READY: Final = (
    "[INTERNAL] DynamoGraphDeployment not ready: [TIMEOUT] timed out waiting for DynamoGraphDeployment "
    "to become ready: {state}"
)
MSG_ENDPOINT_TIMEOUT: Final = (
    "[TIMEOUT] timed out waiting for inference endpoint to serve requests: context deadline exceeded"
)
MSG_CACHE_POPULATE_FAILED: Final = "[INTERNAL] model-cache populate Job {namespace}/{job} failed: {detail}"
MSG_CACHE_POPULATE_TIMEOUT: Final = (
    "[TIMEOUT] model-cache populate Job {namespace}/{job} did not complete within {timeout} "
    "(AICR_INFERENCE_PERF_WORKLOAD_READY_TIMEOUT): {state}"
)

TEMPLATE_SUBDIR: Final = "inference"  # under the ``runtimes`` package


# --- run id and names ---------------------------------------------------


def derive_run_id(aicr_run_id: str | None, worker: str | None = None) -> str:
    """First 8 hex chars of sha256 of the run id (+ ``:<xdist worker>`` when given); random when unset."""
    if not aicr_run_id:
        return _secrets.token_hex(4)
    seed = aicr_run_id if not worker else f"{aicr_run_id}:{worker}"
    return hashlib.sha256(seed.encode()).hexdigest()[:8]


def workload_namespace(run_id: str) -> str:
    return NAMESPACE_PREFIX + run_id


def aiperf_job_name(run_id: str) -> str:
    return AIPERF_JOB_PREFIX + run_id


def populate_job_name(run_id: str) -> str:
    return POPULATE_JOB_PREFIX + run_id


def run_labels(run_id: str) -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY, RUN_ID_LABEL: run_id}


# --- secrets -------------------------------------------------------------------------------------


def build_hf_token_secret(namespace: str, token: str, run_id: str) -> dict[str, Any]:
    """Opaque Secret ``aicr-hf-token`` (key ``token``).  Never print it; see :func:`printable_manifest`."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": HF_SECRET_NAME, "namespace": namespace, "labels": run_labels(run_id)},
        "type": "Opaque",
        "stringData": {HF_SECRET_KEY: token},
    }


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every occurrence of each secret (and its base64 form) with ``<redacted>``."""
    needles: set[str] = set()
    for s in secrets:
        if s:
            needles.add(s)
            needles.add(base64.b64encode(s.encode()).decode())
    for needle in sorted(needles, key=len, reverse=True):
        text = text.replace(needle, REDACTED)
    return text


def printable_manifest(obj: Mapping[str, Any], secrets: Iterable[str | None] = ()) -> str:
    """YAML of a manifest, safe to print: Secret ``data``/``stringData`` values blanked, secrets redacted."""
    copy = json.loads(json.dumps(obj))
    if copy.get("kind") == "Secret":
        for key in ("data", "stringData"):
            if isinstance(copy.get(key), dict):
                copy[key] = dict.fromkeys(copy[key], REDACTED)
    return redact(yamlio.dump(copy), secrets)


# --- templates and the workload ------------------------------------------


def render_inference_template(name: str, **values: Any) -> dict[str, Any]:
    """Render ``runtimes/inference/<name>`` (via :mod:`aicr_pytest.core.templates`) into one YAML mapping."""
    docs = templates.render(f"{TEMPLATE_SUBDIR}/{name}", values)
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise templates.TemplateRenderError(f"template {name!r} did not render to one YAML mapping")
    return docs[0]


def find_default_storage_class(storage_classes: Iterable[Mapping[str, Any]]) -> str | None:
    """Name of the StorageClass annotated default (GA or beta annotation), else ``None``."""
    keys = ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")
    for sc in storage_classes:
        annotations = (sc.get("metadata") or {}).get("annotations") or {}
        if any(annotations.get(k) == "true" for k in keys):
            return str((sc.get("metadata") or {}).get("name") or "")
    return None


def require_cache_storage(knobs: InferenceKnobs, storage_classes: Iterable[Mapping[str, Any]]) -> None:
    """Fail the check fast (a failed phase, exit 8) when the cache needs a default StorageClass the
    cluster does not have: the guide's guidance, before anything is created."""
    if (
        knobs.model_cache_enabled
        and knobs.model_cache_storage_class is None
        and find_default_storage_class(storage_classes) is None
    ):
        raise InferenceFailure(f"[INVALID_REQUEST] {MSG_NO_DEFAULT_STORAGE_CLASS}")


def _is_gpu_component(component: Mapping[str, Any]) -> bool:
    return (
        component.get("type") in ("worker", "decode", "prefill")
        or component.get("name") == "VllmDecodeWorker"
    )


def _main_container(pod_spec: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = pod_spec.setdefault("containers", [])
    for c in containers:
        if c.get("name") == "main":
            return c
    main: dict[str, Any] = {"name": "main"}
    containers.append(main)
    return main


def apply_worker_scheduling(
    dgd: dict[str, Any],
    node: str,
    tolerations: Sequence[Mapping[str, str]],
    dra_wiring: bool,
    model_cache: bool,
) -> dict[str, Any]:
    """Pin every component to ``node`` by hostname and wire GPUs into the GPU components (in place)."""
    components = (dgd.get("spec") or {}).get("components")
    if not isinstance(components, list):
        raise InferenceFailure("DynamoGraphDeployment template has no spec.components list")
    for component in components:
        pod_spec: dict[str, Any] = component.setdefault("podTemplate", {}).setdefault("spec", {})
        pod_spec["nodeSelector"] = {HOSTNAME_LABEL: node}
        if tolerations:
            pod_spec["tolerations"] = [dict(t) for t in tolerations]
        if _is_gpu_component(component):
            main = _main_container(pod_spec)
            resources = main.setdefault("resources", {})
            if dra_wiring:
                pod_spec["resourceClaims"] = [
                    {"name": "gpu", "resourceClaimTemplateName": CLAIM_TEMPLATE_NAME}
                ]
                resources["claims"] = [{"name": "gpu"}]
            else:
                resources.setdefault("limits", {})[GPU_RESOURCE] = "1"
        if model_cache:
            volumes = pod_spec.setdefault("volumes", [])
            volumes.append(
                {
                    "name": "model-cache",
                    "persistentVolumeClaim": {"claimName": MODEL_CACHE_PVC, "readOnly": True},
                }
            )
            for c in pod_spec.get("containers") or []:
                c.setdefault("volumeMounts", []).append(
                    {"name": "model-cache", "mountPath": MODEL_CACHE_MOUNT, "readOnly": True}
                )
                env = c.get("env") or []
                env.extend(
                    [
                        {"name": "HF_HOME", "value": MODEL_CACHE_MOUNT},
                        {"name": "HF_HUB_OFFLINE", "value": "1"},
                    ]
                )
                c["env"] = env
    return dgd


def render_workload(
    run_id: str,
    knobs: InferenceKnobs,
    choice: NodeChoice,
    tolerations: Sequence[Mapping[str, str]],
    claim_api_version: str | None,
) -> list[dict[str, Any]]:
    """Every manifest of the workload namespace, in apply order (the HF Secret is built separately).

    Namespace → [model-cache PVC + populate Job] → KAI Queue → [DRA ResourceClaimTemplate] →
    DynamoGraphDeployment → [HTTPRoute for gateway-epp].
    """
    ns = workload_namespace(run_id)
    labels = run_labels(run_id)
    common: dict[str, Any] = {"namespace": ns, "labels": labels}
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
    ]
    if knobs.model_cache_size is not None:
        out.append(
            render_inference_template(
                "model-cache-pvc.yaml",
                **common,
                pvc_name=MODEL_CACHE_PVC,
                cache_size=knobs.model_cache_size,
                storage_class=knobs.model_cache_storage_class,
            )
        )
        job = render_inference_template(
            "model-cache-populate-job.yaml",
            **common,
            job_name=populate_job_name(run_id),
            pvc_name=MODEL_CACHE_PVC,
            runtime_image=RUNTIME_IMAGE,
            model=knobs.model,
            hf_secret_name=HF_SECRET_NAME,
        )
        pod_spec = job["spec"]["template"]["spec"]
        pod_spec["nodeSelector"] = {HOSTNAME_LABEL: choice.name}
        if tolerations:
            pod_spec["tolerations"] = [dict(t) for t in tolerations]
        out.append(job)
    out.append(render_inference_template("queue.yaml", **common, queue_name=QUEUE_NAME))
    if choice.dra_wiring:
        out.append(
            render_inference_template(
                "resource-claim-template.yaml",
                **common,
                claim_template_name=CLAIM_TEMPLATE_NAME,
                claim_api_version=claim_api_version or "v1",
            )
        )
    template = (
        "dynamo-deployment.yaml"
        if knobs.routing_mode == ROUTING_DYNAMO
        else "dynamo-deployment-gateway-epp.yaml"
    )
    dgd = render_inference_template(
        template,
        **common,
        deployment_name=DEPLOYMENT_NAME,
        model=knobs.model,
        gpu_count=choice.free_gpus,
        runtime_image=RUNTIME_IMAGE,
        epp_image=EPP_IMAGE,
        hf_secret_name=HF_SECRET_NAME,
        hf_token_env_names=list(HF_TOKEN_ENV_NAMES),
        router_mode=knobs.router_mode,
    )
    out.append(
        apply_worker_scheduling(dgd, choice.name, tolerations, choice.dra_wiring, knobs.model_cache_enabled)
    )
    if knobs.routing_mode == ROUTING_GATEWAY:
        out.append(
            render_inference_template(
                "http-route-gateway-epp.yaml",
                **common,
                route_name=HTTP_ROUTE_NAME,
                deployment_name=DEPLOYMENT_NAME,
                gateway_name=GATEWAY_NAME,
                gateway_namespace=GATEWAY_NAMESPACE,
            )
        )
    return out


# --- readiness ----------------------------------------------


def dgd_ready(dgd: Mapping[str, Any]) -> bool:
    """``status.state == successful`` and every desired component has ready ≥ desired replicas."""
    status = dgd.get("status")
    if not isinstance(status, Mapping) or status.get("state") != "successful":
        return False
    spec = dgd.get("spec") or {}
    desired: dict[str, Any] = {}
    components = spec.get("components")
    if isinstance(components, list):
        desired = {str(c.get("name")): c for c in components if isinstance(c, Mapping)}
    elif isinstance(spec.get("services"), Mapping):
        desired = {str(k): v for k, v in spec["services"].items() if isinstance(v, Mapping)}
    observed = status.get("components")
    if not isinstance(observed, Mapping):
        observed = status.get("services")
    if not isinstance(observed, Mapping):
        observed = {}
    for cname, comp in desired.items():
        replicas = comp.get("replicas", 1)
        if isinstance(replicas, bool) or not isinstance(replicas, int):
            return False
        if replicas < 1:
            continue
        entry = observed.get(cname)
        if not isinstance(entry, Mapping):
            return False
        ready = entry.get("readyReplicas", entry.get("availableReplicas"))
        if isinstance(ready, bool) or not isinstance(ready, int) or ready < replicas:
            return False
    return True


CHAT_PROBE_TIMEOUT_S: Final = 120.0
CHAT_PROBE_MAX_BODY: Final = 8 * 1024


def chat_probe_body(model: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def chat_completion_ready(status_code: int, body: bytes) -> bool:
    """HTTP 200, body ≤ 8 KiB, JSON with non-empty ``choices[0].message.content``."""
    if status_code != 200 or len(body) > CHAT_PROBE_MAX_BODY:
        return False
    try:
        data = json.loads(body)
    except ValueError:
        return False
    choices = data.get("choices") if isinstance(data, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return False
    message = choices[0].get("message")
    return (
        isinstance(message, Mapping) and isinstance(message.get("content"), str) and message["content"] != ""
    )
