"""Player for inference-perf: the Dynamo operator, the inference endpoint and AIPerf.

* **Dynamo operator** — when a ``DynamoGraphDeployment`` is created, its status goes to
  ``state: pending`` with per-component ``readyReplicas: 0``; the operator creates the frontend
  Service ``<dgd>-frontend`` (port 8000, named ``http``) and one pod per component replica from the
  component's ``podTemplate`` (nodeSelector, tolerations and GPU limits as rendered, so the simulated
  scheduler places and sizes them), owned by the DGD.  As pods reach ``Running`` the DGD's
  ``status.components`` counts follow; when every component is ready the state is ``successful``.
* **Endpoint** — the API server's service proxy for ``<dgd>-frontend`` answers
  ``POST /v1/chat/completions`` with a chat-completions JSON (and ``GET /v1/models``) once the DGD
  is ready; before that it answers 503, as a real frontend without workers does.
* **AIPerf** — pods of a Job named ``aicr-aiperf-*`` run for a few seconds and log a few progress
  lines, then the profile export JSON between ``===AIPERF-RESULT===`` sentinels: ~13,500 output
  tokens/sec per benchmarked GPU (about 108,000 on a full 8-GPU node) and a TTFT p99 of 702.4 ms.

* **Inference gateway** (routing mode ``gateway-epp``) — the operator also creates the EPP Service
  ``<dgd>-epp`` and, where the Inference Extension is served, the ``InferencePool <dgd>-pool``
  (owned by the DGD).  An ``HTTPRoute`` whose parent is the Gateway
  ``agentgateway-system/inference-gateway`` gets ``Accepted``/``ResolvedRefs`` parent status when
  that Gateway exists (no status at all when it does not: no controller owns the route).  The
  service proxy of the gateway Service ``agentgateway-system/inference-gateway`` (port 80) routes
  to the oldest accepted route's InferencePool and answers as that DGD's endpoint does; with no
  accepted route it answers 404.  The gateway itself is a cluster component a profile opts into
  (:mod:`.gateway`):
  :func:`install_gateway_api` (``agentgateway-crds``: Gateway API + Inference Extension CRDs) and
  :func:`install_gateway` (``agentgateway``: GatewayClass, Gateway, proxy Deployment and Service).

Faults (``--fault``): ``inference-low-throughput`` (2,500 tokens/sec per GPU: ~20,000 on 8 GPUs),
``inference-endpoint-down`` (the frontend answers 503 to everything).

Tests tune a scenario through ``fc.state["inference"]`` (read when the event happens):
``throughput`` / ``ttft_p99_ms`` (numbers for AIPerf), ``aiperf_json`` (the export document as-is),
``aiperf_log`` (the whole log), ``aiperf_exit_code``, ``endpoint_status`` (every proxied request
gets it), ``endpoint_failures`` (that many 503s before serving), ``dgd_never_ready`` (worker pods
stay in ``ImagePullBackOff``).  The player records ``probes`` (proxied requests) and
``dgd_workers`` (GPU worker replicas of the last DGD) there too.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Final

from aicr_pytest.testing.players.gateway import (
    GATEWAY_CONTROLLER,
    GATEWAY_GROUP,
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    INFERENCE_GROUP,
    install_gateway,
    install_gateway_api,
)
from aicr_pytest.testing.simulator import PodScript, Simulator
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = ["STATE_KEY", "install", "install_gateway", "install_gateway_api"]

STATE_KEY: Final = "inference"
DGD_GROUP: Final = "nvidia.com"
DGD_PLURAL: Final = "dynamographdeployments"
DGD_KIND: Final = "DynamoGraphDeployment"
AIPERF_PREFIX: Final = "aicr-aiperf-"
SENTINEL: Final = "===AIPERF-RESULT==="
FRONTEND_PORT: Final = 8000
POD_START_S: Final = 2.0
AIPERF_START_S: Final = 1.0
AIPERF_RUN_S: Final = 3.0
THROUGHPUT_PER_GPU: Final = 13_500.0
LOW_THROUGHPUT_PER_GPU: Final = 2_500.0
TTFT_P99_MS: Final = 702.4
FAULT_LOW_THROUGHPUT: Final = "inference-low-throughput"
FAULT_ENDPOINT_DOWN: Final = "inference-endpoint-down"
GPU_COMPONENT_TYPES: Final = ("worker", "decode", "prefill")
LABEL_DGD: Final = "nvidia.com/dynamo-graph-deployment-name"
LABEL_COMPONENT: Final = "nvidia.com/dynamo-component"
LABEL_COMPONENT_TYPE: Final = "nvidia.com/dynamo-component-type"
EPP_PORT: Final = 9002


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Register the operator, endpoint and AIPerf hooks (harmless on profiles without Dynamo)."""
    player = _InferencePlayer(fc, list(profile.faults))
    fc.sim.on_create(DGD_GROUP, "v1beta1", DGD_PLURAL, player.dgd_created)
    fc.sim.on_delete(DGD_GROUP, "v1beta1", DGD_PLURAL, player.dgd_deleted)
    fc.sim.on_update("", "v1", "pods", player.pod_changed)
    fc.sim.on_delete("", "v1", "pods", player.pod_changed)
    fc.sim.on_create("", "v1", "pods", player.pod_created)
    fc.sim.on_create(GATEWAY_GROUP, "v1", "httproutes", player.route_created)
    # the gateway data plane: the server answers 404 itself while the Service does not exist
    fc.server.proxy_handlers[(GATEWAY_NAMESPACE, GATEWAY_NAME)] = player.gateway


