"""The docs site for the tests: its generator module and a build of it.

``docs/_ext/aicr_docs.py`` is not part of the package (Sphinx loads it from ``docs/_ext``), so the
tests load it from its path here.  :func:`build` runs the build exactly as the test command's
``docs`` stage does (warnings are errors, missing link targets too), into a folder of the test's.
"""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
#: the build command of ``scripts/test.sh``'s docs stage, less its source and target folders
SPHINX = (sys.executable, "-m", "sphinx", "-E", "-a", "-W", "--keep-going", "-n", "-q", "-b", "html")


@functools.cache
def generator() -> ModuleType:
    """``docs/_ext/aicr_docs.py``, imported once under its own name."""
    spec = importlib.util.spec_from_file_location("aicr_docs", DOCS / "_ext" / "aicr_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("aicr_docs", module)
    spec.loader.exec_module(module)
    return module


def build(source: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """Build the site in ``source`` into ``target``; its output says what a failure was."""
    return subprocess.run(
        [*SPHINX, str(source), str(target)], capture_output=True, text=True, timeout=600, check=False
    )
