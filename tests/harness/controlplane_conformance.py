"""Test controllers for the conformance checks on the real control plane: what kwok and the real
controllers do not do.

* :class:`ConformancePods` -- the ``play`` of a :class:`~.controlplane_players.PodPlayer` for the
  run's pods (label ``app.kubernetes.io/managed-by=aicr-pytest``): the GPU test pod's ``gpu-test``
  container sees the GPUs it was given (its ``nvidia.com/gpu`` limit, or the devices the *real*
  kube-scheduler allocated to its ResourceClaim), ``unauthorized`` and the no-allocation probe see
  none, a gang worker prints its ``echo``; each container gets its own exit code
  (:func:`aicr_pytest.testing.players.conformance.container_output`, the fake's player logic). The
  session's faults ``gpu-isolation-broken`` / ``gpu-visible-without-allocation`` are honoured.
* :class:`GangBinder` -- KAI's scheduler and binder for the gang test: pods with ``schedulerName:
  kai-scheduler`` and the ``pod-group.scheduling.run.ai/name`` label (the real kube-scheduler leaves
  them alone) are bound through ``pods/binding`` -- all members at once, once their PodGroup exists
  and ``minMember`` of them are pending -- to a Ready kwok system node.
* :class:`WebhookServer` -- the Kubeflow Trainer and Dynamo operators' validating webhooks, served over
  HTTPS from this process behind the apiserver: the apiserver resolves a webhook Service to its
  ClusterIP and dials it through its ``cluster`` egress, which :class:`~.egress.EgressProxy` routes to
  this server; :meth:`WebhookServer.sync` points every ``<clusterIP>:443`` of the webhook Services here
  and writes the server's CA into the profile's ValidatingWebhookConfigurations (``caBundle``). The
  Trainer webhook denies a TrainJob whose runtime does not exist (422, as Trainer's field validation
  does), Dynamo's a DynamoGraphDeployment without components; the session fault
  ``trainer-webhook-admits`` makes the Trainer webhook admit everything.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import shutil
import ssl
import subprocess
import tempfile
import threading
import urllib.error
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from tests.harness.controlplane_players import Poller, describe_error, http_detail, vanished

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

__all__ = [
    "CONFORMANCE_SELECTOR",
    "WEBHOOK_SERVICES",
    "ConformancePods",
    "GangBinder",
    "WebhookServer",
]

log = logging.getLogger("tests.harness.controlplane_conformance")
Obj = dict[str, Any]
Faults = Callable[[], Iterable[str]]

CONFORMANCE_SELECTOR = "app.kubernetes.io/managed-by=aicr-pytest"
GANG_LABEL = "pod-group.scheduling.run.ai/name"
POOL_LABEL = "aicr.test/pool"
TRAINER_WEBHOOK = "validator.trainjob.trainer.kubeflow.org"
DYNAMO_WEBHOOK = "vdynamographdeployment.nvidia.com"
#: (namespace, Service) of the webhooks the profiles install (see aicr_pytest.testing.profiles.components)
WEBHOOK_SERVICES = (
    ("kubeflow", "kubeflow-trainer-controller-manager"),
    ("dynamo-system", "dynamo-platform-dynamo-operator-webhook-service"),
)
WEBHOOK_CONFIGS = (
    "validator.trainer.kubeflow.org",
    "dynamo-platform-dynamo-operator-validating-webhook-configuration",
)


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _script(container: Obj) -> str:
    argv = [str(x) for x in (container.get("command") or []) + (container.get("args") or [])]
    return argv[2] if len(argv) >= 3 and argv[1] == "-c" else " ".join(argv)


class ConformancePods:
    """``play`` for the conformance checks' pods (module docstring)."""

    def __init__(self, cp: ControlPlane, faults: Faults) -> None:
        self.cp = cp
        self.faults = faults

    def _claim_devices(self, pod: Obj, container: Obj) -> int:
        ns = pod["metadata"]["namespace"]
        refs = {str(r.get("name")): r for r in _dig(pod, "spec", "resourceClaims") or []}
        total = 0
        for use in _dig(container, "resources", "claims") or []:
            name = (refs.get(str(use.get("name"))) or {}).get("resourceClaimName")
            if not name:
                continue
            with contextlib.suppress(urllib.error.HTTPError):
                claim = self.cp.get(f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}")
                total += len(_dig(claim, "status", "allocation", "devices", "results") or [])
        return total

    def __call__(self, pod: Obj, node: Obj) -> dict[str, tuple[str, int]] | None:
        from aicr_pytest.testing.players import conformance as player

        containers = _dig(pod, "spec", "containers") or []
        faults = set(self.faults())
        if (pod.get("spec") or {}).get("schedulerName") == "kai-scheduler":
            return {str(c.get("name")): (player.echo_text(_script(c)), 0) for c in containers}
        scripts = {str(c.get("name")): _script(c) for c in containers}
        if not any(player.GRANT_MARK in s or player.ABSENCE_MARK in s for s in scripts.values()):
            return None
        is_probe = str(pod["metadata"]["name"]).startswith("no-alloc-probe-")
        out: dict[str, tuple[str, int]] = {}
        for c in containers:
            name = str(c.get("name"))
            limit = str(_dig(c, "resources", "limits", "nvidia.com/gpu") or "0")
            visible = (int(limit) if limit.isdigit() else 0) + self._claim_devices(pod, c)
            leaks = (player.FAULT_ISOLATION in faults and not is_probe) or (
                player.FAULT_VISIBLE in faults and is_probe
            )
            if visible == 0 and player.ABSENCE_MARK in scripts[name] and leaks:
                visible = 8
            played = player.container_output(scripts[name], visible, str(node["metadata"]["name"]))
            if played is not None:
                out[name] = played
        return out or None


