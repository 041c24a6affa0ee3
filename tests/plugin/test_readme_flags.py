"""The README documents exactly the flags the option table gives each subcommand.

For every subcommand, the flags named where the README documents it (its flag tables, or its
synopsis where it has no table) are the flags of its ``--help``, which the option table generates:
a flag added to, renamed in or removed from the table without the README following fails here,
and so does a README row for a flag that does not exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aicr_pytest.plugin import options
from aicr_pytest.plugin.options import EntryPoint

README = Path(__file__).resolve().parents[2] / "README.md"

#: a flag inside a code span: ``-r``, ``--recipe``, ``--fail-on-error=false`` (-> ``--fail-on-error``)
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
CODE = re.compile(r"`([^`]+)`")
HEADING = re.compile(r"^(#+) (.*)$")


def section(text: str, title: str) -> str:
    """The README's text under the heading ``title``, up to the next heading of any level."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if (m := HEADING.match(line)) and m[2] == title), None)
    assert start is not None, f"README has no heading {title!r}"
    end = next((i for i in range(start + 1, len(lines)) if HEADING.match(lines[i])), len(lines))
    return "\n".join(lines[start + 1 : end])


def flags_in(text: str) -> set[str]:
    return {flag for span in CODE.findall(text) for flag in FLAG.findall(span)}


def first_column_flags(text: str) -> set[str]:
    """The flags in the first cell of every table row (header and separator rows name none)."""
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = re.split(r"(?<!\\)\|", line)
            flags |= flags_in(cells[1])
    return flags


def synopsis_flags(text: str, command: str) -> set[str]:
    """The flags of every code span that starts with ``command`` (spans are read line by line)."""
    return {
        flag
        for line in text.splitlines()
        for span in CODE.findall(line)
        if span.startswith(command)
        for flag in FLAG.findall(span)
    }


def documented(entry_point: EntryPoint) -> set[str]:
    text = README.read_text(encoding="utf-8")
    if entry_point == options.VALIDATE:
        return first_column_flags(
            "\n".join(
                section(text, title)
                for title in ("Two entry points", "All of `aicr validate`'s flags", "Recipe evidence bundles")
            )
        )
    if entry_point == options.SNAPSHOT:
        return first_column_flags(snapshot_flags(text))
    if entry_point == options.RECIPE:
        return first_column_flags(recipe_flags(text))
    if entry_point == options.EVIDENCE_VERIFY:
        body = section(text, "`aicr-pytest evidence verify`")
        paragraph = body[body.index("Flags:") :].split("\n\n", 1)[0]
        return flags_in(paragraph)
    if entry_point == options.PROGRAM:
        return synopsis_flags(text, "aicr-pytest --")
    command = {
        options.SIMULATE: "aicr-pytest simulate",
        options.PARSE_NCCL: "aicr-pytest parse nccl",
        options.PARSE_AIPERF: "aicr-pytest parse aiperf",
        options.CNCF_CHECK: "aicr-pytest cncf check",
        options.PARSE_DCGM: "aicr-pytest parse dcgm",
    }[entry_point]
    return synopsis_flags(text, command)


def flags_section(text: str, parent: str) -> str:
    """The ``### Flags`` section that follows the ``## parent`` heading."""
    rest = text[text.index(f"\n## {parent}\n") :]
    return section(rest, "Flags")


def snapshot_flags(text: str) -> str:
    return flags_section(text, "Capturing a snapshot: `aicr-pytest snapshot`")


def recipe_flags(text: str) -> str:
    return flags_section(text, "Generating a recipe: `aicr-pytest recipe`")


def declared(entry_point: EntryPoint) -> set[str]:
    return {
        flag
        for opt in options.entries(entry_point)
        if not opt.positional and not opt.hidden
        for flag in opt.flags_for(entry_point)
    }


@pytest.mark.parametrize("entry_point", [options.VALIDATE, *options.COMMANDS])
def test_the_readme_documents_exactly_the_flags_of(entry_point: EntryPoint) -> None:
    in_readme, in_table = documented(entry_point), declared(entry_point)
    assert in_table - in_readme == set(), f"{entry_point}: flags the README does not document"
    assert in_readme - in_table == set(), f"{entry_point}: the README documents flags that do not exist"


def test_a_flag_missing_from_the_readme_is_caught() -> None:
    assert "--no-embedded-data" in documented(options.RECIPE)
    text = recipe_flags(README.read_text(encoding="utf-8"))
    assert "--no-embedded-data" not in first_column_flags(text.replace("`--no-embedded-data`", "`x`"))
