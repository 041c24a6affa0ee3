"""Test controllers for the node-health checks on the real control plane (the same answers as on the fake).

* :class:`DcgmDiagPods` -- plays ``gpu-diagnostics``' pods (a :class:`~.controlplane_players.PodPlayer`
  for :data:`DIAG_SELECTOR`): each prints the ``dcgmi diag -r LEVEL -j`` document of
  :func:`aicr_pytest.testing.players.dcgm_diag.diag_document` for the GPUs it holds on its node, and
  ends (non-zero when a test failed, as ``dcgmi diag`` does).
* :class:`CudaSmokePods` -- plays ``gpu-cuda-smoke``' pods (for :data:`SMOKE_SELECTOR`): each prints
  :func:`aicr_pytest.testing.players.cuda_smoke.smoke_output` for the GPUs it holds on its node
  (``uvm-missing``: that node has no ``/dev/nvidia-uvm`` and every kernel fails, exit 1).
* :class:`ExporterHealth` -- what each DCGM exporter pod answers on ``/metrics`` through the real
  apiserver's pod proxy: :class:`~.controlplane_conformance_ii.MetricsEndpoints` routes every exporter
  pod's IP to its own server here, which answers the shared exporter text plus that node's health
  series (:func:`aicr_pytest.testing.players.gpu_health.health_body`), so ``gpu-health`` sees one
  node per pod.
* :func:`apply_faults` -- the seeded profile's node-health faults, each on the last GPU node of the
  profile in name order: ``gpu-missing`` (one allocatable GPU fewer than the node advertises; the
  node's status is patched, and restored when the fault is gone), ``gpu-diag-fail`` (that node's
  last GPU fails the memory test), ``gpu-xid`` (XID 79 on its last GPU from the pod's second
  scrape on), ``gpu-driver-missing`` (its exporter lists one GPU fewer than GFD advertises).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

__all__ = [
    "DIAG_SELECTOR",
    "SMOKE_SELECTOR",
    "CudaSmokePods",
    "DcgmDiagPods",
    "ExporterHealth",
    "apply_faults",
]

Obj = dict[str, Any]

DIAG_SELECTOR = "app.kubernetes.io/name=aicr-dcgm-diag"
SMOKE_SELECTOR = "app.kubernetes.io/name=aicr-cuda-smoke"
FAULT_MISSING = "gpu-missing"
_LEVEL = re.compile(r"-r\s+(\d)")
GPU = "nvidia.com/gpu"
#: the exit code of a ``dcgmi diag`` whose test failed (any non-zero one would do)
DIAG_FAILED_EXIT = 1


def _int(value: Any) -> int:
    text = str(value or "0")
    return int(text) if text.isdigit() else 0


def _last(nodes: Sequence[str]) -> str | None:
    return sorted(nodes)[-1] if nodes else None


class DcgmDiagPods:
    """A diag pod's output on its node (see the module docstring)."""

    def __init__(
        self, cp: ControlPlane, faults: Callable[[], tuple[str, ...]], target: Callable[[], str | None]
    ) -> None:
        self.cp = cp
        self.faults = faults
        #: the node the faults act on (:func:`apply_faults`' answer for the seeded profile)
        self.target = target

    def __call__(self, pod: Obj, node: Obj) -> dict[str, tuple[str, int]]:
        from aicr_pytest.testing.players import dcgm_diag as player

        name = str(node["metadata"]["name"])
        containers = (pod.get("spec") or {}).get("containers") or []
        held = sum(_int(((c.get("resources") or {}).get("limits") or {}).get(GPU)) for c in containers)
        gpus = min(held, _int(((node.get("status") or {}).get("allocatable") or {}).get(GPU)))
        script = " ".join(
            str(x) for c in containers for x in (c.get("command") or []) + (c.get("args") or [])
        )
        found = _LEVEL.search(script)
        level = int(found.group(1)) if found else 1
        failing = None
        if player.FAULT_DIAG_FAIL in self.faults() and name == self.target() and gpus and level >= 2:
            failing = gpus - 1
        doc = player.diag_document(name, gpus, level, failing_gpu=failing)
        code = DIAG_FAILED_EXIT if failing is not None else 0
        return {str(c.get("name")): (json.dumps(doc, indent=2) + "\n", code) for c in containers}


