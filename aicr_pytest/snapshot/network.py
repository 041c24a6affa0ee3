"""``NetworkTopology`` from what the agent reads on its node: NVIDIA network PFs, GPUs, modules.

AICR builds this measurement from k8s-launch-kit's cluster config (``--cluster-config``) or its live
discovery (``--discover-network``, which also labels nodes and patches the NicClusterPolicy).
aicr-pytest reads the same facts read-only, on the node the agent runs on, from sysfs
(:func:`parse_network_section` reads the agent's ``network`` section) and ``/proc/modules``:

* ``identity``: context ``identifier`` (``machineType`` as a DNS-1123 label), ``machineType``
  (DMI ``product_name``), ``gpuType`` (the node's ``nvidia.com/gpu.product`` label), ``linkType``
  (``Ethernet`` or ``InfiniBand`` when every RDMA port agrees, else empty), ``nodeSelector``
  (``kubernetes.io/hostname=<node>``); data ``pf-count`` and ``rail-count`` (the east-west PFs).
* ``capabilities``: ``sriov`` (a PF offers virtual functions), ``rdma`` (a PF has an RDMA device),
  ``ib`` (an RDMA port is InfiniBand).
* ``pfs``: one item per PF (Mellanox vendor ``0x15b3``, Ethernet or InfiniBand class, not a VF),
  in PCI address order: context ``pciAddress``, ``deviceID``, ``psid`` (the RDMA device's
  ``board_id``), ``partNumber`` and ``model`` (the VPD's ``PN`` and identifier string),
  ``rdmaDevice``, ``networkInterface``, ``connectedGPU`` (``GPU<i>``, GPUs numbered in PCI address
  order, as ``nvidia-smi`` numbers them) and ``gpuProximity`` (``nvidia-smi topo``'s classes
  ``PIX``/``PXB``/``PHB``/``NODE``/``SYS`` from the sysfs device paths); data ``numaNode``,
  ``traffic`` and ``rail``. A PF that shares a PCIe switch with a GPU (``PIX``/``PXB``) is
  ``east-west`` and gets the next ``rail``; the traffic of any other PF cannot be told from the
  node, so it has none.
* ``kernel-modules``: ``storage.<i>`` (loaded RDMA storage modules) and ``thirdParty.<i>``
  (out-of-tree modules that use the RDMA core), each sorted by name.

Fail closed: a fact that cannot be read is left out, never guessed (two GPUs equally near a PF:
no ``connectedGPU``; no GPU at all: no ``traffic``/``rail``; an unreadable ``sriov_totalvfs`` on
a PF without virtual functions: no ``sriov``). A node with no NVIDIA network PF has no
``NetworkTopology``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

Doc = dict[str, Any]

TYPE: Final = "NetworkTopology"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
GPU_PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
EAST_WEST: Final = "east-west"
#: ``nvidia-smi topo -m``'s connection classes, nearest first
PROXIMITY: Final = ("PIX", "PXB", "PHB", "NODE", "SYS")
#: RDMA storage protocols (iSER, SRP, NVMe-oF, NFS over RDMA), initiator and target sides
STORAGE_MODULES: Final = frozenset(
    {"ib_iser", "ib_isert", "ib_srp", "ib_srpt", "nvme_rdma", "nvmet_rdma", "rpcrdma", "xprtrdma", "svcrdma"}
)
RDMA_CORE: Final = ("ib_core", "ib_uverbs")

_VPD_ID: Final = 0x82
_VPD_R: Final = 0x90
_VPD_END: Final = 0x78


@dataclass
class PciFunction:
    """One device block of the ``network`` section (``pf <address>`` or ``gpu <address>``)."""

    kind: str
    address: str
    path: str = ""
    numa: int | None = None
    device: str = ""
    sriov_totalvfs: int | None = None
    nets: list[str] = field(default_factory=list)
    rdma: list[str] = field(default_factory=list)
    psid: str = ""
    link_layers: list[str] = field(default_factory=list)
    vpd: bytes | None = None


@dataclass
class NetworkFacts:
    """What the agent's ``network`` section says."""

    pfs: list[PciFunction] = field(default_factory=list)
    gpus: list[PciFunction] = field(default_factory=list)
    product: str = ""


def _int(text: str) -> int | None:
    t = text.strip()
    return int(t) if re.fullmatch(r"-?[0-9]+", t) else None


def parse_network_section(text: str) -> NetworkFacts:
    """The ``network`` section's lines (``pf``/``gpu`` opens a device, ``key value`` follow)."""
    facts = NetworkFacts()
    current: PciFunction | None = None
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        value = value.strip()
        if key in ("pf", "gpu") and value:
            current = PciFunction(key, value)
            (facts.pfs if key == "pf" else facts.gpus).append(current)
        elif key == "product":
            facts.product = value
        elif current is not None:
            _set(current, key, value)
    facts.pfs.sort(key=lambda f: f.address)
    facts.gpus.sort(key=lambda f: f.address)
    return facts


