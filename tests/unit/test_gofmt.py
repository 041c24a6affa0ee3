"""Go's renderings and scalar parsers (core.gofmt): the exact text Go prints or accepts."""

from __future__ import annotations

import pytest

from aicr_pytest.core import gofmt


@pytest.mark.parametrize(
    ("items", "want"),
    [([], "[]"), (["a"], "[a]"), (["a", "b c", "d"], "[a b c d]")],
)
def test_go_list(items: list[str], want: str) -> None:
    assert gofmt.go_list(items) == want


def test_go_list_takes_any_iterable() -> None:
    assert gofmt.go_list(f"n{i}" for i in range(3)) == "[n0 n1 n2]"


@pytest.mark.parametrize(
    ("mapping", "want"),
    [
        (None, "map[]"),
        ({}, "map[]"),
        ({"b": "2", "a": "1"}, "map[a:1 b:2]"),
        ({"nvidia.com/gpu.present": "true"}, "map[nvidia.com/gpu.present:true]"),
        ({"k": ""}, "map[k:]"),
    ],
)
def test_go_map_sorts_keys(mapping: dict[str, str] | None, want: str) -> None:
    assert gofmt.go_map(mapping) == want


def test_go_bool() -> None:
    assert (gofmt.go_bool(True), gofmt.go_bool(False)) == ("true", "false")


@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True"])
def test_parse_go_bool_true_values(text: str) -> None:
    assert gofmt.parse_go_bool(text)


@pytest.mark.parametrize("text", [None, "", "0", "false", "yes", "tRUE", " true", "true ", "on"])
def test_parse_go_bool_everything_else_is_false(text: str | None) -> None:
    assert not gofmt.parse_go_bool(text)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0", 0),
        ("42", 42),
        ("+7", 7),
        ("-7", -7),
        ("007", 7),
        (str(2**63 - 1), 2**63 - 1),
        (str(-(2**63)), -(2**63)),
        (str(2**63), None),
        ("", None),
        (" 1", None),
        ("1.0", None),
        ("1e3", None),
        ("٣", None),  # a non-ASCII digit: Go's Atoi refuses it
    ],
)
def test_go_atoi(text: str, want: int | None) -> None:
    assert gofmt.go_atoi(text) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [(1e6, "1e+06"), (123456.0, "123456"), (1.0, "1"), (1.5e-7, "1.5e-07"), (0.0001, "0.0001"), (-0.0, "-0")],
)
def test_format_go_float(value: float, want: str) -> None:
    assert gofmt.format_go_float(value) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (True, "bool"),
        (3, "int"),
        (3.5, "float64"),
        ("x", "string"),
        ([1], "[]interface {}"),
        ({"a": 1}, "map[string]interface {}"),
        (None, "NoneType"),
    ],
)
def test_go_type_name(value: object, want: str) -> None:
    assert gofmt.go_type_name(value) == want


def test_go_json_is_compact_sorted_and_html_escaped() -> None:
    value = {"b": [1, 2.5, None, True], "a": "<x & y>", "c": {"z": 1e21, "y": 1e-7}}
    want = '{"a":"\\u003cx \\u0026 y\\u003e","b":[1,2.5,null,true],"c":{"y":1e-7,"z":1e+21}}'
    assert gofmt.go_json(value) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [(3.0, "3"), (0.5, "0.5"), (1e-6, "0.000001"), (1e20, "100000000000000000000"), (1.5e21, "1.5e+21")],
)
def test_go_json_float(value: float, want: str) -> None:
    assert gofmt.go_json_float(value) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("", '""'),
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("C:\\dir", '"C:\\\\dir"'),
        ("a\nb\tc", '"a\\nb\\tc"'),
        ("\x01\x7f", '"\\x01\\x7f"'),
        ("naïve ✓", '"naïve ✓"'),
        ("\u00a0", '"\\u00a0"'),
    ],
)
def test_go_quote(text: str, want: str) -> None:
    assert gofmt.go_quote(text) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("gpu-operator", "gpu-operator"),  # nothing to quote: bare, as slog writes it
        ("C:\\dir", "C:\\dir"),  # a lone backslash does not make slog quote
        ("", '""'),
        ("no GPU nodes", '"no GPU nodes"'),
        ("a=b", '"a=b"'),
        ('x"y', '"x\\"y"'),
        ("tab\t", '"tab\\t"'),
        ("\u00a0x", '"\\u00a0x"'),
    ],
)
def test_slog_text_value(text: str, want: str) -> None:
    assert gofmt.slog_text_value(text) == want
