"""Test controllers for conformance phase II on the real control plane.

What sits behind the apiserver for these checks, played for real:

* :class:`MetricsEndpoints` -- real HTTP servers for the DCGM exporter (``:9400``) and Prometheus
  (``:9090``) and a real HTTPS server for prometheus-adapter, all answering from
  :class:`aicr_pytest.testing.players.metrics.MetricsBackend` over the control plane's nodes and pods
  (the same answers as on the fake). The poller routes, through the apiserver's egress proxy
  (:mod:`.egress`), the pod IP of every DCGM exporter pod and of the Prometheus pod, and the ClusterIP
  of the adapter's Service (which the aggregation layer dials for both APIServices), to those
  servers. So the checks go through the real service proxy (Service -> EndpointSlice written by the
  real controller -> pod IP) and the real aggregation layer; the real HPA controller (kube-controller-
  manager) reads the external metric the same way.
* :class:`KarpenterController` -- a pod left unscheduled with ``nodeSelector:
  karpenter.sh/nodepool=<pool>`` of an existing NodePool gets a new kwok GPU node of that pool
  (labels, taints from the pool's template); nodes it made that hold no pod for a few seconds are
  deleted again (:meth:`KarpenterController.remove_nodes` at teardown).
* Slurm in a login pod: kwok runs ``pods/exec`` commands locally (its ``ClusterExec``), so kwok's
  ``PATH`` starts with :func:`write_exec_bin`'s fake ``scontrol``/``sinfo``/``srun``; a
  ``ClusterExec`` per namespace (:func:`slurm_exec`) sets their mode through the environment
  (``AICR_FAKE_SLURM``: ``healthy``, ``down``, ``imex-shared``).

Faults (:func:`apply_faults`), the same names as on the fake: ``prometheus-down`` (the Prometheus pod
is not routed: the egress refuses, the apiserver answers 503), ``dcgm-exporter-no-gpu-series``,
``dynamo-metrics-missing`` (Prometheus answers no ``dynamo_*`` series for the Dynamo pods).
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
import urllib.error
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from tests.harness.controlplane_players import Poller, describe_error

if TYPE_CHECKING:
    from aicr_pytest.testing.players.metrics import MetricsBackend
    from tests.harness.controlplane import ControlPlane

__all__ = [
    "KarpenterController",
    "MetricsEndpoints",
    "apply_faults",
    "slurm_exec",
    "write_exec_bin",
]

Obj = dict[str, Any]
Address = tuple[str, int]

DCGM_PORT = 9400
PROMETHEUS_PORT = 9090
ADAPTER = ("monitoring", "prometheus-adapter")
EXPORTER_SELECTOR = "app=nvidia-dcgm-exporter"
PROMETHEUS_SELECTOR = "app.kubernetes.io/name=prometheus"


class _Server:
    """A threaded HTTP(S) server on 127.0.0.1 whose GETs ``answer(path) -> (status, body, type)``."""

    def __init__(self, name: str, answer: Any, errors: list[str], tls: ssl.SSLContext | None = None) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(self.path)
                try:
                    status, body, ctype = answer(self.path)
                except Exception as exc:  # a bug in the stub: answer 500, record it
                    outer.errors.append(f"{name}: {describe_error(exc)}")
                    status, body, ctype = 500, str(exc), "text/plain"
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.name = name
        self.requests: list[str] = []
        self.errors = errors  # the owning controller's: a test asserts there are none
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.address: Address = ("127.0.0.1", int(self.server.server_address[1]))
        self.thread = threading.Thread(target=self.server.serve_forever, name=name, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _json(status_body: tuple[int, Any]) -> tuple[int, str, str]:
    status, body = status_body
    if isinstance(body, str):
        return status, body, "text/plain"
    return status, json.dumps(body), "application/json"


class MetricsEndpoints(Poller):
    """The DCGM exporter, Prometheus and prometheus-adapter behind the real apiserver (module docstring)."""

    name = "metrics-endpoints"

    def __init__(self, cp: ControlPlane, *, interval: float = 0.2) -> None:
        super().__init__(cp, interval=interval)
        from aicr_pytest.testing.players.metrics import MetricsBackend

        self.state: dict[str, Any] = {}
        self.backend: MetricsBackend = MetricsBackend(
            self._gpu_nodes, self._exporter_pods, time.time, self.state, (), self._dynamo_pods
        )
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        pki = cp.workdir / "pki"
        tls.load_cert_chain(str(pki / "serving.crt"), str(pki / "serving.key"))
        self.dcgm = _Server("dcgm-exporter", self._dcgm, self.errors)
        self.prometheus = _Server("prometheus", self._prometheus, self.errors)
        self.adapter = _Server("prometheus-adapter", self._adapter, self.errors, tls)
        self.routed: dict[tuple[str, int], Address] = {}
        self.route_prometheus = True
        from tests.harness.controlplane_health import ExporterHealth

        #: each exporter pod's own server (pod uid -> server): the shared text plus its node's health
        #: series, for gpu-health's pod-proxy scrapes (:mod:`.controlplane_health`)
        self.health = ExporterHealth(cp)
        self.exporters: dict[str, _Server] = {}

    # -- answers ----------------------------------------------------------------------------------
    def _gpu_nodes(self) -> list[Obj]:
        nodes = self.cp.get("/api/v1/nodes?labelSelector=" + quote("nvidia.com/gpu.present=true"))["items"]
        return sorted(nodes, key=lambda n: str(n["metadata"]["name"]))

    def _exporter_pods(self, namespace: str) -> list[str]:
        path = f"/api/v1/namespaces/{namespace}/pods?labelSelector={quote(EXPORTER_SELECTOR)}"
        return [str(p["metadata"]["name"]) for p in self.cp.get(path)["items"]]

    def _dynamo_pods(self) -> list[Obj]:
        from aicr_pytest.testing.players.metrics import DYNAMO_WORKLOAD_NAMESPACE

        with contextlib.suppress(urllib.error.HTTPError):
            return list(self.cp.get(f"/api/v1/namespaces/{DYNAMO_WORKLOAD_NAMESPACE}/pods")["items"])
        return []

    def _dcgm(self, path: str) -> tuple[int, str, str]:
        # "unreachable" is played by not routing (the real apiserver answers), never by the server
        status, body = self.backend.dcgm("GET", path, b"")
        return status, body, "text/plain; version=0.0.4"

    def _exporter(self, pod: Obj) -> _Server:
        uid = str(pod["metadata"].get("uid"))
        if uid not in self.exporters:

            def answer(path: str) -> tuple[int, str, str]:
                shared = self.backend.dcgm("GET", path, b"")
                status, body = self.health.answer(pod, path, shared, self.backend.faults)
                return status, body, "text/plain; version=0.0.4"

            self.exporters[uid] = _Server(f"dcgm-exporter {pod['metadata']['name']}", answer, self.errors)
        return self.exporters[uid]

    def _prometheus(self, path: str) -> tuple[int, str, str]:
        status, body = self.backend.prometheus("GET", path, b"")
        return status, body, "application/json"

    def _adapter(self, path: str) -> tuple[int, str, str]:
        parts = urlsplit(path)
        segments = [p for p in parts.path.split("/") if p]
        if segments[:3] == ["apis", "custom.metrics.k8s.io", "v1beta1"]:
            rest = "/" + "/".join(segments[3:]) if len(segments) > 3 else ""
            return _json(self.backend.custom_metrics("GET", rest, {}))
        if segments[:3] == ["apis", "external.metrics.k8s.io", "v1beta1"]:
            rest = "/" + "/".join(segments[3:]) if len(segments) > 3 else ""
            return _json(self.backend.external_metrics("GET", rest, {}))
        return (
            404,
            json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}),
            "application/json",
        )

    # -- routing ----------------------------------------------------------------------------------
    def tick(self) -> None:
        egress = self.cp.egress
        assert egress is not None
        wanted: dict[tuple[str, int], Address] = {}
        unreachable = set(self.state.get("unreachable") or ())
        for ns, selector, port, server, on in (
            ("gpu-operator", EXPORTER_SELECTOR, DCGM_PORT, self.dcgm, "dcgm" not in unreachable),
            (
                "monitoring",
                PROMETHEUS_SELECTOR,
                PROMETHEUS_PORT,
                self.prometheus,
                self.route_prometheus and "prometheus" not in unreachable,
            ),
        ):
            if not on:  # not routed: the egress refuses, the apiserver answers 503
                continue
            pods = self.cp.get(f"/api/v1/namespaces/{ns}/pods?labelSelector={quote(selector)}")["items"]
            for pod in pods:
                ip = (pod.get("status") or {}).get("podIP")
                if ip:  # an exporter pod answers with its own node's health series
                    wanted[(str(ip), port)] = (self._exporter(pod) if server is self.dcgm else server).address
        with contextlib.suppress(urllib.error.HTTPError):
            svc = self.cp.get(f"/api/v1/namespaces/{ADAPTER[0]}/services/{ADAPTER[1]}")
            ip = (svc.get("spec") or {}).get("clusterIP")
            for port in (svc.get("spec") or {}).get("ports") or []:
                if ip and ip != "None":
                    wanted[(str(ip), int(port.get("port") or 443))] = self.adapter.address
        for key in set(self.routed) - set(wanted):
            egress.unroute(*key)
        for key, target in wanted.items():
            if self.routed.get(key) != target:
                egress.route(key[0], key[1], target)
        self.routed = wanted

    def stop(self) -> None:
        super().stop()
        egress = self.cp.egress
        for key in self.routed:
            if egress is not None:
                egress.unroute(*key)
        for server in (self.dcgm, self.prometheus, self.adapter, *self.exporters.values()):
            server.stop()


def apply_faults(metrics: MetricsEndpoints, faults: Sequence[str]) -> None:
    """Play the seeded profile's metrics faults (and reset them when it has none)."""
    from aicr_pytest.testing.players.metrics import FAULT_PROMETHEUS_DOWN

    metrics.backend.faults = list(faults)
    metrics.route_prometheus = FAULT_PROMETHEUS_DOWN not in faults
    metrics.state.clear()
    metrics.health.reset()
    metrics.tick()


