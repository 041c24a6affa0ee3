"""A real, throw-away Kubernetes control plane for integration tests.

etcd (Debian's ``etcd-server``), kube-apiserver, kube-controller-manager and kube-scheduler (built from the
``k8s.io/kubernetes`` Go module by ``scripts/controlplane.sh build``) and kwok (fakes the nodes' kubelets and
drives pod phases) run as child processes on random loopback ports, with their state, certificates and logs
in one temporary directory. There is no kubelet and no container runtime: pods are bound by the real
scheduler to kwok's simulated GPU nodes and kwok moves them through its default stages (Running, and
Succeeded for pods owned by a Job). The ``pod-complete`` stage is adjusted per pod by the annotation
:data:`RUN_FOR_ANNOTATION` (``"5s"``: Running that long first; ``"forever"``: never completes).

Container logs: kwok serves ``pods/<pod>/log`` (through the apiserver, which reaches kwok's
kubelet-like server on the node's InternalIP and ``kubeletEndpoint`` port) from files named by kwok
``Logs``/``ClusterLogs`` objects; :meth:`ControlPlane.set_pod_logs` and
:meth:`ControlPlane.set_namespace_logs` write the text (CRI log format) and the object.

The apiserver runs without its watch cache: Debian's etcd 3.4 lacks the progress notifications the
cache needs for client-go's streaming lists, and with the cache on, kwok's informers fall back to
periodic re-lists, so every pod phase change lags 5-10 s (a Job took ~12 s; now ~1 s).

Egress: the apiserver's ``cluster`` egress selection is an HTTP CONNECT proxy in this process
(:class:`~tests.harness.egress.EgressProxy`, ``ControlPlane.egress``). It passes kubelet traffic
through to kwok and routes chosen pod IPs (made up by kwok from :data:`POD_CIDR`) to local test
servers, so the service proxy reaches a "pod" served by a test controller (the Dynamo frontend).

Authentication is by static bearer tokens (``--token-auth-file``); authorization is RBAC only. Two
kubeconfigs are written: ``admin`` (``system:masters``) and ``user``, a least-privilege user bound to every
ClusterRole/Role in ``deploy/rbac.yaml`` when that file exists.

Plain functions; the pytest fixture lives in :mod:`tests.harness.controlplane_fixtures`.
Binaries are looked up in ``$AICR_CONTROLPLANE_BIN``, else ``$AICR_CONTROLPLANE_CACHE/bin``, else
``~/.cache/aicr-pytest/controlplane/<K8S_VERSION>/bin`` (the directory ``scripts/controlplane.sh`` fills).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.harness.egress import EgressProxy, egress_selector_config

#: Kept in step with tools/controlplane/go.mod and scripts/controlplane.sh (a unit test checks both).
K8S_VERSION = "v1.37.2"
#: kwok gives pods IPs from here (nothing listens on them; see :mod:`.egress`)
POD_CIDR = "10.244.0.1/16"
KWOK_VERSION = "v0.8.0"
#: Service ClusterIPs (the aggregation layer dials an APIService's Service's ClusterIP: the egress
#: proxy routes the metrics adapter's to a test server, :mod:`.controlplane_conformance_ii`)
SERVICE_CIDR = "10.0.0.0/24"

KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
ALL_BINARIES = ("etcd", *KUBE_BINARIES, "kwok")

#: Nodes carrying this annotation are the ones kwok manages (``--manage-nodes-with-annotation-selector``).
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")

ADMIN_USER = "aicr-admin"
LEAST_PRIVILEGE_USER = "aicr-validator"

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RBAC_MANIFEST = REPO_ROOT / "deploy" / "rbac.yaml"


class ControlPlaneUnavailable(RuntimeError):
    """The binaries are missing (no Go toolchain, or ``scripts/controlplane.sh build`` was not run)."""


class ControlPlaneError(RuntimeError):
    """A component failed to start or become ready; the message carries the tail of its log."""


# --------------------------------------------------------------------------------------------------------
# binaries


#: The home directory when this module was imported: pytester (and other fixtures) point ``$HOME`` at
#: a temporary directory while a test runs, which must not hide the machine's binary cache.
_HOME = Path.home()


def binary_dir() -> Path:
    """Where ``scripts/controlplane.sh build`` puts the binaries (see the module docstring)."""
    explicit = os.environ.get("AICR_CONTROLPLANE_BIN")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("AICR_CONTROLPLANE_CACHE")
    if cache:
        return Path(cache) / "bin"
    return _HOME / ".cache" / "aicr-pytest" / "controlplane" / K8S_VERSION / "bin"


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kwok: Path
    #: kwok's default Stages for the pinned tag (standalone kwok has none built in).
    kwok_stages: Path


def find_binaries(directory: Path | None = None) -> Binaries:
    """The five binaries, from ``directory`` (default :func:`binary_dir`); etcd may also come from PATH.

    Raises :class:`ControlPlaneUnavailable` naming what is missing and how to build it.
    """
    directory = directory or binary_dir()
    found: dict[str, Path] = {}
    missing: list[str] = []
    for name in ALL_BINARIES:
        candidate = directory / name
        if os.access(candidate, os.X_OK):
            found[name] = candidate
            continue
        on_path = shutil.which(name) if name == "etcd" else None
        if on_path:
            found[name] = Path(on_path)
        else:
            missing.append(name)
    stages = directory / "kwok-stages.yaml"
    if not stages.is_file():
        missing.append(stages.name)
    if missing:
        raise ControlPlaneUnavailable(
            f"control-plane binaries missing from {directory}: {', '.join(missing)} "
            "(build them with `scripts/controlplane.sh build`; needs Go and the Go module proxy)"
        )
    return Binaries(
        etcd=found["etcd"],
        kube_apiserver=found["kube-apiserver"],
        kube_controller_manager=found["kube-controller-manager"],
        kube_scheduler=found["kube-scheduler"],
        kwok=found["kwok"],
        kwok_stages=stages,
    )


# --------------------------------------------------------------------------------------------------------
# node profiles


@dataclass(frozen=True)
class NodeProfile:
    """A pool of identical kwok nodes: ``count`` nodes named ``{prefix}-{i}``."""

    prefix: str
    count: int
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    capacity: Mapping[str, str] = field(default_factory=dict)
    #: ``kubernetes.io/arch`` and ``status.nodeInfo.architecture``
    architecture: str = "amd64"
    kernel_version: str = "6.8.0-1015-aws"

    def node_names(self) -> list[str]:
        return [f"{self.prefix}-{i}" for i in range(self.count)]

    def manifests(self) -> list[dict[str, Any]]:
        return [node_manifest(name, self) for name in self.node_names()]


def gfd_labels(
    product: str, count: int, memory_mib: int, family: str, machine: str, pool: str, **extra: str
) -> dict[str, str]:
    """The labels GPU Feature Discovery / NFD put on a GPU node (driver 570.133.20, CUDA 12.8), plus
    the node's instance type and its kwok pool (``aicr.test/pool``)."""
    return {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.memory": str(memory_mib),
        "nvidia.com/gpu.family": family,
        "nvidia.com/gpu.machine": machine,
        "nvidia.com/cuda.driver.major": "570",
        "nvidia.com/cuda.driver.minor": "133",
        "nvidia.com/cuda.driver.rev": "20",
        "nvidia.com/cuda.runtime.major": "12",
        "nvidia.com/cuda.runtime.minor": "8",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.deploy.driver": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "node.kubernetes.io/instance-type": machine,
        **extra,
        "aicr.test/pool": pool,
    }


