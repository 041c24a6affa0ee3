"""Opting in to the node-health checks: ``--node-health`` and ``-m health``."""

from __future__ import annotations

import pytest

from aicr_pytest.core import catalog
from aicr_pytest.core.inputs import with_node_health
from aicr_pytest.plugin.collection import markexpr_asks_for


@pytest.mark.parametrize(
    ("expr", "asks"),
    [
        ("health", True),
        ("health and deployment", True),
        ("deployment and health", True),
        ("health or conformance", True),
        ("", False),
        ("deployment", False),
        ("not health", False),
        ("deployment and not health", False),
        ("conformance", False),
        ("health and", False),  # malformed: pytest reports it
    ],
)
def test_markexpr_asks_for_health(expr: str, asks: bool) -> None:
    assert markexpr_asks_for(expr, catalog.HEALTH) is asks


def test_with_node_health_appends_each_check_once_in_its_phase() -> None:
    declared = {"deployment": ["operator-health", "gpu-health"], "performance": ["nccl-all-reduce-bw"]}
    out = with_node_health(declared)
    assert out["deployment"] == ["operator-health", "gpu-health", "gpu-inventory", "gpu-diagnostics"]
    assert out["performance"] == ["nccl-all-reduce-bw"]
    assert declared["deployment"] == ["operator-health", "gpu-health"]  # the recipe's list is untouched
    assert with_node_health({}) == {"deployment": ["gpu-inventory", "gpu-diagnostics", "gpu-health"]}
