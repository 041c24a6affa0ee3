"""``aicr-pytest simulate --list`` describes every profile and fault in a user's terms."""

from __future__ import annotations

import re

import pytest

from aicr_pytest.cli import simulate_listing
from aicr_pytest.testing.profiles import PROFILES
from aicr_pytest.testing.profiles.descriptions import FAULTS as FAULT_TEXT
from aicr_pytest.testing.profiles.descriptions import PROFILES as PROFILE_TEXT
from aicr_pytest.testing.profiles.descriptions import from_docstring
from aicr_pytest.testing.profiles.faults import FAULTS

#: what a developer's docstring says and a user's description must not
INTERNAL = re.compile(r"aicr_pytest\.|:mod:|:func:|``|\bRecorded\b|state\[")


def _entries() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in simulate_listing():
        if line.startswith("  "):
            name, _, text = line.strip().partition(" ")
            out[name] = text.strip()
    return out


def test_every_profile_and_fault_is_listed_with_a_human_description() -> None:
    entries = _entries()
    assert list(entries) == [*PROFILES, *sorted(FAULTS)]
    for name, text in entries.items():
        assert text, f"{name}: no description"
        assert not INTERNAL.search(text), f"{name}: {text}"
        assert text[0].isupper() or text[0].isdigit() or text.startswith(("slurmctld", "gVisor")), name
        assert text.endswith((".", ")")), f"{name}: {text}"


def test_names_line_up_in_one_column() -> None:
    lines = [line for line in simulate_listing() if line.startswith("  ")]
    starts = {len(line) - len(line[2:].split(" ", 1)[1].lstrip()) for line in lines}
    assert len(starts) == 1


@pytest.mark.parametrize("table, known", [(PROFILE_TEXT, PROFILES), (FAULT_TEXT, FAULTS)])
def test_the_description_tables_name_only_known_entries(
    table: dict[str, str], known: dict[str, object]
) -> None:
    assert set(table) <= set(known)


def test_from_docstring_keeps_the_first_sentence_as_plain_text() -> None:
    doc = """The gateway's Service has no ``loadBalancerSourceRanges``
    (:mod:`aicr_pytest.testing.players.inference` honours it). Then more.

    Second paragraph."""
    assert from_docstring(doc) == "The gateway's Service has no loadBalancerSourceRanges."
    assert from_docstring(None) == ""