def _set(dev: PciFunction, key: str, value: str) -> None:
    if key == "path":
        dev.path = value
    elif key == "numa":
        numa = _int(value)
        dev.numa = numa if numa is not None and numa >= 0 else None  # -1: the kernel does not know
    elif key == "device":
        dev.device = value.lower().removeprefix("0x")
    elif key == "sriov_totalvfs":
        dev.sriov_totalvfs = _int(value)
    elif key == "net" and value:
        dev.nets.append(value)
    elif key == "rdma" and value:
        dev.rdma.append(value)
    elif key == "psid" and value and not dev.psid:
        dev.psid = value
    elif key == "link_layer" and value:
        dev.link_layers.append(value)
    elif key == "vpd" and re.fullmatch(r"(?:[0-9a-fA-F]{2})+", value):
        dev.vpd = bytes.fromhex(value)


def _vpd_text(raw: bytes) -> str | None:
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return None
    text = text.rstrip("\x00 ").strip()
    return text if text and text.isprintable() else None


def parse_vpd(raw: bytes) -> dict[str, str]:
    """PCI VPD: ``{"model": <identifier string>, "partNumber": <PN>}``, each only when it is complete.

    Large resources are ``tag, length (little-endian 16 bit), data``; the read-only one (``0x90``)
    holds ``keyword (2), length (1), value`` fields. A truncated or malformed part is dropped."""
    out: dict[str, str] = {}
    i = 0
    while i < len(raw):
        tag = raw[i]
        if tag == _VPD_END or not tag & 0x80 or i + 3 > len(raw):
            break
        length = raw[i + 1] | raw[i + 2] << 8
        body = raw[i + 3 : i + 3 + length]
        if len(body) < length:
            break
        if tag == _VPD_ID:
            model = _vpd_text(body)
            if model:
                out["model"] = model
        elif tag == _VPD_R:
            j = 0
            while j + 3 <= len(body):
                keyword, size = body[j : j + 2], body[j + 2]
                value = body[j + 3 : j + 3 + size]
                if len(value) < size:
                    break
                if keyword == b"PN":
                    part = _vpd_text(value)
                    if part:
                        out["partNumber"] = part
                j += 3 + size
        i += 3 + length
    return out


def _chain(path: str) -> tuple[str, list[str]]:
    """``(root complex, bridges above the device)`` of a sysfs device path."""
    parts = [p for p in path.split("/") if p]
    roots = [k for k, p in enumerate(parts) if p.startswith("pci") and ":" in p]
    if not roots:
        return "", []
    r = roots[-1]
    return parts[r], parts[r + 1 : -1]


def proximity(a: PciFunction, b: PciFunction) -> str | None:
    """``nvidia-smi topo``'s class between two devices (``None``: a path is unknown)."""
    if not a.path or not b.path:
        return None
    root_a, up_a = _chain(a.path)
    root_b, up_b = _chain(b.path)
    if not root_a or not root_b:
        return None
    if root_a != root_b:
        if a.numa is None or b.numa is None:
            return None
        return "NODE" if a.numa == b.numa else "SYS"
    common = 0
    while common < min(len(up_a), len(up_b)) and up_a[common] == up_b[common]:
        common += 1
    if common == 0:
        return "PHB"
    return "PIX" if max(len(up_a), len(up_b)) - common <= 1 else "PXB"


def _nearest_gpu(pf: PciFunction, gpus: Sequence[PciFunction]) -> tuple[str | None, str | None]:
    """``(connectedGPU, gpuProximity)``: the nearest GPU, ``None`` for what is unknown or tied."""
    ranked = [(PROXIMITY.index(p), i) for i, g in enumerate(gpus) if (p := proximity(pf, g)) is not None]
    if not ranked or len(ranked) < len(gpus):
        return None, None
    best = min(r for r, _ in ranked)
    nearest = [i for r, i in ranked if r == best]
    return (f"GPU{nearest[0]}" if len(nearest) == 1 else None), PROXIMITY[best]


def kernel_modules(modules_text: str) -> dict[str, str]:
    """``storage.<i>``/``thirdParty.<i>`` from ``/proc/modules`` (module docstring)."""
    users: set[str] = set()
    out_of_tree: set[str] = set()
    loaded: set[str] = set()
    for line in modules_text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        name = fields[0]
        loaded.add(name)
        if name in RDMA_CORE and fields[3] != "-":
            users.update(u for u in fields[3].split(",") if u)
        taint = fields[-1] if fields[-1].startswith("(") else ""
        if "O" in taint:
            out_of_tree.add(name)
    storage = sorted(m for m in loaded if m in STORAGE_MODULES)
    third = sorted(m for m in users & out_of_tree & loaded if m not in STORAGE_MODULES)
    data = {f"storage.{i}": m for i, m in enumerate(storage)}
    data.update({f"thirdParty.{i}": m for i, m in enumerate(third)})
    return data


