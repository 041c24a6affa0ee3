"""The NCCL family's aicr-pytest hooks (light: the family is imported only when it is selected)."""

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
    if __name__ in catalog.hook_modules(checks):  # a check of this family is selected
        from aicr_pytest.nccl.variant import prevalidate

        prevalidate(recipe, settings, data)
