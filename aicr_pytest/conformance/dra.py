"""DRA reads shared by dra-support and secure-accelerator-access: the served ``resource.k8s.io``
version, the NVIDIA ResourceSlice validation and the allocation-mode probe with the
configured-policy verdict, all with AICR's texts.

The probe itself is :func:`aicr_pytest.kube.allocprobe.probe_allocation_mode` (the one inference-perf
uses) over :mod:`aicr_pytest.core.allocmode`: a group that is not served means no DRA, any other
read error propagates (here: ``other``), and a policy the cluster cannot serve fails closed with
``[INVALID_REQUEST] GPU allocation policy mismatch: …`` -- never a fallback to the other mechanism.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.conformance.common import (
    ConformanceFailure,
    aicr_error,
    inconclusive,
    is_timeout,
    meta,
    spec,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core import allocmode
from aicr_pytest.core.errors import Inconclusive, UsageError
from aicr_pytest.core.gofmt import go_list
from aicr_pytest.kube.allocprobe import probe_allocation_mode
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError

JSON = dict[str, Any]
NVIDIA_DRIVER_SUFFIX: Final = ".nvidia.com"

MSG_DISCOVERY_FAILED = "failed to discover DRA API group-version resource.k8s.io/{version}"


def served_dra_version(cluster: Cluster) -> tuple[str | None, list[JSON]]:
    """The newest served ``resource.k8s.io`` version (v1 → v1beta2 → v1beta1) and its resources.

    A version the server does not serve is skipped; any other discovery error is ``other``."""
    for version in allocmode.DRA_VERSIONS:
        try:
            resources = cluster.api_resources(f"resource.k8s.io/{version}")
        except ApiError as err:
            code = "TIMEOUT" if is_timeout(err) else "INTERNAL"
            raise inconclusive(code, MSG_DISCOVERY_FAILED.format(version=version), err) from err
        if resources:
            return version, resources
    return None, []


# --- NVIDIA ResourceSlice validation ---------------------------------------------------


@dataclass(frozen=True)
class SliceValidation:
    """Per NVIDIA driver (``*.nvidia.com``), the eligible nodes with usable devices."""

    drivers: tuple[str, ...]
    usable: Mapping[str, Mapping[str, int]]
    lines: tuple[str, ...]

    @property
    def usable_nodes(self) -> int:
        return sum(len(nodes) for nodes in self.usable.values())


def _topology(slice_spec: Mapping[str, Any]) -> str:
    if slice_spec.get("nodeName"):
        return f"node={slice_spec['nodeName']}"
    if slice_spec.get("allNodes") is True:
        return "allNodes"
    if slice_spec.get("nodeSelector"):
        return "nodeSelector"
    if slice_spec.get("perDeviceNodeSelection") is True:
        return "perDeviceNodeSelection"
    return "no topology"


def validate_nvidia_slices(
    slices: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]]
) -> SliceValidation:
    """Apply the allocation-mode pool/taint/topology rules to every NVIDIA driver's slices (pure)."""
    drivers = sorted(
        {d for d in (str(spec(s).get("driver") or "") for s in slices) if d.endswith(NVIDIA_DRIVER_SUFFIX)}
    )
    lines: list[str] = []
    for s in sorted(slices, key=lambda x: str(meta(x).get("name") or "")):
        sp = spec(s)
        pool = sp.get("pool") or {}
        lines.append(
            f"{meta(s).get('name')}: driver={sp.get('driver')} {_topology(sp)} pool={pool.get('name')} "
            f"generation={pool.get('generation')} resourceSliceCount={pool.get('resourceSliceCount')} "
            f"devices={len(sp.get('devices') or [])}"
        )
    usable: dict[str, dict[str, int]] = {}
    for driver in drivers:
        usable[driver] = allocmode.validated_driver_nodes(nodes, slices, driver)
        lines.append(f"driver {driver}: usable nodes={go_list(sorted(usable[driver]))}")
    return SliceValidation(tuple(drivers), usable, tuple(lines))


# --- the allocation-mode probe and the policy verdict -----------------------------------------


def probe_mode(ctx: ConformanceContext, nodes: Sequence[JSON] | None = None) -> allocmode.AllocationMode:
    """The allocation-mode probe; any read error is ``other`` (never "no DRA")."""
    try:
        return probe_allocation_mode(ctx.cluster, nodes)
    except ApiError as err:
        code = "TIMEOUT" if is_timeout(err) else "INTERNAL"
        raise inconclusive(code, "GPU allocation mode probe failed", err) from err


def verify_policy(ctx: ConformanceContext, mode: allocmode.AllocationMode) -> str:
    """Record the policy and mode artifacts (before the verdict), then compare them (fail closed)."""
    ctx.record("GPU allocation policy", f"configured policy: {ctx.allocation_policy}")
    ctx.record("GPU allocation mode", mode.summary())
    try:
        return allocmode.verify_policy(ctx.allocation_policy, mode)
    except allocmode.AllocModeError as err:
        raise ConformanceFailure(aicr_error("INVALID_REQUEST", str(err))) from err
    except UsageError as err:  # an unknown policy name cannot come from a resolved recipe
        raise Inconclusive(aicr_error("INVALID_REQUEST", str(err))) from err


__all__ = [
    "NVIDIA_DRIVER_SUFFIX",
    "SliceValidation",
    "probe_mode",
    "served_dra_version",
    "validate_nvidia_slices",
    "verify_policy",
]
