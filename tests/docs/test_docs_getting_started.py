"""The commands of the getting-started page run, as written, and succeed.

The page marks the block to run with a MyST comment line (:data:`MARKER`) right before its fence.
Each line of the block is one command (``\\`` continues it). They run in the page's order, in one
folder that has the checkout's ``recipes/`` (the page's commands run from the top of a checkout),
through the ``aicr-pytest`` and ``pytest`` console scripts installed next to this interpreter.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import docs

PAGE = docs.DOCS / "getting-started.md"
MARKER = "% the commands of the next block run in tests/docs/test_docs_getting_started.py and must exit 0"
SCRIPTS = Path(sys.executable).parent


def marked_commands(text: str) -> list[str]:
    """The commands of every fenced block that follows :data:`MARKER` (blank lines allowed between)."""
    lines = text.splitlines()
    commands: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != MARKER:
            i += 1
            continue
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        assert i < len(lines) and lines[i].startswith("```"), "the marker must stand right before a fence"
        i += 1
        pending = ""
        while i < len(lines) and not lines[i].startswith("```"):
            line = lines[i].rstrip()
            i += 1
            if not line or line.lstrip().startswith("#"):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            commands.append(pending + line)
            pending = ""
    return commands


COMMANDS = marked_commands(PAGE.read_text(encoding="utf-8"))


def test_the_extractor_reads_marked_blocks_only() -> None:
    text = f"```\nnot marked\n```\n\n{MARKER}\n\n```bash\n# a comment\na --x \\\n  --y\nb\n```\nafter\n"
    assert marked_commands(text) == ["a --x    --y", "b"]
    with pytest.raises(AssertionError, match="right before a fence"):
        marked_commands(f"{MARKER}\nprose\n")


def test_the_page_marks_its_simulated_runs() -> None:
    assert len(COMMANDS) >= 5
    validate = [c for c in COMMANDS if c.startswith("aicr-pytest validate")]
    assert len(validate) >= 2 and all("--simulate" in c for c in validate)


def test_the_getting_started_commands_succeed_in_order(tmp_path: Path) -> None:
    """One folder for all of them, in the page's order: a later command reads what an earlier wrote."""
    (tmp_path / "recipes").symlink_to(docs.REPO / "recipes")
    for command in COMMANDS:
        argv = shlex.split(command)
        assert argv[0] in ("aicr-pytest", "pytest"), f"only aicr-pytest and pytest commands run: {command}"
        script = SCRIPTS / argv[0]
        assert script.is_file(), f"{argv[0]} is not installed next to {sys.executable}"
        proc = subprocess.run(
            [str(script), *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=240, check=False
        )
        output = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        assert proc.returncode == 0, f"{command}\nexit {proc.returncode}\n{output}"
        for arg in argv:
            if arg.endswith((".json", ".html", ".yaml")) and not arg.startswith("recipes/"):
                assert (tmp_path / arg).is_file(), f"{command}: wrote no {arg}"