H100_GFD_LABELS: Mapping[str, str] = gfd_labels(
    "NVIDIA-H100-80GB-HBM3", 8, 81559, "hopper", "p5.48xlarge", "gpu"
)

#: GPU nodes carry the usual ``nvidia.com/gpu:NoSchedule`` taint; the apiserver runs the
#: ExtendedResourceToleration admission plugin, so pods requesting ``nvidia.com/gpu`` tolerate it
#: automatically (as on GKE/EKS), while pods that don't are kept on the system pool.
GPU_TAINT: Mapping[str, str] = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

H100_NODES = NodeProfile(
    prefix="gpu-h100",
    count=2,
    labels=H100_GFD_LABELS,
    taints=(GPU_TAINT,),
    capacity={
        "cpu": "192",
        "memory": "2063937024Ki",
        "ephemeral-storage": "30Ti",
        "pods": "110",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "nvidia.com/gpu": "8",
        # p5.48xlarge: 32 EFA devices (the AWS EFA device plugin's resource); the h100/eks NCCL
        # runtime's workers ask for all of them.
        "vpc.amazonaws.com/efa": "32",
    },
)

#: p6e-gb200.36xlarge-like (the fake's ``gb200-eks-training`` GPU pool): 4x GB200, arm64, one NVL72
#: IMEX clique. Pool label ``gpu-gb200``, not ``gpu``: the H100 profiles' seeded GPU DaemonSets select
#: ``aicr.test/pool=gpu`` and stay off these nodes.
GB200_GFD_LABELS: Mapping[str, str] = gfd_labels(
    "NVIDIA-GB200",
    4,
    189471,
    "blackwell",
    "p6e-gb200.36xlarge",
    "gpu-gb200",
    **{"nvidia.com/gpu.clique": "5f1c7a52-3c4e-4b8e-9a51-6d1f3e0b2a77.1", "beta.kubernetes.io/arch": "arm64"},
)

GB200_NODES = NodeProfile(
    prefix="gpu-gb200",
    count=2,
    labels=GB200_GFD_LABELS,
    taints=(GPU_TAINT,),
    capacity={
        "cpu": "144",
        "memory": "983040Mi",
        "ephemeral-storage": "30Ti",
        "pods": "110",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "nvidia.com/gpu": "4",
        # p6e-gb200.36xlarge: 8 EFA devices; the gb200/eks -net runtime's workers ask for all of them.
        "vpc.amazonaws.com/efa": "8",
    },
    architecture="arm64",
    kernel_version="6.8.0-1024-aws",
)

SYSTEM_NODES = NodeProfile(
    prefix="system",
    count=1,
    labels={"aicr.test/pool": "system", "node-role.kubernetes.io/system": ""},
    capacity={"cpu": "16", "memory": "65536Mi", "ephemeral-storage": "500Gi", "pods": "110"},
)

DEFAULT_NODE_PROFILES: tuple[NodeProfile, ...] = (H100_NODES, GB200_NODES, SYSTEM_NODES)


