"""Sphinx configuration of the aicr-pytest docs site (MyST Markdown, the furo theme).

Built by the test command (``scripts/test.sh``) with warnings as errors:
``sphinx-build -W --keep-going -n -b html docs docs/_build/html``.  The pages under
``docs/generated/`` are written by ``docs/_ext/aicr_docs.py`` before any page is read.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "aicr-pytest"
author = "the aicr-pytest authors"
copyright = "the aicr-pytest authors"

extensions = ["myst_parser", "aicr_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
#: the hand-written pieces the generated pages are made of are not pages of their own
exclude_patterns = ["_build", "_ext", "cli/*", "phases/*", "checks/*"]

# every heading up to ### gets an anchor, and a link to a missing one is a warning (so an error)
myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]
nitpicky = True
suppress_warnings: list[str] = []

html_theme = "furo"
html_title = "aicr-pytest"
html_static_path: list[str] = []
# nothing is fetched from the network when a page is read: the theme ships its own fonts and scripts
html_theme_options = {"navigation_with_keys": True}
html_copy_source = False
html_show_sourcelink = False
