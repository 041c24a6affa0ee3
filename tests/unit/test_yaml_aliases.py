"""Alias expansion is bounded in every YAML loader the product uses (alias bombs are refused)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
import yaml

from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence import pointer
from aicr_pytest.recipegen.spec import load_text
from tests.badinput.validate_cases import alias_bomb


def test_alias_bomb_is_refused_before_anything_expands() -> None:
    bomb = alias_bomb("", levels=12)  # 9**12 ≈ 2.8e11 strings once expanded
    assert len(bomb) < 2000
    tracemalloc.start()
    try:
        with pytest.raises(yamlio.AliasingError) as err:
            yamlio.load(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert err.value.problem == yamlio.MSG_EXCESSIVE_ALIASING
    assert err.value.problem_mark is not None
    assert peak < 50 * 2**20


def test_every_document_of_a_stream_is_bounded() -> None:
    stream = "a: 1\n---\n" + alias_bomb("")
    docs = yamlio.load_all(stream)
    assert next(docs) == {"a": 1}
    with pytest.raises(yamlio.AliasingError):
        next(docs)


def test_an_anchor_that_contains_itself_is_refused() -> None:
    with pytest.raises(yamlio.AliasingError) as err:
        yamlio.load("list: &r [1, *r]\n")
    assert err.value.problem == "anchor value contains itself"


@pytest.mark.parametrize(
    "text",
    [
        "a: &x {k: 1}\nb: *x\nc:\n  <<: *x\n  j: 2\n",  # merge keys, as yaml.v3 honours them
        "tolerations: ['*']\nvalue: a*b\n",  # asterisks that are no aliases
        "",
    ],
)
def test_ordinary_aliases_load_as_before(text: str) -> None:
    assert yamlio.load(text) == yaml.load(text, Loader=yamlio.Yaml12Loader)


def test_heavy_but_bounded_reuse_is_accepted() -> None:
    """50 references to a 1,000-node block: 50,000 expansions, under Go's 99 % share."""
    block = "base: &b\n" + "".join(f"  k{i}: v{i}\n" for i in range(500))
    refs = "".join(f"r{i}: *b\n" for i in range(50))
    doc = yamlio.load(block + refs)
    assert doc["r49"] == doc["base"] and len(doc["base"]) == 500


def test_share_of_expansions_follows_go_decoders() -> None:
    assert yamlio.allowed_alias_ratio(1000) == 0.99
    assert yamlio.allowed_alias_ratio(400_000) == 0.99
    assert yamlio.allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    assert yamlio.allowed_alias_ratio(4_000_000) == 0.10
    assert yamlio.allowed_alias_ratio(10**9) == 0.10


def test_small_documents_are_never_refused() -> None:
    """At most 100 expansions (or 1,000 decoded nodes) pass whatever the share."""
    doc = "a: &a [x, y, z]\n" + "".join(f"b{i}: *a\n" for i in range(25))  # 100 expansions
    assert len(yamlio.load(doc)) == 26


def test_recipe_overlays_and_pointers_are_bounded(tmp_path: Path) -> None:
    with pytest.raises(yamlio.AliasingError):
        load_text(alias_bomb(""))
    path = tmp_path / "pointer.yaml"
    path.write_text(alias_bomb(""))
    with pytest.raises(UsageError, match=r"pointer .*: invalid YAML: document contains excessive aliasing"):
        pointer.load(path)
