"""A mapping key given twice is refused as Go's yaml.v3 decoder refuses it (line, key, first line),
by every loader of user YAML (recipes, snapshots, overlays, config, data files); keys a merge brings
in may still be overridden."""

from __future__ import annotations

import pytest
import yaml

from aicr_pytest.core import blockyaml, yamlio


def _problem(text: str) -> str:
    with pytest.raises(yamlio.DuplicateKeyError) as err:
        yamlio.load(text)
    return str(err.value.problem)


def test_a_top_level_key_twice_names_both_lines_and_the_key() -> None:
    text = "kind: RecipeResult\nvalidation: {}\nmetadata: {}\nvalidation:\n  deployment: {}\n"
    assert _problem(text) == 'line 4: mapping key "validation" already defined at line 2'


def test_a_mapping_is_checked_before_its_values_as_yaml_v3_decodes_it() -> None:
    text = "a:\n  b: 1\n  c: 2\n  b: 3\nd: 1\nd: 2\n"
    assert _problem(text) == 'line 6: mapping key "d" already defined at line 5'
    assert _problem("a:\n  b: 1\n  c: 2\n  b: 3\n") == 'line 4: mapping key "b" already defined at line 2'


def test_keys_compare_as_written_like_yaml_v3() -> None:
    assert _problem("'x': 1\nx: 2\n") == 'line 2: mapping key "x" already defined at line 1'
    assert _problem('{"a\\"b": 1, "a\\"b": 2}') == 'line 1: mapping key "a\\"b" already defined at line 1'


def test_merged_keys_may_be_overridden_and_aliases_reused() -> None:
    text = "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  x: 3\nagain: *b\n"
    assert yamlio.load(text) == {"base": {"x": 1, "y": 2}, "use": {"x": 3, "y": 2}, "again": {"x": 1, "y": 2}}


def test_every_loader_class_and_every_document_is_checked() -> None:
    with pytest.raises(yamlio.DuplicateKeyError):
        yamlio.load_with("a: 1\na: 2\n", yaml.SafeLoader)
    with pytest.raises(yamlio.DuplicateKeyError):
        list(yamlio.load_all("a: 1\n---\nb: 1\nb: 2\n"))


def test_the_fast_snapshot_loader_hands_a_repeated_key_to_the_full_loader() -> None:
    text = "kind: Snapshot\nmeasurements: []\nmeasurements:\n  - type: K8s\n"
    with pytest.raises(yamlio.DuplicateKeyError) as err:
        blockyaml.load(text)
    assert err.value.problem == 'line 3: mapping key "measurements" already defined at line 2'
    ok, _ = blockyaml.try_load("a:\n  b: 1\n  b: 2\n")
    assert not ok


def test_a_duplicate_key_error_is_a_marked_yaml_error_for_existing_one_line_handlers() -> None:
    assert issubclass(yamlio.DuplicateKeyError, yaml.MarkedYAMLError)
    assert str(yamlio.DuplicateKeyError(problem="p")) == "p"
