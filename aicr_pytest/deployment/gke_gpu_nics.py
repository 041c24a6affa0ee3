"""``gke-gpu-nic-networks``: does the GKE cluster have the GPU NIC networks GPUDirect TCPXO needs?

Upstream AICR (v1.x) added this deployment check: ``validators/deployment/gke_gpu_nic_networks.go``
with the shared discovery of ``validators/internal/gkenet/gkenet.go`` and the declared-capability
rules of ``validators/capability.go`` (repository NVIDIA/aicr); its catalog row is in
``recipes/validators/catalog.yaml`` (2 minutes) and ``docs/user/validation.md`` lists it as skipped
unless the recipe declares ``gke-nccl-tcpxo``.  The ``gke-nccl-tcpxo`` DaemonSets roll out healthy on
a cluster without any multi-NIC ``Network`` objects, so TCPXO would only fail hours later in the
NCCL benchmark; this check names the missing prerequisite at the deployment phase.

The rules, in order:

1. list the cluster-scoped ``networks.networking.gke.io/v1``;
2. the API is not served (the cluster was created without ``--enable-multi-networking``): a recipe
   declaring an enabled ``gke-nccl-tcpxo`` fails (``NOT_FOUND``), any other recipe skips;
3. any other read error never skips (it is no evidence that TCPXO is inapplicable); upstream
   classifies it as a failure, we report it ``other`` with upstream's classified text, as every
   deployment check here does with an API that could not answer (a 5xx that outlasts the client's
   retries reads as a transport failure: upstream, which does not retry, calls a 500 internal);
4. a recipe that does not declare ``gke-nccl-tcpxo`` skips;
5. the Networks whose name contains ``gpu-nic`` (sorted) are printed; fewer than 8 (one per GPU of
   an ``a3-megagpu-8g`` node) fails (``NOT_FOUND``) with the remediation text;
6. fewer than 8 of them with both ``Ready`` and ``ParamsReady`` (an intact GKENetworkParamSet
   binding) True fails, naming each unusable one; an unusable leftover beyond a usable 8 does not.
   Upstream documents this rule in ``docs/integrator/gke-tcpxo-networking.md`` ("What the deployment
   checks verify") and tests it (``gke_gpu_nic_networks_test.go``, the readiness/binding cases); its
   exact message is not in the public sources we read, so this one (code ``UNAVAILABLE``) is ours.

Not implemented here: upstream's later arms that compare a recipe's recorded
``configuration.gke.tcpxoInterfaces`` with the deployed ``torch-distributed-tcpxo``
ClusterTrainingRuntime (they concern recipes that ship that runtime).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aicr_pytest.core.components import enabled_ref
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.deployment.common import CheckFailed, Emit, _describe_error, log
from aicr_pytest.deployment.healthcheck import Fetch, NotRegistered
from aicr_pytest.kube.errors import AccessDenied, ApiError, ApiUnreachable, WaitTimeout

__all__ = [
    "NETWORK_API",
    "REQUIRED_GPU_NIC_NETWORKS",
    "TCPXO_COMPONENT",
    "check_gke_gpu_nic_networks",
    "evaluate_gpu_nic_networks",
    "gpu_nic_networks",
]

TCPXO_COMPONENT = "gke-nccl-tcpxo"
NETWORK_API = "networking.gke.io/v1"
NETWORK_KIND = "Network"
GPU_NIC_SUBSTRING = "gpu-nic"
#: one GPU NIC network per GPU of an a3-megagpu-8g node (eth1..eth8), as upstream fixes it
REQUIRED_GPU_NIC_NETWORKS = 8
SUBJECT = "GKE Networks (networks.networking.gke.io)"

SKIP_NO_API = (
    f"{TCPXO_COMPONENT} not declared in recipe and the cluster has no GKE Network API — "
    "cluster does not use GPUDirect TCPXO"
)
SKIP_NOT_DECLARED = f"{TCPXO_COMPONENT} not declared in recipe — GPUDirect TCPXO networking is inapplicable"
DETAIL_NO_API = (
    "the cluster does not serve networks.networking.gke.io at all, "
    "so it was created without --enable-multi-networking"
)
LINE_FOUND = "Found {found} GPU NIC network(s) (need {need}):"
LINE_NETWORK = "  {name}"
MSG_PASSED = "gke-gpu-nic-networks: passed gpuNICNetworks={found}"
PROBLEM_NOT_READY = "not Ready"
PROBLEM_UNBOUND = "GKENetworkParamSet binding not ready (ParamsReady is not True)"
MSG_UNHEALTHY = (
    f"[UNAVAILABLE] recipe declares {TCPXO_COMPONENT} but only {{healthy}} of {{total}} GPU NIC networks "
    "are Ready and bound to their GKENetworkParamSet (need {need}): {unhealthy}. Verify with: kubectl get "
    "network.networking.gke.io <name> -o jsonpath='{{.status.conditions}}'"
)


def absent_prerequisite(detail: str) -> str:
    """The operator message for a missing GPU NIC prerequisite; ``detail`` says what was observed."""
    return (
        f"[NOT_FOUND] recipe declares {TCPXO_COMPONENT} but {detail} GPU NIC networks — GPUDirect TCPXO "
        "requires Network and GKENetworkParamSet objects bound into the cluster, each named to contain "
        f'"{GPU_NIC_SUBSTRING}". These are provisioned with the cluster, not by AICR, and '
        "multi-networking cannot be enabled after cluster creation. Verify with: kubectl get "
        "network.networking.gke.io (see docs/integrator/gke-tcpxo-networking.md)"
    )


def read_error(err: BaseException, subject: str = SUBJECT) -> str:
    """Upstream's classification of a list error (of ``subject``) that is not a clean "API not served"."""
    cause = _describe_error(err)
    if isinstance(err, AccessDenied):
        return (
            f"[UNAUTHORIZED] not authorized to read {subject} — cannot prove the recipe-declared "
            f"capability; grant the validator RBAC: {cause}"
        )
    if isinstance(err, (WaitTimeout, TimeoutError)) or (isinstance(err, ApiError) and err.status == 504):
        return f"[TIMEOUT] timed out reading {subject}: {cause}"
    if isinstance(err, ApiUnreachable):  # 5xx/429/dropped connections past the client's retries
        return f"[UNAVAILABLE] transport failure reading {subject}: {cause}"
    return f"[INTERNAL] failed to read {subject}: {cause}"


