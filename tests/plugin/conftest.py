"""Fixtures for pytester-driven plugin tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# In-process pytester runs restore sys.modules afterwards; modules first imported inside one run
# would be imported again by the next, leaving two copies of each exception class.  Import the
# whole package up front so every run shares one copy.
from aicr_pytest.core import yamlio
from tests.plugin.helpers import SNAPSHOT, make_recipe


@pytest.fixture
def write_inputs(pytester: pytest.Pytester) -> Callable[..., tuple[Path, Path]]:
    """Write recipe.yaml + snapshot.yaml into the pytester dir and return their paths."""

    def write(
        recipe: dict[str, Any] | str | None = None, snapshot: dict[str, Any] | str | None = None
    ) -> tuple[Path, Path]:
        r = recipe if recipe is not None else make_recipe(deployment=["operator-health"])
        s = snapshot if snapshot is not None else SNAPSHOT
        rp = pytester.path / "recipe.yaml"
        sp = pytester.path / "snapshot.yaml"
        rp.write_text(r if isinstance(r, str) else yamlio.dump(r))
        sp.write_text(s if isinstance(s, str) else yamlio.dump(s))
        return rp, sp

    return write
