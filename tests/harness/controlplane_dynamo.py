"""Test controllers for inference-perf on the real control plane: Dynamo, a volume provisioner, AIPerf.

What the fake's inference player (:mod:`aicr_pytest.testing.players.inference`) does inside the fake,
done here against a real apiserver, with the shared pure pieces of that module (operator status,
frontend Service, OpenAI answers, AIPerf export):

* :class:`DynamoController` plays the Dynamo operator. For each ``DynamoGraphDeployment`` it creates
  the frontend Service and one pod per component replica from the component's ``podTemplate``, owned
  by the DGD (so the real garbage collector removes them with it). The real scheduler binds them
  (nodeSelector, tolerations, ``nvidia.com/gpu``), kwok runs them, the real EndpointSlice controller
  publishes the frontend pod's IP, and the controller writes the DGD's status from the pods it sees
  Running and Ready. Each frontend pod gets a local HTTP server answering as a Dynamo frontend, and
  the apiserver's egress proxy (:mod:`.egress`) routes ``<pod IP>:8000`` to it: the check's probe
  through the service proxy travels the real path.
* :class:`VolumeProvisioner` plays the external provisioner of the profile's StorageClass (gp3,
  ``WaitForFirstConsumer``): once the scheduler has picked a node for a consumer pod (annotation
  ``volume.kubernetes.io/selected-node``) it creates a PV pre-bound to the claim, and the real PV
  controller binds them. It deletes its PVs once Released (reclaim policy ``Delete``).
* :func:`inference_job_output` plays the pods of the check's two Jobs (kwok leaves them Running, see
  :data:`~tests.harness.controlplane.PLAYED_JOB_PREFIXES`): the model-cache download, and
  AIPerf, which first asks the endpoint it benchmarks for a chat completion through the service proxy
  (a dead endpoint makes AIPerf fail, as it would), then prints the export document.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import urllib.error
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlsplit

from aicr_pytest.testing.players import inference as play
from tests.harness.controlplane_players import Poller, http_detail, vanished

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

__all__ = [
    "INFERENCE_JOBS_SELECTOR",
    "DynamoController",
    "InferenceJobs",
    "VolumeProvisioner",
    "apply_faults",
    "inference_job_output",
]

log = logging.getLogger("tests.harness.controlplane_dynamo")
Obj = dict[str, Any]

DGD_API_VERSION: Final = f"{play.DGD_GROUP}/v1beta1"
DGD_PATH: Final = f"/apis/{DGD_API_VERSION}"
#: pods of the check's Jobs carry the run labels; :func:`inference_job_output` picks its two Jobs
INFERENCE_JOBS_SELECTOR: Final = "app.kubernetes.io/managed-by=aicr-pytest"
JOB_NAME_LABELS: Final = ("batch.kubernetes.io/job-name", "job-name")
POPULATE_PREFIX: Final = "aicr-model-cache-populate-"
AIPERF_PREFIX: Final = "aicr-aiperf-"
SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
PROVISIONED_BY: Final = "pv.kubernetes.io/provisioned-by"
PROVISIONED_LABEL: Final = "aicr.test/provisioned"
DEFAULT_CLASS_KEYS: Final = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def _ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    if pod["metadata"].get("deletionTimestamp") or status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def ready_counts(pods: list[Obj]) -> dict[str, int]:
    """Running and Ready pods per Dynamo component (label ``nvidia.com/dynamo-component``)."""
    ready: dict[str, int] = {}
    for pod in pods:
        if _ready(pod):
            comp = str((pod["metadata"].get("labels") or {}).get(play.LABEL_COMPONENT, ""))
            ready[comp] = ready.get(comp, 0) + 1
    return ready


def component_pods(dgd: Obj) -> list[Obj]:
    """The pods the operator runs for ``dgd``: one per component replica, owned by the DGD."""
    meta = dgd["metadata"]
    ns, name = str(meta["namespace"]), str(meta["name"])
    owner = play.dgd_owner(dgd)
    pods: list[Obj] = []
    for comp in play.dgd_components(dgd):
        spec = json.loads(json.dumps((comp.get("podTemplate") or {}).get("spec") or {}))
        spec["restartPolicy"] = "Always"
        if comp.get("type") == "frontend":
            for c in spec.get("containers") or []:
                c.setdefault("ports", [{"name": "http", "containerPort": play.FRONTEND_PORT}])
        for i in range(play.component_replicas(comp)):
            pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-{str(comp.get('name', 'component')).lower()}-{i}",
                        "namespace": ns,
                        "labels": play.component_labels(name, comp),
                        "ownerReferences": [owner],
                    },
                    "spec": spec,
                }
            )
    return pods


class _Frontend:
    """A local HTTP server answering as one frontend pod (:func:`play.serve_openai`)."""

    def __init__(self, controller: DynamoController, namespace: str, dgd: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                controller.record_request(self.command, self.path)
                forced = controller.endpoint_status
                if forced:  # the inference-endpoint-down fault: an upstream that never serves
                    message = {"error": {"message": "upstream unavailable (SIMULATED)", "code": forced}}
                    code, text = forced, json.dumps(message)
                else:
                    code, text = play.serve_openai(
                        controller.dgd(namespace, dgd), self.command, self.path, raw
                    )
                body = text.encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("frontend %s/%s: " + format, namespace, dgd, *args)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.address: tuple[str, int] = (
            str(self.server.server_address[0]),
            int(self.server.server_address[1]),
        )
        self.thread = threading.Thread(target=self.server.serve_forever, name=f"frontend {dgd}", daemon=True)
        self.thread.start()
        self.route: tuple[str, int] | None = None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class DynamoController(Poller):
    """The Dynamo operator for every DGD on the apiserver (module docstring)."""

    name = "dynamo-controller"

    def __init__(self, cp: ControlPlane, *, interval: float = 0.2) -> None:
        super().__init__(cp, interval=interval)
        self.created: set[str] = set()  # DGD uids whose Service and pods exist
        self._dgds: dict[tuple[str, str], Obj] = {}
        self._frontends: dict[str, _Frontend] = {}  # frontend pod uid -> its server
        self._lock = threading.Lock()
        #: requests the frontends answered: (method, path)
        self.requests: list[tuple[str, str]] = []
        #: "<ns>/<dgd>" -> the nodes its GPU workers were bound to (by the real scheduler)
        self.placements: dict[str, list[str]] = {}
        #: when set, every frontend answers every request with this status (fault
        #: ``inference-endpoint-down``; set by the session from the seeded profile's faults)
        self.endpoint_status: int | None = None

    def dgd(self, namespace: str, name: str) -> Obj | None:
        with self._lock:
            return self._dgds.get((namespace, name))

    def record_request(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))

    def tick(self) -> None:
        try:
            items = self.cp.get(f"{DGD_PATH}/{play.DGD_PLURAL}")["items"]
        except urllib.error.HTTPError as e:
            if e.code != 404:  # 404: the CRD is not installed (a profile without Dynamo)
                raise
            items = []
        live: dict[tuple[str, str], Obj] = {}
        for dgd in items:
            meta = dgd["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            if meta["uid"] not in self.created:
                self._create(dgd)
                self.created.add(str(meta["uid"]))
            live[(str(meta["namespace"]), str(meta["name"]))] = self._update_status(dgd)
        with self._lock:
            self._dgds = live
        self._sync_frontends()

    def _create(self, dgd: Obj) -> None:
        meta = dgd["metadata"]
        ns, name = str(meta["namespace"]), str(meta["name"])
        dgd_path = f"{DGD_PATH}/namespaces/{ns}/{play.DGD_PLURAL}/{name}"
        if any(c.get("type") == "frontend" for c in play.dgd_components(dgd)):
            service = play.frontend_service(ns, name, dict(meta.get("labels") or {}))
            service["metadata"]["ownerReferences"] = [play.dgd_owner(dgd)]
            self._post(f"/api/v1/namespaces/{ns}/services", service, dgd_path)
        for pod in component_pods(dgd):
            self._post(f"/api/v1/namespaces/{ns}/pods", pod, dgd_path)

    def _post(self, path: str, body: Obj, owner: str) -> None:
        try:
            self.cp.request("POST", path, body)
        except urllib.error.HTTPError as e:
            if e.code == 409:
                return
            # 403/404: the namespace is terminating or gone because the test deleted the DGD meanwhile
            if e.code in (403, 404) and vanished(self.cp, owner):
                return
            raise RuntimeError(f"creating {body['kind']} {body['metadata']['name']}: {http_detail(e)}") from e

    def _update_status(self, dgd: Obj) -> Obj:
        meta = dgd["metadata"]
        ns, name = str(meta["namespace"]), str(meta["name"])
        selector = quote(f"{play.LABEL_DGD}={name}")
        pods = self.cp.get(f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"]
        self.placements[f"{ns}/{name}"] = sorted(
            {
                str(p["spec"]["nodeName"])
                for p in pods
                if p["spec"].get("nodeName")
                and (p["metadata"].get("labels") or {}).get(play.LABEL_COMPONENT_TYPE)
                in play.GPU_COMPONENT_TYPES
            }
        )
        status = play.dgd_status(play.dgd_components(dgd), ready_counts(pods))
        if status == dgd.get("status"):
            return dgd
        path = f"{DGD_PATH}/namespaces/{ns}/{play.DGD_PLURAL}/{name}"
        try:
            updated: Obj = self.cp.request(
                "PATCH", f"{path}/status", {"status": status}, content_type="application/merge-patch+json"
            )
        except urllib.error.HTTPError as e:
            if e.code in (404, 410) and vanished(self.cp, path):  # deleted by the test meanwhile
                return dgd
            raise
        return updated

    def _sync_frontends(self) -> None:
        selector = quote(f"{play.LABEL_COMPONENT_TYPE}=frontend")
        pods = self.cp.get(f"/api/v1/pods?labelSelector={selector}")["items"]
        assert self.cp.egress is not None
        seen: set[str] = set()
        for pod in pods:
            meta, status = pod["metadata"], pod.get("status") or {}
            uid, ip = str(meta["uid"]), status.get("podIP")
            if meta.get("deletionTimestamp") or status.get("phase") != "Running" or not ip:
                continue
            seen.add(uid)
            if uid not in self._frontends:
                dgd = str((meta.get("labels") or {}).get(play.LABEL_DGD, ""))
                frontend = _Frontend(self, str(meta["namespace"]), dgd)
                frontend.route = (str(ip), play.FRONTEND_PORT)
                self.cp.egress.route(str(ip), play.FRONTEND_PORT, frontend.address)
                self._frontends[uid] = frontend
        for uid in [u for u in self._frontends if u not in seen]:
            self._close(self._frontends.pop(uid))

    def _close(self, frontend: _Frontend) -> None:
        if frontend.route is not None and self.cp.egress is not None:
            self.cp.egress.unroute(*frontend.route)
        frontend.close()

    def stop(self) -> None:
        super().stop()
        for frontend in self._frontends.values():
            self._close(frontend)
        self._frontends.clear()


class VolumeProvisioner(Poller):
    """The external provisioner of the cluster's StorageClasses (module docstring)."""

    name = "volume-provisioner"

    def __init__(self, cp: ControlPlane, *, interval: float = 0.2) -> None:
        super().__init__(cp, interval=interval)
        #: "<ns>/<claim>" -> the node its volume was made for (the scheduler's choice)
        self.provisioned: dict[str, str] = {}

    def tick(self) -> None:
        classes = {
            str(sc["metadata"]["name"]): sc
            for sc in self.cp.get("/apis/storage.k8s.io/v1/storageclasses")["items"]
        }
        default = next(
            (
                name
                for name, sc in classes.items()
                if any((sc["metadata"].get("annotations") or {}).get(k) == "true" for k in DEFAULT_CLASS_KEYS)
            ),
            None,
        )
        claims = self.cp.get("/api/v1/persistentvolumeclaims")["items"]
        for pvc in claims:
            volume = provision(pvc, classes, default)
            if volume is not None:
                with contextlib.suppress(urllib.error.HTTPError):  # 409: made on an earlier tick
                    self.cp.request("POST", "/api/v1/persistentvolumes", volume)
                meta = pvc["metadata"]
                node = (meta.get("annotations") or {}).get(SELECTED_NODE, "")
                self.provisioned[f"{meta['namespace']}/{meta['name']}"] = str(node)
        claim_uids = {str(c["metadata"]["uid"]) for c in claims}
        mine = self.cp.get(f"/api/v1/persistentvolumes?labelSelector={quote(PROVISIONED_LABEL)}%3Dtrue")
        for pv in mine["items"]:
            claim = (pv.get("spec") or {}).get("claimRef") or {}
            phase = (pv.get("status") or {}).get("phase")
            if phase in ("Released", "Failed") or str(claim.get("uid")) not in claim_uids:
                with contextlib.suppress(urllib.error.HTTPError):
                    self.cp.request("DELETE", f"/api/v1/persistentvolumes/{pv['metadata']['name']}")


