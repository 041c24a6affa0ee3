"""``GPU.hardware`` (PCI enumeration) and ``GPU.smi`` (``nvidia-smi -q -x``), pure.

``GPU.hardware`` follows AICR's collector: a GPU is a
PCI function with vendor ``10de`` (NVIDIA) and class ``0300`` (VGA) or ``0302`` (3D controller), so
NVSwitches and bridges do not count; ``model`` is the SKU of the device id when every GPU of the node
resolves to the same known one (a mixed node gets none); ``driver-loaded`` is whether the ``nvidia``
kernel module is loaded. AICR enumerates PCI through node-feature-discovery's library, we read the
same sysfs files directly, so ``detection-source`` reads ``sysfs``.

``GPU.smi`` keeps the facts AICR v0.11.1 took from ``nvidia-smi -q -x`` (so ``GPU.smi.driver``
constraints of older recipes resolve): ``driver``, ``cuda-version``, ``gpu-count`` and, of the first
GPU, ``gpu.model``, ``gpu.product-architecture``, ``gpu.display-mode``, ``gpu.display-active``,
``gpu.persistence-mode``, ``gpu.addressing-mode``, ``gpu.vbios-version``,
``gpu.gsp-firmware-version``. A field the driver does not print is left out (not written as ``""``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from aicr_pytest.snapshot.measure import Data

NVIDIA_VENDOR: Final = "10de"
GPU_CLASSES: Final = frozenset({"0300", "0302"})
DETECTION_SOURCE: Final = "sysfs"
DRIVER_MODULE: Final = "nvidia"

#: PCI device id -> AICR accelerator SKU (the data of AICR's ``gpu/device_ids.go``).
DEVICE_SKUS: Final[Mapping[str, str]] = {
    **dict.fromkeys(("15f7", "15f8", "15f9"), "p100"),
    "1b38": "p40",
    "1b39": "p10",
    "1bb3": "p4",
    "1bb4": "p6",
    **dict.fromkeys(("1db1", "1db4", "1db5", "1db6", "1db8", "1df5"), "v100"),
    "1df6": "v100s",
    "1e35": "t10",
    "1e38": "t40",
    "1eb8": "t4",
    **dict.fromkeys(("20b0", "20b1", "20b2", "20b3", "20b5", "20f1"), "a100"),
    "20b7": "a30",
    **dict.fromkeys(("20bd", "20f3", "20f5", "20f6"), "a800"),
    "2235": "a40",
    "2236": "a10",
    "25b6": "a16",
    **dict.fromkeys(("2330", "2331", "2336", "2337", "2338", "2339", "233d"), "h100"),
    **dict.fromkeys(("2335", "233b"), "h200"),
    **dict.fromkeys(("2322", "2324"), "h800"),
    **dict.fromkeys(("230c", "230e", "2329", "232c"), "h20"),
    **dict.fromkeys(("2342", "2348"), "gh200"),
    "26b5": "l40",
    "26b8": "l40g",
    "26b9": "l40s",
    **dict.fromkeys(("26b7", "26ba"), "l20"),
    "27b6": "l2",
    "27b8": "l4",
    **dict.fromkeys(("2901", "2909"), "b200"),
    **dict.fromkeys(("2920", "29bc"), "b100"),
    "2941": "gb200",
    "3182": "b300",
    **dict.fromkeys(("31a1", "31c2", "31c3"), "gb300"),
    **dict.fromkeys(("2bb1", "2bb4", "2bb5"), "rtx-pro-6000"),
}

#: ``GPU.smi`` key -> element of the first ``<gpu>`` of ``nvidia-smi -q -x``.
SMI_GPU_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("gpu.model", "product_name"),
    ("gpu.product-architecture", "product_architecture"),
    ("gpu.display-mode", "display_mode"),
    ("gpu.display-active", "display_active"),
    ("gpu.persistence-mode", "persistence_mode"),
    ("gpu.addressing-mode", "addressing_mode"),
    ("gpu.vbios-version", "vbios_version"),
    ("gpu.gsp-firmware-version", "gsp_firmware_version"),
)

MSG_XML_INVALID: Final = "nvidia-smi -q -x printed no valid XML: {error}"
MSG_XML_ROOT: Final = "nvidia-smi -q -x printed <{tag}>, expected <nvidia_smi_log>"
MSG_XML_ENTITY: Final = "nvidia-smi -q -x output declares XML entities; refusing to expand them"


class SmiParseError(ValueError):
    """The ``nvidia-smi -q -x`` text is not the driver's XML report."""


