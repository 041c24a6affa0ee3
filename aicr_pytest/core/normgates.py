"""Shape-normalized gates, ``--normalize-gates`` (aicr-pytest's own, off by default; pure data + arithmetic).

AICR judges every cluster against the recipe's absolute floors, calibrated on one node shape (an
8-GPU H100 node for the H100 recipes). On a 1-, 2- or 4-GPU shape those floors fail healthy
hardware (AICR #1254, #1256, closed upstream as not planned). With ``--normalize-gates``:

* **inference throughput** — the recipe's floor is per node of :data:`CALIBRATED_GPUS` GPUs (by the
  recipe's accelerator); the normalized floor is that per-GPU share times the GPUs the benchmark
  used (:func:`normalized_throughput`);
* **NCCL bus bandwidth** — :data:`NCCL_FACTORS`, by fabric class and GPUs per node, scales the
  recipe's floor (:func:`nccl_factor`); a shape the table does not list keeps the raw floor.

Both tables are data with their source (:data:`CALIBRATED_SOURCE`, :data:`NCCL_SOURCE`).  The CTRF
entry shows the raw and the normalized verdict; the check's verdict is the normalized one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

#: GPUs per node the recipe floors of an accelerator were calibrated on
CALIBRATED_GPUS: Final[Mapping[str, int]] = {
    "h100": 8,
    "h200": 8,
    "b200": 8,
    "a100": 8,
    "gb200": 4,
    "gb300": 4,
}
CALIBRATED_SOURCE: Final = (
    "AICR's recipes are calibrated on the accelerator's standard node: 8 GPUs for H100/H200/B200/A100 "
    "HGX nodes (e.g. AWS p5.48xlarge, GCP a3-megagpu-8g), 4 GPUs for a GB200/GB300 compute tray"
)

#: (fabric class, GPUs per node) → factor on the recipe's NCCL floor.  NCCL's bus bandwidth is
#: normalized by rank count (busbw = algbw × 2(n−1)/n), so on an NVSwitch node it measures the
#: per-GPU bottleneck link and does not depend on how many of the node's GPUs take part: the 4- and
#: 8-GPU NVSwitch shapes keep the floor.  Shapes without NVSwitch (1 or 2 GPUs per node, PCIe) are
#: not listed: no measured, sourced figure exists for them yet, so they keep the raw floor.
NCCL_FACTORS: Final[Mapping[tuple[str, int], float]] = {
    (fabric, gpus): 1.0 for fabric in ("nvlink", "efa", "roce", "tcpxo", "nvls") for gpus in (4, 8)
}
NCCL_SOURCE: Final = (
    "nccl-tests doc/PERFORMANCE.md (bus bandwidth reflects the bottleneck link, independent of the "
    "number of ranks); NVSwitch HGX/NVL nodes give every GPU the same NVLink bandwidth"
)


def fabric_class(variant: str, fabric: str, service: str) -> str:
    """The NCCL table's fabric class of a run: ``nvls`` (MNNVL), ``tcpxo`` (GKE), else the fabric."""
    if variant == "nvls":
        return "nvls"
    return "tcpxo" if service == "gke" else fabric


def normalized_nccl(value: float, fabric: str, gpus_per_node: int) -> tuple[float, float | None]:
    """(the normalized floor, the table's factor); a shape the table does not list keeps ``value``."""
    factor = nccl_factor(fabric, gpus_per_node)
    return (value * factor if factor is not None else value), factor


def calibrated_gpus(accelerator: str | None) -> int | None:
    """The GPUs per node the accelerator's floors assume (``None``: unknown accelerator)."""
    return CALIBRATED_GPUS.get((accelerator or "").strip().lower())


def normalized_throughput(threshold: float, gpus_used: int, calibrated: int) -> float:
    """The throughput floor for ``gpus_used`` GPUs when ``threshold`` is for ``calibrated`` GPUs."""
    if gpus_used <= 0 or calibrated <= 0:
        return threshold
    return threshold * gpus_used / calibrated


def nccl_factor(fabric: str, gpus_per_node: int) -> float | None:
    """The factor on the recipe's NCCL floor (``None``: the table does not list the shape)."""
    return NCCL_FACTORS.get((fabric, gpus_per_node))


__all__ = [
    "CALIBRATED_GPUS",
    "CALIBRATED_SOURCE",
    "NCCL_FACTORS",
    "NCCL_SOURCE",
    "calibrated_gpus",
    "fabric_class",
    "nccl_factor",
    "normalized_nccl",
    "normalized_throughput",
]
