"""GPU health player: each DCGM exporter pod answers ``/metrics`` through the API server's pod proxy.

``gpu-health`` scrapes every GPU node's exporter pod (``gpu-operator`` namespace, label
``app=nvidia-dcgm-exporter``) through ``/api/v1/namespaces/gpu-operator/pods/<pod>:9400/proxy/metrics``.
This player answers with what the Service-proxy exporter of :mod:`.metrics` serves, for the node the
pod runs on, plus the exporter's default health series per GPU: ``DCGM_FI_DEV_XID_ERRORS`` (the last
XID, 0: none), ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` and ``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS``.
The GPUs listed are the ones the node's driver sees (:func:`driver_gpus`: GFD's
``nvidia.com/gpu.count``, which ``gpu-inventory`` compares with the exporter's count), so
``gpu-missing`` (one allocatable GPU fewer) still lists them all.  The Service-proxy answer itself is
unchanged.

Faults (``profile.faults``), each on the last GPU node in name order:

* ``gpu-xid`` -- the node's last GPU raises XID 79 (fallen off the bus): its exporter reports it
  from the pod's second scrape on, so it appears during the window;
* ``gpu-driver-missing`` -- the node's driver (so its exporter) sees one GPU fewer than GFD
  advertises and the device plugin hands out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from aicr_pytest.testing.players.metrics import DCGM_NAMESPACE, dcgm_body, gpu_count, gpu_labels
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = [
    "FAULT_DRIVER_MISSING",
    "FAULT_XID",
    "HEALTH_SERIES",
    "XID_CODE",
    "driver_gpus",
    "health_body",
    "install",
]

FAULT_XID: Final = "gpu-xid"
FAULT_DRIVER_MISSING: Final = "gpu-driver-missing"
XID_CODE: Final = 79
#: (name, help, type) of the health series the exporter's default counter list exports
HEALTH_SERIES: Final = (
    ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "gauge"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed.", "gauge"),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for uncorrectable errors.",
        "counter",
    ),
)


def driver_gpus(node: Obj, *, one_missing: bool = False) -> int:
    """The GPUs ``node``'s driver sees: GFD's ``nvidia.com/gpu.count`` (else its allocatable GPUs),
    one fewer when ``one_missing`` (``gpu-driver-missing``)."""
    raw = str((node["metadata"].get("labels") or {}).get("nvidia.com/gpu.count", "")).strip()
    count = int(raw) if raw.isdigit() else gpu_count(node)
    return max(0, count - 1) if one_missing else count


def health_body(node: Obj, *, xid_gpu: int | None = None, gpus: int | None = None) -> str:
    """The health series of ``node``'s GPUs (``gpus`` of them, else its allocatable ones;
    ``xid_gpu`` reports XID 79)."""
    lines: list[str] = []
    for name, text, kind in HEALTH_SERIES:
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for gpu in range(gpu_count(node) if gpus is None else gpus):
            labels = ",".join(f'{k}="{v}"' for k, v in gpu_labels(node, gpu).items())
            value = XID_CODE if name == "DCGM_FI_DEV_XID_ERRORS" and gpu == xid_gpu else 0
            lines.append(f"{name}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Serve the exporter pods (and their faults) when the profile has the GPU Operator."""
    if profile.component("gpu-operator") is None:
        return
    scrapes: dict[str, int] = {}
    nodes = sorted(profile.gpu_node_names())
    last = nodes[-1] if nodes else None
    xid_node = last if FAULT_XID in profile.faults else None
    missing_node = last if FAULT_DRIVER_MISSING in profile.faults else None

    def serve(method: str, pod: Obj, path: str, body: bytes) -> tuple[int, str]:
        if method != "GET" or urlsplit(path).path != "/metrics":
            return 404, "404 page not found\n"
        labels = pod["metadata"].get("labels") or {}
        if labels.get("app") != "nvidia-dcgm-exporter":
            return 404, "404 page not found\n"
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        node = fc.find("v1", "Node", node_name)
        if node is None:
            return 503, "no node\n"
        name = str(pod["metadata"]["name"])
        scrapes[name] = scrapes.get(name, 0) + 1
        gpus = driver_gpus(node, one_missing=node_name == missing_node)
        xid_gpu = gpus - 1 if node_name == xid_node and scrapes[name] > 1 else None
        return 200, dcgm_body(node, gpus=gpus) + health_body(node, xid_gpu=xid_gpu, gpus=gpus)

    fc.server.pod_proxy_handlers[DCGM_NAMESPACE] = serve