class GangBinder(Poller):
    """Binds KAI gang pods all at once (module docstring)."""

    name = "kai-gang-binder"

    def __init__(self, cp: ControlPlane, *, interval: float = 0.2) -> None:
        super().__init__(cp, interval=interval)
        #: (namespace, pod) -> node, every binding made
        self.bound: dict[tuple[str, str], str] = {}

    def _node(self) -> str:
        nodes = self.cp.get("/api/v1/nodes?labelSelector=" + quote(f"{POOL_LABEL}=system"))["items"]
        ready = [
            n["metadata"]["name"]
            for n in nodes
            if n["metadata"]["name"] in self.cp.node_names
            and any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in _dig(n, "status", "conditions") or []
            )
        ]
        if not ready:
            raise RuntimeError("no Ready kwok system node to bind gang pods to")
        return str(sorted(ready)[0])

    def tick(self) -> None:
        pods = self.cp.get("/api/v1/pods?labelSelector=" + quote(GANG_LABEL))["items"]
        groups: dict[tuple[str, str], list[Obj]] = {}
        for pod in pods:
            if _dig(pod, "spec", "schedulerName") != "kai-scheduler" or _dig(pod, "spec", "nodeName"):
                continue
            if pod["metadata"].get("deletionTimestamp"):
                continue
            key = (pod["metadata"]["namespace"], pod["metadata"]["labels"][GANG_LABEL])
            groups.setdefault(key, []).append(pod)
        for (ns, group), members in groups.items():
            try:
                podgroup = self.cp.get(f"/apis/scheduling.run.ai/v2alpha2/namespaces/{ns}/podgroups/{group}")
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    continue
                raise
            if len(members) < int(_dig(podgroup, "spec", "minMember") or 1):
                continue
            node = self._node()
            for pod in members:
                name = pod["metadata"]["name"]
                body = {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name, "namespace": ns},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                }
                try:
                    self.cp.request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", body)
                except urllib.error.HTTPError as e:
                    if e.code == 404 and vanished(self.cp, f"/api/v1/namespaces/{ns}/pods/{name}"):
                        continue  # the test deleted the gang meanwhile
                    if e.code != 409:  # already bound
                        raise RuntimeError(f"binding {ns}/{name}: {http_detail(e)}") from e
                self.bound[(ns, name)] = node


def _openssl(args: list[str], cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl is needed for the webhook server's certificate")
    proc = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}: {proc.stderr.strip()}")


