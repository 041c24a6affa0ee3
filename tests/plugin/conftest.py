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


@pytest.fixture(scope="session")
def ctrf_validator() -> Any:
    """A validator of the official CTRF schema, with format checks: the schema in
    ``../shared/reference/ctrf`` when it is there, else the copy the ``ctrf`` npm package ships
    (``scripts/ctrf.sh install``, a stage of the test command); neither: skip with the reason
    (fail when ``AICR_REQUIRE_REFERENCE=1`` or ``AICR_REQUIRE_CTRF_JS=1``)."""
    import json
    import os

    import jsonschema

    from tests.plugin.helpers import ctrf_js_dir

    shared = Path(os.environ.get("AICR_SHARED_DIR", Path(__file__).resolve().parents[2].parent / "shared"))
    candidates = [
        shared / "reference" / "ctrf" / "ctrf.schema.json",
        *sorted((ctrf_js_dir() / "node_modules" / "ctrf" / "dist").glob("ctrf-schema-*.json")),
    ]
    for path in candidates:
        if path.is_file():
            schema = json.loads(path.read_text(encoding="utf-8"))
            checker = jsonschema.FormatChecker()  # every format it knows, uuid and date-time too
            return jsonschema.Draft7Validator(schema, format_checker=checker)
    reason = f"no CTRF schema: neither {candidates[0]} nor the ctrf npm package (scripts/ctrf.sh install)"
    if os.environ.get("AICR_REQUIRE_REFERENCE") == "1" or os.environ.get("AICR_REQUIRE_CTRF_JS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


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
