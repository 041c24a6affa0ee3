"""Node health: which GPU node is broken?  ``gpu-inventory``, ``gpu-diagnostics``, ``gpu-health``,
``gpu-cuda-smoke``.

aicr-pytest extensions (AICR's catalog has none of them): they run when ``--node-health`` is
given or the recipe names them.  The logic lives in :mod:`aicr_pytest.health`; these tests only
wire fixtures to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aicr_pytest.core.records import HEALTH_TABLE_KEY
from aicr_pytest.health import cluster as health_cluster
from aicr_pytest.health import cudasmoke_run, diagnostics_run, exporter_run, knobs

if TYPE_CHECKING:  # annotations only
    from aicr_pytest.core.check import CheckContext
    from aicr_pytest.core.clock import Clock
    from aicr_pytest.core.policy import AllocationPolicy
    from aicr_pytest.core.records import HealthRow
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.kube.client import Cluster
    from aicr_pytest.kube.run import RunScope


def test_gpu_inventory(
    aicr_check: CheckContext,
    aicr_cluster: Cluster,
    aicr_settings: Settings,
    aicr_allocation_policy: AllocationPolicy,
) -> None:
    extra: dict[str, object] = {}
    try:
        health_cluster.run_gpu_inventory(
            aicr_cluster,
            policy=aicr_allocation_policy.mode,
            node_selector=aicr_check.node_selector,
            emit=aicr_check.emit,
            extra=extra,
            allow_fake_nodes=aicr_settings.allow_fake_nodes,
        )
    finally:
        if extra:
            aicr_check.extra["aicr.gpuInventory"] = extra


def test_gpu_diagnostics(
    aicr_check: CheckContext,
    aicr_cluster: Cluster,
    aicr_run: RunScope,
    aicr_settings: Settings,
    aicr_allocation_policy: AllocationPolicy,
    aicr_clock: Clock,
) -> None:
    record = diagnostics_run.DiagnosticsRun()
    try:
        diagnostics_run.run_gpu_diagnostics(
            aicr_cluster,
            aicr_run,
            image=knobs.dcgm_image(aicr_settings),
            level=knobs.diag_level(aicr_settings),
            policy=aicr_allocation_policy.mode,
            node_selector=aicr_check.node_selector,
            tolerations=aicr_check.tolerations,
            clock=aicr_clock,
            emit=aicr_check.emit,
            record=record,
        )
    finally:
        if record.namespace:
            aicr_check.extra["aicr.gpuDiagnostics"] = record.as_extra()
        if record.rows:
            aicr_check.extra[HEALTH_TABLE_KEY] = [r.to_json() for r in record.rows]


def test_gpu_health(
    aicr_check: CheckContext,
    aicr_cluster: Cluster,
    aicr_settings: Settings,
    aicr_allocation_policy: AllocationPolicy,
    aicr_clock: Clock,
) -> None:
    extra: dict[str, object] = {}
    rows: list[HealthRow] = []
    try:
        exporter_run.run_gpu_health(
            aicr_cluster,
            thresholds=knobs.health_thresholds(aicr_settings),
            policy=aicr_allocation_policy.mode,
            node_selector=aicr_check.node_selector,
            clock=aicr_clock,
            emit=aicr_check.emit,
            extra=extra,
            rows=rows,
            allow_fake_nodes=aicr_settings.allow_fake_nodes,
        )
    finally:
        if extra:
            aicr_check.extra["aicr.gpuHealth"] = extra
        if rows:
            aicr_check.extra[HEALTH_TABLE_KEY] = [r.to_json() for r in rows]


def test_gpu_cuda_smoke(
    aicr_check: CheckContext,
    aicr_settings: Settings,
    aicr_cluster: Cluster,
    aicr_run: RunScope,
    aicr_allocation_policy: AllocationPolicy,
    aicr_clock: Clock,
) -> None:
    record = cudasmoke_run.SmokeRun()
    try:
        cudasmoke_run.run_gpu_cuda_smoke(
            aicr_cluster,
            aicr_run,
            image=knobs.cuda_smoke_image(aicr_settings),
            policy=aicr_allocation_policy.mode,
            node_selector=aicr_check.node_selector,
            tolerations=aicr_check.tolerations,
            clock=aicr_clock,
            emit=aicr_check.emit,
            record=record,
        )
    finally:
        if record.namespace:
            aicr_check.extra["aicr.gpuCudaSmoke"] = record.as_extra()
