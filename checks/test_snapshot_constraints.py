"""Phase constraints whose name addresses the snapshot (e.g. ``GPU.smi.driver-version``).

They are declarative: evaluated against ``--snapshot`` in every mode, ``--no-cluster`` included.
AICR ignores them offline; we evaluate them, fail closed on a missing or unparsable value.
"""

from __future__ import annotations

import pytest

from aicr_pytest import Snapshot
from aicr_pytest.core.constraints import evaluate_constraint


def test_snapshot_constraint(
    aicr_snapshot_constraint: tuple[str, str, str], aicr_snapshot: Snapshot | None
) -> None:
    phase, name, expression = aicr_snapshot_constraint
    if aicr_snapshot is None:
        pytest.fail(
            f"{name}: no snapshot given (--snapshot); cannot evaluate {phase} constraint", pytrace=False
        )
    result = evaluate_constraint(name, expression, aicr_snapshot)
    if result.error:
        pytest.fail(f"{name}: {result.error}", pytrace=False)
    if not result.passed:
        pytest.fail(f"{name}: expected {expression}, got {result.actual}", pytrace=False)
