"""Sandbox player: workload-sandboxing's probe pods print the kernel a sandboxed runtime shows them.

The probe pod (label ``app.kubernetes.io/component: sandbox-probe``) runs the isolation probe
(kernel release, PID, ``/dev/mem``, filesystem and network findings, one ``key=value`` line each)
under a sandboxed RuntimeClass. A sandbox has a kernel of its own: this player's probe prints
:data:`SANDBOX_KERNEL` (the release gVisor's Sentry reports) and finds every isolation holding.
The log is computed when the simulated kubelet starts the container, from the node the pod was
bound to.

Faults (``profile.faults``):

* ``sandbox-kernel-shared`` -- the cluster has a ``gvisor`` RuntimeClass (handler ``runsc``) but
  its pods run on the node's own kernel (``status.nodeInfo.kernelVersion``): runc behind a sandbox
  name. The PID, filesystem and network findings still hold (the kernel subtest alone fails).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from aicr_pytest.testing.players.podscripts import script_each_pod
from aicr_pytest.testing.simulator import PodScript, Simulator
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = ["FAULT_SHARED_KERNEL", "PROBE_LABEL", "SANDBOX_KERNEL", "install", "probe_kernel", "probe_log"]

FAULT_SHARED_KERNEL = "sandbox-kernel-shared"
PROBE_LABEL = ("app.kubernetes.io/component", "sandbox-probe")
#: what ``uname -r`` prints inside gVisor
SANDBOX_KERNEL = "4.4.0"


def probe_kernel(node: Mapping[str, Any] | None, shared: bool) -> str:
    """The kernel release the probe prints on ``node``: its own under the fault, else the sandbox's."""
    if not shared:
        return SANDBOX_KERNEL
    info = ((node or {}).get("status") or {}).get("nodeInfo") or {}
    return str(info.get("kernelVersion") or "")


def probe_log(node: Mapping[str, Any] | None, shared: bool) -> str:
    """Everything the isolation probe prints on ``node`` (the kernel as :func:`probe_kernel` says;
    every isolation finding passes)."""
    return (
        f"kernel-release={probe_kernel(node, shared)}\npid-count=2\npid=pass\nmemory=pass\n"
        "filesystem=pass\ninterfaces=lo eth0 \nnetwork=pass\nprobe=done\n"
    )


def _is_probe(pod: Obj) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(PROBE_LABEL[0]) == PROBE_LABEL[1]


class _ProbeLogs(Mapping[str, str]):
    """Every container prints the kernel of the node the pod is bound to (read when it starts)."""

    def __init__(self, sim: Simulator, namespace: str, name: str, shared: bool) -> None:
        self._sim, self._ns, self._name, self._shared = sim, namespace, name, shared

    def _pod(self) -> Obj:
        return self._sim.store.peek(self._sim.rt("v1", "Pod"), self._ns, self._name) or {}

    def _names(self) -> list[str]:
        return [str(c.get("name")) for c in (self._pod().get("spec") or {}).get("containers") or []]

    def __getitem__(self, container: str) -> str:
        if container not in self._names():
            raise KeyError(container)
        node_name = str((self._pod().get("spec") or {}).get("nodeName") or "")
        node = self._sim.store.peek(self._sim.rt("v1", "Node"), None, node_name) if node_name else None
        return probe_log(node, self._shared)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Script every probe pod (and honour ``sandbox-kernel-shared``)."""
    shared = FAULT_SHARED_KERNEL in profile.faults

    def build(sim: Simulator, pod: Obj) -> PodScript:
        meta = pod.get("metadata") or {}
        script = PodScript(start_after=1.0, run_for=1.0, times=1)
        script.logs = _ProbeLogs(sim, str(meta.get("namespace", "")), str(meta.get("name", "")), shared)
        return script

    script_each_pod(fc, _is_probe, build)