def dgd_components(dgd: Obj) -> list[Obj]:
    comps = (dgd.get("spec") or {}).get("components")
    return [c for c in comps if isinstance(c, dict)] if isinstance(comps, list) else []


def component_replicas(comp: Obj) -> int:
    value = comp.get("replicas", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _owner(pod: Obj) -> tuple[str, str] | None:
    for ref in pod.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("kind") == DGD_KIND:
            return str(pod["metadata"].get("namespace", "")), str(ref.get("name", ""))
    return None


def dgd_owner(dgd: Obj) -> Obj:
    """The controller owner reference the operator puts on what it creates for ``dgd``."""
    return {
        "apiVersion": f"{DGD_GROUP}/v1beta1",
        "kind": DGD_KIND,
        "name": str(dgd["metadata"]["name"]),
        "uid": str(dgd["metadata"].get("uid", "")),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def component_service(
    ns: str, name: str, labels: dict[str, str], component_type: str, port_name: str, port: int
) -> Obj:
    """The Service ``<dgd>-<component type>`` selecting that component's pods on ``port``."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-{component_type}", "namespace": ns, "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "selector": {LABEL_DGD: name, LABEL_COMPONENT_TYPE: component_type},
            "ports": [{"name": port_name, "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


def frontend_service(ns: str, name: str, labels: dict[str, str]) -> Obj:
    """The Service ``<dgd>-frontend`` the Dynamo operator creates (port 8000, named ``http``)."""
    return component_service(ns, name, labels, "frontend", "http", FRONTEND_PORT)


def component_labels(dgd_name: str, comp: Obj) -> dict[str, str]:
    """A component pod's labels: its template's, plus the operator's DGD/component labels."""
    template = comp.get("podTemplate") or {}
    return {
        **((template.get("metadata") or {}).get("labels") or {}),
        LABEL_DGD: dgd_name,
        LABEL_COMPONENT: str(comp.get("name", "component")),
        LABEL_COMPONENT_TYPE: str(comp.get("type", "")),
    }


def component_log(comp: Obj) -> str:
    """What a component's container prints once it serves."""
    if comp.get("type") == "frontend":
        return f"INFO dynamo.frontend: serving OpenAI API on 0.0.0.0:{FRONTEND_PORT} (SIMULATED)\n"
    return "INFO vllm: model loaded from /model-cache, engine ready (SIMULATED)\n"


def gpu_workers(dgd: Obj) -> int:
    """GPU worker replicas of ``dgd`` (what AIPerf's throughput scales with)."""
    return sum(
        component_replicas(c)
        for c in dgd_components(dgd)
        if c.get("type") in GPU_COMPONENT_TYPES or c.get("name") == "VllmDecodeWorker"
    )


def dgd_status(comps: list[Obj], ready: dict[str, int]) -> Obj:
    """The DGD status the operator writes: per-component counts, ``successful`` once all are ready."""
    components = {
        str(c.get("name")): {
            "replicas": component_replicas(c),
            "readyReplicas": ready.get(str(c.get("name")), 0),
            "availableReplicas": ready.get(str(c.get("name")), 0),
        }
        for c in comps
    }
    done = all(v["readyReplicas"] >= v["replicas"] for v in components.values())
    return {
        "state": "successful" if done else "pending",
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if done else "False",
                "reason": "AllComponentsReady" if done else "ComponentsNotReady",
            }
        ],
        "components": components,
    }


