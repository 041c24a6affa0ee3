"""``dra-support`` (CNCF ``dra_support``): the cluster has DRA itself.

Scope first (so skips survive short deadlines): a recipe without an enabled ``nvidia-dra-driver-gpu``
skips; a run without componentRefs probes the default driver namespace live. Then: a served
``resource.k8s.io`` version, the driver's controller Deployment and kubelet-plugin DaemonSet,
validated NVIDIA ResourceSlices (ComputeDomain-only slices suffice), the allocation-mode probe against
the configured policy (a mismatch fails), on multi-node NVLink nodes the IMEX channel subtest
(:mod:`aicr_pytest.conformance.dra_imex`: a ComputeDomain's channel, exactly one device in a pod),
and -- only where full-GPU DRA applies -- a behavioural
claim: a pod whose ``gpu-test`` container must see exactly one claimed GPU and whose ``unauthorized``
sibling must see none. Never falls back to the device plugin for its verdict.
"""

from __future__ import annotations

from typing import Any, Final

from aicr_pytest.conformance import dra_imex
from aicr_pytest.conformance import gpu_workload as gw
from aicr_pytest.conformance.common import (
    DRA_TEST_POD_TIMEOUT,
    as_int,
    create_pod_when_sa_ready,
    daemonset_ready,
    deployment_available,
    failure,
    first_image,
    gpu_work_budget,
    inconclusive,
    list_objects,
    meta,
    pod_log,
    prove_ran,
    read_error,
    spec,
    status,
    wait_pod_terminal,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.dra import probe_mode, served_dra_version, validate_nvidia_slices, verify_policy
from aicr_pytest.conformance.testns import GpuTestNamespace, raise_cleanup_failure
from aicr_pytest.core import allocmode
from aicr_pytest.core.errors import CheckSkip
from aicr_pytest.kube.errors import ApiError, NotFound

JSON = dict[str, Any]
DRIVER_COMPONENT: Final = "nvidia-dra-driver-gpu"
DEFAULT_DRIVER_NAMESPACE: Final = "nvidia-dra-driver"
CONTROLLER: Final = "nvidia-dra-driver-gpu-controller"
KUBELET_PLUGIN: Final = "nvidia-dra-driver-gpu-kubelet-plugin"
#: work budget without a deadline (AICR's fixed fallback)
FALLBACK_BUDGET: Final = 210.0

MSG_SKIP_RECIPE: Final = (
    "recipe excludes or disables the nvidia-dra-driver-gpu component — DRA is out of scope for this recipe"
)
MSG_SKIP_STANDALONE: Final = (
    "NVIDIA DRA driver not installed — no pods, nvidia-dra-driver-gpu-controller Deployment, or "
    "nvidia-dra-driver-gpu-kubelet-plugin DaemonSet in namespace {ns} (no recipe componentRefs available; "
    "live detection)"
)
MSG_NO_VERSION: Final = (
    "NVIDIA DRA driver is in scope but no served version of the resource.k8s.io API group was discovered "
    "(tried v1, v1beta2, v1beta1; requires K8s 1.32+)"
)
MSG_NO_NVIDIA_SLICES: Final = (
    "no ResourceSlices from NVIDIA DRA drivers (e.g. compute-domain.nvidia.com, gpu.nvidia.com) found — "
    "NVIDIA resources not advertised"
)
MSG_NO_VALID_SLICES: Final = (
    "NVIDIA DRA driver ResourceSlices (*.nvidia.com) exist but none passed validation — a slice counts only "
    "when it is in a complete, current-generation pool and advertises an untainted device on a Ready, "
    "schedulable node"
)
MSG_NA_DEVICE_PLUGIN: Final = (
    "skipped (not applicable): configured GPU allocation policy is device-plugin-extended-resource — whole "
    "GPUs are device-plugin-allocated, so the full-GPU DRA behavioral subtest does not apply; DRA validated "
    "via driver health and validated ResourceSlices. {detail}"
)
MSG_NA_NO_DRA: Final = (
    "skipped (not applicable): full-GPU DRA not enabled; behavioral allocation not applicable — DRA "
    "validated via driver health and validated ResourceSlices. {detail}"
)
MSG_POD_PHASE: Final = "DRA test pod phase={phase} (want Succeeded), GPU allocation may have failed"


def _pod_line(pod: JSON) -> str:
    phase = status(pod).get("phase") or "Pending"
    return f"{meta(pod).get('name')}: phase={phase} node={spec(pod).get('nodeName') or ''}"


def _standalone_presence(ctx: ConformanceContext, namespace: str) -> list[JSON]:
    """No componentRefs: is the driver installed? Pods, else the controller, else the kubelet plugin."""
    cluster = ctx.cluster
    pods = list_objects(
        cluster, "v1", "Pod", namespace, f"failed to list pods in namespace {namespace}", not_found_empty=True
    )
    if pods:
        return pods
    for kind, name in (("Deployment", CONTROLLER), ("DaemonSet", KUBELET_PLUGIN)):
        try:
            cluster.get("apps/v1", kind, name, namespace)
            return pods
        except NotFound:
            continue
        except ApiError as err:
            raise inconclusive("INTERNAL", f"failed to get {kind.lower()} {namespace}/{name}", err) from err
    raise CheckSkip(MSG_SKIP_STANDALONE.format(ns=namespace))


def run_dra_support(ctx: ConformanceContext) -> None:
    """Run the check (see the module docstring); raises to report anything but a pass."""
    pods: list[JSON] | None = None
    if ctx.has_recipe:
        if not ctx.has_component(DRIVER_COMPONENT):
            raise CheckSkip(MSG_SKIP_RECIPE)
        namespace = ctx.component_namespace(DRIVER_COMPONENT, DEFAULT_DRIVER_NAMESPACE)
        explicit = (ctx.component(DRIVER_COMPONENT) or {}).get("namespace")
        source = (
            "recipe componentRef nvidia-dra-driver-gpu"
            if explicit
            else "default (componentRef has no namespace)"
        )
    else:
        namespace = DEFAULT_DRIVER_NAMESPACE
        source = "default (no recipe componentRefs; live detection)"
        pods = _standalone_presence(ctx, namespace)
    ctx.record("DRA driver namespace", f"Namespace: {namespace}\nSource: {source}")
    budget = gpu_work_budget(ctx.remaining(), FALLBACK_BUDGET)
    cluster = ctx.cluster

    version, resources = served_dra_version(cluster)
    if version is None:
        raise failure("SERVICE_UNAVAILABLE", MSG_NO_VERSION)
    names = sorted(str(r.get("name")) for r in resources if "/" not in str(r.get("name")))
    ctx.record(
        "DRA API resources",
        [f"Served version: resource.k8s.io/{version}", *names],
        "kubectl api-resources --api-group=resource.k8s.io",
    )

    if pods is None:
        pods = list_objects(cluster, "v1", "Pod", namespace, "failed to list DRA driver pods")
    ctx.record(
        "DRA driver pods",
        [_pod_line(p) for p in pods] or ["(none)"],
        f"kubectl get pods -n {namespace} -o wide",
    )

    dep = deployment_available(cluster, namespace, CONTROLLER)
    ctx.record(
        "DRA Controller Deployment",
        f"Name: {namespace}/{CONTROLLER}\nReplicas: {as_int(status(dep).get('availableReplicas'))}/"
        f"{spec(dep).get('replicas', 1)} available\nImage: {first_image(dep)}",
        f"kubectl get deployment {CONTROLLER} -n {namespace}",
    )
    ds = daemonset_ready(cluster, namespace, KUBELET_PLUGIN)
    ctx.record(
        "DRA Kubelet Plugin DaemonSet",
        f"Name: {namespace}/{KUBELET_PLUGIN}\nReady: {as_int(status(ds).get('numberReady'))}/"
        f"{as_int(status(ds).get('desiredNumberScheduled'))}\nImage: {first_image(ds)}",
        f"kubectl get daemonset {KUBELET_PLUGIN} -n {namespace}",
    )

    slices = list_objects(
        cluster, f"resource.k8s.io/{version}", "ResourceSlice", None, "failed to list ResourceSlices"
    )
    try:
        nodes = list(cluster.list("v1", "nodes"))
    except ApiError as err:
        raise read_error(err, "nodes") from err
    validation = validate_nvidia_slices(slices, nodes)
    ctx.record("ResourceSlices", list(validation.lines) or ["(none)"], "kubectl get resourceslices -o wide")
    if not validation.drivers:
        raise failure("NOT_FOUND", MSG_NO_NVIDIA_SLICES)
    if validation.usable_nodes == 0:
        raise failure("INTERNAL", MSG_NO_VALID_SLICES)

    mode = probe_mode(ctx, nodes)
    policy = verify_policy(ctx, mode)
    usable_cd = validation.usable.get(dra_imex.COMPUTE_DOMAIN_DRIVER, {})
    dra_imex.run_imex_subtest(ctx, version, nodes, slices, usable_cd)
    if policy == allocmode.POLICY_DEVICE_PLUGIN:
        ctx.record("Behavioral GPU allocation", MSG_NA_DEVICE_PLUGIN.format(detail=mode.dra_detail))
        return
    if not mode.dra_usable:
        ctx.record("Behavioral GPU allocation", MSG_NA_NO_DRA.format(detail=mode.dra_detail))
        return
    _behavioral(ctx, f"resource.k8s.io/{mode.api_version or version}", budget)


def _behavioral(ctx: ConformanceContext, api_version: str, budget: float) -> None:
    """The full-GPU DRA claim test in a per-run namespace, cleaned up in every case."""
    ns = GpuTestNamespace(ctx.run, ctx.clock)
    deadline = ctx.clock.time() + budget
    primary: BaseException | None = None
    try:
        ns.create()
        labels = ns.labels()
        claim = gw.build_claim(ns.claim_name, ns.name, api_version, labels)
        try:
            ctx.run.create(claim)
        except ApiError as err:
            raise inconclusive("INTERNAL", "failed to create ResourceClaim", err) from err
        ns.track(api_version, "ResourceClaim", ns.claim_name)
        pod = gw.build_dra_pod(ns.pod_name, ns.name, ns.claim_name, ctx.inner_tolerations(), labels)
        ns.track("v1", "Pod", ns.pod_name)
        try:
            create_pod_when_sa_ready(ctx.run, pod, ctx.clock)
        except ApiError as err:
            raise inconclusive("INTERNAL", "failed to create DRA test pod", err) from err
        ctx.record(
            "Created test resources",
            f"Namespace: {ns.name}\nResourceClaim: {ns.claim_name}\nPod: {ns.pod_name}\n"
            f"API version: {api_version}",
        )
        bound = max(0.0, min(DRA_TEST_POD_TIMEOUT, deadline - ctx.clock.time()))
        done = wait_pod_terminal(ctx.cluster, ns.name, ns.pod_name, "GPU test pod", bound, ctx.clock)
        ctx.record(
            "Pod status", gw.pod_status_lines(done), f"kubectl get pod {ns.pod_name} -n {ns.name} -o wide"
        )
        logs = {}
        for container in (gw.GRANTED_CONTAINER, gw.UNAUTHORIZED_CONTAINER):
            logs[container] = pod_log(ctx.cluster, ns.name, ns.pod_name, container)
            ctx.record(
                f"Pod logs ({container})",
                logs[container],
                f"kubectl logs {ns.pod_name} -n {ns.name} -c {container}",
            )
        try:
            claim_now = ctx.cluster.get(api_version, "ResourceClaim", ns.claim_name, ns.name)
        except ApiError as err:
            raise read_error(err, f"DRA test ResourceClaim {ns.claim_name}") from err
        ctx.record(
            "ResourceClaim status",
            f"State: {status(claim_now).get('state') or 'unknown'}\n"
            f"Allocated devices: {gw.claim_allocation_count(claim_now)}",
        )
        phase = str(status(done).get("phase") or "Pending")
        if phase != "Succeeded":
            raise failure("INTERNAL", MSG_POD_PHASE.format(phase=phase))
        contradiction = gw.output_contradiction(done, logs)
        if contradiction is not None:
            raise failure("INTERNAL", contradiction)
        prove_ran(ctx.run, done)
    except BaseException as err:
        primary = err
        raise
    finally:
        cleanup = ns.cleanup()
        ctx.record("Delete test namespace", cleanup.text)
        raise_cleanup_failure(cleanup, primary)


__all__ = [
    "MSG_NO_NVIDIA_SLICES",
    "MSG_NO_VALID_SLICES",
    "MSG_NO_VERSION",
    "MSG_SKIP_RECIPE",
    "run_dra_support",
]
