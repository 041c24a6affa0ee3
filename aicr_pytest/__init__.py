"""aicr-pytest: a pytest-native validator for GPU Kubernetes clusters.

The public API for check authors: everything a check needs is importable from here.

* Outcomes: :class:`CheckFailed` (CTRF ``failed``), :class:`CheckSkip` (``skipped``),
  :class:`Inconclusive` (``other``), :class:`UsageError` (the run exits 2).
* The check's context (the ``aicr_check`` fixture): :class:`CheckContext`, with the records it
  takes, :class:`Measurement`, and the recipe's :class:`Constraint`.
* The types of the other fixtures: :class:`Recipe` (``aicr_recipe``), :class:`Snapshot`
  (``aicr_snapshot``), :class:`AllocationPolicy` (``aicr_allocation_policy``), :class:`DataTree`
  (``aicr_data_tree``), :class:`Settings` (``aicr_settings``), :class:`Cluster` (``aicr_cluster``),
  :class:`RunScope` (``aicr_run``), :class:`Clock` (``aicr_clock``).

Only the exception types (and ``__version__``) are imported with the package; every other name
is imported on first use, so ``import aicr_pytest`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aicr_pytest.core.errors import CheckFailed, CheckSkip, Inconclusive, UsageError
from aicr_pytest.core.lazy import lazy_exports
from aicr_pytest.core.version import __version__

if TYPE_CHECKING:  # at run time each name is imported on first use (start-up time)
    from aicr_pytest.core.check import CheckContext
    from aicr_pytest.core.clock import Clock
    from aicr_pytest.core.datatree import DataTree
    from aicr_pytest.core.policy import AllocationPolicy
    from aicr_pytest.core.recipe import Constraint, Recipe
    from aicr_pytest.core.records import Measurement
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.core.snapshot import Snapshot
    from aicr_pytest.kube.client import Cluster
    from aicr_pytest.kube.run import RunScope


_LAZY = {
    "AllocationPolicy": "aicr_pytest.core.policy",
    "CheckContext": "aicr_pytest.core.check",
    "Clock": "aicr_pytest.core.clock",
    "Cluster": "aicr_pytest.kube.client",
    "Constraint": "aicr_pytest.core.recipe",
    "DataTree": "aicr_pytest.core.datatree",
    "Measurement": "aicr_pytest.core.records",
    "Recipe": "aicr_pytest.core.recipe",
    "RunScope": "aicr_pytest.kube.run",
    "Settings": "aicr_pytest.core.settings",
    "Snapshot": "aicr_pytest.core.snapshot",
}

__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

__all__ = [
    "AllocationPolicy",
    "CheckContext",
    "CheckFailed",
    "CheckSkip",
    "Clock",
    "Cluster",
    "Constraint",
    "DataTree",
    "Inconclusive",
    "Measurement",
    "Recipe",
    "RunScope",
    "Settings",
    "Snapshot",
    "UsageError",
    "__version__",
]