def node_manifest(name: str, profile: NodeProfile) -> dict[str, Any]:
    """A Node that kwok manages (annotation ``kwok.x-k8s.io/node=fake``) with the profile's shape."""
    key, value = KWOK_NODE_ANNOTATION
    capacity = dict(profile.capacity)
    instance = hashlib.sha1(name.encode()).hexdigest()[:17]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": profile.architecture,
                "type": "kwok",
                # an EKS managed node group per pool (cluster-autoscaling's EKS evidence)
                "eks.amazonaws.com/nodegroup": profile.prefix,
                "topology.kubernetes.io/region": "us-east-1",
                **profile.labels,
            },
        },
        # EKS-shaped provider IDs: the platform cluster-autoscaling detects from the first node
        "spec": {
            "taints": [dict(t) for t in profile.taints],
            "providerID": f"aws:///us-east-1a/i-{instance}",
        },
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "nodeInfo": {
                "architecture": profile.architecture,
                "operatingSystem": "linux",
                "kubeletVersion": f"{K8S_VERSION}-kwok",
                "kubeProxyVersion": f"{K8S_VERSION}-kwok",
                "containerRuntimeVersion": "containerd://2.1.0",
                "osImage": "Ubuntu 24.04 LTS",
                "kernelVersion": profile.kernel_version,
            },
        },
    }


# --------------------------------------------------------------------------------------------------------
# kwok's Logs/ClusterLogs resources (scripted container logs)

KWOK_GROUP = "kwok.x-k8s.io"
KWOK_API_VERSION = f"{KWOK_GROUP}/v1alpha1"
#: kwok reads these kinds from the apiserver (``--enable-crds``) instead of static config files.
KWOK_CRD_KINDS = ("Logs", "ClusterLogs", "Exec", "ClusterExec")
#: kwok's plural resource names (its CRDs: ``kustomize/crd/bases``)
_KWOK_PLURALS = {"Logs": "logs", "ClusterLogs": "clusterlogs", "Exec": "execs", "ClusterExec": "clusterexecs"}


