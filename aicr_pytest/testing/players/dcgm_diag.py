"""DCGM diag player: ``gpu-diagnostics`` pods print a ``dcgmi diag -r LEVEL -j`` document.

When a pod labelled ``app.kubernetes.io/name: aicr-dcgm-diag`` is created, this player scripts it:
it starts after 2 s, runs for a few seconds (level 1: 3 s up to level 4: 30 s; far shorter than
DCGM's own, so ``--simulate`` runs stay quick) and its log is a document in the shape of DCGM's JSON
schema, for the GPUs the pod holds on the node it is pinned to (its ``nvidia.com/gpu`` limit,
capped by the node's allocatable).  The suites follow DCGM's levels: level 1 runs the
``software`` deployment checks, level 2 adds ``pcie`` and ``memory``, level 3 ``targeted_stress``
and ``diagnostic``, level 4 ``memtest``.  Serial numbers are derived from node and index.

Faults (``profile.faults``):

* ``gpu-diag-fail`` -- the last GPU of the last GPU node in name order fails the ``memory`` test
  (so a level-2 or higher diag fails there; level 1 runs no memory test and passes, as DCGM's
  would); the pod exits non-zero, as ``dcgmi diag`` does when a test fails.

Per-node durations: ``fc.state["dcgm_diag"] = {"run_for_s": {node: seconds}}`` makes the diag on
``node`` run that long instead (read when the pod is created; a benchmark's slow nodes).

A test that registers its own matching :class:`PodScript` before the check runs overrides this
player for the pods it matches.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import TYPE_CHECKING, Any, Final

from aicr_pytest.testing.players.podscripts import script_each_pod
from aicr_pytest.testing.simulator import PodScript, Simulator, parse_quantity
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = ["APP_LABEL", "FAULT_DIAG_FAIL", "RUN_FOR_S", "START_AFTER_S", "diag_document", "install"]

APP_LABEL: Final = ("app.kubernetes.io/name", "aicr-dcgm-diag")
FAULT_DIAG_FAIL: Final = "gpu-diag-fail"
DCGM_VERSION: Final = "4.2.3"
DEFAULT_DRIVER: Final = "580.95.05"
#: (category, test) per level, cumulative
SUITES: Final = {
    1: (("Deployment", "software"),),
    2: (("Integration", "pcie"), ("Hardware", "memory")),
    3: (("Stress", "targeted_stress"), ("Hardware", "diagnostic")),
    4: (("Hardware", "memtest"),),
}
#: how long a simulated diag runs: far shorter than DCGM's, so `--simulate` runs stay quick
RUN_FOR_S: Final = {1: 3.0, 2: 10.0, 3: 20.0, 4: 30.0}
#: seconds from a diag pod's binding to its container starting
START_AFTER_S: Final = 2.0
FAILED_TEST: Final = "memory"
#: the warning the failing GPU reports (simulated; the id is not one of DCGM's documented codes)
FAILED_WARNING: Final = "GPU {index}: memory test found 3 uncorrectable errors (simulated fault)"
FAILED_ERROR_ID: Final = 999
_LEVEL: Final = re.compile(r"-r\s+(\d)")


def serial_of(node: str, index: int) -> str:
    return f"{1650000000000 + zlib.crc32(node.encode()) % 100000 * 100 + index}"


def diag_document(
    node: str, gpus: int, level: int, *, failing_gpu: int | None = None, driver: str = DEFAULT_DRIVER
) -> dict[str, Any]:
    """The ``dcgmi diag -r level -j`` document of ``gpus`` GPUs on ``node`` (``failing_gpu`` fails
    the memory test when the level runs it)."""
    categories: dict[str, list[dict[str, Any]]] = {}
    for lv in range(1, level + 1):
        for category, test in SUITES.get(lv, ()):
            results = []
            for i in range(gpus):
                result: dict[str, Any] = {
                    "entity_group": "GPU",
                    "entity_group_id": 1,
                    "entity_id": i,
                    "status": "Pass",
                }
                if test == FAILED_TEST and i == failing_gpu:
                    result["status"] = "Fail"
                    result["warnings"] = [
                        {
                            "error_category": 3,
                            "error_id": FAILED_ERROR_ID,
                            "error_severity": 2,
                            "warning": FAILED_WARNING.format(index=i),
                        }
                    ]
                results.append(result)
            failed = any(r["status"] == "Fail" for r in results)
            categories.setdefault(category, []).append(
                {"name": test, "results": results, "test_summary": {"status": "Fail" if failed else "Pass"}}
            )
    entities = [{"entity_id": i, "device_id": "2330", "serial_num": serial_of(node, i)} for i in range(gpus)]
    return {
        "DCGM Diagnostic": {"test_categories": [{"category": c, "tests": t} for c, t in categories.items()]},
        "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": entities}],
        "metadata": {"version": DCGM_VERSION, "Driver Version Detected": driver},
    }


def _is_diag_pod(pod: Obj) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(APP_LABEL[0]) == APP_LABEL[1]


def _level(pod: Obj) -> int:
    for c in (pod.get("spec") or {}).get("containers") or []:
        text = " ".join(str(x) for x in (c.get("command") or []) + (c.get("args") or []))
        m = _LEVEL.search(text)
        if m:
            return int(m.group(1))
    return 1


def _held_gpus(sim: Simulator, pod: Obj) -> int:
    node = (
        sim.store.peek(sim.rt("v1", "Node"), None, str((pod.get("spec") or {}).get("nodeName") or "")) or {}
    )
    installed = int(
        parse_quantity(((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", 0))
    )
    held = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        limits = (c.get("resources") or {}).get("limits") or {}
        held += int(parse_quantity(limits.get("nvidia.com/gpu", 0)))
    return min(held, installed)


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Script every diag pod (and the ``gpu-diag-fail`` fault)."""
    failing_node = None
    if FAULT_DIAG_FAIL in profile.faults:
        nodes = sorted(profile.gpu_node_names())
        failing_node = nodes[-1] if nodes else None

    def build(sim: Simulator, pod: Obj) -> PodScript:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        gpus, level = _held_gpus(sim, pod), _level(pod)
        failing = gpus - 1 if node == failing_node and gpus > 0 and level >= 2 else None
        doc = diag_document(node, gpus, level, failing_gpu=failing)
        per_node = (fc.state.get("dcgm_diag") or {}).get("run_for_s") or {}
        script = PodScript(
            start_after=START_AFTER_S,
            run_for=float(per_node.get(node, RUN_FOR_S.get(level, 3.0))),
            times=1,
            exit_code=1 if failing is not None else 0,
        )
        script.logs = json.dumps(doc, indent=2) + "\n"
        return script

    script_each_pod(fc, _is_diag_pod, build)
