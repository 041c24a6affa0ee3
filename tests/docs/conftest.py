"""A copy of the docs site, built once per session (per xdist worker)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.harness import docs


def copy_site(target: Path) -> Path:
    """A copy of ``docs/`` (without build output) under ``target``, beside the files it includes."""
    site = target / "docs"
    shutil.copytree(docs.DOCS, site, ignore=shutil.ignore_patterns("_build", "generated", "__pycache__"))
    for name in ("CHANGELOG.md", "CONTRIBUTING.md"):
        shutil.copy(docs.REPO / name, target / name)
    return site


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML of the docs site as it is in this checkout, built with warnings as errors."""
    root = tmp_path_factory.mktemp("site")
    html = root / "html"
    proc = docs.build(copy_site(root), html)
    assert proc.returncode == 0, f"the docs build failed:\n{proc.stdout}\n{proc.stderr}"
    return html
