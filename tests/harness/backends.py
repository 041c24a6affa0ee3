"""One surface over the two cluster backends the scenario suite runs on: the fake and a real control plane.

``FakeBackend`` wraps a :class:`~aicr_pytest.testing.cluster.FakeCluster` (virtual time, scripted pods,
HTTP faults). ``ControlPlaneBackend`` wraps the session's real kube-apiserver + controller-manager +
scheduler + kwok (:mod:`tests.harness.controlplane`): real admission, validation, RBAC, selectors,
watches, Job controller and scheduler; real time.

Both expose (see :class:`K8sBackend`):

* ``kubeconfig_path`` (admin) and ``restricted_kubeconfig_path`` (the least-privilege user bound to
  ``deploy/rbac.yaml``; on the fake, which has no authorizer, the same file);
* ``seed(objects)`` -- create objects as given (status included) -- and ``seed_profile(name, faults)``;
* ``find``/``list`` -- read back what the cluster holds, independently of the code under test;
* ``namespace(base)`` -- the namespace a test uses where it would use ``base`` on a fresh cluster: the
  fake is fresh per test, so ``base`` itself; the control plane is shared by the session, so a unique
  name (created when ``base`` exists on a fresh cluster, e.g. ``default``) that teardown deletes;
* ``run_id`` -- a run id that never repeats on a shared cluster;
* ``script_pods(...)`` -- how matching pods behave (logs, how long they run): on the fake a
  :class:`~aicr_pytest.testing.simulator.PodScript`; on the control plane a kwok ``ClusterLogs`` for
  the namespace plus pod-template annotations the caller puts on its Job (kwok's ``pod-complete``
  stage reads :data:`~tests.harness.controlplane.RUN_FOR_ANNOTATION`);
* ``clock`` (what waits and run scopes read), ``check_clock`` (what checks run by pytester read:
  the fake's clock, or a :class:`SkippingClock` whose sleeps cost no real time), ``advance(seconds)``
  and ``clock_running()`` (drive virtual time from a thread while a test blocks on a watch);
* capability flags: ``virtual_time``, ``can_script_logs``, ``has_real_scheduler``,
  ``has_real_controllers``, ``can_inject_faults``, ``counts_requests``, ``enforces_rbac``.

Profiles on the control plane (:func:`profile_objects` + :meth:`ControlPlaneBackend.seed_profile`):
the profile is resolved into a throw-away, never-started FakeCluster and its objects are created on
the real apiserver -- CRDs first (until Established), namespaces, then everything else, then each
object's ``status`` through the status subresource. Nodes stay the kwok ones (the profile's GPU
nodes map onto kwok's GPU nodes in order, its system nodes onto kwok's system pool; objects naming a
node with no kwok counterpart, such as the extra ResourceSlices, are left out). Pods owned by a
controller are not copied: Deployments, DaemonSets and StatefulSets are created with their pod
templates (plus a ``tolerations: [{operator: Exists}]``, as the fake's pods carry) and the *real*
controllers create the pods, the scheduler binds them, kwok runs them, and the controllers write the
workloads' status. That is the most faithful option (nothing fights the controllers over status)
and a healthy profile converges in seconds. A faulted DaemonSet pod (a crash-looping container) is
expressed by patching the profile's pod status onto the real pod on the same node
(:func:`profile_pod_states`, :func:`apply_pod_states`: kwok leaves a Running pod's status alone, and the
real DaemonSet controller counts it unready); any other unhealthy workload pod is refused, and such
scenarios stay fake-only. The CRDs of
:data:`CONTROLPLANE_PROFILES` are created when the control plane starts (:func:`profile_crds`), before
the controller-manager, so its garbage collector follows owner references through custom resources
at once (it rediscovers resources only every 30 s: a foreground delete of a TrainJob otherwise hung
for up to 30 s).

A session holds one profile at a time but may switch: :meth:`ControlPlaneSession.seed_profile` to
another profile converges the apiserver (:func:`plan_convergence`: delete what only the old profile
has, wait until it is gone, create what only the new one has; the startup CRDs stay, a CRD only one
profile's fault installs, such as Kueue's, goes with it). ``h100-eks-training`` ->
``h100-eks-inference`` takes ~0.5 s; back, ~5 s (the namespace controller removes ``dynamo-system``).
GPU nodes map by the profile's GPU product (``nvidia.com/gpu.product``), so an H100 profile lands on
kwok's H100 nodes only.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import functools
import json
import secrets
import threading
import time
import urllib.error
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

from aicr_pytest.core.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from aicr_pytest.testing.cluster import FakeCluster
    from tests.harness.controlplane import ControlPlane
    from tests.harness.controlplane_players import Poller

__all__ = [
    "BACKENDS",
    "CONTROLPLANE_PROFILES",
    "ControlPlaneBackend",
    "ControlPlaneSession",
    "FakeBackend",
    "K8sBackend",
    "SkippingClock",
    "profile_crds",
    "profile_objects",
    "seed_objects",
]

Obj = dict[str, Any]
ObjList = list[Obj]
StrList = list[str]

#: Profiles a control-plane session may seed: their CRDs are installed when the control plane starts
#: (:func:`profile_crds`), before the controller-manager, so its garbage collector acts on owner
#: references to custom resources at once (it rediscovers resources only every 30 s).
CONTROLPLANE_PROFILES = (
    "h100-eks-training",
    "h100-eks-inference",
    "gb200-eks-training",
    "h100-eks-training-karpenter",
    "h100-eks-inference-gateway",
    "gb200-eks-training-slurm",
)

#: The GFD label that names a node's GPU model (how a profile's GPU nodes map onto kwok's).
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"

#: Backend names, in the order tests are parametrized.
BACKENDS = ("fake", "controlplane")

#: Namespaces every fresh cluster has.
BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})

#: Workload kinds whose pods and status the real controllers own.
CONTROLLED_KINDS = frozenset({"Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"})
#: Kinds whose status the apiserver or a controller owns: never written by the seeder.
SERVER_STATUS_KINDS = CONTROLLED_KINDS | {
    "CustomResourceDefinition",
    "Namespace",
    "Node",
    "Service",
    "APIService",  # the aggregator's availability controller writes it
    "Pod",  # a profile's unowned pods (Slinky's) land on kwok nodes: kwok writes their status
}
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


class SkippingClock:
    """Real time plus skipped sleeps: ``sleep(s)`` sleeps at most ``max_real`` and moves ``time()`` by ``s``.

    For checks run against the real control plane: the cluster changes in real time, but the dwell
    windows and poll intervals of a check (60 s of "stays healthy", 10 s between polls) cost almost
    nothing. A state that holds in real time also holds across the skipped time, so verdicts are the
    same; only how long we watch a stable state shrinks.
    """

    def __init__(self, max_real: float = 0.25) -> None:
        self.max_real = max_real
        self._skipped = 0.0
        self._lock = threading.Lock()

    def time(self) -> float:
        with self._lock:
            return time.time() + self._skipped

    def sleep(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        real = min(seconds, self.max_real)
        time.sleep(real)
        with self._lock:
            self._skipped += seconds - real


# --------------------------------------------------------------------------------------------------------
# the common surface


class K8sBackend(ABC):
    """What a backend-parametrized scenario test may use (see the module docstring)."""

    name: ClassVar[str]
    #: ``advance()`` moves time for the whole cluster at no real cost.
    virtual_time: ClassVar[bool]
    #: ``script_pods(logs=...)`` decides what ``pods/log`` returns.
    can_script_logs: ClassVar[bool] = True
    #: kube-scheduler binds pods (nodeSelector, taints, extended resources are real).
    has_real_scheduler: ClassVar[bool]
    #: Job/Deployment/DaemonSet/namespace controllers are the real ones.
    has_real_controllers: ClassVar[bool]
    #: HTTP fault injection (429/5xx/dropped connections/410/403) is available (``fake`` attribute).
    can_inject_faults: ClassVar[bool]
    #: ``request_count()`` answers (the fake counts the requests it serves).
    counts_requests: ClassVar[bool]
    #: the restricted kubeconfig is refused what ``deploy/rbac.yaml`` does not grant.
    enforces_rbac: ClassVar[bool]

    def __init__(self) -> None:
        self._run_id: str | None = None

    # -- identity ----------------------------------------------------------------------------------
    @property
    @abstractmethod
    def kubeconfig_path(self) -> Path: ...

    @property
    @abstractmethod
    def restricted_kubeconfig_path(self) -> Path: ...

    @property
    def run_id(self) -> str:
        """A run id for :class:`~aicr_pytest.kube.run.RunScope` (unique per test on a shared cluster)."""
        if self._run_id is None:
            self._run_id = self._new_run_id()
        return self._run_id

    def _new_run_id(self) -> str:
        return secrets.token_hex(4)

    @abstractmethod
    def namespace(self, base: str) -> str:
        """The namespace this test uses where it would use ``base`` on a fresh cluster."""

    # -- time --------------------------------------------------------------------------------------
    @property
    @abstractmethod
    def clock(self) -> Clock:
        """The clock waits, retries and run scopes read."""

    @property
    @abstractmethod
    def check_clock(self) -> Clock:
        """The clock checks run by pytester read (the ``aicr_clock`` they get)."""

    @abstractmethod
    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass for the cluster."""

    @contextlib.contextmanager
    def clock_running(self, step: float = 0.5, interval: float = 0.002) -> Iterator[None]:
        """Within the block time passes by itself (the fake's clock is driven from a thread)."""
        yield

    # -- state -------------------------------------------------------------------------------------
    @abstractmethod
    def seed(self, objects: Iterable[Obj]) -> ObjList:
        """Create ``objects`` as given (status included); returns what the cluster stored."""

    @abstractmethod
    def seed_profile(self, profile: str, faults: Sequence[str] = ()) -> None:
        """Make the cluster look like ``profile`` (see the module docstring for the control plane)."""

    @abstractmethod
    def find(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None: ...

    @abstractmethod
    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjList: ...

    @abstractmethod
    def script_pods(
        self,
        namespace: str,
        *,
        name_prefix: str | None = None,
        logs: str | Mapping[str, str] = "",
        run_for: float | None = 1.0,
        start_after: float = 1.0,
    ) -> dict[str, str]:
        """Script the pods a test's Job will create in ``namespace``.

        Returns annotations the caller must put on the Job's pod template (empty on the fake).
        ``run_for=None``: the pod runs until deleted.
        """

    @abstractmethod
    def gpu_nodes(self, count: int = 2) -> StrList:
        """At least ``count`` schedulable H100 nodes; returns their names."""

    def request_count(
        self, method: str | None = None, path: str | None = None, *, watch: bool | None = None
    ) -> int | None:
        """How many requests the cluster served (``None`` where the backend cannot count)."""
        return None

    def controller_errors(self) -> StrList:
        """Errors of the backend's test controllers (pod players) so far; none on the fake."""
        return []

    def close(self) -> None:  # noqa: B027 - optional hook
        """Per-test teardown."""


# --------------------------------------------------------------------------------------------------------
# the fake


class FakeBackend(K8sBackend):
    name = "fake"
    virtual_time = True
    has_real_scheduler = False
    has_real_controllers = False
    can_inject_faults = True
    counts_requests = True
    enforces_rbac = False

    def __init__(self, factory: Callable[..., FakeCluster], run_id: str = "a1b2c3d4") -> None:
        super().__init__()
        self._factory = factory
        self._fc: FakeCluster | None = None
        self._run_id = run_id

    @property
    def fake(self) -> FakeCluster:
        """The FakeCluster (started, empty unless :meth:`seed_profile` ran first)."""
        if self._fc is None:
            self._fc = self._factory()
        return self._fc

    @property
    def kubeconfig_path(self) -> Path:
        return self.fake.kubeconfig_path

    @property
    def restricted_kubeconfig_path(self) -> Path:
        return self.fake.kubeconfig_path

    def namespace(self, base: str) -> str:
        return base

    @property
    def clock(self) -> Clock:
        return self.fake.clock  # a TimerClock is a core Clock

    @property
    def check_clock(self) -> Clock:
        fc = self.fake

        class _ClusterClock:
            def time(self) -> float:
                return float(fc.clock.time())

            def sleep(self, seconds: float) -> None:
                fc.advance(max(seconds, 0.0))

        return _ClusterClock()

    def advance(self, seconds: float) -> None:
        self.fake.advance(seconds)

    @contextlib.contextmanager
    def clock_running(self, step: float = 0.5, interval: float = 0.002) -> Iterator[None]:
        fc = self.fake
        stop = threading.Event()

        def run() -> None:
            while not stop.is_set():
                fc.advance(step)
                time.sleep(interval)

        thread = threading.Thread(target=run, name="clock-driver", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(5)

    def seed(self, objects: Iterable[Obj]) -> ObjList:
        objs = list(objects)
        if len(objs) > 200:
            self.fake.bulk_add(objs)
            return objs
        return self.fake.add_all(objs)

    def seed_profile(self, profile: str, faults: Sequence[str] = ()) -> None:
        if self._fc is None:
            self._fc = self._factory(profile, list(faults))
            return
        from aicr_pytest.testing.profiles import resolve_profile

        resolved = resolve_profile(profile, faults)
        self._fc.profile = resolved
        resolved.apply(self._fc)

    def find(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        return self.fake.find(api_version, kind, name, namespace)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjList:
        return self.fake.list(
            api_version, kind, namespace, label_selector=label_selector, field_selector=field_selector
        )

    def script_pods(
        self,
        namespace: str,
        *,
        name_prefix: str | None = None,
        logs: str | Mapping[str, str] = "",
        run_for: float | None = 1.0,
        start_after: float = 1.0,
    ) -> dict[str, str]:
        self.fake.sim.script(
            name_prefix=name_prefix, namespace=namespace, logs=logs, run_for=run_for, start_after=start_after
        )
        return {}

    def gpu_nodes(self, count: int = 2) -> StrList:
        from aicr_pytest.testing.simulator import NodeProfile

        pool = NodeProfile(count=count)
        self.fake.sim.add_nodes(pool)
        return [pool.node_name(i) for i in range(count)]

    def request_count(
        self, method: str | None = None, path: str | None = None, *, watch: bool | None = None
    ) -> int | None:
        return self.fake.request_count(method, path, watch=watch)


# --------------------------------------------------------------------------------------------------------
# the real control plane


class ControlPlaneSession:
    """Session-wide state next to the :class:`ControlPlane`: which profiles are seeded."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.lock = threading.Lock()
        #: every profile seeded so far (name -> faults); how long each seeding/switch took
        #: (``"<profile>"`` or ``"<from> -> <to>"`` -> seconds)
        self.profiles: dict[str, tuple[str, ...]] = {}
        self.profile_seconds: dict[str, float] = {}
        self._current: tuple[str, tuple[str, ...]] | None = None
        self._objects: list[Obj] = []
        self._pod_states: list[Obj] = []
        self._players_lock = threading.Lock()
        #: plays the inference check's Job pods (:class:`~.controlplane_dynamo.InferenceJobs`)
        self.inference_jobs: Any = None
        #: the operators' validating webhooks (:class:`~.controlplane_conformance.WebhookServer`)
        self.webhooks: Any = None
        self.players: list[Poller] = []
        #: the node the node-health faults act on (:func:`.controlplane_health.apply_faults`)
        self.health_target: str | None = None
        self._error_marks: dict[int, int] = {}  # id(player) -> its errors already reported

    def ensure_players(self) -> None:
        """Start the test controllers (once): the nvidia-smi and NVreg probe pod players
        (:mod:`.controlplane_players`), Kubeflow Trainer/JobSet and the NCCL launcher
        (:mod:`.controlplane_trainer`), the DRA driver's ComputeDomains
        (:mod:`.controlplane_computedomain`), the Dynamo operator, a volume provisioner and the
        inference Jobs' pods (:mod:`.controlplane_dynamo`), for the conformance checks their
        pods, KAI's gang binder and the operators' validating webhooks (:mod:`.controlplane_conformance`),
        for phase II the metrics endpoints and Karpenter (:mod:`.controlplane_conformance_ii`), the
        snapshot agent's pods, workload-sandboxing's probe, gpu-diagnostics' DCGM pods,
        gpu-cuda-smoke's pods (:mod:`.controlplane_health`), the AI operators' leader-election Leases
        (:mod:`.controlplane_leases`) and Kueue's quota admission (:mod:`.controlplane_kueue`)."""
        from tests.harness.controlplane_computedomain import (
            IMEX_PROBE_SELECTOR,
            ComputeDomainController,
            ImexProbe,
        )
        from tests.harness.controlplane_conformance import (
            CONFORMANCE_SELECTOR,
            ConformancePods,
            GangBinder,
            WebhookServer,
            WebhookSync,
        )
        from tests.harness.controlplane_conformance_ii import KarpenterController, MetricsEndpoints
        from tests.harness.controlplane_dynamo import (
            INFERENCE_JOBS_SELECTOR,
            DynamoController,
            InferenceJobs,
            VolumeProvisioner,
        )
        from tests.harness.controlplane_health import (
            DIAG_SELECTOR,
            SMOKE_SELECTOR,
            CudaSmokePods,
            DcgmDiagPods,
        )
        from tests.harness.controlplane_kueue import KueueController
        from tests.harness.controlplane_leases import OperatorLeases
        from tests.harness.controlplane_players import (
            NVIDIA_SMI_SELECTOR,
            NVREG_PROBE_SELECTOR,
            SANDBOX_PROBE_SELECTOR,
            SNAPSHOT_AGENT_SELECTOR,
            NvidiaSmiVerify,
            NvregProbe,
            PodPlayer,
            SandboxProbe,
            SnapshotAgent,
        )
        from tests.harness.controlplane_trainer import (
            LAUNCHER_SELECTOR,
            NcclLauncher,
            TrainerController,
        )

        with self._players_lock:
            if not self.players:
                self.inference_jobs = InferenceJobs(self.cp)
                self.webhooks = WebhookServer(self.cp, self.current_faults).start()
                self.players += [
                    PodPlayer(
                        self.cp, CONFORMANCE_SELECTOR, ConformancePods(self.cp, self.current_faults)
                    ).start(),
                    GangBinder(self.cp).start(),
                    WebhookSync(self.cp, self.webhooks).start(),
                    PodPlayer(
                        self.cp,
                        NVIDIA_SMI_SELECTOR,
                        NvidiaSmiVerify(self.current_faults, lambda: self.health_target),
                    ).start(),
                    TrainerController(self.cp).start(),
                    PodPlayer(self.cp, LAUNCHER_SELECTOR, NcclLauncher(self.cp, self.current_faults)).start(),
                    DynamoController(self.cp).start(),
                    VolumeProvisioner(self.cp, interval=0.5).start(),
                    PodPlayer(self.cp, INFERENCE_JOBS_SELECTOR, self.inference_jobs).start(),
                    PodPlayer(
                        self.cp,
                        NVREG_PROBE_SELECTOR,
                        NvregProbe(self.current_faults, lambda: self.health_target),
                    ).start(),
                    ComputeDomainController(self.cp).start(),
                    PodPlayer(self.cp, IMEX_PROBE_SELECTOR, ImexProbe(self.current_faults)).start(),
                    PodPlayer(self.cp, SNAPSHOT_AGENT_SELECTOR, SnapshotAgent(self.cp)).start(),
                    PodPlayer(self.cp, SANDBOX_PROBE_SELECTOR, SandboxProbe(self.current_faults)).start(),
                    MetricsEndpoints(self.cp).start(),
                    KarpenterController(self.cp).start(),
                    PodPlayer(
                        self.cp,
                        DIAG_SELECTOR,
                        DcgmDiagPods(self.cp, self.current_faults, lambda: self.health_target),
                    ).start(),
                    PodPlayer(
                        self.cp,
                        SMOKE_SELECTOR,
                        CudaSmokePods(self.current_faults, lambda: self.health_target),
                    ).start(),
                    OperatorLeases(self.cp, self.current_faults).start(),
                    KueueController(self.cp, self.current_faults).start(),
                ]

    def current_faults(self) -> tuple[str, ...]:
        """The seeded profile's faults (what the test controllers honour)."""
        return self._current[1] if self._current else ()

    def player_errors(self) -> list[str]:
        """The test controllers' errors since the previous test ended (:meth:`mark_player_errors`).

        One controller error fails the test that saw it, not every later test of the session; an
        error between two tests (while the first one's objects are deleted) is the next test's."""
        return [e for p in self.players for e in p.errors[self._error_marks.get(id(p), 0) :]]

    def mark_player_errors(self) -> None:
        """Everything reported so far is the finished test's (called at each test's teardown)."""
        self._error_marks = {id(p): len(p.errors) for p in self.players}

    def player(self, name: str) -> Any:
        """The running test controller called ``name`` (e.g. ``dynamo-controller``), for its records.

        By name, not class: in-process pytester runs may re-import the module that defines it."""
        found = [p for p in self.players if p.name == name]
        if len(found) != 1:
            raise LookupError(f"{len(found)} test controllers named {name!r}")
        return found[0]

    def close(self) -> None:
        for player in self.players:
            player.stop()
        self.players.clear()

    @property
    def current(self) -> tuple[str, tuple[str, ...]] | None:
        """The seeded profile and its faults (``None`` before the first :meth:`seed_profile`)."""
        return self._current

    def gpu_product(self) -> str | None:
        """The GPU product (``nvidia.com/gpu.product``) of the seeded profile's GPU nodes."""
        return profile_gpu_product(self._current[0]) if self._current else None

    def seed_profile(self, profile: str, faults: Sequence[str] = ()) -> None:
        """Make the control plane hold ``profile``: seed it, or converge to it from the seeded one.

        Converging (:func:`converge_objects`) deletes what the old profile has and the new one does not
        (or has with other content) and creates the rest, so a worker's tests may switch between, say,
        ``h100-eks-training`` and ``h100-eks-inference`` (which adds Dynamo and drops the GPU
        ResourceSlices). CRDs stay: every profile's CRDs are created when the control plane starts
        (those only a fault installs, Kueue's, come and go with their profile).
        Tests on one worker run one at a time, so nothing runs while the cluster changes.
        """
        key = (profile, tuple(faults))
        with self.lock:
            if self._current == key:
                return
            started = time.monotonic()
            self.ensure_players()  # before seeding: the metrics adapter is served when its APIService appears
            product = profile_gpu_product(profile)
            gpu = gpu_node_names(self.cp, product)
            other = [n for n in self.cp.node_names if n not in gpu_node_names(self.cp)]
            pool = gpu_pool_of(self.cp, gpu)
            objects = profile_objects(profile, faults, gpu_nodes=gpu, other_nodes=other, gpu_pool=pool)
            previous = self._current
            if previous is None:
                seed_objects(self.cp, objects)
                fresh = objects
            else:
                fresh = converge_objects(self.cp, self._objects, objects, shared_crds=shared_crd_names())
            wait_workloads_ready(self.cp, fresh)
            from tests.harness.controlplane_computedomain import profile_clique, sync_clique_labels

            sync_clique_labels(self.cp, gpu, profile_clique(profile))
            states = profile_pod_states(profile, faults, gpu_nodes=gpu, other_nodes=other)
            apply_pod_states(self.cp, self._pod_states, states)
            self._current, self._objects, self._pod_states = key, objects, states
            self.profiles[profile] = key[1]
            self.ensure_players()
            # A controller holds its Lease within a tick of its pod running; play that tick now, so
            # no test looks before it (robust-controller reads the Lease at once).
            self.player("operator-leases").tick()
            wait_apiservices_available(self.cp, objects)
            from tests.harness.controlplane_dynamo import apply_faults

            apply_faults(self.player("dynamo-controller"), self.inference_jobs, faults)
            self.webhooks.sync()  # before any test creates a TrainJob or DynamoGraphDeployment
            from tests.harness.controlplane_conformance_ii import apply_faults as apply_metrics_faults

            apply_metrics_faults(self.player("metrics-endpoints"), faults)
            from tests.harness.controlplane_health import apply_faults as apply_health_faults

            self.health_target = apply_health_faults(self.cp, faults, gpu)
            from tests.harness.controlplane_rdma import apply_faults as apply_rdma_faults

            apply_rdma_faults(self.cp, faults, gpu)
            from tests.harness.controlplane_gke import apply_profile as apply_gke_nodes

            apply_gke_nodes(self.cp, profile, faults, gpu)
            self.player("metrics-endpoints").health.target = self.health_target
            target = f"{profile}{list(faults) if faults else ''}"
            source = f"{previous[0]}{list(previous[1]) if previous[1] else ''} -> " if previous else ""
            self.profile_seconds[source + target] = time.monotonic() - started


class ControlPlaneBackend(K8sBackend):
    name = "controlplane"
    virtual_time = False
    has_real_scheduler = True
    has_real_controllers = True
    can_inject_faults = False
    counts_requests = False
    enforces_rbac = True

    def __init__(self, session: ControlPlaneSession) -> None:
        super().__init__()
        self.session = session
        self.cp = session.cp
        self._token = secrets.token_hex(3)
        self._namespaces: StrList = []
        #: (collection path, name) of cluster-scoped objects this test seeded: deleted at close
        self._cluster_scoped: builtins.list[tuple[str, str]] = []
        self._cluster_logs: StrList = []
        self._check_clock = SkippingClock()

    @property
    def kubeconfig_path(self) -> Path:
        return self.cp.admin_kubeconfig

    @property
    def restricted_kubeconfig_path(self) -> Path:
        return self.cp.user_kubeconfig

    def namespace(self, base: str) -> str:
        name = f"{base[:50]}-{self._token}"
        if name not in self._namespaces:
            self._namespaces.append(name)
            if base in BUILTIN_NAMESPACES:
                seed_objects(self.cp, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}])
        return name

    @property
    def clock(self) -> Clock:
        return SYSTEM_CLOCK

    @property
    def check_clock(self) -> Clock:
        return self._check_clock

    def advance(self, seconds: float) -> None:
        """Real controllers run in real time; this only yields briefly (at most 0.1 s) to let them act."""
        time.sleep(min(max(seconds, 0.0), 0.1))

    def seed(self, objects: Iterable[Obj]) -> ObjList:
        objs = list(objects)
        for obj in objs:
            meta = obj.get("metadata") or {}
            if obj.get("kind") == "Namespace" and meta.get("name") not in self._namespaces:
                self._namespaces.append(str(meta["name"]))
        created = seed_objects(self.cp, objs)
        for obj in created:
            meta = obj.get("metadata") or {}
            if not meta.get("namespace") and obj.get("kind") != "Namespace":
                path = collection_path(self.cp, str(obj["apiVersion"]), str(obj["kind"]), None, {})
                self._cluster_scoped.append((path, str(meta["name"])))
        return created

    def seed_profile(self, profile: str, faults: Sequence[str] = ()) -> None:
        self.session.seed_profile(profile, faults)

    def find(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        path = collection_path(self.cp, api_version, kind, namespace, {})
        try:
            found: Obj = self.cp.get(f"{path}/{name}")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise
        if found.get("kind") == "Namespace" and (found.get("status") or {}).get("phase") == "Terminating":
            return None  # being deleted: gone as far as a test is concerned
        return found

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjList:
        path = collection_path(self.cp, api_version, kind, namespace, {}, all_namespaces=namespace is None)
        query: StrList = []
        if label_selector:
            query.append("labelSelector=" + quote(label_selector))
        if field_selector:
            query.append("fieldSelector=" + quote(field_selector))
        answer = self.cp.get(path + ("?" + "&".join(query) if query else ""))
        items: ObjList = []
        for item in answer.get("items") or []:
            terminating = (item.get("status") or {}).get("phase") == "Terminating"
            if kind in ("Namespace", "namespaces") and terminating:
                continue
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", answer.get("kind", "").removesuffix("List"))
            items.append(item)
        return items

    def script_pods(
        self,
        namespace: str,
        *,
        name_prefix: str | None = None,
        logs: str | Mapping[str, str] = "",
        run_for: float | None = 1.0,
        start_after: float = 1.0,
    ) -> dict[str, str]:
        from tests.harness.controlplane import RUN_FOR_ANNOTATION

        if logs:
            by_container = {"": logs} if isinstance(logs, str) else dict(logs)
            name = f"{namespace}-{len(self._cluster_logs)}"
            self.cp.set_namespace_logs(name, [namespace], by_container)
            self._cluster_logs.append(name)
        return {RUN_FOR_ANNOTATION: "forever" if run_for is None else f"{max(run_for, 0.0):g}s"}

    def gpu_nodes(self, count: int = 2) -> StrList:
        names = gpu_node_names(self.cp, self.session.gpu_product())
        if len(names) < count:
            raise RuntimeError(f"the control plane has {len(names)} GPU nodes, {count} wanted")
        return names

    def controller_errors(self) -> StrList:
        return self.session.player_errors()

    def close(self) -> None:
        self.session.mark_player_errors()
        for name in self._cluster_logs:
            self.cp.delete_namespace_logs(name)
        for path, name in reversed(self._cluster_scoped):
            with contextlib.suppress(urllib.error.HTTPError):
                self.cp.request("DELETE", f"{path}/{name}")
        for ns in self._namespaces:
            with contextlib.suppress(urllib.error.HTTPError):
                self.cp.request("DELETE", f"/api/v1/namespaces/{ns}")


# --------------------------------------------------------------------------------------------------------
# seeding a real apiserver


_DISCOVERY_LOCK = threading.Lock()


def _resources(cp: ControlPlane, api_version: str, cache: dict[str, list[Obj]]) -> list[Obj]:
    with _DISCOVERY_LOCK:
        if api_version not in cache:
            base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            cache[api_version] = list(cp.get(base)["resources"])
        return cache[api_version]


def _resource(cp: ControlPlane, api_version: str, kind: str, cache: dict[str, list[Obj]]) -> Obj:
    for attempt in range(2):
        for resource in _resources(cp, api_version, cache):
            if "/" not in resource["name"] and kind in (resource["kind"], resource["name"]):
                return resource
        if attempt == 0:
            cache.pop(api_version, None)  # a CRD created since the last look
    raise LookupError(f"the apiserver serves no {kind} in {api_version}")


def collection_path(
    cp: ControlPlane,
    api_version: str,
    kind: str,
    namespace: str | None,
    cache: dict[str, list[Obj]],
    *,
    all_namespaces: bool = False,
) -> str:
    """The collection URL for ``kind`` (or its plural) in ``api_version``, found through discovery."""
    resource = _resource(cp, api_version, kind, cache)
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if resource["namespaced"] and not all_namespaces:
        return f"{base}/namespaces/{namespace or 'default'}/{resource['name']}"
    return f"{base}/{resource['name']}"


def has_status_subresource(
    cp: ControlPlane, api_version: str, kind: str, cache: dict[str, list[Obj]]
) -> bool:
    plural = _resource(cp, api_version, kind, cache)["name"]
    return any(r["name"] == f"{plural}/status" for r in _resources(cp, api_version, cache))


def clean_for_create(obj: Mapping[str, Any]) -> Obj:
    """A copy without the fields the server assigns (uid, resourceVersion, clusterIP...)."""
    out: Obj = copy.deepcopy(dict(obj))
    meta = out.setdefault("metadata", {})
    for key in _SERVER_METADATA:
        meta.pop(key, None)
    if out.get("kind") == "Service":
        spec = out.get("spec") or {}
        spec.pop("clusterIP", None)
        spec.pop("clusterIPs", None)
    return out


def _create(cp: ControlPlane, obj: Obj, cache: dict[str, list[Obj]]) -> Obj:
    meta = obj.get("metadata") or {}
    path = collection_path(cp, str(obj["apiVersion"]), str(obj["kind"]), meta.get("namespace"), cache)
    body = {k: v for k, v in obj.items() if k != "status"}
    # a custom resource seeded with its operator's webhook configuration: the apiserver may call the
    # webhook before the test controller has synced its caBundle (a 500 "failed calling webhook")
    deadline = time.monotonic() + 20.0
    while True:
        try:
            created: Obj = cp.request("POST", path, body)
            break
        except urllib.error.HTTPError as e:
            if e.code == 409:
                created = cp.get(f"{path}/{meta['name']}")
                break
            detail = e.read().decode(errors="replace")
            if e.code == 500 and "failed calling webhook" in detail and time.monotonic() < deadline:
                time.sleep(0.5)
                continue
            raise RuntimeError(f"seeding {obj['kind']} {meta.get('name')}: {e.code} {detail}") from e
    status = obj.get("status")
    if (
        status
        and obj["kind"] not in SERVER_STATUS_KINDS
        and has_status_subresource(cp, str(obj["apiVersion"]), str(obj["kind"]), cache)
    ):
        created = cp.request(
            "PATCH",
            f"{path}/{meta['name']}/status",
            {"status": status},
            content_type="application/merge-patch+json",
        )
    return created


def _wait(what: str, probe: Callable[[], bool], timeout: float, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def _sa_exists(cp: ControlPlane, namespace: str) -> bool:
    try:
        cp.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return False
        raise
    return True


def seed_objects(cp: ControlPlane, objects: Iterable[Mapping[str, Any]], *, parallel: int = 8) -> list[Obj]:
    """Create ``objects`` on the apiserver: CRDs (until Established), namespaces, the rest, then status.

    Objects that already exist are left as they are (409 is not an error). Pods wait for their
    namespace's ``default`` ServiceAccount (the admission plugin refuses them before it exists).
    """
    from tests.harness.controlplane import crd_established

    cleaned = [clean_for_create(o) for o in objects]
    crds = [o for o in cleaned if o.get("kind") == "CustomResourceDefinition"]
    namespaces = [o for o in cleaned if o.get("kind") == "Namespace" and o.get("apiVersion") == "v1"]
    first = {id(o) for o in crds + namespaces}
    rest = [o for o in cleaned if id(o) not in first]
    cache: dict[str, list[Obj]] = {}
    created: list[Obj] = [_create(cp, o, cache) for o in crds]
    for crd in crds:
        name = str(crd["metadata"]["name"])
        _wait(f"CRD {name} Established", functools.partial(crd_established, cp, name), 30)
    created += [_create(cp, o, cache) for o in namespaces]
    pod_namespaces = {
        str((o.get("metadata") or {}).get("namespace") or "default") for o in rest if o.get("kind") == "Pod"
    }
    for ns in sorted(pod_namespaces):
        _wait(f"ServiceAccount {ns}/default", functools.partial(_sa_exists, cp, ns), 30)
    if len(rest) > 20 and parallel > 1:
        for o in rest:  # warm the discovery cache before the threads share it
            _resource(cp, str(o["apiVersion"]), str(o["kind"]), cache)
        with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="seed") as pool:
            created += list(pool.map(lambda o: _create(cp, o, cache), rest))
    else:
        created += [_create(cp, o, cache) for o in rest]
    return created


def gpu_node_names(cp: ControlPlane, product: str | None = None) -> list[str]:
    """kwok nodes that advertise ``nvidia.com/gpu`` (of GPU ``product`` when given), in name order."""
    nodes = cp.get("/api/v1/nodes")["items"]
    return sorted(
        n["metadata"]["name"]
        for n in nodes
        if n["metadata"]["name"] in cp.node_names
        and int(((n.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", "0") or 0) > 0
        and (product is None or (n["metadata"].get("labels") or {}).get(GPU_PRODUCT_LABEL) == product)
    )


def gpu_pool_of(cp: ControlPlane, nodes: Sequence[str]) -> str:
    """The kwok pool (``aicr.test/pool``) of ``nodes``: where a profile's GPU workloads go."""
    pools = {
        str((n["metadata"].get("labels") or {}).get(POOL_LABEL, ""))
        for n in cp.get("/api/v1/nodes")["items"]
        if n["metadata"]["name"] in nodes
    }
    if len(pools) != 1:
        raise RuntimeError(f"GPU nodes {list(nodes)} are in pools {sorted(pools)}, not one")
    return pools.pop()


def profile_gpu_product(profile: str) -> str | None:
    """The ``nvidia.com/gpu.product`` label of ``profile``'s GPU nodes (its first GPU pool)."""
    from aicr_pytest.testing.profiles import resolve_profile

    pools = resolve_profile(profile).gpu_pools()
    return pools[0].gpu_product if pools else None


def object_key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (
        str(obj.get("apiVersion")),
        str(obj.get("kind")),
        str(meta.get("namespace") or ""),
        str(meta["name"]),
    )


def plan_convergence(
    old: Iterable[Obj], new: Iterable[Obj], shared_crds: Collection[str] | None = None
) -> tuple[list[Obj], list[Obj]]:
    """(what to delete, what to create) to turn a cluster seeded with ``old`` into one seeded with ``new``.

    An object in both with different content is deleted and created again; CRDs are never deleted
    when ``shared_crds`` is ``None``, else only those named in it are kept (the CRDs created when the
    control plane starts, shared by every profile; a CRD only a faulted profile installs, Kueue's, goes
    with it); a namespaced object whose namespace goes is left to the namespace's deletion.
    """
    before = {object_key(o): clean_for_create(o) for o in old}
    after = {object_key(o): clean_for_create(o) for o in new}
    changed = {k for k in before.keys() & after.keys() if before[k] != after[k]}

    def kept(key: tuple[str, str, str, str]) -> bool:
        return key[1] == "CustomResourceDefinition" and (shared_crds is None or key[3] in shared_crds)

    gone = [before[k] for k in before if (k not in after or k in changed) and not kept(k)]
    gone_ns = {o["metadata"]["name"] for o in gone if o["kind"] == "Namespace" and o["apiVersion"] == "v1"}
    delete = [o for o in gone if (o["metadata"].get("namespace") or "") not in gone_ns]
    create = [after[k] for k in after if k not in before or k in changed]
    return delete, create


def converge_objects(
    cp: ControlPlane,
    old: Iterable[Obj],
    new: Iterable[Obj],
    timeout: float = 60.0,
    shared_crds: Collection[str] | None = None,
) -> list[Obj]:
    """Apply :func:`plan_convergence` to the apiserver; return the objects created."""
    delete, create = plan_convergence(old, new, shared_crds)
    cache: dict[str, list[Obj]] = {}
    paths = [
        collection_path(cp, str(o["apiVersion"]), str(o["kind"]), o["metadata"].get("namespace"), cache)
        + "/"
        + str(o["metadata"]["name"])
        for o in delete
    ]
    for path in paths:
        with contextlib.suppress(urllib.error.HTTPError):  # 404: already gone
            cp.request("DELETE", path, {"propagationPolicy": "Background"})

    def all_gone() -> bool:
        for path in paths:
            try:
                cp.get(path)
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    continue
                raise
            return False
        return True

    # a namespace (or an object) of the same name cannot be created while the old one terminates
    _wait("objects of the previous profile to be deleted", all_gone, timeout, interval=0.2)
    return seed_objects(cp, create)


def profile_objects(
    profile: str,
    faults: Sequence[str] = (),
    *,
    gpu_nodes: Sequence[str],
    other_nodes: Sequence[str],
    gpu_pool: str = "gpu",
) -> list[Obj]:
    """The objects ``profile`` creates, adapted to a real control plane whose kwok nodes are
    ``gpu_nodes`` (advertising ``nvidia.com/gpu``) and ``other_nodes`` (module docstring)."""
    stored, mapping, gpu = _profile_store(profile, faults, gpu_nodes, other_nodes)
    # Where the fake put each workload's pods: GPU nodes only, system nodes only, or both.
    placement: dict[str, set[bool]] = {}
    for rt, obj in stored:
        if rt.kind == "Pod":
            node = (obj.get("spec") or {}).get("nodeName")
            for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
                if node:
                    placement.setdefault(str(ref.get("uid")), set()).add(node in gpu)
    out: list[Obj] = []
    for rt, obj in stored:
        on_gpu = placement.get(str((obj.get("metadata") or {}).get("uid")), set())
        adapted = _adapt(copy.deepcopy(obj), rt.kind, rt.api_version, mapping, on_gpu, gpu_pool)
        if adapted is not None:
            out.append(adapted)
    return out


def _profile_store(
    profile: str, faults: Sequence[str], gpu_nodes: Sequence[str], other_nodes: Sequence[str]
) -> tuple[list[tuple[Any, Obj]], dict[str, str], list[str]]:
    """Every object a never-started FakeCluster of ``profile`` holds (with its resource type), the map
    from its node names to the control plane's, and its GPU node names."""
    from aicr_pytest.testing.cluster import FakeCluster

    fc = FakeCluster(profile, faults)  # never started: only its store is read
    assert fc.profile is not None
    all_nodes = [p.node_name(i) for p in fc.profile.node_pools for i in range(p.count)]
    gpu = fc.profile.gpu_node_names()
    mapping = dict(zip(gpu, gpu_nodes, strict=False))
    others = sorted(other_nodes)
    for i, name in enumerate(n for n in all_nodes if n not in gpu):
        if others:
            mapping[name] = others[i % len(others)]
    store = fc.store
    stored: list[tuple[Any, Obj]] = []
    seen: set[Any] = set()
    for group, versions in store.groups():
        for version in versions:
            for rt in store.resources(group, version):
                if rt.storage_key in seen:
                    continue
                seen.add(rt.storage_key)
                stored += [(rt, obj) for obj in store.iter_objects(rt)]
    return stored, mapping, gpu


def _pod_unhealthy(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") not in (None, "Running"):
        return True
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    waiting = [c for c in status.get("containerStatuses") or [] if "waiting" in (c.get("state") or {})]
    return bool(waiting) or any(c.get("status") != "True" for c in ready)


def profile_pod_states(
    profile: str, faults: Sequence[str] = (), *, gpu_nodes: Sequence[str], other_nodes: Sequence[str]
) -> list[Obj]:
    """The pods ``profile`` (with ``faults``) holds in a state real controllers and kwok would not give
    them (a crash-looping container): ``{namespace, owner: "DaemonSet/<name>", node, status}`` each, node
    mapped onto the control plane's. Only DaemonSet pods (one per node) can be told apart that way:
    any other unhealthy workload pod is an error (the scenario must stay fake-only)."""
    stored, mapping, _ = _profile_store(profile, faults, gpu_nodes, other_nodes)
    states: list[Obj] = []
    for rt, pod in stored:
        if rt.kind != "Pod" or not _pod_unhealthy(pod):
            continue
        meta = pod.get("metadata") or {}
        owners = [r for r in meta.get("ownerReferences") or [] if r.get("controller")]
        node = mapping.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        if len(owners) != 1 or owners[0].get("kind") != "DaemonSet" or node is None:
            raise ValueError(
                f"pod {meta.get('namespace')}/{meta.get('name')} of profile {profile} {list(faults)} is "
                "unhealthy in a way the control plane cannot express (only DaemonSet pods on a mapped node)"
            )
        states.append(
            {
                "namespace": str(meta.get("namespace")),
                "owner": f"DaemonSet/{owners[0]['name']}",
                "node": node,
                "status": copy.deepcopy(pod.get("status") or {}),
            }
        )
    return states


def _state_key(state: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (str(state["namespace"]), str(state["owner"]), str(state["node"]), json.dumps(state["status"]))


def _pods_of(cp: ControlPlane, state: Mapping[str, Any]) -> list[Obj]:
    """The live pods of ``state``'s DaemonSet on its node."""
    kind, name = str(state["owner"]).split("/", 1)
    pods = cp.get(
        f"/api/v1/namespaces/{state['namespace']}/pods?fieldSelector="
        + quote(f"spec.nodeName={state['node']}")
    )["items"]
    return [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and any(
            r.get("kind") == kind and r.get("name") == name
            for r in p["metadata"].get("ownerReferences") or []
        )
    ]


def _daemonset_path(state: Mapping[str, Any]) -> str:
    return f"/apis/apps/v1/namespaces/{state['namespace']}/daemonsets/{str(state['owner']).split('/', 1)[1]}"


def apply_pod_states(cp: ControlPlane, old: Sequence[Obj], new: Sequence[Obj], timeout: float = 60.0) -> None:
    """Move the control plane's DaemonSet pods from states ``old`` to ``new`` (:func:`profile_pod_states`).

    A pod that should no longer be unhealthy is deleted (its DaemonSet makes a healthy one); a pod that
    should be gets the profile's status (a crash-looping container, Ready False) patched onto it, as its
    kubelet would report it. kwok does not touch a Running pod's status again, and the real DaemonSet
    controller then counts it unready. Returns once every affected DaemonSet's status says so."""
    wanted = {_state_key(s) for s in new}
    healed = [s for s in old if _state_key(s) not in wanted]
    for state in healed:
        for pod in _pods_of(cp, state):
            with contextlib.suppress(urllib.error.HTTPError):
                cp.request(
                    "DELETE", f"/api/v1/namespaces/{state['namespace']}/pods/{pod['metadata']['name']}"
                )
    for state in new:

        def running(state: Mapping[str, Any] = state) -> bool:
            return any((p.get("status") or {}).get("phase") == "Running" for p in _pods_of(cp, state))

        _wait(f"a Running pod of {state['owner']} on {state['node']}", running, timeout)
        for pod in _pods_of(cp, state):
            containers = (pod.get("spec") or {}).get("containers") or []
            statuses = copy.deepcopy(state["status"].get("containerStatuses") or [])
            for status, container in zip(statuses, containers, strict=False):
                status["name"], status["image"] = container["name"], container.get("image", "")
            body = {
                "status": {
                    "phase": state["status"].get("phase", "Running"),
                    "conditions": state["status"].get("conditions") or [],
                    "containerStatuses": statuses,
                }
            }
            meta = pod["metadata"]
            cp.request(
                "PATCH",
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                body,
                content_type="application/merge-patch+json",
            )
    unready: dict[str, int] = {}
    for state in new:
        unready[_daemonset_path(state)] = unready.get(_daemonset_path(state), 0) + 1
    for state in healed:
        unready.setdefault(_daemonset_path(state), 0)

    def settled() -> bool:
        for path, bad in unready.items():
            try:
                status = cp.get(path).get("status") or {}
            except urllib.error.HTTPError as e:
                if e.code == 404 and bad == 0:
                    continue  # a healed DaemonSet the new profile does not have (its namespace went)
                raise
            if int(status.get("desiredNumberScheduled") or 0) - int(status.get("numberReady") or 0) != bad:
                return False
        return True

    _wait("DaemonSet status to count the pods' states", settled, timeout, interval=0.2)


@functools.cache
def shared_crd_names() -> frozenset[str]:
    """The names of the CRDs :func:`profile_crds` creates when the control plane starts."""
    return frozenset(str(o["metadata"]["name"]) for o in profile_crds())


def profile_crds(profiles: Iterable[str] = CONTROLPLANE_PROFILES) -> list[Obj]:
    """The CustomResourceDefinitions ``profiles`` install (healthy, each once), ready to create."""
    crds: dict[str, Obj] = {}
    for profile in profiles:
        for obj in profile_objects(profile, gpu_nodes=(), other_nodes=()):
            if obj.get("kind") == "CustomResourceDefinition":
                crds.setdefault(str(obj["metadata"]["name"]), clean_for_create(obj))
    return list(crds.values())


#: Node labels of the kwok pools (:mod:`tests.harness.controlplane`) used to place workloads
#: where the fake placed their pods.
POOL_LABEL = "aicr.test/pool"


def _adapt(
    obj: Obj,
    kind: str,
    api_version: str,
    mapping: Mapping[str, str],
    on_gpu: Iterable[bool] = (),
    gpu_pool: str = "gpu",
) -> Obj | None:
    on_gpu = set(on_gpu)
    obj.setdefault("kind", kind)
    obj.setdefault("apiVersion", api_version)
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    if kind in ("Node", "Lease", "Event", "Endpoints", "EndpointSlice") or meta.get("ownerReferences"):
        return None  # kwok owns the nodes; controllers own leases, events, endpoints and owned pods
    if labels.get("app.kubernetes.io/managed-by") == "aicr-pytest-simulator":
        return None  # the fake's own marker ConfigMap
    if kind == "ServiceAccount" and meta.get("name") == "default":
        return None
    if kind in CONTROLLED_KINDS:
        obj.pop("status", None)
        pod_spec = obj.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})
        pod_spec.setdefault("tolerations", [{"operator": "Exists"}])
        # nothing runs in kwok's pods: no grace period, so a profile switch that deletes a namespace
        # is not held up by the namespace controller waiting out 30 s of pod termination
        pod_spec.setdefault("terminationGracePeriodSeconds", 0)
        if len(on_gpu) == 1:  # the fake ran them on one pool only: keep them there
            pod_spec.setdefault("nodeSelector", {})[POOL_LABEL] = gpu_pool if True in on_gpu else "system"
    elif kind == "Pod":
        node = (obj.get("spec") or {}).get("nodeName")
        if node:
            if node not in mapping:
                return None
            obj["spec"]["nodeName"] = mapping[node]
    elif kind == "ResourceSlice":
        spec = obj.get("spec") or {}
        node = spec.get("nodeName")
        if node:
            if node not in mapping:
                return None
            target = mapping[node]
            spec["nodeName"] = target
            meta["name"] = str(meta["name"]).replace(str(node), target, 1)
            pool = spec.get("pool") or {}
            if pool.get("name") == node:
                pool["name"] = target
    return obj


def _workload_ready(obj: Obj) -> bool:
    kind = obj.get("kind")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    from aicr_pytest.testing.profiles.components import UNSCHEDULABLE_SELECTOR

    selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    if UNSCHEDULABLE_SELECTOR.items() <= selector.items():
        return True  # a faulted "down" controller: its pods stay Pending on purpose
    if (obj.get("metadata") or {}).get("generation") != status.get("observedGeneration"):
        return False
    if kind == "Deployment":
        return int(status.get("availableReplicas") or 0) >= int(spec.get("replicas", 1))
    if kind == "StatefulSet":
        return int(status.get("readyReplicas") or 0) >= int(spec.get("replicas", 1))
    if kind == "DaemonSet":
        desired = int(status.get("desiredNumberScheduled") or 0)
        return desired > 0 and int(status.get("numberReady") or 0) == desired
    return True


def wait_apiservices_available(cp: ControlPlane, objects: Iterable[Obj], timeout: float = 90.0) -> None:
    """Wait until every seeded APIService is ``Available`` (the aggregator reaches its test server):
    a namespace cannot finish deleting while an aggregated API's discovery fails."""
    names = [str(o["metadata"]["name"]) for o in objects if o.get("kind") == "APIService"]

    def available() -> bool:
        for name in names:
            conds = (cp.get(f"/apis/apiregistration.k8s.io/v1/apiservices/{name}").get("status") or {}).get(
                "conditions"
            ) or []
            if not any(c.get("type") == "Available" and c.get("status") == "True" for c in conds):
                return False
        return True

    _wait(f"APIServices {names} Available", available, timeout, interval=0.2)


def wait_workloads_ready(cp: ControlPlane, objects: Iterable[Obj], timeout: float = 120.0) -> None:
    """Wait until every seeded Deployment/DaemonSet/StatefulSet is available (real controllers + kwok)."""
    cache: dict[str, list[Obj]] = {}
    pending = [
        (
            collection_path(cp, str(o["apiVersion"]), str(o["kind"]), o["metadata"].get("namespace"), cache)
            + "/"
            + o["metadata"]["name"]
        )
        for o in objects
        if o.get("kind") in ("Deployment", "DaemonSet", "StatefulSet")
    ]
    deadline = time.monotonic() + timeout
    while pending:
        pending = [p for p in pending if not _workload_ready(cp.get(p))]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"seeded workloads not ready after {timeout:.0f}s: {pending[:5]}")
        time.sleep(0.5)
