"""The node-health family's aicr-pytest hooks: its knobs are checked before anything touches the cluster."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aicr_pytest.core import catalog

if TYPE_CHECKING:
    from aicr_pytest.core.datatree import DataTree
    from aicr_pytest.core.recipe import Recipe
    from aicr_pytest.core.settings import Settings


def pytest_aicr_prevalidate(
    checks: Sequence[str], recipe: Recipe, settings: Settings, data: DataTree
) -> None:
    if __name__ in catalog.hook_modules(checks):  # a node-health check is selected
        from aicr_pytest.health.knobs import validate_knobs

        validate_knobs(checks, settings)