def kwok_crd(kind: str) -> dict[str, Any]:
    """A minimal CRD for kwok's ``kind`` (schema: preserve unknown fields; kwok's own is stricter)."""
    plural = _KWOK_PLURALS.get(kind, kind.lower())
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{KWOK_GROUP}"},
        "spec": {
            "group": KWOK_GROUP,
            "scope": "Cluster" if kind.startswith("Cluster") else "Namespaced",
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


#: Pod annotation read by the adjusted ``pod-complete`` stage: how long a Job's pod runs before
#: kwok marks it Succeeded (a Go duration such as ``"5s"``; default 0), or ``"forever"`` (never).
RUN_FOR_ANNOTATION = "aicr.test/run-for"

#: Jobs whose pods a test controller plays (prints the log, then ends the pod): kwok must not
#: complete them first. The inference check's model-cache download and AIPerf benchmark
#: (:mod:`tests.harness.controlplane_dynamo`), the snapshot agent (:mod:`.controlplane_players`).
PLAYED_JOB_PREFIXES = ("aicr-aiperf-", "aicr-model-cache-populate-", "aicr-snapshot-")


#: kwok reports no ``imageID``; a kubelet reports one for every container it started, and the checks'
#: proof of execution needs it (the nodes are still KWOK's fakes: the tests pass --allow-fake-nodes)
_IMAGE_LINE = re.compile(r"^(?P<indent>\s*)- image: \{\{ (?P<ref>\$item\.image|\.image) \| Quote \}\}$", re.M)


def _with_image_ids(template: str) -> str:
    return _IMAGE_LINE.sub(
        lambda m: (
            f"{m.group(0)}\n{m.group('indent')}  imageID: "
            f'{{{{ printf "%s@sha256:kwok" {m.group("ref")} | Quote }}}}'
        ),
        template,
    )


def write_kwok_stages(source: Path, target: Path) -> Path:
    """kwok's default stages with ``pod-complete`` made controllable per pod (:data:`RUN_FOR_ANNOTATION`)
    and an ``imageID`` on every container status kwok writes (:data:`_IMAGE_LINE`)."""
    docs = [d for d in yaml.safe_load_all(source.read_text()) if isinstance(d, dict)]
    for doc in docs:
        nxt = (doc.get("spec") or {}).get("next") or {}
        if doc.get("kind") == "Stage" and isinstance(nxt.get("statusTemplate"), str):
            nxt["statusTemplate"] = _with_image_ids(nxt["statusTemplate"])
        if doc.get("kind") == "Stage" and doc.get("metadata", {}).get("name") == "pod-complete":
            spec = doc["spec"]
            query = f'.metadata.annotations["{RUN_FOR_ANNOTATION}"]'
            spec["selector"]["matchExpressions"].append(
                {"key": query, "operator": "NotIn", "values": ["forever"]}
            )
            spec["delay"] = {"durationMilliseconds": 0, "durationFrom": {"expressionFrom": query}}
            played = "|".join(PLAYED_JOB_PREFIXES)
            spec["selector"]["matchExpressions"].append(
                {
                    "key": f'.metadata.labels["batch.kubernetes.io/job-name"] // "" | test("^({played})")',
                    "operator": "NotIn",
                    "values": ["true"],
                }
            )
    target.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return target


#: Where the commands kwok runs for ``pods/exec`` are found (kwok runs them locally, on its ``PATH``:
#: the Slinky checks' fake ``scontrol``/``sinfo``/``srun``, :mod:`.controlplane_conformance_ii`).
EXEC_BIN_DIR = "exec-bin"


def kwok_exec_env(workdir: Path) -> dict[str, str]:
    """kwok's environment: its ``PATH`` starts with the work directory's :data:`EXEC_BIN_DIR`."""
    from tests.harness.controlplane_conformance_ii import write_exec_bin

    bin_dir = write_exec_bin(workdir / EXEC_BIN_DIR)
    return {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}


def cri_log(text: str, *, stream: str = "stdout", timestamp: str = "2025-01-01T00:00:00.000000000Z") -> str:
    """``text`` in the CRI container-log format kwok's log server reads (``<ts> <stream> F|P <line>``).

    Every complete line becomes an ``F`` (full) record; a trailing line without a newline becomes a
    ``P`` (partial) record, so ``GET .../log`` returns ``text`` byte for byte.
    """
    out: list[str] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if last and line == "":
            break
        out.append(f"{timestamp} {stream} {'P' if last else 'F'} {line}\n")
    return "".join(out)


# --------------------------------------------------------------------------------------------------------
# helpers


#: Listening ports are picked below the kernel's ephemeral range (Linux default 32768-60999): a port
#: the kernel hands out for ``bind(0)`` can be taken by any outgoing connection (etcd/apiserver
#: clients, the other xdist worker's control plane) before the component that should listen on it
#: starts, which killed a control-plane start under ``-n 2``.
LISTEN_PORTS = (20000, 32000)


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A free TCP port on 127.0.0.1 outside the ephemeral range (:data:`LISTEN_PORTS`), bound to check.

    Falls back to the kernel's pick when the range overlaps the ephemeral one or nothing is free.
    """
    low, high = LISTEN_PORTS
    eph_low, eph_high = _ephemeral_range()
    if not (high < eph_low or low > eph_high):
        low, high = 0, -1  # the configured range overlaps: use the kernel's pick
    rng = secrets.SystemRandom()
    for _ in range(64 if high >= low else 0):
        port = rng.randint(low, high)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        picked: int = s.getsockname()[1]
        return picked


def _run(argv: Sequence[str | Path], cwd: Path) -> None:
    proc = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
    )
    if proc.returncode != 0:
        raise ControlPlaneError(f"{' '.join(map(str, argv))} failed: {proc.stderr.strip()}")


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    sa_key: Path
    sa_pub: Path


def generate_pki(directory: Path) -> Pki:
    """A throw-away CA, a serving certificate for 127.0.0.1/localhost and a service-account key pair.

    Uses the ``openssl`` command line (always present on Debian; the ``cryptography`` package is not a
    dependency of aicr-pytest).
    """
    openssl = shutil.which("openssl")
    if openssl is None:
        raise ControlPlaneUnavailable("the openssl command is needed to generate the control plane's certs")
    directory.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _run([openssl, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "7",
          "-subj", "/CN=aicr-pytest-ca", "-addext", "basicConstraints=critical,CA:TRUE",
          "-addext", "keyUsage=critical,keyCertSign,cRLSign"], directory)  # fmt: skip
    sans = ",".join([
        "IP:127.0.0.1", "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
        "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local", "IP:10.0.0.1",
    ])  # fmt: skip
    (directory / "serving.ext").write_text(
        f"subjectAltName={sans}\nextendedKeyUsage=serverAuth,clientAuth\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n"
    )
    _run([openssl, "req", *ec, "-keyout", "serving.key", "-out", "serving.csr",
          "-subj", "/CN=kube-apiserver"], directory)  # fmt: skip
    _run([openssl, "x509", "-req", "-in", "serving.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
          "-CAcreateserial", "-out", "serving.crt", "-days", "7",
          "-extfile", "serving.ext"], directory)  # fmt: skip
    _run([openssl, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
          "-out", "sa.key"], directory)  # fmt: skip
    _run([openssl, "pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"], directory)
    for key in ("ca.key", "serving.key", "sa.key"):
        (directory / key).chmod(0o600)
    return Pki(
        ca_cert=directory / "ca.crt",
        serving_cert=directory / "serving.crt",
        serving_key=directory / "serving.key",
        sa_key=directory / "sa.key",
        sa_pub=directory / "sa.pub",
    )


def write_kubeconfig(path: Path, *, server: str, ca_cert: Path, user: str, token: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "aicr-controlplane",
                "cluster": {"server": server, "certificate-authority": str(ca_cert)},
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "aicr-controlplane", "user": user}}],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


# --------------------------------------------------------------------------------------------------------
# the control plane


@dataclass
class Component:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid


@dataclass
class ControlPlane:
    """A running control plane. Use :func:`start_controlplane` / :meth:`stop` (or the context manager)."""

    workdir: Path
    server: str
    ca_cert: Path
    admin_kubeconfig: Path
    user_kubeconfig: Path
    admin_token: str
    user_token: str
    components: dict[str, Component] = field(default_factory=dict)
    node_names: list[str] = field(default_factory=list)
    rbac_manifest: Path | None = None
    start_seconds: float = 0.0
    keep_workdir: bool = False
    stopped: bool = False
    #: the apiserver's egress to the cluster (kubelets, pod/service proxies): :mod:`.egress`
    egress: EgressProxy | None = None

    @property
    def pids(self) -> dict[str, int]:
        return {name: c.pid for name, c in self.components.items()}

    @property
    def user_name(self) -> str:
        return LEAST_PRIVILEGE_USER

    def api_client(self, *, admin: bool = True) -> Any:
        """A ``kubernetes.client.ApiClient`` for the admin (default) or the least-privilege user."""
        from kubernetes import config as kube_config

        path = self.admin_kubeconfig if admin else self.user_kubeconfig
        return kube_config.new_client_from_config(config_file=str(path))  # type: ignore[no-untyped-call]

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        admin: bool = True,
        content_type: str = "application/json",
    ) -> Any:
        """``method path`` on the apiserver with a JSON body; returns the decoded JSON answer.

        Raises ``urllib.error.HTTPError`` on a non-2xx status (its body holds the apiserver's Status).
        """
        data = None if body is None else json.dumps(body).encode()
        answer = _https_request(
            self.server + path,
            self.ca_cert,
            self._token(admin),
            method=method,
            data=data,
            content_type=content_type,
        )
        return json.loads(answer) if answer else None

    def get(self, path: str, *, admin: bool = True) -> Any:
        """GET ``path`` on the apiserver (JSON decoded)."""
        return self.request("GET", path, admin=admin)

    def get_text(self, path: str, *, admin: bool = True) -> str:
        """GET ``path`` and return the body as text (``pods/<pod>/log``, ``/healthz``...)."""
        return _https_request(self.server + path, self.ca_cert, self._token(admin)).decode(errors="replace")

    def _token(self, admin: bool) -> str:
        return self.admin_token if admin else self.user_token

    @property
    def logs_dir(self) -> Path:
        """Where scripted container logs (CRI format) live; kwok reads them from here."""
        path = self.workdir / "pod-logs"
        path.mkdir(exist_ok=True)
        return path

    def _write_log_file(self, stem: str, container: str, text: str) -> str:
        path = self.logs_dir / f"{stem}.{container}.{secrets.token_hex(4)}.log"
        path.write_text(cri_log(text))
        return str(path)

    def set_pod_logs(self, namespace: str, pod: str, logs: Mapping[str, str]) -> None:
        """Script what ``GET .../pods/<pod>/log?container=<c>`` returns (a kwok ``Logs`` object).

        ``logs`` maps container name to text; the key ``""`` matches any container. Replaces an
        earlier script for the same pod.
        """
        spec = [
            {
                **({"containers": [c]} if c else {}),
                "logsFile": self._write_log_file(f"{namespace}.{pod}", c or "any", text),
            }
            for c, text in logs.items()
        ]
        body = {
            "apiVersion": KWOK_API_VERSION,
            "kind": "Logs",
            "metadata": {"name": pod, "namespace": namespace},
            "spec": {"logs": spec},
        }
        path = f"/apis/{KWOK_API_VERSION}/namespaces/{namespace}/logs"
        try:
            self.request("POST", path, body)
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise
            self.request(
                "PATCH", f"{path}/{pod}", {"spec": body["spec"]}, content_type="application/merge-patch+json"
            )

    def set_namespace_logs(
        self, name: str, namespaces: Sequence[str], logs: Mapping[str, str], pods: Sequence[str] = ()
    ) -> None:
        """Script the logs of every pod in ``namespaces`` (or only ``pods``): a kwok ``ClusterLogs``."""
        spec = [
            {
                **({"containers": [c]} if c else {}),
                "logsFile": self._write_log_file(name, c or "any", text),
            }
            for c, text in logs.items()
        ]
        selector: dict[str, Any] = {"matchNamespaces": list(namespaces)}
        if pods:
            selector["matchNames"] = list(pods)
        body = {
            "apiVersion": KWOK_API_VERSION,
            "kind": "ClusterLogs",
            "metadata": {"name": name},
            "spec": {"selector": selector, "logs": spec},
        }
        self.request("POST", f"/apis/{KWOK_API_VERSION}/clusterlogs", body)

    def delete_namespace_logs(self, name: str) -> None:
        with contextlib.suppress(urllib.error.HTTPError):
            self.request("DELETE", f"/apis/{KWOK_API_VERSION}/clusterlogs/{name}")

    def alive(self) -> dict[str, bool]:
        return {name: c.process.poll() is None for name, c in self.components.items()}

    def stop(self, timeout: float = 15.0) -> None:
        """Terminate every component (reverse start order), reap it, and remove the work directory."""
        if self.stopped:
            return
        for component in reversed(list(self.components.values())):
            _terminate(component.process, timeout)
        if self.egress is not None:
            self.egress.stop()
        self.stopped = True
        if not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _terminate(process: subprocess.Popen[bytes], timeout: float) -> None:
    if process.poll() is not None:
        return
    # Each component runs in its own session; signal the whole group so no helper process survives.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)


def pid_exists(pid: int) -> bool:
    """True when a process with ``pid`` exists (zombies included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _https_request(
    url: str,
    ca_cert: Path | None,
    token: str | None,
    *,
    method: str = "GET",
    data: bytes | None = None,
    content_type: str = "application/json",
    timeout: float = 10.0,
) -> bytes:
    """One HTTP(S) request; ``ca_cert=None`` skips verification (components' self-signed health ports)."""
    if ca_cert is None:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context(cafile=str(ca_cert))
    request = urllib.request.Request(url, data=data, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", content_type)
    # No proxies from the environment: the control plane is on loopback, and looking them up iterates
    # os.environ, which races pytest setting PYTEST_CURRENT_TEST when a test controller's thread
    # calls this (a KeyError in that thread).
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
    )
    with opener.open(request, timeout=timeout) as response:
        body: bytes = response.read()
        return body


def _https_get(url: str, ca_cert: Path | None, token: str | None) -> bytes:
    return _https_request(url, ca_cert, token)


def _wait_until(
    what: str, probe: Any, deadline: float, components: Mapping[str, Component], interval: float = 0.2
) -> None:
    """Poll ``probe()`` until it returns truthy; fail fast (with logs) if a component has exited."""
    last_error = ""
    while True:
        for component in components.values():
            code = component.process.poll()
            if code is not None:
                raise ControlPlaneError(
                    f"{component.name} exited with {code} while waiting for {what}; "
                    f"log {component.log}:\n{_tail(component.log)}"
                )
        try:
            if probe():
                return
        except (OSError, urllib.error.URLError, ValueError, ssl.SSLError) as e:
            last_error = str(e)
        except Exception as e:  # kubernetes ApiException and friends
            last_error = f"{type(e).__name__}: {e}"
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {c.name} ({c.log}):\n{_tail(c.log, 10)}" for c in components.values())
            raise ControlPlaneError(f"timed out waiting for {what} (last error: {last_error})\n{logs}")
        time.sleep(interval)


def _start(
    name: str,
    argv: Sequence[str | Path],
    workdir: Path,
    components: dict[str, Component],
    env: Mapping[str, str] | None = None,
) -> None:
    log = workdir / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(a) for a in argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            start_new_session=True,
            preexec_fn=_die_with_parent,
            env=None if env is None else {**os.environ, **env},
        )
    components[name] = Component(name, process, log)


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the test process dies, however it dies.

    Each component runs in its own session (so a Ctrl-C in the terminal reaches only pytest, which
    stops them in order); without this a pytest killed by SIGTERM/SIGKILL would leave etcd, the
    apiserver and kwok running with init as their parent."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _scratch_root() -> str | None:
    """Prefer tmpfs for etcd's data (Debian's etcd 3.4 has no --unsafe-no-fsync)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def start_controlplane(
    binaries: Binaries | None = None,
    *,
    node_profiles: Sequence[NodeProfile] = DEFAULT_NODE_PROFILES,
    rbac_manifest: Path | None = DEFAULT_RBAC_MANIFEST,
    timeout: float = 120.0,
    keep_workdir: bool | None = None,
    verbosity: int = 1,
    crds: Sequence[Mapping[str, Any]] = (),
) -> ControlPlane:
    """Start etcd, the apiserver, controller-manager, scheduler and kwok; create the nodes; wait for all.

    ``crds`` are created (and Established) before the controller-manager starts: its garbage collector
    discovers which resources to watch at start and then only every 30 s, so owner references to (and
    from) custom resources created later are not acted on for up to 30 s (a foreground delete of a
    custom resource hangs that long). Seed the CRDs of the profiles a session will use here.

    On any failure everything started so far is stopped before the exception propagates.
    ``keep_workdir`` (default: env ``AICR_CONTROLPLANE_KEEP=1``) keeps certs and logs after :meth:`stop`.
    """
    started = time.monotonic()
    binaries = binaries or find_binaries()
    if keep_workdir is None:
        keep_workdir = os.environ.get("AICR_CONTROLPLANE_KEEP") == "1"
    workdir = Path(tempfile.mkdtemp(prefix="aicr-controlplane-", dir=_scratch_root()))
    components: dict[str, Component] = {}
    admin_token, user_token = secrets.token_hex(24), secrets.token_hex(24)
    kcm_token, scheduler_token, kwok_token = (secrets.token_hex(24) for _ in range(3))
    ports = {
        name: free_port()
        for name in ("etcd-client", "etcd-peer", "apiserver", "kcm", "scheduler", "kwok-node")
    }
    server = f"https://127.0.0.1:{ports['apiserver']}"
    pki = generate_pki(workdir / "pki")
    cp = ControlPlane(
        workdir=workdir,
        server=server,
        ca_cert=pki.ca_cert,
        admin_kubeconfig=write_kubeconfig(
            workdir / "admin.kubeconfig",
            server=server,
            ca_cert=pki.ca_cert,
            user=ADMIN_USER,
            token=admin_token,
        ),
        user_kubeconfig=write_kubeconfig(
            workdir / "user.kubeconfig",
            server=server,
            ca_cert=pki.ca_cert,
            user=LEAST_PRIVILEGE_USER,
            token=user_token,
        ),
        admin_token=admin_token,
        user_token=user_token,
        components=components,
        keep_workdir=keep_workdir,
    )
    try:
        # Service IPs too: nothing listens on a ClusterIP unless the proxy routes it (an APIService's)
        cp.egress = EgressProxy(workdir / "egress.sock", simulated_networks=[POD_CIDR, SERVICE_CIDR]).start()
        _launch(cp, binaries, pki, ports, kcm_token, scheduler_token, kwok_token, timeout, verbosity, crds)
        deadline = time.monotonic() + timeout
        cp.rbac_manifest = bind_least_privilege_user(cp, rbac_manifest)
        cp.node_names = create_nodes(cp, node_profiles)
        _wait_until("kwok nodes Ready", lambda: _nodes_ready(cp), deadline, components)
        _wait_until("default ServiceAccount", lambda: _default_sa_exists(cp), deadline, components)
    except BaseException:
        cp.stop()
        raise
    cp.start_seconds = time.monotonic() - started
    return cp


def _launch(
    cp: ControlPlane,
    binaries: Binaries,
    pki: Pki,
    ports: Mapping[str, int],
    kcm_token: str,
    scheduler_token: str,
    kwok_token: str,
    timeout: float,
    verbosity: int,
    crds: Sequence[Mapping[str, Any]] = (),
) -> None:
    workdir, components, server = cp.workdir, cp.components, cp.server
    deadline = time.monotonic() + timeout
    etcd_url = f"http://127.0.0.1:{ports['etcd-client']}"
    peer_url = f"http://127.0.0.1:{ports['etcd-peer']}"
    _start("etcd", [
        binaries.etcd, "--name=aicr", f"--data-dir={workdir / 'etcd'}",
        f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
        f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=aicr={peer_url}", "--initial-cluster-state=new",
        "--log-level=warn",
    ], workdir, components)  # fmt: skip
    _wait_until(
        "etcd /health",
        lambda: json.loads(_https_get(etcd_url + "/health", None, None)).get("health") == "true",
        deadline,
        components,
    )

    tokens = workdir / "pki" / "tokens.csv"
    tokens.write_text(
        f'{cp.admin_token},{ADMIN_USER},uid-admin,"system:masters"\n'
        f"{cp.user_token},{LEAST_PRIVILEGE_USER},uid-validator\n"
        f"{kcm_token},system:kube-controller-manager,uid-kcm\n"
        f"{scheduler_token},system:kube-scheduler,uid-scheduler\n"
        f'{kwok_token},aicr-kwok,uid-kwok,"system:masters"\n'
    )
    tokens.chmod(0o600)
    assert cp.egress is not None
    egress_config = workdir / "egress-selector.yaml"
    egress_config.write_text(egress_selector_config(cp.egress.socket_path))
    _start("kube-apiserver", [
        binaries.kube_apiserver,
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={ports['apiserver']}",
        f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--token-auth-file={tokens}",
        "--anonymous-auth=false",
        "--authorization-mode=RBAC",
        f"--service-account-issuer={server}",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        "--endpoint-reconciler-type=none",  # loopback advertise address; no kubernetes Endpoints needed
        "--enable-admission-plugins=ExtendedResourceToleration",
        # kwok nodes report InternalIP 127.0.0.1 and Hostname <node name> (not resolvable): pods/log,
        # exec and port-forward go to kwok's kubelet-like server on the InternalIP.
        "--kubelet-preferred-address-types=InternalIP",
        # everything the apiserver sends into the cluster (kubelet calls, pod/service proxies) goes
        # through the egress proxy, which routes made-up pod IPs to the test servers playing them
        f"--egress-selector-config-file={egress_config}",
        # Debian's etcd 3.4 lacks RequestWatchProgress, so the watch cache refuses client-go's
        # streaming lists (sendInitialEvents); kwok's informers then fail, back off and re-list, and
        # every pod phase change lags by 5-10 s. Without the cache, watches go to etcd directly and
        # serve streaming lists: a kwok Job pod completes in ~1 s instead of ~12 s.
        "--watch-cache=false",
        "--profiling=false",
        f"--cert-dir={workdir / 'apiserver-certs'}",
        f"--v={verbosity}",
    ], workdir, components)  # fmt: skip
    _wait_until(
        "kube-apiserver /readyz",
        lambda: _https_get(server + "/readyz", pki.ca_cert, cp.admin_token) == b"ok",
        deadline,
        components,
    )

    # Every CRD before the controller-manager, so its garbage collector watches them from the start.
    install_crds(cp, [*(kwok_crd(kind) for kind in KWOK_CRD_KINDS), *crds], deadline, components)

    kcm_kubeconfig = write_kubeconfig(
        workdir / "kcm.kubeconfig",
        server=server,
        ca_cert=pki.ca_cert,
        user="system:kube-controller-manager",
        token=kcm_token,
    )
    _start("kube-controller-manager", [
        binaries.kube_controller_manager,
        f"--kubeconfig={kcm_kubeconfig}",
        f"--authentication-kubeconfig={kcm_kubeconfig}", f"--authorization-kubeconfig={kcm_kubeconfig}",
        "--bind-address=127.0.0.1", f"--secure-port={ports['kcm']}", f"--cert-dir={workdir / 'kcm-certs'}",
        "--leader-elect=false",
        "--use-service-account-credentials=true",
        # the HPA controller acts within seconds (default 15 s), so autoscaling checks converge fast
        "--horizontal-pod-autoscaler-sync-period=1s",
        f"--service-account-private-key-file={pki.sa_key}",
        f"--root-ca-file={pki.ca_cert}",
        "--profiling=false",
        f"--v={verbosity}",
    ], workdir, components)  # fmt: skip

    scheduler_kubeconfig = write_kubeconfig(
        workdir / "scheduler.kubeconfig",
        server=server,
        ca_cert=pki.ca_cert,
        user="system:kube-scheduler",
        token=scheduler_token,
    )
    _start("kube-scheduler", [
        binaries.kube_scheduler,
        f"--kubeconfig={scheduler_kubeconfig}",
        f"--authentication-kubeconfig={scheduler_kubeconfig}",
        f"--authorization-kubeconfig={scheduler_kubeconfig}",
        "--bind-address=127.0.0.1", f"--secure-port={ports['scheduler']}",
        f"--cert-dir={workdir / 'scheduler-certs'}",
        "--leader-elect=false",
        "--profiling=false",
        f"--v={verbosity}",
    ], workdir, components)  # fmt: skip

    kwok_kubeconfig = write_kubeconfig(
        workdir / "kwok.kubeconfig", server=server, ca_cert=pki.ca_cert, user="aicr-kwok", token=kwok_token
    )
    key, value = KWOK_NODE_ANNOTATION
    _start("kwok", [
        binaries.kwok,
        f"--kubeconfig={kwok_kubeconfig}",
        f"--config={write_kwok_stages(binaries.kwok_stages, workdir / 'kwok-stages.yaml')}",
        "--manage-all-nodes=false",
        "--node-lease-duration-seconds=40",
        f"--enable-crds={','.join(KWOK_CRD_KINDS)}",
        f"--manage-nodes-with-annotation-selector={key}={value}",
        f"--cidr={POD_CIDR}",
        "--node-ip=127.0.0.1",
        f"--node-port={ports['kwok-node']}",
        # The nodes' kubeletEndpoint port is --node-port: serve logs/exec there (as kwokctl does).
        f"--server-address=127.0.0.1:{ports['kwok-node']}",
        f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
        f"--v={'DEBUG' if verbosity > 2 else 'INFO'}",
    ], workdir, components, env=kwok_exec_env(workdir))  # fmt: skip

    for name, port in (("kube-controller-manager", ports["kcm"]), ("kube-scheduler", ports["scheduler"])):
        url = f"https://127.0.0.1:{port}/healthz"
        _wait_until(
            f"{name} /healthz", lambda u=url: _https_get(u, None, None) == b"ok", deadline, components
        )


def install_kwok_crds(
    cp: ControlPlane, deadline: float, components: Mapping[str, Component] | None = None
) -> None:
    """Create kwok's Logs/ClusterLogs CRDs and wait until they are Established (before kwok starts)."""
    install_crds(cp, [kwok_crd(kind) for kind in KWOK_CRD_KINDS], deadline, components)


def install_crds(
    cp: ControlPlane,
    crds: Sequence[Mapping[str, Any]],
    deadline: float,
    components: Mapping[str, Component] | None = None,
) -> None:
    """Create ``crds`` (an existing one is left as it is) and wait until each is Established."""
    for crd in crds:
        body = {k: v for k, v in crd.items() if k != "status"}
        meta = crd["metadata"]
        body["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if meta.get(k)}
        try:
            cp.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body)
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise
    for crd in crds:
        name = str(crd["metadata"]["name"])
        _wait_until(
            f"CRD {name} Established",
            lambda n=name: crd_established(cp, n),
            deadline,
            components or cp.components,
        )


def crd_established(cp: ControlPlane, name: str) -> bool:
    """Whether CRD ``name`` has condition ``Established=True``."""
    crd = cp.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or []
    )


def _nodes_ready(cp: ControlPlane) -> bool:
    nodes = cp.get("/api/v1/nodes")["items"]
    ready = {
        n["metadata"]["name"]
        for n in nodes
        if any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in n.get("status", {}).get("conditions", [])
        )
    }
    return set(cp.node_names) <= ready