def _dns_label(text: str) -> str:
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9]+", "-", text.lower())).strip("-")[:63].strip("-")


def _link_type(pfs: Sequence[PciFunction]) -> str:
    layers = {layer for pf in pfs for layer in pf.link_layers}
    return layers.pop() if len(layers) == 1 and layers <= {"Ethernet", "InfiniBand"} else ""


def _capabilities(pfs: Sequence[PciFunction]) -> dict[str, bool]:
    caps: dict[str, bool] = {}
    vfs = [pf.sriov_totalvfs for pf in pfs]
    if any(v is not None and v > 0 for v in vfs):
        caps["sriov"] = True
    elif all(v is not None for v in vfs):
        caps["sriov"] = False
    caps["rdma"] = any(pf.rdma for pf in pfs)
    layers = [layer for pf in pfs for layer in pf.link_layers]
    if "InfiniBand" in layers:
        caps["ib"] = True
    elif layers and all(len(pf.link_layers) > 0 for pf in pfs if pf.rdma):
        caps["ib"] = False
    return caps


def _pf_item(pf: PciFunction, gpus: Sequence[PciFunction]) -> tuple[Doc, bool]:
    """One ``pfs`` item (without its rail) and whether the PF is east-west."""
    context: dict[str, str] = {"pciAddress": pf.address}
    if pf.device:
        context["deviceID"] = pf.device
    if pf.psid:
        context["psid"] = pf.psid
    vpd = parse_vpd(pf.vpd) if pf.vpd else {}
    if "partNumber" in vpd:
        context["partNumber"] = vpd["partNumber"]
    if pf.rdma:
        context["rdmaDevice"] = sorted(pf.rdma)[0]
    if pf.nets:
        context["networkInterface"] = sorted(pf.nets)[0]
    if "model" in vpd:
        context["model"] = vpd["model"]
    gpu, near = _nearest_gpu(pf, gpus) if gpus else (None, None)
    if gpu:
        context["connectedGPU"] = gpu
    if near:
        context["gpuProximity"] = near
    data: dict[str, Any] = {}
    if pf.numa is not None:
        data["numaNode"] = pf.numa
    east_west = near in ("PIX", "PXB")
    if east_west:
        data["traffic"] = EAST_WEST
    return {"context": context, "data": data}, east_west


def network_topology(
    facts: NetworkFacts,
    modules_text: str | None,
    *,
    node_labels: Mapping[str, str] | None = None,
) -> list[Doc]:
    """The ``NetworkTopology`` subtypes (wire shape), ``[]`` when the node has no NVIDIA PF."""
    if not facts.pfs:
        return []
    labels = node_labels or {}
    items: list[Doc] = []
    rails = 0
    for pf in facts.pfs:
        item, east_west = _pf_item(pf, facts.gpus)
        if east_west:
            item["data"]["rail"] = rails
            rails += 1
        item["data"] = dict(sorted(item["data"].items()))
        items.append(item)
    context: dict[str, str] = {}
    if facts.product and _dns_label(facts.product):
        context["identifier"] = _dns_label(facts.product)
        context["machineType"] = facts.product
    if labels.get(GPU_PRODUCT_LABEL):
        context["gpuType"] = str(labels[GPU_PRODUCT_LABEL])
    context["linkType"] = _link_type(facts.pfs)
    if labels.get(HOSTNAME_LABEL):
        context["nodeSelector"] = f"{HOSTNAME_LABEL}={labels[HOSTNAME_LABEL]}"
    identity: dict[str, int] = {"pf-count": len(facts.pfs)}
    if rails:
        identity["rail-count"] = rails
    subtypes: list[Doc] = [
        {"subtype": "identity", "data": identity, "context": context},
        {"subtype": "capabilities", "data": dict(sorted(_capabilities(facts.pfs).items()))},
        {"subtype": "pfs", "items": items},
    ]
    modules = kernel_modules(modules_text) if modules_text is not None else {}
    if modules:
        subtypes.append({"subtype": "kernel-modules", "data": modules})
    return subtypes


__all__ = [
    "PROXIMITY",
    "STORAGE_MODULES",
    "TYPE",
    "NetworkFacts",
    "PciFunction",
    "kernel_modules",
    "network_topology",
    "parse_network_section",
    "parse_vpd",
    "proximity",
]
