"""Lazy package re-exports: a name is imported from its module on first use (PEP 562).

A family's ``__init__`` re-exports its public names so ``from aicr_pytest.nccl import evaluate``
works, but importing the package (the plugin registers each family's hooks at start-up) must not
import every module behind them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_exports(
    namespace: MutableMapping[str, Any], names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the package whose ``globals()`` is ``namespace``; its
    ``names`` map to their modules.

    The first access imports the module and caches the value in that namespace (the package's
    own, not whatever ``sys.modules`` holds now: pytester swaps modules in and out).  Every name
    of that module is cached at once, so a function and the exception class it raises always come
    from the same copy of their module, even when the module was imported again in between."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded = importlib.import_module(module)
        for other, where in names.items():
            if where == module and other not in namespace and hasattr(loaded, other):
                namespace[other] = getattr(loaded, other)
        return namespace[name] if name in namespace else getattr(loaded, name)

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
