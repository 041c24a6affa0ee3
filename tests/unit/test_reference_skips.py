"""The test command's one line about compat tests skipped for missing reference data."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import pytest_terminal_summary, reference_skips


class Reporter:
    def __init__(self, skipped: list[Any]) -> None:
        self.stats = {"skipped": skipped}
        self.lines: list[str] = []

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def _skip(reason: str) -> SimpleNamespace:
    return SimpleNamespace(longrepr=("conftest.py", 28, f"Skipped: {reason}"))


def test_only_reference_skips_are_counted_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AICR_SHARED_DIR", str(tmp_path / "shared"))
    monkeypatch.setenv("AICR_TEST_ARTIFACTS", str(tmp_path / "artifacts"))
    missing = f"reference data not found at {tmp_path / 'shared' / 'reference'} (set AICR_SHARED_DIR)"
    reporter = Reporter([_skip(missing), _skip("chromium not installed"), _skip(missing)])
    assert reference_skips(reporter) == 2
    pytest_terminal_summary(reporter, 0, None)  # type: ignore[arg-type]
    assert reporter.lines == [
        f"2 compat test(s) skipped: AICR's reference data is not at {tmp_path / 'shared' / 'reference'} "
        "(check out the shared reference data beside this repository, or set AICR_SHARED_DIR; "
        "see CONTRIBUTING.md)"
    ]


def test_no_line_without_reference_skips(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AICR_TEST_ARTIFACTS", str(tmp_path / "artifacts"))
    reporter = Reporter([_skip("chromium not installed")])
    pytest_terminal_summary(reporter, 0, None)  # type: ignore[arg-type]
    assert reporter.lines == []


def test_tests_that_read_the_reference_data_are_compat(request: pytest.FixtureRequest) -> None:
    """Every collected test that asks for ``reference_dir`` carries the ``compat`` marker."""
    items = request.session.items
    readers = [i for i in items if "reference_dir" in getattr(i, "fixturenames", ())]
    assert all(i.get_closest_marker("compat") is not None for i in readers)
