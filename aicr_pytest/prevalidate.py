"""Check-specific input validation that must happen before anything touches the cluster.

Some recipe values only a check understands (an NCCL runtime ref, inference knobs and
comparators).  AICR finds a wrong one inside the check, sometimes after a 30-minute benchmark;
we validate them when the run starts, so a mistake is a usage error (exit 2) with nothing created.

Each check family exposes ``prevalidate(recipe, settings, data) -> None`` raising
:class:`~aicr_pytest.errors.UsageError`; this module maps selected check names to them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

from aicr_pytest.datatree import DataTree
from aicr_pytest.recipe import Recipe
from aicr_pytest.settings import Settings

Prevalidator = Callable[[Recipe, Settings, DataTree], None]

#: check name -> "module:function"
PREVALIDATORS: dict[str, str] = {
    "nccl-all-reduce-bw": "aicr_pytest.nccl:prevalidate",
    "nccl-all-reduce-bw-net": "aicr_pytest.nccl:prevalidate",
    "nccl-all-reduce-bw-nvls": "aicr_pytest.nccl:prevalidate",
    "inference-perf": "aicr_pytest.inference:prevalidate",
}


def _load(target: str) -> Prevalidator | None:
    module_name, _, attr = target.partition(":")
    fn = getattr(importlib.import_module(module_name), attr, None)
    return fn if callable(fn) else None


def run_prevalidators(check_names: Iterable[str], recipe: Recipe, settings: Settings, data: DataTree) -> None:
    """Run each distinct prevalidator once for the selected checks."""
    done: set[str] = set()
    for name in check_names:
        target = PREVALIDATORS.get(name)
        if target is None or target in done:
            continue
        done.add(target)
        fn = _load(target)
        if fn is not None:
            fn(recipe, settings, data)
