"""Node health: which GPU node is broken?  The domain layer of ``gpu-inventory``,
``gpu-diagnostics``, ``gpu-health``, ``parse dcgm`` and bad-node isolation for the NCCL checks.

The domain modules are plain functions over plain data (no cluster I/O, no pytest); the checks,
the CLI and the simulator call them:

* :mod:`.dcgm` — ``dcgmi diag -r LEVEL -j`` output: the run levels and their time budgets
  (:func:`~.dcgm.diag_level`), the parser (:func:`~.dcgm.parse_diag`), the verdict
  (:func:`~.dcgm.check_diagnostics`) and the offline report of ``parse dcgm``
  (:func:`~.dcgm.analyse`, :func:`~.dcgm.render_text`, :func:`~.dcgm.run_parse_dcgm`).
* :mod:`.inventory` — allocatable vs advertised vs driver-reported GPUs, and the homogeneity of the
  node set in product, GPU count and fabric devices (:func:`~.inventory.inventory`,
  :func:`~.inventory.check_inventory`).
* :mod:`.exporter` — a strict Prometheus text parser for the DCGM exporter and the passive health
  verdict over two scrapes (:func:`~.exporter.check_exporter_health`).
* :mod:`.isolation` — the bad-node isolation planner for NCCL (:func:`~.isolation.isolate`).
* :mod:`.diagnostics` — the ``gpu-diagnostics`` pod and how its end reads (pure).

The cluster I/O of the three checks, each feeding its domain module: :mod:`.cluster` (the targeted
GPU nodes, ``gpu-inventory``), :mod:`.diagnostics_run` (``gpu-diagnostics``), :mod:`.exporter_run`
(``gpu-health``, and ``gpu-inventory``'s driver count from the same exporter pods); :mod:`.knobs`
reads and validates their knobs from the run's settings, and :mod:`.hooks` does so before a run
starts.

Outcomes follow the other families: a ``check_*`` function returns its pass message, raises
:class:`~.common.HealthCheckFailed` (a :class:`~aicr_pytest.core.errors.CheckFailed`: CTRF ``failed``) or
:class:`~aicr_pytest.core.errors.Inconclusive` (CTRF ``other``); bad knobs raise
:class:`~aicr_pytest.core.errors.UsageError` (one line).  Proof that a pod really ran is
:mod:`aicr_pytest.kube.proof` (every family's pods need it).
"""

from __future__ import annotations