def provision(pvc: Obj, classes: dict[str, Obj], default: str | None) -> Obj | None:
    """The PV to create for ``pvc`` now, or ``None`` (bound, no provisioned class, or not yet wanted)."""
    meta, spec = pvc["metadata"], pvc.get("spec") or {}
    if spec.get("volumeName") or (pvc.get("status") or {}).get("phase") not in (None, "Pending"):
        return None
    cls_name = spec.get("storageClassName", default)
    sc = classes.get(str(cls_name)) if cls_name else None
    if sc is None or sc.get("provisioner") in (None, "kubernetes.io/no-provisioner"):
        return None
    node = (meta.get("annotations") or {}).get(SELECTED_NODE)
    if sc.get("volumeBindingMode") == "WaitForFirstConsumer" and not node:
        return None  # the scheduler has not placed a consumer yet
    volume: Obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": f"pvc-{meta['uid']}",
            "labels": {PROVISIONED_LABEL: "true"},
            "annotations": {PROVISIONED_BY: str(sc["provisioner"])},
        },
        "spec": {
            "capacity": {
                "storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
            },
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "storageClassName": str(cls_name),
            "persistentVolumeReclaimPolicy": "Delete",
            "volumeMode": spec.get("volumeMode", "Filesystem"),
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "hostPath": {"path": f"/var/lib/aicr-test-volumes/{meta['uid']}"},
        },
    }
    if node:
        volume["spec"]["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
                        ]
                    }
                ]
            }
        }
    return volume


