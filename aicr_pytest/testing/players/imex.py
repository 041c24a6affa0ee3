"""IMEX player: dra-support's IMEX channel probe pods see the channel their ComputeDomain claim got.

The probe pod (label ``app.kubernetes.io/component: imex-channel-probe``) claims one IMEX channel
from the ``ResourceClaimTemplate`` the NVIDIA DRA driver made of a ComputeDomain (the nccl player
plays that controller: :meth:`aicr_pytest.testing.players.nccl.NcclPlayer.on_compute_domain`) and
lists the ``/dev/nvidia-caps-imex-channels/channel*`` devices it sees. As with the real driver
(``allocationMode: Single``), a claim from a driver-made template (label
``resource.nvidia.com/computeDomain``) injects ``channel0``; a pod without one sees none. The
output is the probe script's (:func:`probe_output`): count, candidates, ``PASS``/``FAIL``, exit 1
unless exactly one.

Faults (``profile.faults``):

* ``imex-channel-missing`` -- the driver reconciles the ComputeDomain and its template, but the
  channel device never reaches the pod (no IMEX daemon on the node, so the CDI spec injects
  nothing): the probe counts 0 channels and exits 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aicr_pytest.testing.players.nccl_workloads import COMPUTE_DOMAIN_LABEL
from aicr_pytest.testing.players.podscripts import script_each_pod
from aicr_pytest.testing.simulator import PodScript, Simulator
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = ["CHANNEL", "FAULT_CHANNEL_MISSING", "PROBE_LABEL", "claims_channel", "install", "probe_output"]

FAULT_CHANNEL_MISSING = "imex-channel-missing"
PROBE_LABEL = ("app.kubernetes.io/component", "imex-channel-probe")
CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"
#: the channel a Single-mode ComputeDomain claim gets
CHANNEL = f"{CHANNEL_DIR}/channel0"


def probe_output(channels: int) -> tuple[str, int]:
    """What the probe prints seeing ``channels`` channel devices (``channel0`` ...), and its exit code."""
    paths = [f"{CHANNEL_DIR}/channel{i}" for i in range(channels)]
    head = f"IMEX_CHANNEL_COUNT={channels}\nIMEX_CHANNEL_CANDIDATES:\n" + "\n".join(paths) + "\n"
    if channels != 1:
        return head + f"FAIL: expected exactly one IMEX channel device under {CHANNEL_DIR}\n", 1
    return head + f"PASS: IMEX channel allocated: {paths[0]}\n", 0


def claims_channel(pod: Obj, templates: dict[str, Obj | None]) -> bool:
    """Whether ``pod`` claims from a ComputeDomain's template (``templates``: name -> the template
    in the pod's namespace, ``None`` when absent)."""
    for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = str((ref or {}).get("resourceClaimTemplateName") or "")
        template = templates.get(name) if name else None
        if template is not None and ((template.get("metadata") or {}).get("labels") or {}).get(
            COMPUTE_DOMAIN_LABEL
        ):
            return True
    return False


def _is_probe(pod: Obj) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(PROBE_LABEL[0]) == PROBE_LABEL[1]


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Script every IMEX probe pod (and honour ``imex-channel-missing``)."""
    missing = FAULT_CHANNEL_MISSING in profile.faults

    def build(sim: Simulator, pod: Obj) -> PodScript:
        ns = str((pod.get("metadata") or {}).get("namespace") or "")
        rt = sim.rt("resource.k8s.io/v1", "ResourceClaimTemplate")
        names = [
            str((r or {}).get("resourceClaimTemplateName") or "")
            for r in (pod.get("spec") or {}).get("resourceClaims") or []
        ]
        templates = {n: sim.store.peek(rt, ns, n) for n in names if n}
        channels = 1 if claims_channel(pod, templates) and not missing else 0
        text, code = probe_output(channels)
        return PodScript(start_after=1.0, run_for=1.0, times=1, logs=text, exit_code=code)

    script_each_pod(fc, _is_probe, build)
