"""Where the data that ships with aicr-pytest lives: the bundled checks, recipes, runtimes and RBAC.

In the repository they are the top-level ``checks/``, ``recipes/``, ``runtimes/`` and ``deploy/`` folders; the
wheel carries them inside the package (``aicr_pytest/checks`` …), so they never become top-level
packages that could shadow a user's own ``checks``.  Callers ask here instead of guessing.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

Bundled = Literal["checks", "recipes", "runtimes", "deploy"]

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


@cache
def bundled_dir(name: Bundled) -> Path:
    """The directory of bundled ``name``: inside the installed package, else the source checkout."""
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"aicr-pytest installation is incomplete: no bundled {name}/ directory")


__all__ = ["Bundled", "bundled_dir"]
