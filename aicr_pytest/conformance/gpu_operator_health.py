"""``gpu-operator-health`` (a diagnostic, excluded from CNCF evidence).

The GPU Operator Deployment is available, ``ClusterPolicy/cluster-policy`` reports ``ready`` and the
DCGM exporter DaemonSet has a ready pod. The namespace is the enabled ``gpu-operator`` (else
``gpu-operator-ocp``) component's, else ``gpu-operator``. No skip.

Beyond AICR: a Deployment found by its ``app.kubernetes.io/name=gpu-operator`` label must also be
available (AICR accepts it unchecked); a read error other than NotFound is ``other``.
"""

from __future__ import annotations

from typing import Final

from aicr_pytest.conformance.common import (
    ConformanceFailure,
    aicr_error,
    as_int,
    daemonset_ready,
    deployment_available,
    deployment_replicas,
    failure,
    inconclusive,
    list_objects,
    meta,
    status,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.errors import ApiError, NotFound

OPERATOR_COMPONENTS: Final = ("gpu-operator", "gpu-operator-ocp")
DEFAULT_NAMESPACE: Final = "gpu-operator"
OPERATOR_LABEL: Final = "app.kubernetes.io/name=gpu-operator"
DCGM_EXPORTER: Final = "nvidia-dcgm-exporter"
MSG_NO_OPERATOR: Final = (
    "GPU operator deployment not found (checked label app.kubernetes.io/name=gpu-operator and exact name)"
)


def operator_namespace(ctx: ConformanceContext) -> str:
    for name in OPERATOR_COMPONENTS:
        if ctx.has_component(name):
            return ctx.component_namespace(name, DEFAULT_NAMESPACE)
    return DEFAULT_NAMESPACE


def run_gpu_operator_health(ctx: ConformanceContext) -> None:
    """Run the check (see the module docstring); raises to report anything but a pass."""
    cluster = ctx.cluster
    ns = operator_namespace(ctx)
    labelled = list_objects(
        cluster,
        "apps/v1",
        "Deployment",
        ns,
        f"failed to list deployments in namespace {ns}",
        label_selector=OPERATOR_LABEL,
        not_found_empty=True,
    )
    if labelled:
        available = [d for d in labelled if deployment_replicas(d)[0] >= 1]
        if not available:
            dep = labelled[0]
            have, want = deployment_replicas(dep)
            raise failure(
                "INTERNAL", f"deployment {ns}/{meta(dep).get('name')} not available: {have}/{want} replicas"
            )
        names = [str(meta(d).get("name")) for d in available]
    else:
        try:
            names = [str(meta(deployment_available(cluster, ns, "gpu-operator")).get("name"))]
        except ConformanceFailure as err:
            raise failure("NOT_FOUND", MSG_NO_OPERATOR, err) from err
        except Inconclusive as err:
            raise inconclusive("NOT_FOUND", MSG_NO_OPERATOR, err) from err
    ctx.record(
        "GPU operator deployment", [f"{ns}/{n}: available" for n in names], f"kubectl get deploy -n {ns}"
    )

    try:
        policy = cluster.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    except NotFound as err:
        raise failure("NOT_FOUND", "ClusterPolicy not found", err) from err
    except ApiError as err:
        raise inconclusive("NOT_FOUND", "ClusterPolicy not found", err) from err
    state = status(policy).get("state")
    ctx.record("ClusterPolicy status", f"cluster-policy state: {state or 'missing'}")
    if not state:
        raise failure("INTERNAL", "ClusterPolicy status.state not found")
    if state != "ready":
        raise failure("INTERNAL", f"ClusterPolicy state={state} (want ready)")

    try:
        ds = daemonset_ready(cluster, ns, DCGM_EXPORTER)
    except ConformanceFailure as err:
        raise ConformanceFailure(aicr_error("NOT_FOUND", "DCGM exporter check failed", err)) from err
    except Inconclusive as err:
        raise Inconclusive(aicr_error("NOT_FOUND", "DCGM exporter check failed", err)) from err
    ctx.record(
        "DCGM exporter DaemonSet",
        f"{ns}/{DCGM_EXPORTER}: {as_int(status(ds).get('numberReady'))}/"
        f"{as_int(status(ds).get('desiredNumberScheduled'))} ready",
    )


__all__ = ["MSG_NO_OPERATOR", "run_gpu_operator_health"]
