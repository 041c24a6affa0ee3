"""``nccl.prevalidate``: what the session rejects (exit 2) before any NCCL check touches the cluster."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest import nccl
from aicr_pytest.core.datatree import DataTree, embedded_data_root
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.recipe import Recipe

BW, NET = nccl.CHECK_DEFAULT, nccl.CHECK_NET


def recipe(accelerator: str, checks: list[str], **constraints: str) -> Recipe:
    doc: dict[str, Any] = {
        "kind": "RecipeResult",
        "apiVersion": "aicr.run/v1alpha2",
        "criteria": {"service": "eks", "accelerator": accelerator},
        "validation": {
            "performance": {
                "checks": checks,
                "constraints": [{"name": k.replace("_", "-"), "value": v} for k, v in constraints.items()],
            }
        },
    }
    return Recipe.model_validate(doc)


DATA = DataTree(embedded_data_root(), None)


def test_valid_inputs_pass() -> None:
    nccl.prevalidate(recipe("h100", [BW], nccl_all_reduce_bw=">= 300"), None, DATA)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [("== 300", 'uses "=="'), ("300", "has no comparator"), ("> 300", 'unsupported comparator ">"')],
)
def test_bad_comparator_is_a_usage_error(value: str, fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        nccl.prevalidate(recipe("h100", [BW], nccl_all_reduce_bw=value), None, DATA)


def test_an_invalid_fabric_is_rejected_whenever_an_nccl_check_is_selected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the guide: "any other value is rejected"; the value itself still only shapes -net
    monkeypatch.setenv("AICR_NCCL_FABRIC", "bogus")
    for r in (
        recipe("h100", [BW], nccl_all_reduce_bw=">= 300"),
        recipe("gb200", [NET], nccl_all_reduce_bw_net=">= 40"),
        recipe("h100", [BW]),  # even when the check would skip for want of a constraint
    ):
        with pytest.raises(UsageError, match='unsupported AICR_NCCL_FABRIC="bogus"'):
            nccl.prevalidate(r, None, DATA)
    monkeypatch.setenv("AICR_NCCL_FABRIC", "roce")
    nccl.prevalidate(recipe("h100", [BW], nccl_all_reduce_bw=">= 300"), None, DATA)


def test_checks_that_skip_or_fail_are_left_to_the_check() -> None:
    # a profile without the variant skips before the threshold is read; an unknown profile fails
    nccl.prevalidate(
        recipe("h100", [BW], nccl_all_reduce_bw="== 1", nccl_benchmark_profile="gb200/eks"), None, DATA
    )
    nccl.prevalidate(
        recipe("h100", [BW], nccl_all_reduce_bw=">= 1", nccl_benchmark_profile="x/y"), None, DATA
    )
    nccl.prevalidate(recipe("h100", [BW]), None, DATA)  # no constraint: the check skips


def test_runtime_ref_needs_data() -> None:
    with pytest.raises(UsageError, match="no --data source"):
        nccl.prevalidate(
            recipe("gb200", [BW], nccl_all_reduce_bw=">= 1", nccl_benchmark_runtime_ref="gb200/mycloud"),
            None,
            DATA,
        )