def _default_sa_exists(cp: ControlPlane) -> bool:
    try:
        cp.get("/api/v1/namespaces/default/serviceaccounts/default")
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return False
        raise
    return True


def create_nodes(cp: ControlPlane, profiles: Sequence[NodeProfile]) -> list[str]:
    """Create every profile's Node objects (kwok then reports them Ready and heartbeats their leases)."""
    names: list[str] = []
    for profile in profiles:
        for manifest in profile.manifests():
            name = manifest["metadata"]["name"]
            cp.request("POST", "/api/v1/nodes", manifest)
            # Status is not guaranteed to survive create; set capacity/allocatable explicitly.
            cp.request(
                "PATCH",
                f"/api/v1/nodes/{name}/status",
                {"status": manifest["status"]},
                content_type="application/merge-patch+json",
            )
            names.append(name)
    return names


def _load_manifest(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict) and doc.get("kind")]


def resource_path(cp: ControlPlane, api_version: str, kind: str, namespace: str | None) -> str:
    """The collection URL path for ``kind`` in ``api_version``, found through API discovery."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    for resource in cp.get(base)["resources"]:
        if resource["kind"] == kind and "/" not in resource["name"]:
            if resource["namespaced"]:
                return f"{base}/namespaces/{namespace or 'default'}/{resource['name']}"
            return f"{base}/{resource['name']}"
    raise ControlPlaneError(f"no resource of kind {kind} in {api_version}")


def create_object(cp: ControlPlane, manifest: Mapping[str, Any], *, admin: bool = True) -> Any:
    """POST ``manifest`` to its collection (any kind the apiserver serves); returns the created object."""
    path = resource_path(
        cp, manifest["apiVersion"], manifest["kind"], manifest.get("metadata", {}).get("namespace")
    )
    return cp.request("POST", path, manifest, admin=admin)


def bind_least_privilege_user(cp: ControlPlane, manifest: Path | None) -> Path | None:
    """Apply ``manifest`` (``deploy/rbac.yaml``) and bind the least-privilege user to its roles.

    Every object in the file is created as written (namespaces first); then the token user
    :data:`LEAST_PRIVILEGE_USER` gets a ClusterRoleBinding to each ClusterRole and a RoleBinding to each
    Role in it, so the ``user`` kubeconfig holds exactly the permissions the shipped manifest grants.
    Returns the manifest used, or ``None`` when there is none (the user then has no permissions).
    """
    if manifest is None or not manifest.is_file():
        return None
    docs = _load_manifest(manifest)
    if not docs:
        return None
    system = {"default", "kube-system", "kube-public", "kube-node-lease"}
    namespaces = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    namespaces |= {d["metadata"]["namespace"] for d in docs if d.get("metadata", {}).get("namespace")}
    for ns in sorted(namespaces - system):
        cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    for doc in docs:
        if doc["kind"] != "Namespace":
            create_object(cp, doc)
    subject = {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": LEAST_PRIVILEGE_USER}
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    for doc in docs:
        if doc["kind"] not in ("ClusterRole", "Role"):
            continue
        name = doc["metadata"]["name"]
        binding = {
            "metadata": {"name": f"aicr-pytest-user-{name}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": doc["kind"], "name": name},
            "subjects": [subject],
        }
        if doc["kind"] == "ClusterRole":
            cp.request("POST", f"{rbac}/clusterrolebindings", binding)
        else:
            ns = doc["metadata"].get("namespace", "default")
            cp.request("POST", f"{rbac}/namespaces/{ns}/rolebindings", binding)
    return manifest


@contextlib.contextmanager
def running_controlplane(**kwargs: Any) -> Iterator[ControlPlane]:
    """``with running_controlplane() as cp:`` — start, yield, always stop."""
    cp = start_controlplane(**kwargs)
    try:
        yield cp
    finally:
        cp.stop()
