"""inference-perf against a cluster: the I/O half of :mod:`aicr_pytest.inference`.

Every decision stays in :mod:`aicr_pytest.inference` / :mod:`aicr_pytest.core.allocmode` (pure
functions); this module reads and writes Kubernetes objects through the facade
(:class:`~aicr_pytest.kube.client.Cluster`) and waits on the injectable clock.

Waiting on cluster objects (model-cache Job, DynamoGraphDeployment, AIPerf pod) is watch-based
(:mod:`aicr_pytest.kube.wait`: list, watch from its resourceVersion, resume, re-list on 410 Gone),
with deadlines on the injectable clock; each watch lasts at most :data:`PROGRESS_EVERY_S`
seconds so that, while it waits, a progress line says what for (image pull / model load /
benchmark) at least that often.  The one retry loop is the endpoint probe, an HTTP request to the
model server (no resource to watch): one chat completion every :data:`PROBE_INTERVAL_S` seconds,
sleeping on the same clock.  Under the fake cluster's clock (with auto-advance) a 10-minute wait
costs no real time and a scenario is deterministic.

Names: the per-run namespace and the AIPerf Job come from the run scope
(``aicr-inference-perf-<run id>`` / ``aicr-aiperf-<run id>``, plus ``-gwN`` under xdist), so two
concurrent runs never share either; the fixed names inside the namespace (DGD ``aicr-inference-perf``,
Secret ``aicr-hf-token``, ...) follow AICR.  The KAI Queue is cluster-scoped, so it gets the
run-scoped name too (AICR's fixed ``aicr-inference-perf`` would collide between concurrent runs).
"""

from __future__ import annotations

import json
import logging
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.core import progress as progress_lines
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.errors import first_line
from aicr_pytest.inference.aiperf import (
    AIPERF_POD_TIMEOUT_S,
    AIPERF_RUN_TIMEOUT_S,
    MSG_AIPERF_FAILED,
    MSG_AIPERF_NO_POD,
    MSG_AIPERF_TIMEOUT,
    build_aiperf_job,
)
from aicr_pytest.inference.knobs import (
    DEPLOYMENT_NAME,
    FRONTEND_SERVICE,
    GATEWAY_NAMESPACE,
    NAMESPACE_PREFIX,
    ROUTING_GATEWAY,
    InferenceFailure,
    InferenceKnobs,
)
from aicr_pytest.inference.nodes import (
    NodeChoice,
)
from aicr_pytest.inference.render import (
    CHAT_PROBE_TIMEOUT_S,
    MSG_CACHE_POPULATE_FAILED,
    MSG_CACHE_POPULATE_TIMEOUT,
    MSG_DGD_NOT_READY,
    MSG_ENDPOINT_TIMEOUT,
    aiperf_job_name,
    build_hf_token_secret,
    chat_completion_ready,
    chat_probe_body,
    dgd_ready,
    redact,
    render_workload,
    workload_namespace,
)
from aicr_pytest.kube.client import RUN_ID_LABEL, Cluster, RetryPolicy, Target
from aicr_pytest.kube.errors import ApiError, NotFound, WaitTimeout
from aicr_pytest.kube.logs import JOB_NAME_LABELS, read_log
from aicr_pytest.kube.proof import NoProofOfExecution
from aicr_pytest.kube.run import RunScope, add_image_pull_secrets
from aicr_pytest.kube.wait import job_outcome, observe, summarize, wait_for

JSON = dict[str, Any]
Say = Callable[[str], None]

log = logging.getLogger("aicr_pytest.check")

PROBE_INTERVAL_S: Final = 10.0
PROGRESS_EVERY_S: Final = 30.0
DGD_API_VERSION: Final = "nvidia.com/v1beta1"
DGD_KIND: Final = "DynamoGraphDeployment"
CRD_API_VERSION: Final = "apiextensions.k8s.io/v1"
AIPERF_CONTAINER: Final = "aiperf"
DEFAULT_FRONTEND_PORT: Final = 8000
GATEWAY_SERVICE: Final = "inference-gateway"
GATEWAY_PORT: Final = 80
MSG_QUEUE_FAILED: Final = "KAI Queue {name} not created (best effort, continuing): {error}"
MSG_WORKLOAD_PODS_UNREADABLE: Final = (
    "no proof of execution for the inference workload in {namespace}: its pods could not be read to "
    "rule out a fake node or a GPU simulator ({error})"
)
MSG_NO_CLEANUP: Final = (
    "AICR_INFERENCE_PERF_NO_CLEANUP: left namespace {namespace} and Job {job_ns}/{job} in place for "
    "debugging; delete them when done (the namespace keeps GPU workers running):"
)


