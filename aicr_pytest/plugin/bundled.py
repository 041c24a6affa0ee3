"""Collecting the checks that ship with aicr-pytest.

The bundled ``checks/`` folder is not a package.  Its files are imported under unique names
(``aicr_pytest.checks.<folder>.<file>``), whatever the user's ``--import-mode`` or rootdir, so a
user's own ``checks`` package or a same-named test file never collides with ours.  pytest's
assertion rewriting still applies: the module is found through ``sys.meta_path`` as pytest does.
Which checks a bundled file and each of its test functions implement is the catalog's ``test``
column (:mod:`aicr_pytest.core.catalog`); the files carry no ``check`` markers.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from aicr_pytest.core import catalog
from aicr_pytest.core.resources import bundled_dir

MODULE_PREFIX = "aicr_pytest.checks"


def not_needed(path: Path, selected: set[str]) -> bool:
    """Whether the bundled file ``path`` implements none of the ``selected`` checks.

    A run imports only the files whose catalog rows are selected (start-up: importing a family
    costs tens of ms); a file no catalog row names is always collected.
    """
    if not is_bundled(path):
        return False
    names = catalog.names_in_file(relative(path))
    return bool(names) and not (names & selected)


def catalog_ref(path: Path, function: str) -> str:
    """How a catalog row names the bundled test ``function`` of ``path``: ``"<file>::<function>"``."""
    return f"{relative(path)}::{function}"


def checks_dir() -> Path:
    return bundled_dir("checks")


def is_bundled(path: Path) -> bool:
    try:
        path.resolve().relative_to(checks_dir())
    except ValueError:
        return False
    return True


def relative(path: Path) -> str:
    """``path`` relative to the bundled ``checks/`` (POSIX form), as the catalog spells it."""
    return path.resolve().relative_to(checks_dir()).as_posix()


def module_name(path: Path) -> str:
    rel = path.resolve().relative_to(checks_dir()).with_suffix("")
    return ".".join((MODULE_PREFIX, *rel.parts))


def import_bundled(path: Path) -> ModuleType:
    name = module_name(path)
    existing = sys.modules.get(name)
    if existing is not None:
        return existing
    spec = None
    for finder in sys.meta_path:  # pytest's assertion rewriter is one of them
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        spec = find_spec(name, [str(path.resolve().parent)])
        if spec is not None:
            break
    if spec is None or spec.loader is None:
        spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a file we ship
        raise ImportError(f"cannot import bundled check {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


class BundledModule(pytest.Module):
    """A bundled check file, imported under its ``aicr_pytest.checks.*`` name."""

    def _getobj(self) -> ModuleType:
        return import_bundled(self.path)
