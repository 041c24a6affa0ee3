"""``secure-accelerator-access`` (CNCF ``secure_accelerator_access``).

GPU access is mediated by Kubernetes allocation -- a DRA ResourceClaim or device-plugin
``nvidia.com/gpu`` limits -- with no hostPath device mounts: the granted container sees exactly one
GPU, an unauthorized sibling container sees none, and a pod with no allocation on the same node sees
none. Never skips: a cluster with no usable mechanism fails. The mechanism exercised is the
configured policy's (a mismatch fails closed); only a run without a recipe policy (``unspecified``)
picks by capability, DRA first.

First, the cluster's authn/authz posture (the guide's "authn/authz posture for AI workloads",
:mod:`.access_posture`): ``SubjectAccessReview`` as ``system:anonymous`` must deny reading secrets
and nodes, creating pods and listing DRA claims; an allowed one fails before any GPU pod starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from aicr_pytest.conformance import gpu_workload as gw
from aicr_pytest.conformance.access_posture import verify_anonymous_denied
from aicr_pytest.conformance.common import (
    DRA_TEST_POD_TIMEOUT,
    as_int,
    create_pod_when_sa_ready,
    describe_cause,
    failure,
    gpu_work_budget,
    inconclusive,
    meta,
    pod_log,
    prove_ran,
    read_error,
    spec,
    status,
    wait_pod_bound,
    wait_pod_terminal,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.dra import probe_mode, verify_policy
from aicr_pytest.conformance.testns import GpuTestNamespace, raise_cleanup_failure
from aicr_pytest.core import allocmode, yamlio
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.errors import ApiError

JSON = dict[str, Any]
FALLBACK_BUDGET: Final = 510.0
OPERATOR_COMPONENTS: Final = ("gpu-operator", "gpu-operator-ocp")
DEFAULT_OPERATOR_NAMESPACE: Final = "gpu-operator"
MODE_DRA: Final = "mode exercised: DRA (gpu.nvidia.com ResourceClaim)"
MODE_DEVICE_PLUGIN: Final = "mode exercised: device plugin (nvidia.com/gpu limits)"
MSG_NO_MECHANISM: Final = (
    "no usable GPU allocation mechanism for the secure accelerator access test: {dra}; {dp}"
)
NO_SLICES: Final = "no served resource.k8s.io API version — ResourceSlices unavailable"


def _operator_namespace(ctx: ConformanceContext) -> str:
    for name in OPERATOR_COMPONENTS:
        if ctx.has_component(name):
            return ctx.component_namespace(name, DEFAULT_OPERATOR_NAMESPACE)
    return DEFAULT_OPERATOR_NAMESPACE


def _baseline(ctx: ConformanceContext, mode: allocmode.AllocationMode) -> None:
    """Best-effort evidence of the GPU stack: a read error is recorded, never a verdict."""
    cluster = ctx.cluster
    ns = _operator_namespace(ctx)
    try:
        policy = cluster.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
        text = f"cluster-policy state: {status(policy).get('state') or 'unknown'}"
    except (ApiError, Inconclusive) as err:
        text = f"failed to read ClusterPolicy cluster-policy: {describe_cause(err)}"
    ctx.record("ClusterPolicy status", text, "kubectl get clusterpolicies.nvidia.com cluster-policy")
    try:
        pods = [
            f"{meta(p).get('name')}: {status(p).get('phase') or 'Pending'}"
            for p in cluster.list("v1", "Pod", ns)
        ]
    except (ApiError, Inconclusive) as err:
        pods = [f"failed to list pods in namespace {ns}: {describe_cause(err)}"]
    ctx.record("GPU operator pods", pods or ["(none)"], f"kubectl get pods -n {ns}")
    try:
        sets = [
            f"{meta(d).get('name')}: {as_int(status(d).get('numberReady'))}/"
            f"{as_int(status(d).get('desiredNumberScheduled'))} ready"
            for d in cluster.list("apps/v1", "DaemonSet", ns)
        ]
    except (ApiError, Inconclusive) as err:
        sets = [f"failed to list daemonsets in namespace {ns}: {describe_cause(err)}"]
    ctx.record("GPU operator DaemonSets", sets or ["(none)"], f"kubectl get daemonsets -n {ns}")
    if mode.api_version is None:
        ctx.record("ResourceSlices", NO_SLICES)
        ctx.record("GPU devices in ResourceSlice", NO_SLICES)
        return
    try:
        slices = list(cluster.list(f"resource.k8s.io/{mode.api_version}", "ResourceSlice"))
    except (ApiError, Inconclusive) as err:
        ctx.record("ResourceSlices", f"failed to list ResourceSlices: {describe_cause(err)}")
        return
    ctx.record(
        "ResourceSlices",
        [
            f"{meta(s).get('name')}: driver={spec(s).get('driver')} node={spec(s).get('nodeName') or ''} "
            f"devices={len(spec(s).get('devices') or [])}"
            for s in slices
        ]
        or ["(none)"],
        "kubectl get resourceslices",
    )
    devices = [
        {
            "slice": meta(s).get("name"),
            "driver": spec(s).get("driver"),
            "devices": spec(s).get("devices") or [],
        }
        for s in slices
        if spec(s).get("driver") == allocmode.GPU_DRIVER
    ]
    ctx.record("GPU devices in ResourceSlice", yamlio.dump(devices) if devices else "(none)")


def run_secure_accelerator_access(ctx: ConformanceContext) -> None:
    """Run the check (see the module docstring); raises to report anything but a pass."""
    budget = gpu_work_budget(ctx.remaining(), FALLBACK_BUDGET)
    deadline = ctx.clock.time() + budget
    verify_anonymous_denied(ctx)
    mode = probe_mode(ctx)
    _baseline(ctx, mode)
    policy = verify_policy(ctx, mode)
    unspecified = policy == allocmode.POLICY_UNSPECIFIED
    if policy == allocmode.POLICY_DRA_CLAIM or (unspecified and mode.dra_usable):
        ctx.record("Secure access mode", MODE_DRA)
        _exercise(ctx, deadline, dra_version=f"resource.k8s.io/{mode.api_version}", nodes=())
        return
    if policy == allocmode.POLICY_DEVICE_PLUGIN or (unspecified and mode.device_plugin_usable):
        if mode.extended_resource_classes:
            ctx.record("Extended-resource attribution (KEP-5004)", mode.extended_resource_detail)
        ctx.record("Secure access mode", MODE_DEVICE_PLUGIN)
        _exercise(ctx, deadline, dra_version=None, nodes=mode.device_plugin_nodes)
        return
    raise failure(
        "SERVICE_UNAVAILABLE", MSG_NO_MECHANISM.format(dra=mode.dra_detail, dp=mode.device_plugin_detail)
    )


def _exercise(
    ctx: ConformanceContext, deadline: float, *, dra_version: str | None, nodes: Sequence[str]
) -> None:
    """The GPU test pod (DRA claim or device-plugin limit) and the no-allocation probe, cleaned up always."""
    ns = GpuTestNamespace(ctx.run, ctx.clock)
    mechanism = "DRA" if dra_version else "device plugin"
    primary: BaseException | None = None
    try:
        ns.create()
        labels = ns.labels()
        if dra_version:
            claim = gw.build_claim(ns.claim_name, ns.name, dra_version, labels)
            try:
                ctx.run.create(claim)
            except ApiError as err:
                raise inconclusive("INTERNAL", "failed to create ResourceClaim", err) from err
            ns.track(dra_version, "ResourceClaim", ns.claim_name)
            pod = gw.build_dra_pod(ns.pod_name, ns.name, ns.claim_name, ctx.inner_tolerations(), labels)
        else:
            pod = gw.build_device_plugin_pod(ns.pod_name, ns.name, nodes, ctx.inner_tolerations(), labels)
        ns.track("v1", "Pod", ns.pod_name)
        try:
            create_pod_when_sa_ready(ctx.run, pod, ctx.clock)
        except ApiError as err:
            raise inconclusive("INTERNAL", f"failed to create {mechanism} GPU test pod", err) from err
        # The no-allocation probe runs on the GPU pod's node while the GPU is allocated there (AICR
        # starts it only after the GPU pod ended: same verdicts, one pod lifetime less).
        limit = max(0.0, min(DRA_TEST_POD_TIMEOUT, deadline - ctx.clock.time()))
        scheduled = wait_pod_bound(ctx.cluster, ns.name, ns.pod_name, "GPU test pod", limit, ctx.clock)
        if spec(scheduled).get("nodeName"):
            _start_probe(ctx, ns, str(spec(scheduled)["nodeName"]))
        bound = max(0.0, min(DRA_TEST_POD_TIMEOUT, deadline - ctx.clock.time()))
        done = wait_pod_terminal(ctx.cluster, ns.name, ns.pod_name, "GPU test pod", bound, ctx.clock)
        ctx.record(
            "Pod status", gw.pod_status_lines(done), f"kubectl get pod {ns.pod_name} -n {ns.name} -o wide"
        )
        logs: dict[str, str] = {}
        for container in (gw.GRANTED_CONTAINER, gw.UNAUTHORIZED_CONTAINER):
            logs[container] = pod_log(ctx.cluster, ns.name, ns.pod_name, container)
            ctx.record(
                f"GPU test pod logs ({container})",
                logs[container],
                f"kubectl logs {ns.pod_name} -n {ns.name} -c {container}",
            )
        _verify_pod(ctx, ns, done, logs, dra_version)
        prove_ran(ctx.run, done)
        node = str(spec(done).get("nodeName") or "")
        if not node:
            raise inconclusive(
                "INTERNAL", "GPU test pod completed without spec.nodeName — cannot place the probe"
            )
        _probe(
            ctx, ns, node, deadline, "DRA Isolation Test" if dra_version else "Device Plugin Isolation Test"
        )
    except BaseException as err:
        primary = err
        raise
    finally:
        cleanup = ns.cleanup()
        ctx.record("Cleanup test namespace", cleanup.text)
        raise_cleanup_failure(cleanup, primary)


def _verify_pod(
    ctx: ConformanceContext, ns: GpuTestNamespace, pod: JSON, logs: dict[str, str], dra_version: str | None
) -> None:
    volumes = [
        f"{v.get('name')}: hostPath {((v.get('hostPath') or {}).get('path'))}"
        if v.get("hostPath")
        else f"{v.get('name')}: {next((k for k in v if k != 'name'), 'unknown')}"
        for v in spec(pod).get("volumes") or []
    ]
    if dra_version:
        ctx.record(
            "Pod resourceClaims",
            [f"{c.get('name')}: {c.get('resourceClaimName')}" for c in spec(pod).get("resourceClaims") or []]
            or ["(none)"],
        )
        ctx.record("Pod volumes (no hostPath)", volumes or ["(none)"])
        problem = gw.pattern_errors_dra(pod)
        if problem is not None:
            raise failure("INTERNAL", problem)
        try:
            claim = ctx.cluster.get(dra_version, "ResourceClaim", ns.claim_name, ns.name)
        except ApiError as err:
            raise read_error(err, f"ResourceClaim {ns.claim_name}") from err
        ctx.record(
            "ResourceClaim allocation",
            f"State: {status(claim).get('state') or 'unknown'}\n"
            f"Allocated devices: {gw.claim_allocation_count(claim)}",
        )
        mechanism = "DRA"
    else:
        limits = [
            f"{c.get('name')}: nvidia.com/gpu={gw.gpu_limit(c)}"
            for c in spec(pod).get("containers") or []
            if isinstance(c, dict)
        ]
        ctx.record("Pod GPU limits (device plugin)", limits)
        ctx.record("Pod volumes (no hostPath)", volumes or ["(none)"])
        problem = gw.pattern_errors_device_plugin(pod)
        if problem is not None:
            raise failure("INTERNAL", problem)
        mechanism = "device plugin"
    verdict = gw.isolation_verdict(pod, mechanism, logs)
    codes = {c: gw.container_exit_code(pod, c) for c in (gw.GRANTED_CONTAINER, gw.UNAUTHORIZED_CONTAINER)}
    ctx.record(
        "Container-level isolation",
        [f"{c}: exit code {'none' if v is None else v}" for c, v in codes.items()]
        + [f"verdict: {verdict or 'granted container saw exactly one GPU; unauthorized container saw none'}"],
    )
    if verdict is not None:
        raise failure("INTERNAL", verdict)


def _start_probe(ctx: ConformanceContext, ns: GpuTestNamespace, node: str) -> None:
    """Create the no-allocation probe pinned to ``node`` (the GPU test pod's)."""
    ns.track("v1", "Pod", ns.probe_name)
    probe = gw.build_probe_pod(ns.probe_name, ns.name, node, ns.labels())
    try:
        create_pod_when_sa_ready(ctx.run, probe, ctx.clock)
    except ApiError as err:
        raise inconclusive("INTERNAL", "failed to create no-allocation probe pod", err) from err


def _probe(ctx: ConformanceContext, ns: GpuTestNamespace, node: str, deadline: float, label: str) -> None:
    """The no-allocation probe pinned to the GPU test pod's node: it must see no GPU."""
    what = f"no-allocation probe pod (node={node})"
    if ("v1", "Pod", ns.probe_name) not in ns.tracked:  # not started yet (the GPU pod ended unbound)
        _start_probe(ctx, ns, node)
    bound = max(0.0, min(DRA_TEST_POD_TIMEOUT, deadline - ctx.clock.time()))
    done = wait_pod_terminal(ctx.cluster, ns.name, ns.probe_name, what, bound, ctx.clock)
    log = pod_log(ctx.cluster, ns.name, ns.probe_name, gw.PROBE_CONTAINER)
    ctx.record("No-allocation probe pod logs", log, f"kubectl logs {ns.probe_name} -n {ns.name}")
    verdict = gw.probe_verdict(done, log)
    code = gw.container_exit_code(done, gw.PROBE_CONTAINER)
    ctx.record(
        label,
        f"Probe pod: {ns.probe_name}\nNode: {node}\nPhase: {status(done).get('phase')}\n"
        f"Exit code: {'none' if code is None else code}\n"
        f"Verdict: {verdict or 'no GPU visible without an allocation'}",
    )
    if verdict is not None:
        raise failure("INTERNAL", verdict)
    prove_ran(ctx.run, done)


__all__ = ["MODE_DEVICE_PLUGIN", "MODE_DRA", "MSG_NO_MECHANISM", "run_secure_accelerator_access"]
