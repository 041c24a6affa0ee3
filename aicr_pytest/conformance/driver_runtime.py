"""``driver-runtime-management`` (CNCF SHOULD ``driver_runtime_management``): one accelerator driver
and one container runtime across the GPU nodes.

The requirement (cncf/k8s-ai-conformance, ``KubernetesAIConformance-1.36.yaml``, accelerators): a
verifiable mechanism that compatible drivers and the matching container-runtime configuration are
installed on accelerator nodes, through DRA once the accelerator publishes driver and runtime
versions there. The program's automated suite verifies it as
``TestAcceleratorDriverRuntimeManagement`` (kubernetes-sigs/ai-conformance ``test/``).

Per GPU node (:func:`node_versions`, pure): the container runtime from
``status.nodeInfo.containerRuntimeVersion``; the driver version from the node's ``gpu.nvidia.com``
ResourceSlice devices' ``driverVersion`` attribute where the DRA driver publishes it (preferred),
else GFD's ``nvidia.com/cuda.driver-version.full`` (or ``.major``/``.minor``/``.revision``, or the
deprecated ``nvidia.com/cuda.driver.major``/``.minor``/``.rev``). Versions
compare numerically (``580.95.5`` is ``580.95.05``). No GPU node: skipped. A node whose versions
cannot be read, or whose devices disagree: ``other``, naming it. More than one version across the
nodes: failed, naming each version and its nodes (the odd ones first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from aicr_pytest.conformance.common import JSON, CheckSkip, failure, inconclusive
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.inventory import (
    GPU_DRA_DRIVER,
    DraDevice,
    node_info,
    node_labels,
    node_name,
    recorded_gpu_nodes,
)

DRA_ATTRIBUTE: Final = "driverVersion"
FULL_LABEL: Final = "nvidia.com/cuda.driver-version.full"
#: GFD's split labels: current ones first, then the deprecated ``cuda.driver.*`` ones
PART_LABELS: Final = (
    tuple(f"nvidia.com/cuda.driver-version.{p}" for p in ("major", "minor", "revision")),
    tuple(f"nvidia.com/cuda.driver.{p}" for p in ("major", "minor", "rev")),
)
SOURCE_DRA: Final = "DRA ResourceSlice driverVersion"
SOURCE_GFD: Final = "GFD label"

SKIP_NO_GPU_NODES: Final = "no GPU nodes: no accelerator driver to manage"
MSG_MISSING: Final = "cannot read the {what} of GPU node(s): {nodes}"
MSG_AMBIGUOUS: Final = "GPU node {node} publishes more than one driver version in DRA: {versions}"
MSG_SKEW: Final = "{what} versions differ across GPU nodes: {groups}"


@dataclass(frozen=True)
class NodeVersions:
    """What one GPU node runs; ``""``: not readable. ``dra_versions``: every distinct DRA value."""

    node: str
    runtime: str
    driver: str
    driver_source: str
    dra_versions: tuple[str, ...] = ()


def _label_driver(labels: dict[str, str]) -> str:
    full = labels.get(FULL_LABEL, "").strip()
    if full:
        return full
    for keys in PART_LABELS:
        parts = [labels.get(key, "").strip() for key in keys]
        if all(parts):
            return ".".join(parts)
    return ""


def node_versions(node: JSON, devices: Sequence[DraDevice]) -> NodeVersions:
    """One node's runtime and driver versions, DRA preferred (module docstring)."""
    name = node_name(node)
    dra = sorted(
        {
            d.attributes[DRA_ATTRIBUTE]
            for d in devices
            if d.node == name and d.driver == GPU_DRA_DRIVER and d.attributes.get(DRA_ATTRIBUTE)
        }
    )
    runtime = node_info(node, "containerRuntimeVersion")
    if dra:
        return NodeVersions(name, runtime, dra[0] if len(dra) == 1 else "", SOURCE_DRA, tuple(dra))
    return NodeVersions(name, runtime, _label_driver(node_labels(node)), SOURCE_GFD)


def version_key(version: str) -> tuple[int | str, ...]:
    """Numeric parts compare as numbers (``580.95.05`` == ``580.95.5``); the rest as text."""
    return tuple(int(p) if p.isdigit() else p for p in version.strip().lstrip("v").split("."))


def groups_by_version(values: Sequence[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """``(node, version)`` pairs -> ``(version, nodes)``, fewest nodes first (the odd ones), then by
    version; a version keeps the first spelling seen."""
    groups: dict[tuple[int | str, ...], tuple[str, list[str]]] = {}
    for node, version in values:
        groups.setdefault(version_key(version), (version, []))[1].append(node)
    return sorted(groups.values(), key=lambda g: (len(g[1]), g[0]))


def skew_text(what: str, groups: Sequence[tuple[str, list[str]]]) -> str:
    listed = "; ".join(f"{version} on {', '.join(nodes)}" for version, nodes in groups)
    return MSG_SKEW.format(what=what, groups=listed)


def verdict(versions: Sequence[NodeVersions]) -> None:
    """Raise ``other`` for unreadable or ambiguous nodes, a failure for skew; return when consistent."""
    for v in versions:
        if len(v.dra_versions) > 1:
            raise inconclusive(
                "INTERNAL", MSG_AMBIGUOUS.format(node=v.node, versions=", ".join(v.dra_versions))
            )
    for what, attr in (("container runtime", "runtime"), ("GPU driver version", "driver")):
        missing = [v.node for v in versions if not getattr(v, attr)]
        if missing:
            raise inconclusive("NOT_FOUND", MSG_MISSING.format(what=what, nodes=", ".join(missing)))
    problems = []
    for what, attr in (("GPU driver", "driver"), ("container runtime", "runtime")):
        groups = groups_by_version([(v.node, getattr(v, attr)) for v in versions])
        if len(groups) > 1:
            problems.append(skew_text(what, groups))
    if problems:
        raise failure("CONFLICT", "; ".join(problems))


def run_driver_runtime_management(ctx: ConformanceContext) -> None:
    inventory, nodes = recorded_gpu_nodes(ctx)
    if not nodes:
        raise CheckSkip(SKIP_NO_GPU_NODES)
    versions = [node_versions(n, inventory.devices) for n in nodes]
    ctx.record(
        "GPU driver and container runtime per node",
        [
            f"{v.node}: driver {v.driver or '/'.join(v.dra_versions) or '(unknown)'} ({v.driver_source}), "
            f"runtime {v.runtime or '(unknown)'}"
            for v in versions
        ],
        "kubectl get nodes -o custom-columns=NAME:.metadata.name,"
        "RUNTIME:.status.nodeInfo.containerRuntimeVersion -L nvidia.com/cuda.driver-version.full",
    )
    verdict(versions)
    ctx.record(
        "Consistency",
        f"{len(versions)} GPU node(s): one GPU driver ({versions[0].driver}), "
        f"one container runtime ({versions[0].runtime})",
    )


__all__ = [
    "MSG_AMBIGUOUS",
    "MSG_MISSING",
    "MSG_SKEW",
    "SKIP_NO_GPU_NODES",
    "NodeVersions",
    "groups_by_version",
    "node_versions",
    "run_driver_runtime_management",
    "verdict",
    "version_key",
]