@dataclass(frozen=True)
class GpuNicNetwork:
    """One GPU NIC Network: its name and why it is not usable (``None``: Ready and bound)."""

    name: str
    problem: str | None = None


def _condition_true(network: Mapping[str, Any], kind: str) -> bool:
    conditions = (network.get("status") or {}).get("conditions") or []
    return any(
        isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True" for c in conditions
    )


def gpu_nic_networks(networks: Iterable[Mapping[str, Any]]) -> list[GpuNicNetwork]:
    """The Networks whose name contains ``gpu-nic``, sorted by name, each with its health: usable
    only when its ``Ready`` and ``ParamsReady`` (the GKENetworkParamSet binding) conditions are True."""
    found: list[GpuNicNetwork] = []
    for network in networks:
        name = str((network.get("metadata") or {}).get("name") or "")
        if GPU_NIC_SUBSTRING not in name:
            continue
        problems = []
        if not _condition_true(network, "Ready"):
            problems.append(PROBLEM_NOT_READY)
        if not _condition_true(network, "ParamsReady"):
            problems.append(PROBLEM_UNBOUND)
        found.append(GpuNicNetwork(name, "; ".join(problems) or None))
    return sorted(found, key=lambda n: n.name)


def evaluate_gpu_nic_networks(networks: Sequence[GpuNicNetwork], *, emit: Emit) -> str:
    """Verdict over the GPU NIC networks of a recipe that declares ``gke-nccl-tcpxo``: at least 8
    must exist (the census) and at least 8 must be Ready and bound (an unready leftover beyond a
    healthy 8 does not fail)."""
    emit(LINE_FOUND.format(found=len(networks), need=REQUIRED_GPU_NIC_NETWORKS))
    for net in networks:
        emit(LINE_NETWORK.format(name=net.name) + (f" ({net.problem})" if net.problem else ""))
    if len(networks) < REQUIRED_GPU_NIC_NETWORKS:
        raise CheckFailed(
            absent_prerequisite(f"the cluster has {len(networks)} of {REQUIRED_GPU_NIC_NETWORKS}")
        )
    healthy = [n for n in networks if n.problem is None]
    if len(healthy) < REQUIRED_GPU_NIC_NETWORKS:
        unhealthy = "; ".join(f"{n.name}: {n.problem}" for n in networks if n.problem)
        raise CheckFailed(
            MSG_UNHEALTHY.format(
                healthy=len(healthy), total=len(networks), need=REQUIRED_GPU_NIC_NETWORKS, unhealthy=unhealthy
            )
        )
    return MSG_PASSED.format(found=len(healthy))


def check_gke_gpu_nic_networks(
    fetch: Fetch, refs: Iterable[Mapping[str, Any] | Any] = (), *, emit: Emit
) -> str:
    """``gke-gpu-nic-networks`` (module docstring): the pass message, or raises
    :class:`CheckFailed` / :class:`CheckSkip` / :class:`Inconclusive`."""
    declared = enabled_ref(refs, TCPXO_COMPONENT) is not None
    log.info("listing GKE networks api=%s", NETWORK_API)
    try:
        networks = fetch(NETWORK_API, NETWORK_KIND, None, None, None)
    except NotRegistered:
        if declared:
            raise CheckFailed(absent_prerequisite(DETAIL_NO_API)) from None
        raise CheckSkip(SKIP_NO_API) from None
    except Exception as err:
        raise Inconclusive(read_error(err)) from err
    if not declared:
        raise CheckSkip(SKIP_NOT_DECLARED)
    return evaluate_gpu_nic_networks(gpu_nic_networks(networks), emit=emit)