class CudaSmokePods:
    """A CUDA smoke pod's output on its node (see the module docstring)."""

    def __init__(self, faults: Callable[[], tuple[str, ...]], target: Callable[[], str | None]) -> None:
        self.faults = faults
        #: the node the faults act on (:func:`apply_faults`' answer for the seeded profile)
        self.target = target

    def __call__(self, pod: Obj, node: Obj) -> dict[str, tuple[str, int]]:
        from aicr_pytest.testing.players import cuda_smoke as player

        missing = player.FAULT_UVM_MISSING in self.faults() and node["metadata"]["name"] == self.target()
        text, code = player.smoke_output(player.held_gpus(pod, node), uvm_missing=missing)
        containers = (pod.get("spec") or {}).get("containers") or []
        return {str(c.get("name")): (text, code) for c in containers}


class ExporterHealth:
    """Per exporter pod: the node it runs on, and how often it was scraped (``gpu-xid``)."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.scrapes: dict[str, int] = {}
        self.lock = threading.Lock()
        #: the node the faults act on (:func:`apply_faults`' answer for the seeded profile)
        self.target: str | None = None

    def reset(self) -> None:
        with self.lock:
            self.scrapes.clear()

    def answer(self, pod: Obj, path: str, shared: tuple[int, str], faults: Sequence[str]) -> tuple[int, str]:
        """``shared`` (the exporter text every pod serves) plus the node's health series."""
        from aicr_pytest.testing.players.gpu_health import (
            FAULT_DRIVER_MISSING,
            FAULT_XID,
            driver_gpus,
            health_body,
        )
        from aicr_pytest.testing.players.metrics import dcgm_body

        status, body = shared
        if status != 200 or urlsplit(path).path != "/metrics":
            return status, body
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        node = self.cp.get(f"/api/v1/nodes/{quote(node_name)}")
        name = str(pod["metadata"]["name"])
        with self.lock:
            self.scrapes[name] = self.scrapes.get(name, 0) + 1
            seen = self.scrapes[name]
        missing = FAULT_DRIVER_MISSING in faults and node_name == self.target
        gpus = driver_gpus(node, one_missing=missing)
        if missing:  # the shared text lists the first GPU node's GPUs: this node's driver lost one
            body = dcgm_body(node, gpus=gpus)
        xid = FAULT_XID in faults and node_name == self.target and seen > 1
        return status, body + health_body(node, xid_gpu=gpus - 1 if xid else None, gpus=gpus)


def _capacity(cp: ControlPlane, node: str) -> int:
    return _int(((cp.get(f"/api/v1/nodes/{quote(node)}").get("status") or {}).get("capacity") or {}).get(GPU))


def _set_allocatable(cp: ControlPlane, node: str, gpus: int) -> None:
    cp.request(
        "PATCH",
        f"/api/v1/nodes/{quote(node)}/status",
        {"status": {"allocatable": {GPU: str(gpus)}}},
        content_type="application/strategic-merge-patch+json",
    )


def apply_faults(cp: ControlPlane, faults: Sequence[str], gpu_nodes: Sequence[str]) -> str | None:
    """Play (or undo) ``gpu-missing`` on the profile's last GPU node; returns that node, which the
    other faults act on.  Stateless: every node whose allocatable GPUs fall short of its capacity is
    restored first (the module may be imported anew between tests)."""
    target = _last(gpu_nodes)
    for node in cp.get("/api/v1/nodes")["items"]:
        status = node.get("status") or {}
        capacity = _int((status.get("capacity") or {}).get(GPU))
        if _int((status.get("allocatable") or {}).get(GPU)) < capacity:
            _set_allocatable(cp, str(node["metadata"]["name"]), capacity)
    if target is not None and FAULT_MISSING in faults:
        _set_allocatable(cp, target, _capacity(cp, target) - 1)
    return target