@dataclass(frozen=True)
class Endpoint:
    """A Service that serves the OpenAI API: reached in-cluster by DNS, from outside by the proxy."""

    namespace: str
    service: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.service}.{self.namespace}.svc:{self.port}"

    def proxy_path(self, subpath: str) -> str:
        """The API server's service-proxy path for ``subpath`` (e.g. ``/v1/chat/completions``)."""
        return f"/api/v1/namespaces/{self.namespace}/services/{self.service}:{self.port}/proxy{subpath}"


class Progress:
    """Rate-limited "what am I waiting for" lines: the first one at once, then every ``every`` s."""

    def __init__(self, clock: Clock, write: Say, every: float = PROGRESS_EVERY_S) -> None:
        self.clock = clock
        self.write = write
        self.every = every
        self._last: dict[str, float] = {}

    def due(self, key: str) -> bool:
        """Whether the ``key`` line is due now (and, if so, mark it written)."""
        now = self.clock.time()
        last = self._last.get(key)
        if last is None or now - last >= self.every:
            self._last[key] = now
            return True
        return False


def _relabel(obj: Any, run_id: str) -> None:
    """Set ``aicr.run/run-id`` to ``run_id`` wherever a manifest (or its templates) carries it."""
    if isinstance(obj, dict):
        labels = obj.get("labels")
        if isinstance(labels, dict) and RUN_ID_LABEL in labels:
            labels[RUN_ID_LABEL] = run_id
        for value in obj.values():
            _relabel(value, run_id)
    elif isinstance(obj, list):
        for value in obj:
            _relabel(value, run_id)


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s % 3600 == 0 and s >= 3600:
        return f"{s // 3600}h"
    if s % 60 == 0 and s >= 60:
        return f"{s // 60}m"
    return f"{s}s"


def _pods_summary(pods: Sequence[Mapping[str, Any]]) -> str:
    """``2 Running, 6 Pending (ImagePullBackOff)`` — phases with waiting reasons, for progress lines."""
    if not pods:
        return "no pods yet"
    counts: dict[str, int] = {}
    for pod in pods:
        status = pod.get("status") or {}
        phase = str(status.get("phase") or "Pending")
        reasons = sorted(
            {
                str(((cs.get("state") or {}).get("waiting") or {}).get("reason") or "")
                for cs in status.get("containerStatuses") or []
            }
            - {""}
        )
        key = f"{phase} ({', '.join(reasons)})" if reasons and phase == "Pending" else phase
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))


# --- the workload -----------------------------------------------------------------------------------


