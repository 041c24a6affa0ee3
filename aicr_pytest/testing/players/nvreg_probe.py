"""Simulator player for the NCCL NET preflight's probe pods (component ``nccl-nvreg-probe``).

Each probe prints its node's ``/proc/driver/nvidia/version`` (an NVRM banner naming the host
driver: the node's GFD ``nvidia.com/cuda.driver-version.full``, default ``580.95.05``) and
``/proc/driver/nvidia/params`` (``GrdmaPciTopoCheckOverride`` is ``1``, as the GPU Operator's
kernelModuleConfig sets it on p6e-gb200 EKS nodes, unless the node's
:data:`OVERRIDE_ANNOTATION` says otherwise), each followed by its read marker, and exits 0 — the
script's own semantics (:data:`aicr_pytest.nccl.nvreg.PROBE_SCRIPT`).  The repository's control-plane
test controller plays the same pods with :func:`probe_output`.

Fault ``driver-r595``: the last GPU node in name order runs :data:`R595_DRIVER`, a driver without
``NVreg_GrdmaPciTopoCheckOverride`` (the NET preflight fails naming it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from aicr_pytest.testing.players.podscripts import script_each_pod
from aicr_pytest.testing.simulator import PodScript, Simulator
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = [
    "COMPONENT",
    "DEFAULT_DRIVER",
    "FAULT_DRIVER_R595",
    "OVERRIDE_ANNOTATION",
    "R595_DRIVER",
    "install",
    "is_probe",
    "nvidia_params",
    "nvidia_version",
    "probe_output",
]

COMPONENT: Final = "nccl-nvreg-probe"
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
FAULT_DRIVER_R595: Final = "driver-r595"
DEFAULT_DRIVER: Final = "580.95.05"
R595_DRIVER: Final = "595.58.03"
#: Node annotation: the node driver's ``NVreg_GrdmaPciTopoCheckOverride`` value (default ``1``)
OVERRIDE_ANNOTATION: Final = "aicr.test/nvreg-grdma-pci-topo-check-override"
# the probe's markers (aicr_pytest.nccl.nvreg's; repeated here: the test kit imports no check family)
_VERSION_OK: Final = "===AICR-NVREG-VERSION-OK==="
_SEPARATOR: Final = "===AICR-NVREG-SPLIT==="
_PARAMS_OK: Final = "===AICR-NVREG-PARAMS-OK==="


def nvidia_version(driver: str, arch: str = "aarch64") -> str:
    """``/proc/driver/nvidia/version`` of a host running ``driver``."""
    return (
        f"NVRM version: NVIDIA UNIX Open Kernel Module for {arch}  {driver}  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Thu Sep  4 19:59:49 UTC 2025\n"
        "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
    )


def nvidia_params(override: str = "1") -> str:
    """``/proc/driver/nvidia/params`` (the lines around the override)."""
    return (
        "ResmanDebugLevel: 4294967295\n"
        "RmLogonRC: 1\n"
        "EnableGpuFirmware: 18\n"
        f"GrdmaPciTopoCheckOverride: {override}\n"
        'RegistryDwords: ""\n'
    )


def probe_output(node: Mapping[str, Any], r595: bool = False) -> str:
    """What the probe prints on ``node`` (``r595``: the node runs :data:`R595_DRIVER`)."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    driver = R595_DRIVER if r595 else str(labels.get("nvidia.com/cuda.driver-version.full") or DEFAULT_DRIVER)
    arch = "aarch64" if labels.get("kubernetes.io/arch") == "arm64" else "x86_64"
    override = str((meta.get("annotations") or {}).get(OVERRIDE_ANNOTATION, "1"))
    return (
        f"{nvidia_version(driver, arch)}{_VERSION_OK}\n{_SEPARATOR}\n{nvidia_params(override)}{_PARAMS_OK}\n"
    )


def is_probe(pod: Obj) -> bool:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(COMPONENT_LABEL) == COMPONENT


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Script every probe pod with its node's files (and the ``driver-r595`` fault)."""
    nodes = profile.gpu_node_names()
    r595 = frozenset(nodes[-1:]) if FAULT_DRIVER_R595 in profile.faults else frozenset()

    def build(sim: Simulator, pod: Obj) -> PodScript:
        name = str((pod.get("spec") or {}).get("nodeName") or "")
        node = sim.store.peek(sim.rt("v1", "Node"), None, name) or {}
        return PodScript(start_after=1.0, run_for=0.5, exit_code=0, logs=probe_output(node, name in r595))

    script_each_pod(fc, is_probe, build)
