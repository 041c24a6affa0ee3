"""NCCL all-reduce on a live cluster: the I/O half of the three ``nccl-all-reduce-bw*`` checks.

:mod:`aicr_pytest.nccl` decides (variant, sizing, rendering, parsing, verdict) without touching
the cluster; this module does the cluster work in the order the check needs it:

1. :meth:`NcclBenchmark.require_trainer` — Kubeflow Trainer's ``TrainJob``/``TrainingRuntime``
   APIs must be served (discovery).  Absent: the check fails naming the ``kubeflow-trainer``
   component; nothing is installed from the internet (AICR downloads Trainer from GitHub).
2. :meth:`NcclBenchmark.gpu_nodes` — every node, read page by page.
3. :meth:`NcclBenchmark.plumbing` — EFA/RDMA uniformity, GKE NIC networks, worker scheduling.
4. :meth:`NcclBenchmark.preflight` — the Grace-Blackwell NET preflight (driver version and NVreg
   ``GrdmaPciTopoCheckOverride``) or GKE TCPXO (h100/gke): :mod:`aicr_pytest.nccl.probes`.
5. :meth:`NcclBenchmark.apply` — [RoCE claim template] → TrainingRuntime → [NVLS ComputeDomain and
   the IMEX claim template the DRA driver makes from it] → TrainJob (retrying only Trainer's
   webhook cache race), all through :class:`~aicr_pytest.kube.run.RunScope` (run-scoped names and
   labels, cleanup always).
6. :meth:`NcclBenchmark.wait` — one watch on the TrainJob's pods until the launcher finishes
   (workers Running is logged when seen); an evicted pod is Inconclusive, a failed launcher fails
   with diagnostics (launcher log tail, per-worker state).
7. :meth:`NcclBenchmark.launcher_log` — re-read (bounded) until ``# Avg bus bandwidth`` appears,
   plus the launcher's termination message.

Deadlines come from the check's clock (``aicr_clock``), so tests run in virtual time.  What is read
off Trainer's objects and pods without the cluster lives in :mod:`.objects`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.core.clock import Clock
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError, NotFound, WaitTimeout
from aicr_pytest.kube.logs import read_log
from aicr_pytest.kube.run import RunScope
from aicr_pytest.kube.wait import observe, summarize, wait_for
from aicr_pytest.nccl.objects import (
    ADMISSION_RACE_MARKER,
    DIAG_TAIL_LINES,
    LAUNCHER_CONTAINER,
    _describe_state,
    _labels,
    _name,
    _phase,
    _tail,
    add_pod_template_labels,
    admission_race,
    eviction_detail,
    scoped_names,
    termination_message,
    tolerations_k8s,
)
from aicr_pytest.nccl.probes import (  # re-exported: the preflight's names
    COMPONENT_LABEL,
    MSG_PROBE_UNEXPECTED,
    MSG_TCPXO_NOT_READY,
    PROBE_IMAGE,
    PROBE_TIMEOUT_S,
    run_preflight,
)
from aicr_pytest.nccl.render import BenchmarkObjects, RenderInputs, build_compute_domain
from aicr_pytest.nccl.sizing import (
    EFA_RESOURCE,
    MAX_MESSAGE_SIZE,
    RDMA_RESOURCE,
    WorkerScheduling,
    WorkerSizing,
    gke_network_interfaces,
    max_message_size,
    uniform_fabric_count,
    worker_scheduling,
)
from aicr_pytest.nccl.variant import LAUNCHER_JOB, NODE_JOB, NcclCheckFailure, VariantPlan

log = logging.getLogger("aicr_pytest.nccl")

JSON = dict[str, Any]

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"
TRAINER_COMPONENT = "kubeflow-trainer"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
TRAINJOB_NAME_LABEL = "trainer.kubeflow.org/trainjob-name"
APPLY_WAIT_S = 120.0
ADMISSION_RETRY_S = 60.0
ADMISSION_RETRY_INTERVAL_S = 0.5
LOG_REREADS = 5
LOG_REREAD_INTERVAL_S = 2.0
#: Seconds of the check's budget kept back from the benchmark wait for reading the log.
LOG_BUDGET_S = LOG_REREADS * LOG_REREAD_INTERVAL_S + 5.0
AVG_MARKER = "Avg bus bandwidth"
KUBELET_LOG_PLACEHOLDER = "unable to retrieve container logs"

MSG_TRAINER_MISSING = (
    "Kubeflow Trainer is not installed: the cluster does not serve {missing} in "
    "trainer.kubeflow.org/v1alpha1. Deploy the recipe's kubeflow-trainer component (Kubeflow Trainer "
    "v2 with its JobSet controller) and re-run; aicr-pytest does not install it for you"
)
MSG_DRA_TIMEOUT = (
    "timed out waiting for DRA driver to reconcile ComputeDomain {cd} into a ResourceClaimTemplate "
    "({rct}) within {timeout:g}s — is the NVIDIA DRA driver (ComputeDomain controller) running?"
)
MSG_ADMISSION_TIMEOUT = (
    "timed out applying NCCL TrainJob: Trainer webhook did not admit it within the retry budget "
    "({attempts} attempts): {error}"
)
MSG_POD_EVICTED = "NCCL {role} pod {ns}/{pod} was evicted{where}: {detail}"
MSG_LAUNCHER_FAILED = "NCCL launcher pod {ns}/{pod} failed to complete successfully: {state}"
MSG_NO_WORKER_PODS = "--- no NCCL worker pods found (workers may never have been scheduled) ---"
DIAG_LAUNCHER = "launcher log (benchmark failed)"
DIAG_WORKERS = "NCCL worker pods"


class LauncherFailed(NcclCheckFailure):
    """The launcher pod ended Failed: the benchmark itself failed (CTRF ``failed``)."""

    def __init__(self, message: str, diagnostics: Mapping[str, Sequence[str]]) -> None:
        super().__init__(message)
        self.diagnostics = {k: list(v) for k, v in diagnostics.items()}


@dataclass(frozen=True)
class Plumbing:
    """Service-specific inputs of the render, decided from the target nodes."""

    scheduling: WorkerScheduling
    max_message_size: str = MAX_MESSAGE_SIZE
    efa_count: int = 0
    rdma_count: int = 0
    gke_network_interfaces: str | None = None


@dataclass
class Outcome:
    """What the wait saw: the finished launcher pod and how many workers reached Running."""

    launcher: JSON
    workers_running: int
    workers_expected: int


@dataclass
class _WaitState:
    expected: int
    running_seen: set[str] = field(default_factory=set)
    announced: bool = False
    workers: dict[str, JSON] = field(default_factory=dict)  #: each worker pod as last seen


class NcclBenchmark:
    """One NCCL benchmark run of one check (see the module docstring for the order of calls)."""

    def __init__(
        self,
        cluster: Cluster,
        run: RunScope,
        *,
        check: str,
        clock: Clock,
        deadline: float,
        tag: str | None = None,
    ) -> None:
        self.cluster = cluster
        self.run = run
        self.check = check
        self.clock = clock
        self.deadline = deadline
        self.namespace = run.namespace
        #: ``tag``: a rerun of the check (bad-node isolation) gets names of its own
        self.names = scoped_names(run, check, tag)
        #: the last :meth:`wait`'s worker pods as last seen: :meth:`launcher_log` proves their nodes
        self.worker_pods: list[JSON] = []

    # -- budget ------------------------------------------------------------------------------------
    def remaining(self, reserve: float = 0.0) -> float:
        return max(1.0, self.deadline - self.clock.time() - reserve)

    # -- 1. Trainer ----------------------------------------------------------------------------------
    def require_trainer(self) -> None:
        missing = [
            plural
            for plural in ("trainjobs", "trainingruntimes")
            if not self.cluster.has_resource(TRAINER_GROUP, TRAINER_VERSION, plural)
        ]
        if missing:
            raise NcclCheckFailure(MSG_TRAINER_MISSING.format(missing=" and ".join(missing)))

    # -- 2. nodes ------------------------------------------------------------------------------------
    def gpu_nodes(self) -> list[JSON]:
        """Every node (paginated list); :func:`select_target_nodes` filters them."""
        return list(self.cluster.list("v1", "nodes"))

    # -- 3. plumbing ---------------------------------------------------------------------------------
    def plumbing(
        self,
        plan: VariantPlan,
        targets: Sequence[Mapping[str, Any]],
        *,
        node_selector: Mapping[str, str] | None,
        tolerations: Sequence[Mapping[str, str]] | None,
    ) -> Plumbing:
        scheduling = worker_scheduling(plan, targets, node_selector=node_selector, tolerations=tolerations)
        if not plan.service_steps:
            return Plumbing(scheduling=scheduling)
        efa = rdma = 0
        fabric_count: int | None = None
        nics: str | None = None
        if plan.target_service == "eks" and plan.fabric == "efa":
            efa = fabric_count = uniform_fabric_count(targets, EFA_RESOURCE)
            if efa == 0:
                log.warning("%s: no %s on the target nodes: TCP fallback", self.check, EFA_RESOURCE)
        elif plan.target_service == "aks":
            rdma = fabric_count = uniform_fabric_count(targets, RDMA_RESOURCE)
        elif plan.target_service == "gke":
            nics = gke_network_interfaces(self._gke_networks())
        return Plumbing(
            scheduling=scheduling,
            max_message_size=max_message_size(plan, fabric_count),
            efa_count=efa,
            rdma_count=rdma,
            gke_network_interfaces=nics,
        )

    def _gke_networks(self) -> list[str]:
        try:
            return [_name(n) for n in self.cluster.list("networking.gke.io/v1", "networks")]
        except NotFound:
            return []

    # -- 4. preflights -------------------------------------------------------------------------------
    def preflight(self, plan: VariantPlan, targets: Sequence[Mapping[str, Any]]) -> None:
        """Run the plan's preflight (if any) on every target node (:mod:`aicr_pytest.nccl.probes`)."""
        run_preflight(self, plan, targets)

    def log_or_message(self, pod: Mapping[str, Any], container: str) -> str:
        try:
            text = read_log(self.cluster, self.namespace, _name(pod), container)
        except ApiError as exc:
            text = ""
            log.warning("%s: could not read log of %s: %s", self.check, _name(pod), exc)
        return text if text.strip() else termination_message(pod, container)

    # -- 5. apply ------------------------------------------------------------------------------------
    def render_inputs(self, sizing: WorkerSizing, plumbing: Plumbing) -> RenderInputs:
        return RenderInputs(
            namespace=self.namespace,
            names=self.names,
            sizing=sizing,
            labels=self.run.labels(),
            max_message_size=plumbing.max_message_size,
            efa_count=plumbing.efa_count,
            rdma_count=plumbing.rdma_count,
            gke_network_interfaces=plumbing.gke_network_interfaces,
        )

    def apply(self, plan: VariantPlan, objects: BenchmarkObjects) -> str:
        """Create the benchmark's objects in order; returns the TrainJob name."""
        self.run.ensure_namespace()
        add_pod_template_labels(objects.runtime, self.run.labels())
        if objects.claim_template is not None:
            self.run.create(objects.claim_template)
        self.run.create(objects.runtime)
        if plan.provisions_compute_domain:
            self._compute_domain()
        created = self._create_trainjob(objects.trainjob)
        return _name(created)

    def _compute_domain(self) -> None:
        cd = build_compute_domain(self.names, self.namespace, {})
        self.run.create(cd)
        timeout = min(APPLY_WAIT_S, self.remaining())
        try:
            wait_for(
                self.cluster,
                "resource.k8s.io/v1",
                "resourceclaimtemplates",
                self.names.imex_claim_template,
                self.namespace,
                lambda _obj: True,
                timeout,
                self.clock,
            )
        except WaitTimeout:
            raise Inconclusive(
                MSG_DRA_TIMEOUT.format(
                    cd=self.names.compute_domain, rct=self.names.imex_claim_template, timeout=timeout
                )
            ) from None

    def _create_trainjob(self, trainjob: JSON) -> JSON:
        end = self.clock.time() + min(ADMISSION_RETRY_S, self.remaining())
        attempts = 0
        while True:
            attempts += 1
            try:
                return self.run.create(trainjob)
            except ApiError as exc:
                if not admission_race(exc.status, f"{exc} {exc.body}", self.names.runtime):
                    raise
                if self.clock.time() + ADMISSION_RETRY_INTERVAL_S > end:
                    # the facade quotes an admission 403 (AdmissionDenied), never as "RBAC denied"
                    raise Inconclusive(MSG_ADMISSION_TIMEOUT.format(attempts=attempts, error=exc)) from exc
                log.info("%s: TrainJob not admitted yet (attempt %d): %s", self.check, attempts, exc)
                self.clock.sleep(ADMISSION_RETRY_INTERVAL_S)

    # -- 6. wait -------------------------------------------------------------------------------------
    def wait(self, trainjob: str, workers: int) -> Outcome:
        """Watch the TrainJob's pods until the launcher pod is Succeeded or Failed.

        Raises :class:`Inconclusive` for an evicted pod or the deadline (``WaitTimeout``) and
        :class:`LauncherFailed` when the launcher fails.
        """
        state = _WaitState(expected=workers)
        self.worker_pods = []
        selector = f"{JOBSET_NAME_LABEL}={trainjob}"

        def role_pods(view: dict[str, JSON], role: str) -> list[JSON]:
            pods = [p for p in view.values() if _labels(p).get(REPLICATED_JOB_LABEL) == role]
            return sorted(
                pods,
                key=lambda p: (str((p.get("metadata") or {}).get("creationTimestamp") or ""), _name(p)),
            )

        def check(view: dict[str, JSON]) -> JSON | None:
            for pod in view.values():
                detail = eviction_detail(pod)
                if detail is not None:
                    rjob = _labels(pod).get(REPLICATED_JOB_LABEL)
                    role = "launcher" if rjob == LAUNCHER_JOB else "worker"
                    node = (pod.get("spec") or {}).get("nodeName")
                    raise Inconclusive(
                        MSG_POD_EVICTED.format(
                            role=role,
                            ns=self.namespace,
                            pod=_name(pod),
                            where=f" from node {node}" if node else "",
                            detail=detail,
                        )
                    )
            for worker in role_pods(view, NODE_JOB):
                state.workers[_name(worker)] = worker
                if _phase(worker) == "Running":
                    state.running_seen.add(_name(worker))
            if not state.announced and len(state.running_seen) >= state.expected:
                state.announced = True
                log.info("%s: %d/%d NCCL workers Running", self.check, len(state.running_seen), workers)
            launchers = role_pods(view, LAUNCHER_JOB)
            done = [p for p in launchers if _phase(p) == "Succeeded"]
            if done:
                return done[-1]
            if launchers and _phase(launchers[-1]) == "Failed":
                return launchers[-1]
            return None

        def describe(view: dict[str, JSON]) -> str:
            launchers = role_pods(view, LAUNCHER_JOB)
            workers_now = role_pods(view, NODE_JOB)
            running = sum(1 for w in workers_now if _phase(w) == "Running")
            text = (
                f"launcher {_name(launchers[-1])}: {summarize(launchers[-1])}"
                if launchers
                else "no launcher pod yet"
            )
            text += f"; workers Running {running}/{workers}"
            pending = [w for w in workers_now if _phase(w) == "Pending"]
            if pending:
                text += f" (first pending {_name(pending[0])}: {summarize(pending[0])})"
            return text

        launcher = observe(
            self.cluster,
            "v1",
            "pods",
            self.namespace,
            check,
            timeout=self.remaining(reserve=LOG_BUDGET_S),
            clock=self.clock,
            what=f"NCCL TrainJob {self.namespace}/{trainjob} to finish",
            describe=describe,
            label_selector=selector,
        )
        outcome = Outcome(launcher, len(state.running_seen), workers)
        self.worker_pods = [state.workers[name] for name in sorted(state.workers)]
        if _phase(launcher) == "Failed":
            raise LauncherFailed(
                MSG_LAUNCHER_FAILED.format(ns=self.namespace, pod=_name(launcher), state=summarize(launcher)),
                {
                    DIAG_LAUNCHER: self._launcher_tail(launcher),
                    DIAG_WORKERS: self._worker_diagnostics(trainjob),
                },
            )
        return outcome

    def _launcher_tail(self, launcher: Mapping[str, Any]) -> list[str]:
        try:
            text = read_log(self.cluster, self.namespace, _name(launcher), LAUNCHER_CONTAINER)
        except ApiError as exc:
            text = ""
            note = f"<direct log fetch failed: {exc}"
        else:
            note = "<direct log fetch returned no log"
        if text.strip() and KUBELET_LOG_PLACEHOLDER not in text:
            return _tail(text)
        message = termination_message(launcher)
        if message.strip():
            return [f"{note}; container termination-message tail follows>", *_tail(message)]
        return [f"{note}; no termination message captured>"]

    def _worker_diagnostics(self, trainjob: str) -> list[str]:
        selector = f"{JOBSET_NAME_LABEL}={trainjob},{REPLICATED_JOB_LABEL}={NODE_JOB}"
        try:
            pods = list(self.cluster.list("v1", "pods", self.namespace, label_selector=selector))
        except ApiError as exc:
            return [f"--- could not list NCCL worker pods: {exc} ---"]
        if not pods:
            return [MSG_NO_WORKER_PODS]
        lines: list[str] = []
        for pod in sorted(pods, key=_name):
            lines.append(f"worker {_name(pod)}: phase={_phase(pod)}")
            status = pod.get("status") or {}
            statuses = list(status.get("initContainerStatuses") or []) + list(
                status.get("containerStatuses") or []
            )
            for cs in statuses:
                lines.append(f"container {cs.get('name')}: {_describe_state(cs)}")
            for c in (pod.get("spec") or {}).get("containers") or []:
                try:
                    text = read_log(
                        self.cluster,
                        self.namespace,
                        _name(pod),
                        str(c.get("name")),
                        tail_lines=DIAG_TAIL_LINES,
                    )
                except ApiError as exc:
                    lines.append(f"container {c.get('name')}: log unavailable: {exc}")
                    continue
                lines.extend(_tail(text))
        return lines

    # -- 7. log ----------------------------------------------------------------------------------------
    def launcher_log(self, launcher: Mapping[str, Any]) -> str:
        """The launcher log, re-read until ``# Avg bus bandwidth`` appears (bounded), plus its
        termination message (the GKE runtime writes the result rows there).  A launcher without
        proof of execution (:meth:`~aicr_pytest.kube.run.RunScope.prove`) is ``other`` first, and so
        is a worker on a node KWOK fakes or a GPU simulator stands in for: the launcher may run on a
        CPU node, and the bandwidth it prints is the workers' GPUs'."""
        self.run.prove(launcher, [LAUNCHER_CONTAINER])
        for worker in self.worker_pods:
            if (worker.get("spec") or {}).get("nodeName"):  # one never scheduled ran nothing anywhere
                self.run.prove(worker, node_only=True)
        text = ""
        for attempt in range(LOG_REREADS):
            text = read_log(self.cluster, self.namespace, _name(launcher), LAUNCHER_CONTAINER)
            if KUBELET_LOG_PLACEHOLDER in text and len(text) < 512:
                text = ""
            if AVG_MARKER in text:
                break
            if attempt < LOG_REREADS - 1:
                self.clock.sleep(LOG_REREAD_INTERVAL_S)
        message = termination_message(launcher)
        if message.strip():
            text = f"{text}\n{message}"
        return text


__all__ = [
    "ADMISSION_RACE_MARKER",
    "COMPONENT_LABEL",
    "LAUNCHER_CONTAINER",
    "MSG_PROBE_UNEXPECTED",
    "MSG_TCPXO_NOT_READY",
    "PROBE_IMAGE",
    "PROBE_TIMEOUT_S",
    "LauncherFailed",
    "NcclBenchmark",
    "Outcome",
    "Plumbing",
    "add_pod_template_labels",
    "admission_race",
    "eviction_detail",
    "scoped_names",
    "termination_message",
    "tolerations_k8s",
]