class InferenceWorkload:
    """Deploy, wait for, benchmark and clean up one run's Dynamo workload."""

    def __init__(
        self,
        run: RunScope,
        clock: Clock,
        knobs: InferenceKnobs,
        say: Say,
        progress: Say,
    ) -> None:
        self.run = run
        self.cluster = run.cluster
        self.clock = clock
        self.knobs = knobs
        self.say = say
        self.progress = Progress(clock, progress)
        #: the run scope's suffix (``<run id>[-gwN]``): names are ``<base>-<suffix>``
        self.run_id = run.name("x")[2:]
        self.namespace = workload_namespace(self.run_id)
        self.job_namespace = run.namespace
        self.job_name = aiperf_job_name(self.run_id)
        self.endpoint: Endpoint | None = None
        self.deployed = False

    # -- deploy ------------------------------------------------------------------------------------
    def deploy(
        self, choice: NodeChoice, tolerations: Sequence[Mapping[str, str]], claim_api: str | None
    ) -> None:
        """Namespace → HF Secret → model cache → KAI Queue → [ResourceClaimTemplate] → DGD → ready
        → [HTTPRoute]."""
        manifests = render_workload(self.run_id, self.knobs, choice, tolerations, claim_api)
        for obj in manifests:
            _relabel(obj, self.run.run_id)
            add_image_pull_secrets(obj, self.run.image_pull_secrets)  # created directly, not stamped
        created = self.run.create_namespace_for_run(NAMESPACE_PREFIX.rstrip("-"))
        if created != self.namespace:  # pragma: no cover - both derive from the same suffix
            raise AssertionError(f"namespace {created} != {self.namespace}")
        self.deployed = True
        if self.knobs.hf_token:
            self.cluster.create(build_hf_token_secret(self.namespace, self.knobs.hf_token, self.run.run_id))
        by_kind: dict[str, list[JSON]] = {}
        for obj in manifests[1:]:
            by_kind.setdefault(str(obj.get("kind")), []).append(obj)
        for obj in by_kind.get("PersistentVolumeClaim", []):
            self.cluster.create(obj)
        for obj in by_kind.get("Job", []):
            self.cluster.create(obj)
            self._wait_populate(str(obj["metadata"]["name"]))
        for obj in by_kind.get("Queue", []):
            self._create_queue(obj)
        for obj in by_kind.get("ResourceClaimTemplate", []):
            self.cluster.create(obj)
        for obj in by_kind.get(DGD_KIND, []):
            self.cluster.create(obj)
        self._wait_dgd_ready()
        for obj in by_kind.get("HTTPRoute", []):
            self.cluster.create(obj)

    def _create_queue(self, queue: JSON) -> None:
        body = json.loads(json.dumps(queue))
        try:
            rt = self.cluster.resolve(str(body["apiVersion"]), str(body["kind"]))
            if not rt.namespaced:
                body["metadata"].pop("namespace", None)
            self.run.create(body)
        except ApiError as exc:  # AICR: best effort, failure only logged
            log.warning(MSG_QUEUE_FAILED.format(name=body["metadata"].get("name"), error=exc))

    def _namespace_pods(self) -> list[JSON]:
        try:
            return list(self.cluster.list("v1", "pods", self.namespace))
        except ApiError:
            return []

    def _wait_populate(self, job: str) -> None:
        timeout = self.knobs.workload_ready_timeout_s

        def progress(_: JSON | None) -> None:
            if self.progress.due("populate"):
                pods = [p for p in self._namespace_pods() if str(p["metadata"]["name"]).startswith(job)]
                self.progress.write(
                    f"waiting for the model-cache download ({self.knobs.model}) by Job "
                    f"{self.namespace}/{job}: pods {_pods_summary(pods)}"
                )

        try:
            obj = wait_for(
                self.cluster,
                "batch/v1",
                "jobs",
                job,
                self.namespace,
                lambda j: job_outcome(j) is not None,
                timeout,
                self.clock,
                progress=progress,
                progress_every=PROGRESS_EVERY_S,
            )
        except WaitTimeout as exc:
            raise InferenceFailure(
                MSG_CACHE_POPULATE_TIMEOUT.format(
                    namespace=self.namespace,
                    job=job,
                    timeout=_duration(timeout),
                    state=summarize(_last_seen(exc, self.namespace, job)),
                )
            ) from exc
        if job_outcome(obj) == "Failed":
            raise InferenceFailure(
                MSG_CACHE_POPULATE_FAILED.format(namespace=self.namespace, job=job, detail=summarize(obj))
            )

    def _dgd_state(self, dgd: Mapping[str, Any] | None) -> str:
        if dgd is None:
            return "not found"
        status = dgd.get("status") or {}
        observed = status.get("components") or status.get("services") or {}
        parts = [f"state={status.get('state') or 'unknown'}"]
        for comp in (dgd.get("spec") or {}).get("components") or []:
            name = str(comp.get("name"))
            entry = observed.get(name) or {}
            ready = entry.get("readyReplicas", entry.get("availableReplicas", 0))
            parts.append(f"{name} {ready}/{comp.get('replicas', 1)} ready")
        return ", ".join(parts)

    def _wait_dgd_ready(self) -> None:
        timeout = self.knobs.workload_ready_timeout_s
        where = f"{self.namespace}/{DEPLOYMENT_NAME}"

        def ready(dgd: JSON) -> bool | str:
            return True if dgd_ready(dgd) else self._dgd_state(dgd)

        def progress(dgd: JSON | None) -> None:
            if self.progress.due("dgd"):
                self.progress.write(
                    f"waiting for DynamoGraphDeployment {where} "
                    f"(image pull / model load): {self._dgd_state(dgd)}; "
                    f"pods: {_pods_summary(self._namespace_pods())}"
                )

        try:
            wait_for(
                self.cluster,
                DGD_API_VERSION,
                DGD_KIND,
                DEPLOYMENT_NAME,
                self.namespace,
                ready,
                timeout,
                self.clock,
                progress=progress,
                progress_every=PROGRESS_EVERY_S,
            )
        except WaitTimeout as exc:
            dgd = _last_seen(exc, self.namespace, DEPLOYMENT_NAME)
            state = f"{self._dgd_state(dgd)}; pods: {_pods_summary(self._namespace_pods())}"
            raise InferenceFailure(MSG_DGD_NOT_READY.format(state=state)) from exc
        self.progress.write(f"DynamoGraphDeployment {where} is ready")

    # -- endpoint ----------------------------------------------------------------------------------
    def resolve_endpoint(self) -> Endpoint:
        """dynamo-router: the frontend Service (port 8000, else ``http``, else first); gateway-epp:
        the AICR inference gateway Service.  Lookup failures fall back to AICR's defaults."""
        if self.knobs.routing_mode == ROUTING_GATEWAY:
            services = list(self.cluster.list("v1", "services", GATEWAY_NAMESPACE))
            names = [str(s["metadata"]["name"]) for s in services]
            chosen = GATEWAY_SERVICE if GATEWAY_SERVICE in names else None
            if chosen is None:
                chosen = next(
                    (
                        n
                        for n in names
                        if GATEWAY_SERVICE in n
                        and not any(x in n for x in ("controller-manager", "webhook", "metrics"))
                    ),
                    GATEWAY_SERVICE,
                )
            svc = next((s for s in services if s["metadata"]["name"] == chosen), None)
            port = _service_port(svc, GATEWAY_PORT)
            self.endpoint = Endpoint(GATEWAY_NAMESPACE, chosen, port)
            return self.endpoint
        svc = None
        try:
            svc = self.cluster.get("v1", "Service", FRONTEND_SERVICE, self.namespace)
        except ApiError:
            svc = None
        self.endpoint = Endpoint(self.namespace, FRONTEND_SERVICE, _service_port(svc, DEFAULT_FRONTEND_PORT))
        return self.endpoint

    def _probe_client(self) -> Cluster:
        """The facade without its retries: each probe is one request (AICR retries every 10 s)."""
        c = self.cluster
        return Cluster(
            c.api_client,
            sleep=c.sleep,
            retry_policy=RetryPolicy(attempts=1),
            recorder=c.permissions,
            enforce_declared=c.enforce_declared,
            request_timeout=(c.request_timeout[0], CHAT_PROBE_TIMEOUT_S),
            source=c.source,
        )

    def probe_once(self, client: Cluster, endpoint: Endpoint) -> tuple[bool, str]:
        """One ``POST /v1/chat/completions`` through the service proxy: (ready, what happened)."""
        target = Target("create", "", "services/proxy", endpoint.namespace, endpoint.service)
        try:
            resp = client.request(
                "POST",
                endpoint.proxy_path("/v1/chat/completions"),
                target,
                body=chat_probe_body(self.knobs.model),
                timeout=(client.request_timeout[0], CHAT_PROBE_TIMEOUT_S),
            )
        except ApiError as exc:
            if exc.status:
                return False, f"HTTP {exc.status}"
            cause = str(exc.__cause__ or exc)  # a 5xx or transport error the facade gave up on
            return False, (f"HTTP {cause}" if cause[:3].isdigit() else cause)[:200]
        ok = chat_completion_ready(resp.status, resp.data)
        return ok, f"HTTP {resp.status}" + ("" if ok else " without a chat completion")

    def wait_endpoint(self, endpoint: Endpoint) -> None:
        """Probe every 10 s until a real chat completion comes back or HEALTH_TIMEOUT passes.

        A bounded retry of an HTTP request to the model server (as AICR does), not a poll of a
        cluster object: readiness of the server is only observable by asking it."""
        client = self._probe_client()
        deadline = self.clock.time() + self.knobs.health_timeout_s
        waiting = progress_lines.Waiting(
            f"inference endpoint {endpoint.url} to answer a chat completion",
            clock=self.clock,
            deadline=deadline,
        )
        while True:
            ok, note = self.probe_once(client, endpoint)
            if ok:
                return
            waiting.tick(f"last probe {note}")
            if self.clock.time() >= deadline:
                raise InferenceFailure(MSG_ENDPOINT_TIMEOUT)
            if self.progress.due("endpoint"):
                self.progress.write(
                    f"waiting for inference endpoint {endpoint.url} to serve /v1/chat/completions "
                    f"(last probe: {note})"
                )
            self.clock.sleep(min(PROBE_INTERVAL_S, max(0.0, deadline - self.clock.time())))

    # -- AIPerf ------------------------------------------------------------------------------------
    def run_aiperf(self, endpoint: Endpoint, gpu_count: int) -> str:
        """Create the AIPerf Job, wait for its pod to finish, return the pod log (fail on failure)."""
        ns = self.run.ensure_namespace()
        job = build_aiperf_job(self.run_id, ns, endpoint.url, self.knobs, gpu_count)
        created = self.run.create(job)
        self.job_name = name = str(created["metadata"]["name"])
        pod = self._wait_aiperf_pod(ns, name)
        pod_name = str(pod["metadata"]["name"])

        def finished(p: JSON) -> bool:
            return (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")

        def progress(p: JSON | None) -> None:
            if self.progress.due("aiperf"):
                self.progress.write(f"AIPerf benchmark {ns}/{name}: {self._aiperf_status(ns, p or pod)}")

        try:
            pod = wait_for(
                self.cluster,
                "v1",
                "pods",
                pod_name,
                ns,
                finished,
                AIPERF_RUN_TIMEOUT_S,
                self.clock,
                progress=progress,
                progress_every=PROGRESS_EVERY_S,
            )
        except WaitTimeout as exc:
            raise InferenceFailure(
                MSG_AIPERF_TIMEOUT.format(
                    namespace=ns,
                    job=name,
                    timeout=_duration(AIPERF_RUN_TIMEOUT_S),
                    state=summarize(_last_seen(exc, ns, pod_name)),
                )
            ) from exc
        phase = (pod.get("status") or {}).get("phase")
        text = read_log(self.cluster, ns, pod_name, AIPERF_CONTAINER)
        if phase == "Failed":
            self.say("AIPerf pod logs:\n" + redact(text, [self.knobs.hf_token]))
            raise InferenceFailure(MSG_AIPERF_FAILED.format(detail=f"pod {ns}/{pod_name}: {summarize(pod)}"))
        self.run.prove(pod, [AIPERF_CONTAINER])  # no proof of execution: other, whatever it printed
        self.prove_workload_nodes()
        return text

    def prove_workload_nodes(self) -> None:
        """Every workload pod ran on a node neither KWOK fakes nor a GPU simulator stands in for
        (:meth:`~aicr_pytest.kube.run.RunScope.prove`, the node only): AIPerf may run on a CPU node,
        while the throughput it measures is the model workers' GPUs'. Unreadable pods are no proof."""
        try:
            pods = list(self.cluster.list("v1", "pods", self.namespace))
        except ApiError as exc:
            raise NoProofOfExecution(
                MSG_WORKLOAD_PODS_UNREADABLE.format(namespace=self.namespace, error=first_line(exc))
            ) from exc
        for pod in sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name") or "")):
            if (pod.get("spec") or {}).get("nodeName"):  # one never scheduled ran nothing anywhere
                self.run.prove(pod, node_only=True)

    def _aiperf_status(self, ns: str, pod: Mapping[str, Any]) -> str:
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if phase != "Running":
            return f"pod {_pods_summary([pod])}"
        try:
            tail = read_log(self.cluster, ns, str(pod["metadata"]["name"]), AIPERF_CONTAINER, tail_lines=1)
        except ApiError:
            tail = ""
        return f"running; last output: {tail.strip()[:200] or '(none yet)'}"

    def _wait_aiperf_pod(self, ns: str, job: str) -> JSON:
        """The Job's first pod (newest first, as :func:`~aicr_pytest.kube.logs.job_pods`), watched
        for in the Job's namespace; either job-name label counts."""

        def of_job(p: JSON) -> bool:
            labels = (p.get("metadata") or {}).get("labels") or {}
            return any(labels.get(label) == job for label in JOB_NAME_LABELS)

        def first(view: dict[str, JSON]) -> JSON | None:
            pods = [p for p in view.values() if of_job(p)]
            return max(pods, key=_created) if pods else None

        def progress(_: dict[str, JSON]) -> None:
            if self.progress.due("aiperf-pod"):
                self.progress.write(f"waiting for the AIPerf pod of Job {ns}/{job}")

        try:
            return observe(
                self.cluster,
                "v1",
                "pods",
                ns,
                first,
                timeout=AIPERF_POD_TIMEOUT_S,
                clock=self.clock,
                what=f"the pod of Job {ns}/{job}",
                describe=lambda _: "no pod yet",
                progress=progress,
                progress_every=PROGRESS_EVERY_S,
            )
        except WaitTimeout as exc:
            raise InferenceFailure(
                MSG_AIPERF_NO_POD.format(namespace=ns, job=job, timeout=_duration(AIPERF_POD_TIMEOUT_S))
            ) from exc

    # -- cleanup -----------------------------------------------------------------------------------
    def finish(self, keep: bool) -> list[str]:
        """Delete the DGD first (AICR order: DGD, Queue, namespace — the run scope does the rest), or,
        when ``keep``, return the lines that tell the user what was kept and how to inspect it."""
        if not self.deployed:
            return []
        if keep:
            return [
                MSG_NO_CLEANUP.format(namespace=self.namespace, job_ns=self.job_namespace, job=self.job_name)
            ] + [f"  {c}" for c in self.inspect_commands()]
        try:
            self.cluster.delete(DGD_API_VERSION, DGD_KIND, DEPLOYMENT_NAME, self.namespace, missing_ok=True)
        except (ApiError, NotFound) as exc:  # the namespace deletion removes it anyway
            log.warning(
                "cleanup: deleting DynamoGraphDeployment %s/%s failed: %s",
                self.namespace,
                DEPLOYMENT_NAME,
                exc,
            )
        return []

    def inspect_commands(self) -> list[str]:
        """kubectl / curl commands to look at a kept workload."""
        ns = shlex.quote(self.namespace)
        ep = self.endpoint or Endpoint(self.namespace, FRONTEND_SERVICE, DEFAULT_FRONTEND_PORT)
        body = shlex.quote(json.dumps(chat_probe_body(self.knobs.model), separators=(",", ":")))
        return [
            f"kubectl -n {ns} get dynamographdeployments,pods,svc,resourceclaimtemplates",
            f"kubectl -n {ns} logs -l {RUN_ID_LABEL}={self.run.run_id} --all-containers --prefix --tail=200",
            f"kubectl -n {shlex.quote(self.job_namespace)} logs job/{self.job_name} --tail=200",
            f"kubectl -n {shlex.quote(ep.namespace)} port-forward svc/{ep.service} 8000:{ep.port}",
            "curl -s http://localhost:8000/v1/models",
            "curl -s http://localhost:8000/v1/chat/completions -H 'Content-Type: application/json' -d "
            + body,
            f"kubectl delete namespace {ns}",
            f"kubectl -n {shlex.quote(self.job_namespace)} delete job {self.job_name}",
        ]


def _last_seen(exc: WaitTimeout, namespace: str, name: str) -> JSON | None:
    """The object a timed-out wait last saw (None when it never appeared)."""
    obj = (exc.last_seen or {}).get(f"{namespace}/{name}")
    return obj if isinstance(obj, dict) else None


def _created(pod: Mapping[str, Any]) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


def _service_port(svc: Mapping[str, Any] | None, default: int) -> int:
    """Port 8000 if the Service has it, else the one named ``http``, else the first, else ``default``."""
    ports = [p for p in ((svc or {}).get("spec") or {}).get("ports") or [] if isinstance(p, Mapping)]
    for p in ports:
        if p.get("port") == DEFAULT_FRONTEND_PORT:
            return DEFAULT_FRONTEND_PORT
    for p in ports:
        if p.get("name") == "http" and isinstance(p.get("port"), int):
            return int(p["port"])
    if ports and isinstance(ports[0].get("port"), int):
        return int(ports[0]["port"])
    return default


__all__ = [
    "Endpoint",
    "InferenceWorkload",
    "Progress",
]