def served_model(dgd: Obj) -> str:
    for comp in dgd_components(dgd):
        for c in ((comp.get("podTemplate") or {}).get("spec") or {}).get("containers") or []:
            for env in c.get("env") or []:
                if env.get("name") == "SERVED_MODEL_NAME" and env.get("value"):
                    return str(env["value"])
    return "unknown"


def serve_openai(dgd: Obj | None, method: str, path: str, raw: bytes) -> tuple[int, str]:
    """How a Dynamo frontend answers: 503 until the DGD is ready, then ``/v1/models`` and chat completions."""
    if dgd is None or (dgd.get("status") or {}).get("state") != "successful":
        return 503, json.dumps({"error": {"message": "no ready workers (SIMULATED)", "code": 503}})
    if method == "GET" and path == "/v1/models":
        return 200, json.dumps({"object": "list", "data": [{"id": served_model(dgd), "object": "model"}]})
    if method == "POST" and path == "/v1/chat/completions":
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return 400, json.dumps({"error": {"message": "invalid JSON body", "code": 400}})
        model = str(body.get("model") or served_model(dgd))
        return 200, json.dumps(
            {
                "id": "chatcmpl-simulated",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Hello (SIMULATED)"},
                        "finish_reason": "length",
                    }
                ],
                "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
            }
        )
    return 404, json.dumps({"error": {"message": f"no route {method} {path}", "code": 404}})


def aiperf_concurrency(pod: Obj, gpus: int) -> int:
    """The ``--concurrency`` an AIPerf pod's script passes (else AICR's 256 per GPU)."""
    script_text = " ".join(
        str(part) for c in (pod.get("spec") or {}).get("containers") or [] for part in c.get("command") or []
    )
    found = re.search(r"--concurrency (\d+)", script_text)
    return int(found.group(1)) if found else 256 * gpus


def aiperf_url(pod: Obj) -> str | None:
    """The ``--url`` an AIPerf pod's script benchmarks."""
    script_text = " ".join(
        str(part) for c in (pod.get("spec") or {}).get("containers") or [] for part in c.get("command") or []
    )
    found = re.search(r"--url '?([^\s']+)", script_text)
    return found.group(1) if found else None


def aiperf_result(doc: Obj) -> str:
    """The export document between the sentinels, as the pod's script prints it."""
    return f"{SENTINEL}\n{json.dumps(doc, indent=2)}\n{SENTINEL}\n"


