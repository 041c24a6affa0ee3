"""CUDA smoke player: ``gpu-cuda-smoke`` pods report the ``/dev/nvidia-uvm*`` devices and a kernel per GPU.

When a pod labelled ``app.kubernetes.io/name: aicr-cuda-smoke`` is created, this player scripts it:
it starts after 2 s, runs for 3 s, and its log is what :func:`aicr_pytest.health.cudasmoke.smoke_script`
prints (:func:`smoke_output`) for the GPUs the pod holds on the node it is pinned to (its
``nvidia.com/gpu`` limit, capped by the node's allocatable).

Faults (``profile.faults``):

* ``uvm-missing`` -- the last GPU node in name order has no ``/dev/nvidia-uvm`` (the GPU operator's
  validator still reports Ready, gpu-operator #2685), so the CUDA kernel fails on each of its GPUs;
  the pod exits non-zero, as the script does.

A test that registers its own matching :class:`PodScript` before the check runs overrides this
player for the pods it matches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from aicr_pytest.testing.players.podscripts import script_each_pod
from aicr_pytest.testing.simulator import PodScript, Simulator, parse_quantity
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = ["APP_LABEL", "FAULT_UVM_MISSING", "KERNEL_ERROR", "install", "smoke_output"]

#: gpu-cuda-smoke's pod label (``aicr_pytest.health.cudasmoke.APP_LABEL``; the health package is imported
#: lazily: a test kit imported by the plugin must not pull it into the outer process of pytester runs)
APP_LABEL: Final = ("app.kubernetes.io/name", "aicr-cuda-smoke")
FAULT_UVM_MISSING: Final = "uvm-missing"
#: what the sample prints when CUDA cannot allocate without the uvm device (simulated)
KERNEL_ERROR: Final = "Failed to allocate device vector A (error code unknown error)!"
START_AFTER_S: Final = 2.0
RUN_FOR_S: Final = 3.0


def smoke_output(gpus: int, *, uvm_missing: bool = False) -> tuple[str, int]:
    """The smoke script's log and exit code on a node with ``gpus`` GPUs held."""
    from aicr_pytest.health import cudasmoke as cs

    lines = []
    for device in cs.UVM_DEVICES:
        state = "missing" if uvm_missing and device == "/dev/nvidia-uvm" else "ok"
        lines.append(f"{cs.PREFIX} uvm {device} {state}")
    for i in range(gpus):
        lines.append(
            f"{cs.PREFIX} gpu {i} fail exit 1: {KERNEL_ERROR}" if uvm_missing else f"{cs.PREFIX} gpu {i} ok"
        )
    lines.append(f"{cs.PREFIX} end {gpus}")
    return "\n".join(lines) + "\n", 1 if uvm_missing else 0


def held_gpus(pod: Obj, node: Obj) -> int:
    """The GPUs ``pod`` holds (its limits), capped by ``node``'s allocatable."""
    installed = int(
        parse_quantity(((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", 0))
    )
    held = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        held += int(parse_quantity(((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu", 0)))
    return min(held, installed)


def _is_smoke_pod(pod: Obj) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(APP_LABEL[0]) == APP_LABEL[1]


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Script every smoke pod (and the ``uvm-missing`` fault)."""
    failing_node = None
    if FAULT_UVM_MISSING in profile.faults:
        nodes = sorted(profile.gpu_node_names())
        failing_node = nodes[-1] if nodes else None

    def build(sim: Simulator, pod: Obj) -> PodScript:
        name = str((pod.get("spec") or {}).get("nodeName") or "")
        node = sim.store.peek(sim.rt("v1", "Node"), None, name) or {}
        text, code = smoke_output(held_gpus(pod, node), uvm_missing=name == failing_node)
        script = PodScript(start_after=START_AFTER_S, run_for=RUN_FOR_S, times=1, exit_code=code)
        script.logs = text
        return script

    script_each_pod(fc, _is_smoke_pod, build)