# -- Karpenter ---------------------------------------------------------------------------------------


class KarpenterController(Poller):
    """Provisions kwok GPU nodes for pods pinned to a Karpenter NodePool (module docstring)."""

    name = "karpenter-controller"
    LABEL = "karpenter.sh/nodepool"

    def __init__(self, cp: ControlPlane, *, interval: float = 0.3, idle_s: float = 5.0) -> None:
        super().__init__(cp, interval=interval)
        self.idle_s = idle_s
        self.created: dict[str, str] = {}  # node -> pool
        self._idle_since: dict[str, float] = {}
        self._seq = 0
        self._lock = threading.Lock()

    def _pools(self) -> dict[str, Obj]:
        try:
            items = self.cp.get("/apis/karpenter.sh/v1/nodepools")["items"]
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return {}
            raise
        return {str(p["metadata"]["name"]): p for p in items}

    def tick(self) -> None:
        pools = self._pools()
        if not pools and not self.created:
            return
        pods = self.cp.get("/api/v1/pods")["items"]
        pending: dict[str, int] = {}
        busy: set[str] = set()
        for pod in pods:
            spec, meta = pod.get("spec") or {}, pod["metadata"]
            if meta.get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in (
                "Succeeded",
                "Failed",
            ):
                continue
            if spec.get("nodeName"):
                busy.add(str(spec["nodeName"]))
                continue
            pool = (spec.get("nodeSelector") or {}).get(self.LABEL)
            if pool in pools:
                pending[str(pool)] = pending.get(str(pool), 0) + 1
        with self._lock:
            for pool, _count in pending.items():
                if not any(p == pool and n not in busy for n, p in self.created.items()):
                    self._provision(pool, pools[pool])
            now = time.monotonic()
            for node in list(self.created):
                if node in busy or self.created[node] in pending:
                    self._idle_since.pop(node, None)
                elif now - self._idle_since.setdefault(node, now) > self.idle_s:
                    self._delete(node)

    def _provision(self, pool: str, nodepool: Obj) -> None:
        from tests.harness.controlplane import H100_NODES, NodeProfile, create_nodes

        template = ((nodepool.get("spec") or {}).get("template") or {}).get("spec") or {}
        self._seq += 1
        profile = NodeProfile(
            prefix=f"{pool}-karpenter-{self._seq}",
            count=1,
            labels={**H100_NODES.labels, self.LABEL: pool, "aicr.test/pool": "karpenter"},
            taints=tuple(dict(t) for t in template.get("taints") or []),
            capacity=dict(H100_NODES.capacity),
        )
        for name in create_nodes(self.cp, [profile]):
            self.created[name] = pool

    def _delete(self, node: str) -> None:
        with contextlib.suppress(urllib.error.HTTPError):
            self.cp.request("DELETE", f"/api/v1/nodes/{node}")
        self.created.pop(node, None)
        self._idle_since.pop(node, None)

    def remove_nodes(self) -> None:
        """Delete every node this controller made (test teardown)."""
        with self._lock:
            for node in list(self.created):
                self._delete(node)

    def stop(self) -> None:
        super().stop()
        self.remove_nodes()


