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
   an ``a3-megagpu-8g`` node) fails (``NOT_FOUND``) with the remediation text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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


def absent_prerequisite(detail: str) -> str:
    """The operator message for a missing GPU NIC prerequisite; ``detail`` says what was observed."""
    return (
        f"[NOT_FOUND] recipe declares {TCPXO_COMPONENT} but {detail} GPU NIC networks — GPUDirect TCPXO "
        "requires Network and GKENetworkParamSet objects bound into the cluster, each named to contain "
        f'"{GPU_NIC_SUBSTRING}". These are provisioned with the cluster, not by AICR, and '
        "multi-networking cannot be enabled after cluster creation. Verify with: kubectl get "
        "network.networking.gke.io (see docs/integrator/gke-tcpxo-networking.md)"
    )


def read_error(err: BaseException) -> str:
    """Upstream's classification of a Network list error that is not a clean "API not served"."""
    cause = _describe_error(err)
    if isinstance(err, AccessDenied):
        return (
            f"[UNAUTHORIZED] not authorized to read {SUBJECT} — cannot prove the recipe-declared "
            f"capability; grant the validator RBAC: {cause}"
        )
    if isinstance(err, (WaitTimeout, TimeoutError)) or (isinstance(err, ApiError) and err.status == 504):
        return f"[TIMEOUT] timed out reading {SUBJECT}: {cause}"
    if isinstance(err, ApiUnreachable):  # 5xx/429/dropped connections past the client's retries
        return f"[UNAVAILABLE] transport failure reading {SUBJECT}: {cause}"
    return f"[INTERNAL] failed to read {SUBJECT}: {cause}"


def gpu_nic_networks(networks: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names of the Networks that are GPU NIC networks (name contains ``gpu-nic``), sorted."""
    names = (str((n.get("metadata") or {}).get("name") or "") for n in networks)
    return sorted(name for name in names if GPU_NIC_SUBSTRING in name)


def evaluate_gpu_nic_networks(names: Sequence[str], *, emit: Emit) -> str:
    """Verdict over the GPU NIC network names of a recipe that declares ``gke-nccl-tcpxo``."""
    emit(LINE_FOUND.format(found=len(names), need=REQUIRED_GPU_NIC_NETWORKS))
    for name in names:
        emit(LINE_NETWORK.format(name=name))
    if len(names) < REQUIRED_GPU_NIC_NETWORKS:
        raise CheckFailed(absent_prerequisite(f"the cluster has {len(names)} of {REQUIRED_GPU_NIC_NETWORKS}"))
    return MSG_PASSED.format(found=len(names))


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