def apply_faults(dynamo: DynamoController, jobs: InferenceJobs, faults: Sequence[str]) -> None:
    """Set the inference test controllers to play the seeded profile's inference faults (and reset
    them when the profile has none): the same fault names as on the fake."""
    dynamo.endpoint_status = 503 if play.FAULT_ENDPOINT_DOWN in faults else None
    jobs.throughput_per_gpu = (
        play.LOW_THROUGHPUT_PER_GPU if play.FAULT_LOW_THROUGHPUT in faults else play.THROUGHPUT_PER_GPU
    )


def _job_name(pod: Obj) -> str:
    labels = pod["metadata"].get("labels") or {}
    return next((str(labels[k]) for k in JOB_NAME_LABELS if labels.get(k)), "")


def _containers(pod: Obj) -> list[str]:
    return [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]


class InferenceJobs:
    """``PodPlayer`` play function for the check's Job pods (module docstring); ``None`` for others."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        #: output tokens/sec per benchmarked GPU (fault ``inference-low-throughput``: 2,500)
        self.throughput_per_gpu = play.THROUGHPUT_PER_GPU

    def __call__(self, pod: Obj, node: Obj) -> dict[str, tuple[str, int]] | None:
        job = _job_name(pod)
        if job.startswith(POPULATE_PREFIX):
            text = "Downloading model into /model-cache ... done (SIMULATED)\n"
            return dict.fromkeys(_containers(pod), (text, 0))
        if job.startswith(AIPERF_PREFIX):
            return dict.fromkeys(
                _containers(pod), inference_job_output(self.cp, pod, self.throughput_per_gpu)
            )
        return None


def inference_job_output(
    cp: ControlPlane, pod: Obj, throughput_per_gpu: float = play.THROUGHPUT_PER_GPU
) -> tuple[str, int]:
    """What the AIPerf container prints (and its exit code), having asked the endpoint for a completion."""
    url = play.aiperf_url(pod) or ""
    host = urlsplit(url).hostname or ""
    parts = host.split(".")
    if len(parts) < 3 or parts[2] != "svc":
        return f"aiperf: error: cannot resolve {url!r} (SIMULATED)\n", 1
    service, namespace = parts[0], parts[1]
    port = urlsplit(url).port or 80
    proxy = f"/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy/v1/chat/completions"
    dgd_name = service.removesuffix("-frontend")
    try:
        dgd = cp.get(f"{DGD_PATH}/namespaces/{namespace}/{play.DGD_PLURAL}/{dgd_name}")
        cp.request(
            "POST", proxy, {"model": play.served_model(dgd), "messages": [{"role": "user", "content": "hi"}]}
        )
    except urllib.error.HTTPError as e:
        return f"aiperf: error: {url} answered HTTP {e.code} (SIMULATED)\n", 1
    gpus = play.gpu_workers(dgd) or 1
    concurrency = play.aiperf_concurrency(pod, gpus)
    doc = play.aiperf_export(throughput_per_gpu * gpus, play.TTFT_P99_MS, concurrency)
    head = (
        f"aiperf profile: concurrency {concurrency} (SIMULATED)\nWarmup: 100% complete\n"
        "Profiling: 50% complete\nProfiling: 100% complete\n"
    )
    return head + play.aiperf_result(doc), 0