# -- Slurm in a login pod ----------------------------------------------------------------------------

_SCONTROL = """#!/bin/sh
# aicr-pytest test harness: a stand-in for Slurm's scontrol (kwok runs pods/exec commands locally)
[ "$1" = ping ] || { echo "scontrol: unsupported in the test harness: $*" >&2; exit 2; }
case "${AICR_FAKE_SLURM:-healthy}" in
  down) echo "Slurmctld(primary) at slinky-slurm-controller-0 is DOWN"; exit 1 ;;
esac
echo "Slurmctld(primary) at slinky-slurm-controller-0 is UP"
"""
_SINFO = """#!/bin/sh
# aicr-pytest test harness: sinfo -h -Ne -t idle,mix
case "${AICR_FAKE_SLURM:-healthy}" in
  down) exit 0 ;;
esac
echo "slinky-slurm-gpu-0 1 gpu idle"
"""
_SRUN = """#!/bin/sh
# aicr-pytest test harness: srun (hostname, or one IMEX job: --gres=gpu:1 ... /bin/sh -c <inner>)
mode="${AICR_FAKE_SLURM:-healthy}"
if [ "$mode" = down ]; then
  echo "srun: error: Unable to allocate resources: Unable to contact slurm controller (connect failure)" >&2
  exit 1
fi
for last; do :; done
if [ "$last" = hostname ]; then echo "slinky-slurm-gpu-0"; exit 0; fi
case " $* " in
  *" --gres=gpu:1 "*)
    state="${AICR_FAKE_SLURM_STATE:-/tmp}"
    i=0
    if [ "$mode" != imex-shared ]; then
      while ! mkdir "$state/channel$i" 2>/dev/null; do i=$((i+1)); done
    fi
    echo "IMEX_CHANNEL_COUNT=1" >&2
    echo "IMEX_CHANNEL=/dev/nvidia-caps-imex-channels/channel$i"
    sleep 1
    rmdir "$state/channel$i" 2>/dev/null
    exit 0 ;;
esac
echo "srun: unsupported in the test harness: $*" >&2
exit 2
"""


