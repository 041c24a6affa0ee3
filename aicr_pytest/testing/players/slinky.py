"""Slinky Slurm on the simulator: the ``slinky-slurm`` component and a player for its login pod.

:func:`install_slinky` (component ``slinky-slurm``, namespace ``slurm``) creates what the Slinky
operator and its Helm chart leave in a cluster: the ``slinky.slurm.net/v1beta1`` CRDs
``loginsets``/``nodesets`` (and ``controllers``), the operator Deployment (namespace ``slinky``),
a NodeSet ``slinky-slurm-gpu`` with one ``slurmd`` pod per GPU node and a LoginSet
``slinky-slurm-login`` with one Running, Ready login pod (container ``login``), both owned by
``controllerRef.name: slinky-slurm`` with their ``status.selector``; and for IMEX the ComputeDomain
``slinky-slurm-imex`` and the ResourceClaimTemplate ``slinky-slurm-imex-channels``.

The player answers ``pods/exec`` in the login pods as a healthy Slurm would: ``scontrol ping``
(controller UP), the ``sinfo -h -Ne -t idle,mix`` pipeline (idle nodes exist), ``srun ... hostname``
(a node's hostname), the two concurrent IMEX jobs (each prints its own
``IMEX_CHANNEL=/dev/nvidia-caps-imex-channels/channel<N>``) and the two GPU probe jobs of
``slinky-slurm-gpu-access`` (``srun ... --gpus=1`` sees one GPU and opens exactly its device node,
every other refused with EPERM; ``srun ... --nodelist=<node>`` sees none and opens none). Anything
else exits 127.

``options["nodeset_gpus"] = True`` gives each NodeSet ``slurmd`` container its node's GPUs as an
``nvidia.com/gpu`` limit (what a real Slinky GPU NodeSet holds through the device plugin); off by
default, which leaves the other checks' view of the GPU nodes (free GPUs) as it has always been.

Faults: ``slurm-controller-down`` (slurmctld does not answer: ``scontrol ping`` reports DOWN and
exits 1, no idle nodes, ``srun`` cannot allocate), ``imex-channels-shared`` (both IMEX jobs see the
same channel), ``slurm-gpu-isolation-broken`` (the job without a GPU request opens every GPU
device node and nvidia-smi lists every GPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from aicr_pytest.testing.builders import (
    add_namespace,
    crd,
    crd_established,
    deployment,
    running_pod,
    system_node,
)
from aicr_pytest.testing.server.websocket import ExecOutcome
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, Component, SimulatedCluster

__all__ = [
    "FAULT_CONTROLLER_DOWN",
    "FAULT_GPU_ISOLATION_BROKEN",
    "FAULT_IMEX_SHARED",
    "NAMESPACE",
    "install",
    "install_slinky",
]

NAMESPACE: Final = "slurm"
GROUP: Final = "slinky.slurm.net"
FAULT_CONTROLLER_DOWN: Final = "slurm-controller-down"
FAULT_IMEX_SHARED: Final = "imex-channels-shared"
FAULT_GPU_ISOLATION_BROKEN: Final = "slurm-gpu-isolation-broken"
IMEX_DIR: Final = "/dev/nvidia-caps-imex-channels"
SLURM_IMAGE: Final = "ghcr.io/slinkyproject/slurmd:25.05-ubuntu24.04"
LOGIN_IMAGE: Final = "ghcr.io/slinkyproject/login:25.05-ubuntu24.04"


def install_slinky(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    """The ``slinky-slurm`` component (module docstring); ``options["login_ready"] = False`` leaves
    the login pod unready."""
    add_namespace(fc, "slinky")
    add_namespace(fc, NAMESPACE)
    for plural, kind in (("loginsets", "LoginSet"), ("nodesets", "NodeSet"), ("controllers", "Controller")):
        crd_established(fc, crd(GROUP, plural, kind, ["v1beta1"]))
    deployment(
        fc,
        "slinky",
        "slurm-operator",
        "ghcr.io/slinkyproject/slurm-operator:0.4.0",
        system_node(profile),
        labels={"app.kubernetes.io/name": "slurm-operator"},
        container="manager",
    )
    owner = {"name": "slinky-slurm", "namespace": NAMESPACE}
    gpu_nodes = profile.gpu_node_names()
    sets: list[tuple[str, str, str, list[str], str, str]] = [
        ("NodeSet", "nodesets", "slinky-slurm-gpu", gpu_nodes, "slurmd", SLURM_IMAGE),
        ("LoginSet", "loginsets", "slinky-slurm-login", [system_node(profile)], "login", LOGIN_IMAGE),
    ]
    for kind, _plural, name, nodes, container, image in sets:
        labels = {"app.kubernetes.io/name": container, "app.kubernetes.io/instance": name}
        obj = fc.add(
            {
                "apiVersion": f"{GROUP}/v1beta1",
                "kind": kind,
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"controllerRef": dict(owner), "replicas": len(nodes)},
                "status": {
                    "replicas": len(nodes),
                    "selector": ",".join(f"{k}={v}" for k, v in labels.items()),
                },
            }
        )
        for i, node in enumerate(nodes):
            pod = running_pod(
                fc, NAMESPACE, f"{name}-{i}", obj, dict(labels), image, node, container=container
            )
            gpus = _gpus_per_node(profile) if kind == "NodeSet" and comp.options.get("nodeset_gpus") else 0
            ready = bool(comp.options.get("login_ready", True))
            _finish_pod(fc, pod, login=kind == "LoginSet", ready=ready, gpus=gpus)
    fc.add(
        {
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "ComputeDomain",
            "metadata": {"name": "slinky-slurm-imex", "namespace": NAMESPACE},
            "spec": {
                "numNodes": 0,
                "channel": {"resourceClaimTemplate": {"name": "slinky-slurm-imex-channels"}},
            },
            "status": {"status": "Ready"},
        }
    )
    fc.add(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "slinky-slurm-imex-channels", "namespace": NAMESPACE},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "channel",
                                "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"},
                            }
                        ]
                    }
                }
            },
        }
    )


def _gpus_per_node(profile: ClusterProfile) -> int:
    pools = profile.gpu_pools()
    return int(pools[0].gpus_per_node) if pools else 0


def _finish_pod(fc: SimulatedCluster, pod: Obj, *, login: bool, ready: bool, gpus: int = 0) -> None:
    """Slinky's pods as the sets select them. They carry no owner reference here: the set controller
    that would own them is not simulated, and an unowned pod is what a real control plane can be
    seeded with (the test harness copies a profile's unowned pods onto kwok nodes)."""
    rt = fc.store.resolve("v1", "Pod")

    def fn(obj: Obj) -> None:
        obj["metadata"].pop("ownerReferences", None)
        if gpus:
            for container in obj["spec"]["containers"]:
                container.setdefault("resources", {})["limits"] = {"nvidia.com/gpu": str(gpus)}
        if not login:
            return
        obj["metadata"].setdefault("annotations", {})["kubectl.kubernetes.io/default-container"] = "login"
        if not ready:
            for cond in obj["status"]["conditions"]:
                if cond["type"] in ("Ready", "ContainersReady"):
                    cond["status"] = "False"

    fc.store.mutate(rt, pod["metadata"]["namespace"], pod["metadata"]["name"], fn)


class _Slurm:
    def __init__(self, fc: SimulatedCluster, faults: Sequence[str], gpus: int) -> None:
        self.fc = fc
        self.down = FAULT_CONTROLLER_DOWN in faults
        self.shared = FAULT_IMEX_SHARED in faults
        self.unconfined = FAULT_GPU_ISOLATION_BROKEN in faults
        self.gpus = gpus
        self.commands: list[list[str]] = []

    def exec(self, container: str, command: Sequence[str]) -> ExecOutcome:
        argv = list(command)
        self.commands.append(argv)
        self.fc.state.setdefault("slinky", {})["commands"] = list(self.commands)
        if argv == ["scontrol", "ping"]:
            if self.down:
                return ExecOutcome("Slurmctld(primary) at slinky-slurm-controller-0 is DOWN\n", "", 1)
            return ExecOutcome("Slurmctld(primary) at slinky-slurm-controller-0 is UP\n", "", 0)
        if argv[:2] == ["/bin/sh", "-c"] and len(argv) == 3:
            script = argv[2]
            if script.startswith("sinfo -h -Ne -t idle,mix"):
                return ExecOutcome("", "", 1 if self.down else 0)
            if "IMEX_CHANNEL=" in script and "srun" in script:
                return self._imex()
        if argv[:1] == ["srun"] and argv[-3:-1] == ["/bin/sh", "-c"] and "DEVICES_LISTED" in argv[-1]:
            return self._gpu_probe(argv)
        if argv[:1] == ["srun"] and argv[-1] == "hostname":
            if self.down:
                return ExecOutcome(
                    "", "srun: error: Unable to allocate resources: Unable to contact slurm controller "
                    "(connect failure)\n", 1,
                )  # fmt: skip
            return ExecOutcome("slinky-slurm-gpu-0\n", "", 0)
        return ExecOutcome("", f"/bin/sh: 1: {argv[0] if argv else ''}: not found\n", 127)

    def _gpu_probe(self, argv: Sequence[str]) -> ExecOutcome:
        """One GPU probe job step: ``--gpus=1`` gets GPU 0 of the first Slurm node; a job placed
        with ``--nodelist`` and no GPU request gets none (unless Slurm does not confine it)."""
        if self.down:
            return ExecOutcome(
                "", "srun: error: Unable to allocate resources: Unable to contact slurm controller\n", 1
            )
        allocated = "--gpus=1" in argv
        node = next((a.removeprefix("--nodelist=") for a in argv if a.startswith("--nodelist=")), "")
        node = node or "slinky-slurm-gpu-0"
        visible = [0] if allocated else list(range(self.gpus)) if self.unconfined else []
        lines = [f"NODE={node}", f"CUDA_VISIBLE_DEVICES={','.join(map(str, visible)) or '<unset>'}"]
        if visible:
            lines.append("NVSMI_RC=0")
            lines += [f"NVSMI_LINE=GPU-{node}-{i:04d}, Disabled" for i in visible]
        else:
            lines += ["NVSMI_RC=6", "NVSMI_LINE=No devices were found"]
        lines.append(f"DEVICES_LISTED={self.gpus}")
        lines += [f"DEV=/dev/nvidia{i} {0 if i in visible else 1}" for i in range(self.gpus)]
        lines.append("DONE=1")
        return ExecOutcome("\n".join(lines) + "\n", "", 0)

    def _imex(self) -> ExecOutcome:
        if self.down:
            return ExecOutcome(
                "", "srun: error: Unable to allocate resources: Unable to contact slurm controller\n", 1
            )
        channels = [0, 0] if self.shared else [0, 1]
        out = "".join(f"IMEX_CHANNEL={IMEX_DIR}/channel{c}\n" for c in channels)
        err = "".join(
            f"IMEX_CHANNEL_COUNT=1\nIMEX_CHANNEL_CANDIDATES={IMEX_DIR}/channel{c}\n" for c in channels
        )
        return ExecOutcome(out, err, 0)


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Answer ``pods/exec`` in the Slurm namespace when the profile runs Slinky."""
    if profile.component("slinky-slurm") is None:
        return
    fc.server.exec_handlers[(NAMESPACE, "*")] = _Slurm(fc, profile.faults, _gpus_per_node(profile)).exec
