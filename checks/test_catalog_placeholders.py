"""Stand-in items for catalog checks that have no implementation yet.

The plugin deselects the placeholder of every check that a real test implements, so a recipe
that declares a not-yet-implemented check reports it as skipped ("not implemented yet"), never as
passed and never silently dropped.
"""

from __future__ import annotations

import pytest

from aicr_pytest.plugin.check import CheckContext
from aicr_pytest.report.outcome import SKIP_NOT_IMPLEMENTED


@pytest.mark.aicr_placeholder
def test_check(check: CheckContext) -> None:
    pytest.skip(SKIP_NOT_IMPLEMENTED)