def write_exec_bin(directory: Path) -> Path:
    """Write the fake Slurm commands into ``directory`` (kwok's ``PATH`` starts there)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in (("scontrol", _SCONTROL), ("sinfo", _SINFO), ("srun", _SRUN)):
        path = directory / name
        path.write_text(text)
        path.chmod(0o755)
    return directory


def slurm_exec(cp: ControlPlane, namespace: str, mode: str = "healthy") -> str:
    """A kwok ``ClusterExec`` that runs ``pods/exec`` in ``namespace``'s pods locally with
    ``AICR_FAKE_SLURM=mode``; returns its name (delete it at teardown)."""
    from tests.harness.controlplane import KWOK_API_VERSION

    state = cp.workdir / "slurm-state" / namespace
    state.mkdir(parents=True, exist_ok=True)
    name = f"aicr-slurm-{namespace}"
    body = {
        "apiVersion": KWOK_API_VERSION,
        "kind": "ClusterExec",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchNamespaces": [namespace]},
            "execs": [
                {
                    "local": {
                        "workDir": str(state),
                        "envs": [
                            {"name": "AICR_FAKE_SLURM", "value": mode},
                            {"name": "AICR_FAKE_SLURM_STATE", "value": str(state)},
                        ],
                    }
                }
            ],
        },
    }
    with contextlib.suppress(urllib.error.HTTPError):
        cp.request("DELETE", f"/apis/{KWOK_API_VERSION}/clusterexecs/{name}")
    cp.request("POST", f"/apis/{KWOK_API_VERSION}/clusterexecs", body)
    return name