def webhook_certificate(directory: Path, services: Iterable[tuple[str, str]]) -> tuple[Path, Path, Path]:
    """(CA cert, serving cert, serving key) for the webhook Services' in-cluster DNS names."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "7",
              "-subj", "/CN=aicr-webhook-ca", "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"], directory)  # fmt: skip
    sans = ",".join(f"DNS:{name}.{ns}.svc" for ns, name in services)
    (directory / "serving.ext").write_text(
        f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n"
        "basicConstraints=CA:FALSE\n"
    )
    _openssl(["req", *ec, "-keyout", "serving.key", "-out", "serving.csr", "-subj", "/CN=webhook"], directory)
    _openssl(["x509", "-req", "-in", "serving.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
              "-out", "serving.crt", "-days", "7", "-extfile", "serving.ext"], directory)  # fmt: skip
    return directory / "ca.crt", directory / "serving.crt", directory / "serving.key"


class WebhookServer:
    """The operators' validating webhooks behind the apiserver (module docstring)."""

    name = "operator-webhooks"

    def __init__(self, cp: ControlPlane, faults: Faults) -> None:
        self.cp = cp
        self.faults = faults
        self.errors: list[str] = []
        #: (webhook path, object name, allowed) of every review answered
        self.reviews: list[tuple[str, str, bool]] = []
        self._dir = Path(tempfile.mkdtemp(prefix="aicr-webhooks-"))
        ca, cert, key = webhook_certificate(self._dir, WEBHOOK_SERVICES)
        self.ca_bundle = base64.b64encode(ca.read_bytes()).decode()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    review = json.loads(self.rfile.read(length) or b"{}")
                    answer = owner.review(self.path, review)
                except Exception as e:  # answered as a webhook error, recorded for the test
                    owner.errors.append(f"{owner.name}: {describe_error(e)}")
                    self.send_response(500)
                    self.end_headers()
                    return
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name=self.name, daemon=True)

    def start(self) -> WebhookServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- admission ----------------------------------------------------------------------------------
    def _runtime_exists(self, obj: Obj) -> bool:
        ref = _dig(obj, "spec", "runtimeRef") or {}
        kind, name = str(ref.get("kind") or "ClusterTrainingRuntime"), str(ref.get("name") or "")
        ns = _dig(obj, "metadata", "namespace") or "default"
        path = (
            f"/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/{name}"
            if kind == "ClusterTrainingRuntime"
            else f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainingruntimes/{name}"
        )
        try:
            self.cp.get(path)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return False
            raise
        return True

    def review(self, path: str, review: Obj) -> Obj:
        request = review.get("request") or {}
        obj = request.get("object") or {}
        resource = str(_dig(request, "resource", "resource") or "")
        denial: Obj | None = None
        if request.get("operation") != "CREATE":
            pass  # updates (e.g. the garbage collector removing a finalizer) are always admitted
        elif resource == "trainjobs" and "trainer-webhook-admits" not in set(self.faults()):
            if not self._runtime_exists(obj):
                ref = _dig(obj, "spec", "runtimeRef") or {}
                denial = {
                    "code": 422,
                    "reason": "Invalid",
                    "message": f"spec.runtimeRef: Invalid value: {json.dumps(ref, separators=(',', ':'))}: "
                    f"{ref.get('kind', 'ClusterTrainingRuntime')}.trainer.kubeflow.org "
                    f'"{ref.get("name")}" not found',
                }
        elif resource == "dynamographdeployments" and not _dig(obj, "spec", "components"):
            denial = {
                "code": 422,
                "reason": "Invalid",
                "message": "spec.components: Required value: at least one component is required",
            }
        self.reviews.append((path, str(_dig(obj, "metadata", "name") or ""), denial is None))
        response: Obj = {"uid": request.get("uid", ""), "allowed": denial is None}
        if denial is not None:
            response["status"] = denial
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}

    # -- wiring -------------------------------------------------------------------------------------
    def sync(self) -> None:
        """Route the webhook Services' ClusterIPs here and put this server's CA into the configurations."""
        egress = self.cp.egress
        if egress is None:
            raise RuntimeError("the control plane has no egress proxy")
        for ns, name in WEBHOOK_SERVICES:
            try:
                svc = self.cp.get(f"/api/v1/namespaces/{ns}/services/{name}")
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    continue
                raise
            ip = str(_dig(svc, "spec", "clusterIP") or "")
            if ip and ip != "None":
                for port in _dig(svc, "spec", "ports") or []:
                    egress.route(ip, int(port.get("port") or 443), ("127.0.0.1", self.port))
        for config in WEBHOOK_CONFIGS:
            path = f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{config}"
            try:
                current = self.cp.get(path)
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    continue
                raise
            hooks = current.get("webhooks") or []
            if all(_dig(h, "clientConfig", "caBundle") == self.ca_bundle for h in hooks):
                continue
            patch = [
                {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": self.ca_bundle}
                for i in range(len(hooks))
            ]
            try:
                self.cp.request("PATCH", path, patch, content_type="application/json-patch+json")
            except urllib.error.HTTPError as e:
                if e.code not in (404, 410) or not vanished(self.cp, path):  # a profile switch removed it
                    raise


class WebhookSync(Poller):
    """Keeps :meth:`WebhookServer.sync` applied (a profile switch re-creates Services/configurations)."""

    name = "operator-webhook-sync"

    def __init__(self, cp: ControlPlane, server: WebhookServer, *, interval: float = 0.5) -> None:
        super().__init__(cp, interval=interval)
        self.server = server

    def tick(self) -> None:
        self.server.sync()
        if self.server.errors:
            self.errors.extend(self.server.errors)
            self.server.errors.clear()

    def stop(self) -> None:
        super().stop()
        self.server.stop()
