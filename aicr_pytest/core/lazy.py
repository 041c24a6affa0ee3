"""Lazy package re-exports: a name is imported from its module on first use (PEP 562).

A family's ``__init__`` re-exports its public names so ``from aicr_pytest.nccl import evaluate``
works, but importing the package (the plugin registers each family's hooks at start-up) must not
import every module behind them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``names`` map to their modules.

    The first access imports the module and caches the value in the package's namespace."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
