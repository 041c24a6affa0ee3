"""Capturing a snapshot from a live cluster: the family's only I/O.

1. From the API, in this process: ``K8s.server`` (``/version``), ``K8s.image`` (every pod, paginated),
   ``K8s.policy`` (every ``ClusterPolicy`` kind found by discovery), ``NodeTopology`` (every node,
   paginated). A read that fails omits its subtype with a warning.
2. The agent (:mod:`.agent`): a run-scoped ConfigMap with the collector script and a run-scoped Job,
   created through the caller's :class:`~aicr_pytest.kube.RunScope` (which deletes them on success,
   failure, timeout and Ctrl-C). The wait is one label-selected watch on the agent's pod until it
   ends, within ``--timeout``; then its log is read and parsed (:mod:`.sections`, :mod:`.nodefacts`).
3. ``K8s.node`` of the node the agent ran on, and the header.

Errors: :class:`AgentTimeout` (the agent did not finish in time: exit 5), :class:`AgentFailed`
(could not be created, failed, printed nothing usable: exit 8), :class:`NoGpuFound`
(``--require-gpu`` and no GPU: exit 8).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from aicr_pytest.core.clock import SYSTEM_CLOCK, Clock
from aicr_pytest.core.settings import Toleration
from aicr_pytest.core.version import __version__
from aicr_pytest.kube.client import RUN_ID_LABEL, Cluster
from aicr_pytest.kube.errors import AccessDenied, ApiError, WaitTimeout
from aicr_pytest.kube.logs import read_log
from aicr_pytest.kube.run import RunScope
from aicr_pytest.kube.wait import observe, summarize
from aicr_pytest.snapshot import agent as agentspec
from aicr_pytest.snapshot.apifacts import (
    TopologyBuilder,
    cluster_policy_resources,
    image_data,
    node_data,
    policy_data,
    server_data,
)
from aicr_pytest.snapshot.gpu import has_gpu
from aicr_pytest.snapshot.measure import Collected, Doc, rfc3339, snapshot_document
from aicr_pytest.snapshot.nodefacts import node_measurements
from aicr_pytest.snapshot.sections import AgentLog, parse_agent_log

log = logging.getLogger("aicr_pytest.snapshot")

JSON = dict[str, Any]
Emit = Callable[[str], None]

DEFAULT_NAMESPACE: Final = "default"
DEFAULT_TIMEOUT_S: Final = 300.0
#: The Job's own deadline is the wait's plus this: a safety net should the client die before cleanup.
AGENT_DEADLINE_MARGIN_S: Final = 120
#: Upper bound on the agent's log (a node prints some 100 KiB; sysctl is most of it).
LOG_LIMIT_BYTES: Final = 16 << 20

MSG_NAMESPACE_DENIED: Final = (
    "[INTERNAL] the agent namespace {namespace} does not exist and cannot be created ({err}); "
    "pass an existing one with --namespace"
)
MSG_CREATE_FAILED: Final = "[INTERNAL] failed to create the snapshot agent: {err}"
MSG_TIMEOUT: Final = (
    "[TIMEOUT] the snapshot agent did not finish within {timeout:g}s ({state}); "
    "--timeout sets the limit, --node-selector/--toleration where it runs"
)
MSG_POD_FAILED: Final = "[INTERNAL] the snapshot agent failed on node {node}: {reason}"
MSG_VANISHED: Final = "[INTERNAL] the snapshot agent's pod {name} disappeared before it finished"
MSG_NO_OUTPUT: Final = "[INTERNAL] the snapshot agent on node {node} printed no snapshot sections: {detail}"
MSG_LOG_FAILED: Final = "[INTERNAL] cannot read the snapshot agent's log: {err}"
MSG_NO_GPU: Final = (
    "[NOT_FOUND] --require-gpu was set but no GPU was detected on node {node} "
    "(neither PCI enumeration nor nvidia-smi found one)"
)


class CaptureError(Exception):
    """The capture cannot produce a snapshot; ``exit_code`` is what the CLI exits with."""

    exit_code = 8


class AgentFailed(CaptureError):
    """The agent could not be created, failed, or printed nothing usable."""


class AgentTimeout(CaptureError):
    """The agent did not finish within ``--timeout``."""

    exit_code = 5


class NoGpuFound(CaptureError):
    """``--require-gpu`` and the snapshot has no GPU."""


@dataclass(frozen=True)
class CaptureOptions:
    """What ``aicr-pytest snapshot`` (and ``validate`` without ``--snapshot``) asked for."""

    image: str
    namespace: str = DEFAULT_NAMESPACE
    privileged: bool = True
    node_selector: Mapping[str, str] | None = None
    tolerations: Sequence[Toleration] | None = None
    require_gpu: bool = False
    timeout: float = DEFAULT_TIMEOUT_S
    max_nodes_per_entry: int = 0
    #: ``--image-pull-secret``: on the agent pod
    image_pull_secrets: tuple[str, ...] = ()
    #: ``--job-name``: the agent Job's name prefix (the run id is appended)
    job_base: str = agentspec.JOB_BASE
    #: ``--runtime-class``: the pod's ``runtimeClassName``
    runtime_class: str | None = None
    #: ``--service-account-name``: the pod's (existing) service account
    service_account: str | None = None
    #: ``--requests``/``--limits``: per-key overrides of the container's defaults
    requests: Mapping[str, str] | None = None
    limits: Mapping[str, str] | None = None


@dataclass
class CaptureResult:
    document: Doc
    source_node: str
    warnings: list[str] = field(default_factory=list)
    job: str = ""


# -- the API side ------------------------------------------------------------------------------
def _cluster_policies(cluster: Cluster, out: Collected) -> list[JSON] | None:
    policies: list[JSON] = []
    try:
        group_versions = cluster.preferred_group_versions()
    except ApiError as err:
        out.omit("K8s.policy", f"API discovery failed: {err}")
        return None
    for gv in group_versions:
        try:
            plurals = cluster_policy_resources(gv, cluster.api_resources(gv))
        except ApiError as err:
            log.info("discovery of %s failed, skipped: %s", gv, err)
            continue
        for plural in plurals:
            try:
                policies.extend(cluster.list(gv, plural))
            except ApiError as err:
                out.warnings.append(f"K8s.policy: cannot list {plural} in {gv}, left out: {err}")
    return policies


def collect_api(cluster: Cluster, *, max_nodes_per_entry: int = 0) -> tuple[Collected, bool]:
    """K8s.server/image/policy and NodeTopology; also whether a node is labelled gpu.present=true."""
    out = Collected()
    try:
        out.add("K8s", "server", server_data(cluster.server_version()))
    except ApiError as err:
        out.omit("K8s.server", str(err))
    try:
        out.add("K8s", "image", image_data(cluster.list("v1", "pods")))
    except ApiError as err:
        out.omit("K8s.image", str(err))
    policies = _cluster_policies(cluster, out)
    if policies is not None:
        out.add("K8s", "policy", policy_data(policies))
    topology = TopologyBuilder()
    gpu_labelled = False
    try:
        for node in cluster.list("v1", "nodes"):
            topology.add(node)
            gpu_labelled = gpu_labelled or agentspec.auto_node_selector([node]) is not None
    except ApiError as err:
        out.omit("NodeTopology", str(err))
    else:
        for name, data in topology.subtypes(max_nodes_per_entry):
            out.add("NodeTopology", name, data)
    return out, gpu_labelled


# -- the agent ---------------------------------------------------------------------------------
def _pod_failure(pod: JSON) -> str:
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        term = ((cs or {}).get("state") or {}).get("terminated") or {}
        if term:
            reason = term.get("reason") or "Error"
            message = " ".join(str(term.get("message") or "").split())
            detail = f": {message}" if message else ""
            return f"container {cs.get('name')} exited {term.get('exitCode')} ({reason}){detail}"
    reason = status.get("reason") or status.get("phase") or "Failed"
    message = " ".join(str(status.get("message") or "").split())
    return f"{reason}{': ' + message if message else ''}"


def _pending_state(pod: JSON | None) -> str:
    if pod is None:
        return "no agent pod was created"
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            message = " ".join(str(cond.get("message") or cond.get("reason") or "").split())
            return f"pod {pod['metadata'].get('name')} not scheduled: {message}"
    return summarize(pod)


def run_agent(
    scope: RunScope,
    opts: CaptureOptions,
    *,
    node_selector: Mapping[str, str] | None,
    clock: Clock,
    emit: Emit,
) -> tuple[AgentLog, str, str]:
    """Create the agent, wait for it, read its log; returns (parsed log, node name, job name)."""
    cluster = scope.cluster
    try:
        namespace = scope.ensure_namespace()
    except AccessDenied as err:
        raise AgentFailed(MSG_NAMESPACE_DENIED.format(namespace=scope.namespace, err=err)) from err
    try:
        cm = scope.create(agentspec.script_configmap(agentspec.CONFIGMAP_BASE, agentspec.collector_script()))
        job = scope.create(
            agentspec.agent_job(
                opts.job_base,
                configmap=str(cm["metadata"]["name"]),
                image=opts.image,
                privileged=opts.privileged,
                node_selector=node_selector,
                tolerations=opts.tolerations,
                require_gpu=opts.require_gpu,
                active_deadline_seconds=int(opts.timeout) + AGENT_DEADLINE_MARGIN_S,
                runtime_class=opts.runtime_class,
                service_account=opts.service_account,
                requests=opts.requests,
                limits=opts.limits,
            )
        )
    except ApiError as err:
        raise AgentFailed(MSG_CREATE_FAILED.format(err=err)) from err
    job_name = str(job["metadata"]["name"])
    emit(f"snapshot: agent Job {namespace}/{job_name} started (image {opts.image})")
    selector = f"{RUN_ID_LABEL}={scope.run_id},{agentspec.APP_LABEL[0]}={agentspec.APP_LABEL[1]}"
    last: list[JSON] = []  # the agent pod as last seen (it may be gone by the deadline)

    def ended(view: dict[str, JSON]) -> JSON | None:
        for pod in view.values():
            last[:] = [pod]
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return pod
        return None

    def describe(view: dict[str, JSON]) -> str:
        return _pending_state(next(iter(view.values()), last[0] if last else None))

    try:
        pod = observe(
            cluster,
            "v1",
            "pods",
            namespace,
            ended,
            timeout=opts.timeout,
            clock=clock,
            what=f"snapshot agent {namespace}/{job_name}",
            describe=describe,
            label_selector=selector,
        )
    except WaitTimeout as err:
        state = _pending_state(last[0] if last else None)
        raise AgentTimeout(MSG_TIMEOUT.format(timeout=opts.timeout, state=state)) from err
    except ApiError as err:
        raise AgentFailed(f"[INTERNAL] lost the snapshot agent while waiting: {err}") from err
    meta = pod.get("metadata") or {}
    pod_name = str(meta.get("name") or "")
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    if (pod.get("status") or {}).get("phase") == "Failed":
        raise AgentFailed(MSG_POD_FAILED.format(node=node or "(unscheduled)", reason=_pod_failure(pod)))
    try:
        text = read_log(cluster, namespace, pod_name, agentspec.CONTAINER, limit_bytes=LOG_LIMIT_BYTES)
    except ApiError as err:
        raise AgentFailed(MSG_LOG_FAILED.format(err=err)) from err
    parsed = parse_agent_log(text)
    if not parsed.begun or not parsed.sections:
        tail = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "empty log")
        raise AgentFailed(MSG_NO_OUTPUT.format(node=node, detail=tail[:200]))
    return parsed, node or parsed.node, job_name


def capture(
    scope: RunScope,
    opts: CaptureOptions,
    *,
    clock: Clock = SYSTEM_CLOCK,
    emit: Emit | None = None,
    version: str = __version__,
) -> CaptureResult:
    """Capture a snapshot of the scope's cluster (module docstring). Cleanup is the caller's."""
    say: Emit = emit or (lambda _line: None)
    cluster = scope.cluster
    timestamp = rfc3339()
    say("snapshot: reading the cluster through the API")
    collected, gpu_labelled = collect_api(cluster, max_nodes_per_entry=opts.max_nodes_per_entry)
    selector: Mapping[str, str] | None = opts.node_selector
    if not selector and not opts.require_gpu and gpu_labelled:
        selector = {agentspec.GPU_PRESENT_LABEL: "true"}
        say(f"snapshot: targeting GPU nodes ({agentspec.GPU_PRESENT_LABEL}=true; --node-selector overrides)")
    agent_log, node, job_name = run_agent(scope, opts, node_selector=selector, clock=clock, emit=say)
    say(f"snapshot: agent ran on node {node}")
    node_labels: Mapping[str, str] | None = None
    try:
        node_obj = cluster.get("v1", "Node", node)
        collected.add("K8s", "node", node_data(node_obj))
        node_labels = (node_obj.get("metadata") or {}).get("labels") or {}
    except ApiError as err:
        collected.omit("K8s.node", str(err))
    collected.extend(node_measurements(agent_log, node_labels=node_labels))
    if opts.require_gpu and not has_gpu(collected.data("GPU", "hardware"), collected.data("GPU", "smi")):
        raise NoGpuFound(MSG_NO_GPU.format(node=node))
    document = snapshot_document(
        collected.measurements(), timestamp=timestamp, version=version, source_node=node
    )
    return CaptureResult(document=document, source_node=node, warnings=list(collected.warnings), job=job_name)


@dataclass
class LiveCapture:
    """A finished capture plus what its cleanup did (``cleanup_lines`` for the terminal)."""

    result: CaptureResult
    cleanup_lines: list[str] = field(default_factory=list)
    run_id: str = ""


def capture_live(
    cluster_factory: Callable[[], Cluster],
    opts: CaptureOptions,
    *,
    no_cleanup: bool = False,
    run_id: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
    emit: Emit | None = None,
    on_cleanup: Callable[[list[str]], None] | None = None,
) -> LiveCapture:
    """Connect, capture in a fresh :class:`RunScope`, and clean up whatever happens.

    SIGTERM unwinds like Ctrl-C while this runs, so the agent's Job and ConfigMap are deleted on
    success, failure, timeout and interruption alike (``no_cleanup`` keeps them and reports the
    ``kubectl`` commands). ``on_cleanup`` receives the cleanup report's lines even when the capture
    raised.
    """
    from aicr_pytest.kube.run import install_signal_handlers, new_run_id

    scope = RunScope(
        cluster_factory,
        run_id or new_run_id(),
        clock=clock,
        no_cleanup=no_cleanup,
        namespace=opts.namespace,
        image_pull_secrets=opts.image_pull_secrets,
    )
    lines: list[str] = []
    with install_signal_handlers():
        try:
            result = capture(scope, opts, clock=clock, emit=emit)
        finally:
            lines = scope.cleanup().lines()
            if on_cleanup is not None:
                on_cleanup(lines)
    return LiveCapture(result=result, cleanup_lines=lines, run_id=scope.run_id)


__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT_S",
    "AgentFailed",
    "AgentTimeout",
    "CaptureError",
    "CaptureOptions",
    "CaptureResult",
    "LiveCapture",
    "NoGpuFound",
    "capture",
    "capture_live",
    "collect_api",
    "run_agent",
]
