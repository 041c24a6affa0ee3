"""The conformance phase: every conformance check of the catalog, one parametrized test.

The catalog rows name this test (``CheckSpec.test``) and the check's family function
(``CheckSpec.entry``, a ``run_<check>(ctx)`` of :mod:`aicr_pytest.conformance`); the plugin
parametrizes the test once per row. The context comes from the ``conformance`` fixture
(``conftest.py``); the CNCF evidence collector calls the same functions outside pytest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aicr_pytest import conformance as family  # lazy: a check's module is imported when it runs

if TYPE_CHECKING:
    from aicr_pytest import CheckContext
    from aicr_pytest.conformance.context import ConformanceContext


def test_conformance(aicr_check: CheckContext, conformance: ConformanceContext) -> None:
    family.check_function(aicr_check.name)(conformance)