class _InferencePlayer:
    def __init__(self, fc: SimulatedCluster, faults: list[str]) -> None:
        self.fc = fc
        self.faults = faults

    @property
    def state(self) -> dict[str, Any]:
        st: dict[str, Any] = self.fc.state.setdefault(STATE_KEY, {})
        return st

    # -- the Dynamo operator ----------------------------------------------------------------------
    def dgd_created(self, sim: Simulator, dgd: Obj) -> None:
        meta = dgd["metadata"]
        ns, name = str(meta.get("namespace", "")), str(meta["name"])
        comps = dgd_components(dgd)
        self.state["dgd_workers"] = gpu_workers(dgd)
        self._set_status(sim, ns, name, comps, {})
        if any(c.get("type") == "frontend" for c in comps):
            self._frontend_service(sim, ns, name, dict(meta.get("labels") or {}))
        if any(c.get("type") == "epp" for c in comps):
            self._epp_objects(sim, dgd, dict(meta.get("labels") or {}))
        never_ready = bool(self.state.get("dgd_never_ready"))
        for comp in comps:
            cname = str(comp.get("name", "component"))
            ctype = str(comp.get("type", ""))
            pspec = (comp.get("podTemplate") or {}).get("spec") or {}
            labels = component_labels(name, comp)
            stuck = never_ready and ctype != "frontend"
            log = component_log(comp)
            for i in range(component_replicas(comp)):
                sim.create_pod(
                    ns,
                    f"{name}-{cname.lower()}-{i}",
                    containers=list(pspec.get("containers") or []) or None,
                    labels=labels,
                    owner=dgd,
                    node_selector=pspec.get("nodeSelector"),
                    tolerations=pspec.get("tolerations"),
                    restart_policy="Always",
                    script=PodScript(
                        start_after=POD_START_S,
                        run_for=None,
                        logs=log,
                        waiting_reason="ImagePullBackOff" if stuck else None,
                    ),
                )
        self.fc.server.proxy_handlers[(ns, f"{name}-frontend")] = self._endpoint(ns, name)

    def dgd_deleted(self, sim: Simulator, dgd: Obj) -> None:
        meta = dgd["metadata"]
        self.fc.server.proxy_handlers.pop((str(meta.get("namespace", "")), f"{meta['name']}-frontend"), None)

    def _frontend_service(self, sim: Simulator, ns: str, name: str, labels: dict[str, str]) -> None:
        sim.store.create(sim.rt("v1", "Service"), ns, frontend_service(ns, name, labels))

    def _epp_objects(self, sim: Simulator, dgd: Obj, labels: dict[str, str]) -> None:
        """gateway-epp: the EPP Service and (Inference Extension served) ``InferencePool <dgd>-pool``."""
        ns, name = str(dgd["metadata"].get("namespace", "")), str(dgd["metadata"]["name"])
        sim.store.create(
            sim.rt("v1", "Service"), ns, component_service(ns, name, labels, "epp", "grpc-ext-proc", EPP_PORT)
        )
        pools = sim.store.resource(INFERENCE_GROUP, "v1", "inferencepools")
        if pools is None:
            return
        owner = dgd_owner(dgd)
        sim.store.create(
            pools,
            ns,
            {
                "apiVersion": f"{INFERENCE_GROUP}/v1",
                "kind": "InferencePool",
                "metadata": {
                    "name": f"{name}-pool",
                    "namespace": ns,
                    "labels": labels,
                    "ownerReferences": [owner],
                },
                "spec": {
                    "selector": {"matchLabels": {LABEL_DGD: name, LABEL_COMPONENT_TYPE: "decode"}},
                    "targetPorts": [{"number": FRONTEND_PORT}],
                    "endpointPickerRef": {"name": f"{name}-epp", "port": {"number": EPP_PORT}},
                },
            },
        )

    # -- the inference gateway (gateway-epp) ------------------------------------------------------
    def route_created(self, sim: Simulator, route: Obj) -> None:
        """The gateway controller accepts a route whose parent Gateway exists (else: no status)."""
        meta = route["metadata"]
        ns = str(meta.get("namespace", ""))
        gateways = sim.store.resource(GATEWAY_GROUP, "v1", "gateways")
        parents: list[Obj] = []
        for ref in (route.get("spec") or {}).get("parentRefs") or []:
            gw_ns = str(ref.get("namespace") or ns)
            if gateways is None or sim.store.peek(gateways, gw_ns, str(ref.get("name", ""))) is None:
                continue
            resolved = all(self._backend_exists(sim, ns, b) for b in _backend_refs(route))
            parents.append(
                {
                    "parentRef": dict(ref),
                    "controllerName": GATEWAY_CONTROLLER,
                    "conditions": [
                        _condition("Accepted", True, "Accepted", sim),
                        _condition(
                            "ResolvedRefs", resolved, "ResolvedRefs" if resolved else "BackendNotFound", sim
                        ),
                    ],
                }
            )
        if parents:
            sim.set_status(f"{GATEWAY_GROUP}/v1", "HTTPRoute", str(meta["name"]), {"parents": parents}, ns)

    @staticmethod
    def _backend_exists(sim: Simulator, ns: str, ref: Obj) -> bool:
        if ref.get("kind") == "InferencePool":
            rt = sim.store.resource(str(ref.get("group") or INFERENCE_GROUP), "v1", "inferencepools")
        else:
            rt = sim.rt("v1", "Service")
        return (
            rt is not None
            and sim.store.peek(rt, str(ref.get("namespace") or ns), str(ref["name"])) is not None
        )

    def _accepted_route(self) -> Obj | None:
        """The oldest route attached to (and accepted by) ``agentgateway-system/inference-gateway``."""
        rt = self.fc.store.resource(GATEWAY_GROUP, "v1", "httproutes")
        if rt is None:
            return None
        found: list[tuple[str, str, str, Obj]] = []
        for route in self.fc.store.iter_objects(rt):
            meta = route["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            for parent in (route.get("status") or {}).get("parents") or []:
                ref = parent.get("parentRef") or {}
                accepted = any(
                    c.get("type") == "Accepted" and c.get("status") == "True"
                    for c in parent.get("conditions") or []
                )
                if (
                    accepted
                    and ref.get("name") == GATEWAY_NAME
                    and (ref.get("namespace") or meta.get("namespace")) == GATEWAY_NAMESPACE
                ):
                    key = (str(meta.get("creationTimestamp", "")), str(meta.get("namespace", "")))
                    found.append((*key, str(meta["name"]), route))
                    break
        return min(found, key=lambda f: f[:3])[3] if found else None

    def gateway(self, method: str, path: str, raw: bytes) -> tuple[int, str]:
        """The gateway data plane: route to the accepted route's pool (its DGD's workers)."""
        route = self._accepted_route()
        backend = next((b for b in _backend_refs(route) if b.get("kind") == "InferencePool"), None)
        if route is None or backend is None:
            st = self.state
            st["probes"] = int(st.get("probes", 0)) + 1
            return 404, json.dumps({"error": {"message": "route not found (SIMULATED)", "code": 404}})
        ns = str(backend.get("namespace") or route["metadata"].get("namespace", ""))
        pool_name = str(backend["name"])
        dgd_name = pool_name.removesuffix("-pool")
        pools = self.fc.store.resource(INFERENCE_GROUP, "v1", "inferencepools")
        pool = self.fc.store.peek(pools, ns, pool_name) if pools is not None else None
        for ref in ((pool or {}).get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("kind") == DGD_KIND:
                dgd_name = str(ref.get("name"))
        status, text = self._endpoint(ns, dgd_name)(method, path, raw)
        return int(status), str(text)

    def pod_changed(self, sim: Simulator, pod: Obj) -> None:
        owner = _owner(pod)
        if owner is None:
            return
        ns, name = owner
        rt = sim.rt(f"{DGD_GROUP}/v1beta1", DGD_KIND)
        dgd = sim.store.peek(rt, ns, name)
        if dgd is None or dgd["metadata"].get("deletionTimestamp"):
            return
        ready: dict[str, int] = {}
        for p in sim.store.iter_objects(sim.rt("v1", "Pod"), ns):
            if _owner(p) != owner or p["metadata"].get("deletionTimestamp"):
                continue
            if (p.get("status") or {}).get("phase") == "Running":
                comp = str((p["metadata"].get("labels") or {}).get(LABEL_COMPONENT, ""))
                ready[comp] = ready.get(comp, 0) + 1
        self._set_status(sim, ns, name, dgd_components(dgd), ready)

    @staticmethod
    def _set_status(sim: Simulator, ns: str, name: str, comps: list[Obj], ready: dict[str, int]) -> None:
        status = dgd_status(comps, ready)
        sim.set_status(f"{DGD_GROUP}/v1beta1", DGD_KIND, name, status, ns, merge=False)

    # -- the endpoint -------------------------------------------------------------------------------
    def _endpoint(self, ns: str, name: str) -> Any:
        def handle(method: str, path: str, raw: bytes) -> tuple[int, str]:
            st = self.state
            st["probes"] = int(st.get("probes", 0)) + 1
            forced = st.get("endpoint_status")
            if FAULT_ENDPOINT_DOWN in self.faults or forced:
                code = int(forced or 503)
                return code, json.dumps(
                    {"error": {"message": "upstream unavailable (SIMULATED)", "code": code}}
                )
            rt = self.fc.sim.rt(f"{DGD_GROUP}/v1beta1", DGD_KIND)
            dgd = self.fc.store.peek(rt, ns, name)
            ready = dgd is not None and (dgd.get("status") or {}).get("state") == "successful"
            if ready and int(st.get("endpoint_failures", 0)) > 0:
                st["endpoint_failures"] = int(st["endpoint_failures"]) - 1
                return 503, json.dumps(
                    {"error": {"message": "model is still loading (SIMULATED)", "code": 503}}
                )
            return serve_openai(dgd, method, path, raw)

        return handle

    # -- AIPerf -----------------------------------------------------------------------------------
    def pod_created(self, sim: Simulator, pod: Obj) -> None:
        meta = pod["metadata"]
        pod_name = str(meta.get("name", ""))
        if not pod_name.startswith(AIPERF_PREFIX):
            return
        st = self.state
        gpus = int(st.get("dgd_workers") or 8)
        per_gpu = LOW_THROUGHPUT_PER_GPU if FAULT_LOW_THROUGHPUT in self.faults else THROUGHPUT_PER_GPU
        throughput = float(st.get("throughput", per_gpu * gpus))
        ttft = float(st.get("ttft_p99_ms", TTFT_P99_MS))
        concurrency = aiperf_concurrency(pod, gpus)
        doc = st.get("aiperf_json") or aiperf_export(throughput, ttft, concurrency)
        final = st.get("aiperf_log")
        if final is None:
            final = aiperf_result(doc)
        ns = str(meta.get("namespace", ""))

        def this_pod(p: Obj) -> bool:
            return bool(p["metadata"]["name"] == pod_name and p["metadata"].get("namespace") == ns)

        sim.script(
            PodScript(
                predicate=this_pod,
                times=1,
                start_after=AIPERF_START_S,
                run_for=AIPERF_RUN_S,
                logs=f"aiperf profile: concurrency {concurrency} (SIMULATED)\n",
                log_lines=[
                    (AIPERF_RUN_S / 3, "Warmup: 100% complete\n"),
                    (2 * AIPERF_RUN_S / 3, "Profiling: 50% complete\n"),
                    (AIPERF_RUN_S, f"Profiling: 100% complete\n{final}"),
                ],
                exit_code=int(st.get("aiperf_exit_code", 0)),
            )
        )


def _backend_refs(route: Obj | None) -> list[Obj]:
    rules = ((route or {}).get("spec") or {}).get("rules") or []
    return [b for r in rules for b in r.get("backendRefs") or [] if isinstance(b, dict) and b.get("name")]


def _condition(kind: str, ok: bool, reason: str, sim: Simulator) -> Obj:
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": reason,
        "lastTransitionTime": sim.store.clock.timestamp(),
    }


def aiperf_export(throughput: float, ttft_p99: float, concurrency: int) -> dict[str, Any]:
    """A profile export document shaped like AIPerf's ``profile_export_aiperf.json`` (summary level)."""
    return {
        "output_token_throughput": {"unit": "tokens/sec", "avg": round(throughput, 2)},
        "request_throughput": {"unit": "requests/sec", "avg": round(throughput / 128, 2)},
        "time_to_first_token": {
            "unit": "ms",
            "avg": round(ttft_p99 * 0.55, 2),
            "p50": round(ttft_p99 * 0.52, 2),
            "p90": round(ttft_p99 * 0.8, 2),
            "p99": round(ttft_p99, 2),
        },
        "request_latency": {"unit": "ms", "avg": round(ttft_p99 * 2.9, 2)},
        "output_sequence_length": {"unit": "tokens", "avg": 128.0},
        "input_sequence_length": {"unit": "tokens", "avg": 128.0},
        "input_config": {"loadgen": {"concurrency": concurrency}, "simulated": True},
    }
