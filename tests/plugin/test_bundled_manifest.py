"""The bundled files' manifest (which checks each implements) matches their markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicr_pytest.core import catalog
from aicr_pytest.plugin import bundled


def _marked_checks(path: Path) -> set[str]:
    module = bundled.import_bundled(path)
    names: set[str] = set()
    for obj in vars(module).values():
        for mark in getattr(obj, "pytestmark", ()):
            if mark.name == "check":
                names.update(str(a) for a in mark.args)
    return names


def test_manifest_lists_every_implementing_file_with_its_checks() -> None:
    root = bundled.checks_dir()
    found = {}
    for path in sorted(root.rglob("test_*.py")):
        names = _marked_checks(path)
        if names:
            found[path.relative_to(root).as_posix()] = frozenset(names)
    assert found == bundled.IMPLEMENTS
    for names in found.values():
        assert names <= set(catalog.BY_NAME)


@pytest.mark.parametrize(
    ("rel", "selected", "skip"),
    [
        ("performance/test_inference_perf.py", {"nccl-all-reduce-bw"}, True),
        ("performance/test_inference_perf.py", {"inference-perf"}, False),
        ("test_catalog_placeholders.py", set(), False),  # not listed: always collected
        ("test_snapshot_constraints.py", set(), False),
    ],
)
def test_not_needed(rel: str, selected: set[str], skip: bool) -> None:
    assert bundled.not_needed(bundled.checks_dir() / rel, selected) is skip
    assert bundled.not_needed(Path("/elsewhere") / rel, selected) is False