@dataclass(frozen=True)
class PciDevice:
    """One PCI function: ``0000:53:00.0 0x10de 0x2330 0x030200`` as the agent prints it."""

    address: str
    vendor: str
    device: str
    pci_class: str

    @property
    def is_nvidia_gpu(self) -> bool:
        return self.vendor == NVIDIA_VENDOR and self.pci_class[:4] in GPU_CLASSES


def _hex(value: str) -> str:
    return value.strip().lower().removeprefix("0x")


def parse_pci(text: str) -> list[PciDevice]:
    """Lines ``<address> <vendor> <device> <class>`` (sysfs ``0x`` hex); malformed lines are skipped."""
    devices: list[PciDevice] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 4:
            continue
        vendor, device, pci_class = (_hex(f) for f in fields[1:])
        if not all(v and all(c in "0123456789abcdef" for c in v) for v in (vendor, device, pci_class)):
            continue
        devices.append(PciDevice(fields[0], vendor, device, pci_class.rjust(6, "0")))
    return devices


def sku_for_device(device_id: str) -> str:
    return DEVICE_SKUS.get(_hex(device_id), "")


def gpu_hardware(devices: Iterable[PciDevice], *, driver_loaded: bool) -> Data:
    """The ``GPU.hardware`` data for a node's PCI devices."""
    gpus = [d for d in devices if d.is_nvidia_gpu]
    skus = {sku_for_device(d.device) for d in gpus}
    data: Data = {
        "gpu-present": bool(gpus),
        "gpu-count": len(gpus),
        "driver-loaded": driver_loaded,
        "detection-source": DETECTION_SOURCE,
    }
    if len(skus) == 1 and "" not in skus:
        data["model"] = skus.pop()
    return data


def _text(element: ET.Element | None) -> str:
    return " ".join((element.text or "").split()) if element is not None else ""


def parse_nvidia_smi_xml(text: str) -> Data:
    """The ``GPU.smi`` data of an ``nvidia-smi -q -x`` report; raises :class:`SmiParseError`."""
    start = text.find("<")
    body = text[start:] if start >= 0 else text
    if "<!ENTITY" in body:
        raise SmiParseError(MSG_XML_ENTITY)
    try:
        root = ET.fromstring(body)
    except ET.ParseError as err:
        raise SmiParseError(MSG_XML_INVALID.format(error=err)) from None
    if root.tag != "nvidia_smi_log":
        raise SmiParseError(MSG_XML_ROOT.format(tag=root.tag))
    gpus = root.findall("gpu")
    data: Data = {"gpu-count": len(gpus)}
    for key, tag in (("driver", "driver_version"), ("cuda-version", "cuda_version")):
        value = _text(root.find(tag))
        if value:
            data[key] = value
    if gpus:
        for key, tag in SMI_GPU_FIELDS:
            value = _text(gpus[0].find(tag))
            if value:
                data[key] = value
    return data


def has_gpu(*datas: Data | None) -> bool:
    """Whether any GPU data reports ``gpu-count`` > 0 (what ``--require-gpu`` asks for)."""
    for data in datas:
        count = (data or {}).get("gpu-count")
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            return True
    return False


__all__ = [
    "DETECTION_SOURCE",
    "DEVICE_SKUS",
    "DRIVER_MODULE",
    "PciDevice",
    "SmiParseError",
    "gpu_hardware",
    "has_gpu",
    "parse_nvidia_smi_xml",
    "parse_pci",
    "sku_for_device",
]
