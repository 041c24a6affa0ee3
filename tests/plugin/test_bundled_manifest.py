"""The catalog's ``test`` column is how the bundled files are tied to their checks.

Collecting the bundled checks with a recipe that declares every catalog check yields, for each
row, one item of exactly the test function the row names; which bundled files a run imports
follows the same column.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aicr_pytest.core import catalog
from aicr_pytest.plugin import bundled
from tests.plugin.helpers import every_check_recipe

Inputs = Callable[..., tuple[Path, Path]]


def test_every_row_collects_as_the_bundled_test_it_names(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    rp, sp = write_inputs(every_check_recipe())
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider", "--recipe", str(rp), "--snapshot", str(sp))
    collected: dict[str, list[str]] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        name = callspec.params.get("aicr_check") if callspec is not None else None
        if name is not None:
            assert isinstance(item, pytest.Function)
            collected.setdefault(str(name), []).append(bundled.catalog_ref(item.path, item.originalname))
    assert collected == {c.name: [c.test] for c in catalog.CATALOG}
    # a test function several rows name (every conformance check, the NCCL variants) is one item
    # per row
    shared = {c.test for c in catalog.CATALOG if len(catalog.names_of_test(str(c.test))) > 1}
    assert shared == {
        "conformance/test_conformance.py::test_conformance",
        "performance/test_nccl_all_reduce.py::test_nccl_all_reduce_bw",
    }
    conformance = catalog.names_of_test("conformance/test_conformance.py::test_conformance")
    assert conformance == catalog.names_in_phase("conformance")


def test_names_in_file_follows_the_rows() -> None:
    assert catalog.names_in_file("performance/test_nccl_all_reduce.py") == {
        "nccl-all-reduce-bw",
        "nccl-all-reduce-bw-net",
        "nccl-all-reduce-bw-nvls",
    }
    assert catalog.names_in_file("test_snapshot_constraints.py") == frozenset()


@pytest.mark.parametrize(
    ("rel", "selected", "skip"),
    [
        ("performance/test_inference_perf.py", {"nccl-all-reduce-bw"}, True),
        ("performance/test_inference_perf.py", {"inference-perf"}, False),
        ("test_catalog_placeholders.py", set(), False),  # no row names it: always collected
        ("test_snapshot_constraints.py", set(), False),
    ],
)
def test_not_needed(rel: str, selected: set[str], skip: bool) -> None:
    assert bundled.not_needed(bundled.checks_dir() / rel, selected) is skip
    assert bundled.not_needed(Path("/elsewhere") / rel, selected) is False
