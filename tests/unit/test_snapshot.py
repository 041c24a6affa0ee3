"""Snapshot model, loader, path grammar and extraction (after AICR's extractor tests)."""

from __future__ import annotations

import datetime
import json
import math
import time
from typing import Any

import pytest
import yaml

from aicr_pytest.core import blockyaml, yamlio
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.snapshot import (
    MEASUREMENT_TYPES,
    MSG_UNSUPPORTED_API_VERSION,
    PATH_BAD_INDEX,
    PATH_EMPTY,
    PATH_EMPTY_SELECTOR,
    PATH_EXPECTED_DOT_AFTER_SELECTOR,
    PATH_FORMAT,
    PATH_INVALID_TYPE,
    PATH_MISSING_KEY_AFTER_SELECTOR,
    PATH_PREDICATE_EMPTY_SIDE,
    PATH_SUBTYPE_BEFORE_BRACKET_EMPTY,
    PATH_SUBTYPE_OR_KEY_EMPTY,
    PATH_UNCLOSED_BRACKET,
    AmbiguousMatch,
    ItemSelector,
    PathError,
    Snapshot,
    SnapshotLookupError,
    SnapshotPath,
    ValueNotFound,
    format_go_float,
    format_value,
    load_snapshot_text,
    parse_path,
    parse_snapshot,
)

# --- Go %v rendering -------------------------------------------------------------------------------------

# Expected strings printed by Go's fmt.Printf("%v", f) (go1.2x).
GO_FLOATS = [
    (1.0, "1"),
    (123456.0, "123456"),
    (1e6, "1e+06"),
    (1234567.0, "1.234567e+06"),
    (24.04, "24.04"),
    (0.0001, "0.0001"),
    (0.00001, "1e-05"),
    (1e21, "1e+21"),
    (1e20, "1e+20"),
    (123456789.0, "1.23456789e+08"),
    (0.1, "0.1"),
    (1.5e-7, "1.5e-07"),
    (1e100, "1e+100"),
    (-2.5, "-2.5"),
    (0.0, "0"),
    (-0.0, "-0"),
    (100000.0, "100000"),
    (999999.0, "999999"),
    (12345.678, "12345.678"),
    (3.0e15, "3e+15"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (5e-324, "5e-324"),
    (270.0, "270"),
    (0.000123456, "0.000123456"),
    (math.inf, "+Inf"),
    (-math.inf, "-Inf"),
    (math.nan, "NaN"),
]


@pytest.mark.parametrize(("value", "want"), GO_FLOATS)
def test_format_go_float(value: float, want: str) -> None:
    assert format_go_float(value) == want


@pytest.mark.parametrize(
    ("value", "json_numbers", "want"),
    [
        (True, False, "true"),
        (False, True, "false"),
        (8, False, "8"),
        (9223372036854775807, False, "9223372036854775807"),
        (-3, False, "-3"),
        (12345678, False, "12345678"),
        (12345678, True, "1.2345678e+07"),  # JSON numbers decode to float64 in Go
        (8, True, "8"),
        ("v1.33.5", False, "v1.33.5"),
        ("", False, ""),
        (24.04, False, "24.04"),
    ],
)
def test_format_value(value: bool | int | float | str, json_numbers: bool, want: str) -> None:
    assert format_value(value, json_numbers=json_numbers) == want


# --- path grammar ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "want"),
    [
        ("K8s.server.version", SnapshotPath("K8s", "server", "version")),
        ("OS.release.ID", SnapshotPath("OS", "release", "ID")),
        ("OS.release.VERSION_ID", SnapshotPath("OS", "release", "VERSION_ID")),
        ("OS.sysctl./proc/sys/kernel/osrelease", SnapshotPath("OS", "sysctl", "/proc/sys/kernel/osrelease")),
        ("GPU.info.type", SnapshotPath("GPU", "info", "type")),
        # everything after the second dot is the key (so dotted subtypes are not addressable)
        (
            "SystemD.containerd.service.ActiveState",
            SnapshotPath("SystemD", "containerd", "service.ActiveState"),
        ),
        ("K8s.policy.driver.version", SnapshotPath("K8s", "policy", "driver.version")),
        (
            "NodeTopology.label.nvidia.com/gpu.product",
            SnapshotPath("NodeTopology", "label", "nvidia.com/gpu.product"),
        ),
        (
            "NetworkTopology.pfs[0].rail",
            SnapshotPath("NetworkTopology", "pfs", "rail", ItemSelector("0", index=0)),
        ),
        (
            "NetworkTopology.pfs[7].pciAddress",
            SnapshotPath("NetworkTopology", "pfs", "pciAddress", ItemSelector("7", index=7)),
        ),
        (
            "NetworkTopology.pfs[rail=3].pciAddress",
            SnapshotPath(
                "NetworkTopology", "pfs", "pciAddress", ItemSelector("rail=3", key="rail", value="3")
            ),
        ),
        (
            "NetworkTopology.pfs[traffic=east-west].rdmaDevice",
            SnapshotPath(
                "NetworkTopology",
                "pfs",
                "rdmaDevice",
                ItemSelector("traffic=east-west", key="traffic", value="east-west"),
            ),
        ),
        (
            "NetworkTopology.pfs[0]./some/dotted/key",
            SnapshotPath("NetworkTopology", "pfs", "/some/dotted/key", ItemSelector("0", index=0)),
        ),
        (
            "NetworkTopology.pfs[pciAddress=0000:03:00.2].rail",
            SnapshotPath(
                "NetworkTopology",
                "pfs",
                "rail",
                ItemSelector("pciAddress=0000:03:00.2", key="pciAddress", value="0000:03:00.2"),
            ),
        ),
        ("K8s.a=b.c", SnapshotPath("K8s", "a=b", "c")),
        # a '[' after the first dot of rest is part of the key, not a selector
        ("K8s.image.foo[0]", SnapshotPath("K8s", "image", "foo[0]")),
    ],
)
def test_parse_path(path: str, want: SnapshotPath) -> None:
    got = parse_path(path)
    assert got == want
    assert str(got) == path


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("", PATH_EMPTY),
        ("K8s", PATH_FORMAT),
        ("K8s.server", PATH_FORMAT),
        ("InvalidType.subtype.key", PATH_INVALID_TYPE),
        ("k8s.server.version", PATH_INVALID_TYPE),
        ("os.release.ID", PATH_INVALID_TYPE),
        ("gpu.info.type", PATH_INVALID_TYPE),
        ("systemd.containerd.service.ActiveState", PATH_INVALID_TYPE),
        ("Deployment.gpu-operator.version", PATH_INVALID_TYPE),
        ("K8s..version", PATH_SUBTYPE_OR_KEY_EMPTY),
        ("K8s.server.", PATH_SUBTYPE_OR_KEY_EMPTY),
        ("K8s.", PATH_SUBTYPE_OR_KEY_EMPTY),
        ("NetworkTopology.[0].rail", PATH_SUBTYPE_BEFORE_BRACKET_EMPTY),
        ("NetworkTopology.pfs[0.rail", PATH_UNCLOSED_BRACKET),
        ("NetworkTopology.pfs[].rail", PATH_EMPTY_SELECTOR),
        ("NetworkTopology.pfs[=3].rail", PATH_PREDICATE_EMPTY_SIDE),
        ("NetworkTopology.pfs[rail=].pciAddress", PATH_PREDICATE_EMPTY_SIDE),
        ("NetworkTopology.pfs[-1].rail", PATH_BAD_INDEX),
        ("NetworkTopology.pfs[notnumber].rail", PATH_BAD_INDEX),
        ("NetworkTopology.pfs[1.5].rail", PATH_BAD_INDEX),
        ("NetworkTopology.pfs[0]", PATH_MISSING_KEY_AFTER_SELECTOR),
        ("NetworkTopology.pfs[0].", PATH_MISSING_KEY_AFTER_SELECTOR),
        ("NetworkTopology.pfs[0]rail", PATH_EXPECTED_DOT_AFTER_SELECTOR),
    ],
)
def test_parse_path_errors(path: str, problem: str) -> None:
    with pytest.raises(PathError) as info:
        parse_path(path)
    message = str(info.value)
    assert problem in message
    assert "\n" not in message
    assert isinstance(info.value, UsageError)
    if path:
        assert message.startswith(f"invalid constraint path {path!r}: ")


def test_invalid_type_message_lists_the_valid_types() -> None:
    with pytest.raises(PathError, match="valid: K8s, GPU, OS, SystemD, NodeTopology, NetworkTopology"):
        parse_path("Foo.bar.baz")
    assert MEASUREMENT_TYPES == ("K8s", "GPU", "OS", "SystemD", "NodeTopology", "NetworkTopology")


# --- extraction ------------------------------------------------------------------------------------------

SNAPSHOT_DOC: dict[str, Any] = {
    "kind": "Snapshot",
    "apiVersion": "aicr.run/v1alpha2",
    "metadata": {"timestamp": "2026-07-01T10:30:00Z", "version": "v0.12.0", "source-node": "gpu-node-1"},
    "measurements": [
        {
            "type": "K8s",
            "subtypes": [
                {"subtype": "server", "data": {"version": "v1.33.5-eks-3025e55"}},
                {"subtype": "images", "data": {"count": "42"}},
                {"subtype": "server", "data": {"version": "second-subtype-is-ignored"}},
                {
                    "subtype": "policy",
                    "data": {"driver.version": "580.105.08", "devicePlugin.enabled": "true"},
                },
            ],
        },
        {
            "type": "OS",
            "subtypes": [
                {"subtype": "release", "data": {"ID": "ubuntu", "VERSION_ID": "24.04"}},
                {"subtype": "sysctl", "data": {"/proc/sys/kernel/osrelease": "6.8.0-1028-aws"}},
                {"subtype": "kmod", "data": {"nvidia": True}},
            ],
        },
        {
            "type": "GPU",
            "subtypes": [
                {
                    "subtype": "info",
                    "data": {"type": "H100", "driver": "550.107.02", "count": 8, "ratio": 1e6, "none": None},
                },
                {"subtype": "odd", "data": {"list": [1, 2], "map": {"a": 1}}},
            ],
        },
        {
            "type": "K8s",
            "subtypes": [{"subtype": "node", "data": {"provider": "second-measurement-is-ignored"}}],
        },
        {
            "type": "NetworkTopology",
            "subtypes": [
                {
                    "subtype": "pfs",
                    "items": [
                        {
                            "context": {"pciAddress": "0000:03:00.0", "rdmaDevice": "mlx5_0"},
                            "data": {"rail": 0, "traffic": "east-west"},
                        },
                        {
                            "context": {"pciAddress": "0000:03:00.1", "rdmaDevice": "mlx5_1"},
                            "data": {"rail": 1, "traffic": "east-west"},
                        },
                        {
                            "context": {"pciAddress": "0000:03:00.2", "rdmaDevice": "mlx5_2", "rail": "99"},
                            "data": {"rail": 2, "traffic": "north-south"},
                        },
                    ],
                },
                {"subtype": "capabilities", "data": {"sriov": True}},
            ],
        },
    ],
}


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return parse_snapshot(SNAPSHOT_DOC, "unit")


@pytest.mark.parametrize(
    ("path", "want"),
    [
        ("K8s.server.version", "v1.33.5-eks-3025e55"),
        ("K8s.images.count", "42"),
        ("K8s.policy.driver.version", "580.105.08"),
        ("K8s.policy.devicePlugin.enabled", "true"),
        ("OS.release.ID", "ubuntu"),
        ("OS.release.VERSION_ID", "24.04"),
        ("OS.sysctl./proc/sys/kernel/osrelease", "6.8.0-1028-aws"),
        ("OS.kmod.nvidia", "true"),
        ("GPU.info.type", "H100"),
        ("GPU.info.count", "8"),
        ("GPU.info.ratio", "1e+06"),
        ("NetworkTopology.pfs[0].rail", "0"),
        ("NetworkTopology.pfs[1].rail", "1"),
        ("NetworkTopology.pfs[0].pciAddress", "0000:03:00.0"),
        ("NetworkTopology.pfs[2].rdmaDevice", "mlx5_2"),
        ("NetworkTopology.pfs[2].rail", "2"),  # data wins over context
        ("NetworkTopology.pfs[rail=1].pciAddress", "0000:03:00.1"),
        ("NetworkTopology.pfs[pciAddress=0000:03:00.2].rail", "2"),
        ("NetworkTopology.pfs[traffic=north-south].rdmaDevice", "mlx5_2"),
        ("NetworkTopology.pfs[rail=2].rdmaDevice", "mlx5_2"),  # predicate uses data before context
        ("NetworkTopology.capabilities.sriov", "true"),
    ],
)
def test_lookup(snap: Snapshot, path: str, want: str) -> None:
    assert snap.lookup(path) == want
    assert snap.lookup(parse_path(path)) == want
    assert snap.get(path) == want


@pytest.mark.parametrize(
    ("path", "error", "message"),
    [
        (
            "SystemD.containerd.service.ActiveState",
            ValueNotFound,
            "measurement type not found in snapshot: type=SystemD",
        ),
        (
            "K8s.nonexistent.version",
            ValueNotFound,
            "subtype not found in measurement: type=K8s subtype=nonexistent",
        ),
        (
            "K8s.server.nonexistent",
            ValueNotFound,
            "key not found in subtype: type=K8s subtype=server key=nonexistent",
        ),
        # only the first K8s measurement is searched
        ("K8s.node.provider", ValueNotFound, "subtype not found in measurement: type=K8s subtype=node"),
        ("GPU.info.none", ValueNotFound, "value is null: GPU.info.none"),
        ("GPU.info.Type", ValueNotFound, "key not found in subtype"),  # case-sensitive
        ("GPU.odd.list", ValueNotFound, "value is not a scalar: GPU.odd.list"),
        ("GPU.odd.map", ValueNotFound, "value is not a scalar: GPU.odd.map"),
        (
            "NetworkTopology.pfs[99].rail",
            ValueNotFound,
            "item index out of range: NetworkTopology.pfs[99].rail",
        ),
        ("NetworkTopology.pfs[rail=99].pciAddress", ValueNotFound, "no item matches selector"),
        ("NetworkTopology.pfs[0].nonexistent", ValueNotFound, "key not found in item"),
        ("NetworkTopology.capabilities[0].sriov", ValueNotFound, "subtype has no items"),
        (
            "NetworkTopology.pfs[traffic=east-west].rail",
            AmbiguousMatch,
            "more than one item matches selector",
        ),
        ("k8s.server.version", PathError, "invalid measurement type"),
    ],
)
def test_lookup_errors(snap: Snapshot, path: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        snap.lookup(path)
    assert isinstance(info.value, SnapshotLookupError)
    assert message in str(info.value)
    if error is not PathError:
        assert snap.get(path, "dflt") == "dflt"


def test_first_subtype_wins(snap: Snapshot) -> None:
    assert snap.lookup("K8s.server.version") == "v1.33.5-eks-3025e55"
    sub = snap.subtype("K8s", "server")
    assert sub is not None and sub.data["version"] == "v1.33.5-eks-3025e55"
    assert snap.types() == ["K8s", "OS", "GPU", "NetworkTopology"]


def test_header_fields(snap: Snapshot) -> None:
    assert snap.kind == "Snapshot"
    assert snap.api_version == "aicr.run/v1alpha2"
    assert snap.source_node == "gpu-node-1"
    assert snap.metadata["timestamp"] == "2026-07-01T10:30:00Z"
    assert not snap.json_numbers


def test_many_lookups_are_cheap(snap: Snapshot) -> None:
    paths = [
        "K8s.server.version",
        "OS.sysctl./proc/sys/kernel/osrelease",
        "NetworkTopology.pfs[rail=1].rdmaDevice",
    ]
    start = time.perf_counter()
    for _ in range(20_000):
        for p in paths:
            snap.lookup(p)
    assert time.perf_counter() - start < 10  # ~0.3 s in practice; generous for loaded CI machines


# --- loading ---------------------------------------------------------------------------------------------


def test_headerless_snapshot_is_accepted() -> None:
    snap = parse_snapshot(
        {
            "measurements": [
                {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.33.0"}}]}
            ]
        },
        "x",
    )
    assert snap.kind is None and snap.api_version is None and snap.metadata == {}
    assert snap.lookup("K8s.server.version") == "v1.33.0"


def test_unknown_fields_and_types_are_tolerated() -> None:
    doc = {
        "kind": "Snapshot",
        "apiVersion": "",
        "extra": {"anything": 1},
        "fingerprint": {"service": {"value": "eks"}},
        "measurements": [
            {"type": "FutureType", "subtypes": [{"subtype": "x", "data": {"a": 1}}], "extra": 1},
            {
                "type": "OS",
                "subtypes": [{"subtype": "release", "data": {"ID": "ubuntu"}, "context": {"n": "1"}, "x": 2}],
            },
        ],
    }
    snap = parse_snapshot(doc, "x")
    assert snap.lookup("OS.release.ID") == "ubuntu"
    assert snap.fingerprint == {"service": {"value": "eks"}}


def test_non_string_keys_and_metadata_are_rendered_as_text() -> None:
    doc = {
        "metadata": {"version": 1.5, "n": 3, "flag": True, "empty": None},
        "measurements": [
            {"type": "OS", "subtypes": [{"subtype": "grub", "data": {2: "x", 1.5: "y", "k": "v"}}]}
        ],
    }
    snap = parse_snapshot(doc, "x")
    assert snap.metadata == {"version": "1.5", "n": "3", "flag": "true"}
    assert snap.lookup("OS.grub.2") == "x"
    assert snap.lookup("OS.grub.1.5") == "y"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "snapshot f.yaml: expected a mapping at the top level, got a list"),
        ("text", "snapshot f.yaml: expected a mapping at the top level, got a string"),
        (None, "snapshot f.yaml: expected a mapping at the top level, got null"),
        (
            {"kind": "RecipeResult", "measurements": []},
            'snapshot f.yaml: kind is "RecipeResult", expected "Snapshot"',
        ),
        ({}, "snapshot f.yaml: no measurements"),
        ({"measurements": None}, "snapshot f.yaml: no measurements"),
        ({"measurements": []}, "snapshot f.yaml: no measurements"),
        (
            {"measurements": {"type": "K8s"}},
            "snapshot f.yaml: malformed measurements: expected a list, got dict",
        ),
        (
            {"measurements": ["K8s"]},
            "snapshot f.yaml: malformed measurements[0]: input should be a valid dictionary",
        ),
        (
            {"measurements": [{"subtypes": []}]},
            "snapshot f.yaml: malformed measurements[0].type: field required",
        ),
        (
            {"measurements": [{"type": "K8s", "subtypes": "server"}]},
            "snapshot f.yaml: malformed measurements[0].subtypes: input should be a valid list",
        ),
        (
            {"measurements": [{"type": "K8s", "subtypes": [{"data": {}}]}]},
            "snapshot f.yaml: malformed measurements[0].subtypes[0].subtype: field required",
        ),
        (
            {"measurements": [{"type": "K8s", "subtypes": [{"subtype": "s", "data": ["a"]}]}]},
            "snapshot f.yaml: malformed measurements[0].subtypes[0].data: input should be a valid dictionary",
        ),
        (
            {
                "measurements": [
                    {
                        "type": "K8s",
                        "subtypes": [{"subtype": "s", "data": {"t": datetime.date(2025, 12, 31)}}],
                    }
                ]
            },
            "snapshot f.yaml: malformed measurements[0].subtypes[0].data.t: "
            "unsupported value type (expected a scalar)",
        ),
        (
            {"metadata": ["a"], "measurements": [{"type": "K8s"}]},
            "snapshot f.yaml: metadata must be a map of strings",
        ),
    ],
)
def test_parse_snapshot_errors(data: object, message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_snapshot(data, "f.yaml")
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("api_version", ["aicr.nvidia.com/v1alpha1", "aicr.run/v1alpha1", "v1"])
def test_unsupported_api_version(api_version: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_snapshot({"apiVersion": api_version, "measurements": [{"type": "K8s"}]}, "s.yaml")
    assert str(info.value) == "snapshot s.yaml: " + MSG_UNSUPPORTED_API_VERSION.format(
        api_version=api_version
    )
    assert str(info.value).endswith(
        f'snapshot file has apiVersion "{api_version}", which this aicr build does not support '
        '(expected "aicr.run/v1alpha2"); recapture the snapshot with a matching aicr version'
    )


YAML_SNAPSHOT = """\
kind: Snapshot
apiVersion: aicr.run/v1alpha2
metadata:
    timestamp: 2025-12-31T10:30:00Z
measurements:
    - type: OS
      subtypes:
        - subtype: release
          data:
            ID: ubuntu
            VERSION_ID: "24.04"
            UNQUOTED: 24.04
            ENABLED: on
            BIG: 1e6
            FLAG: true
"""


def test_load_snapshot_text_yaml12_semantics() -> None:
    snap = load_snapshot_text(YAML_SNAPSHOT, "s.yaml")
    assert snap.metadata["timestamp"] == "2025-12-31T10:30:00Z"
    assert snap.lookup("OS.release.VERSION_ID") == "24.04"
    assert snap.lookup("OS.release.UNQUOTED") == "24.04"
    assert snap.lookup("OS.release.ENABLED") == "on"  # a string in YAML 1.2
    assert snap.lookup("OS.release.BIG") == "1e+06"
    assert snap.lookup("OS.release.FLAG") == "true"


def test_load_snapshot_text_json() -> None:
    doc = {
        "measurements": [
            {"type": "NodeTopology", "subtypes": [{"subtype": "summary", "data": {"node-count": 12345678}}]}
        ]
    }
    text = json.dumps(doc)
    assert (
        load_snapshot_text(text, "s.json", format="json").lookup("NodeTopology.summary.node-count")
        == "1.2345678e+07"
    )
    # JSON text in a .yaml file is decoded as YAML by AICR: integers stay integers
    assert load_snapshot_text(text, "s.yaml").lookup("NodeTopology.summary.node-count") == "12345678"
    assert load_snapshot_text(text.encode(), "s.yaml", format="yaml").json_numbers is False


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ("measurements: [\n", None, "snapshot bad.yaml: invalid YAML: "),
        ("{not json", "json", "snapshot bad.yaml: invalid JSON: "),
        ("a: 1", "toml", "snapshot bad.yaml: unknown format 'toml'"),
        ("", None, "snapshot bad.yaml: expected a mapping at the top level, got null"),
        ("kind: Snapshot\n", None, "snapshot bad.yaml: no measurements"),
    ],
)
def test_load_snapshot_text_errors(text: str, fmt: str | None, message: str) -> None:
    with pytest.raises(UsageError) as info:
        load_snapshot_text(text, "bad.yaml", format=fmt)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


# --- blockyaml: the fast path must give exactly what yamlio gives ----------------------------------------


def _same(a: object, b: object) -> bool:
    """Equality that also checks types (True != 1, 1 != 1.0) and key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return (
            list(map(type, a)) == list(map(type, b))
            and list(a) == list(b)
            and all(_same(a[k], b[k]) for k in a)
        )
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


BLOCK_CASES = [
    "a: 1\nb: 1.5\nc: true\nd: null\ne: ~\nf:\ng: on\nh: 0x1F\ni: 0o17\nj: 1e3\nk: .inf\nl: -.INF\nm: .nan\n",
    "a: 007\nb: +5\nc: -0\nd: 1_000\ne: 1.\nf: .5\ng: 0777\nh: '0777'\ni: \"1.0\"\nj: 2025-12-31\nk: 12:30\n",
    "k: 'it''s'\nq: \"tab\\there \\\"q\\\" \\u00e9 \\\\ /\"\nempty: ''\nempty2: \"\"\n",
    "list:\n- a\n- 1\n- - nested\n- k: v\n  k2: v2\nafter: x\n",
    'list:\n    - x: 1\n      "y":\n        - a\n    - z\nctx: {}\nitems: []\n',
    "- a\n- b\n",
    "scalar\n",
    "'quoted'\n",
    "# comment\nkey: value # trailing comment\n",
    "key: value\n\n\n# c\nother: 2\r\n",
    "multi: line one\n  line two\n",
    "block: |\n  text\n  more\n",
    "folded: >-\n  text\n",
    "anchor: &a 1\nalias: *a\n",
    "tag: !!str 1\n",
    "flow: {a: 1, b: [1, 2]}\n",
    "flow2: [a, b]\n",
    "---\na: 1\n",
    "a: 1\n---\nb: 2\n",
    "%YAML 1.2\n---\na: 1\n",
    "a: 1\n...\n",
    "<<: {a: 1}\nb: 2\n",
    "base: &b\n  x: 1\nderived:\n  <<: *b\n  y: 2\n",
    "? complex\n: value\n",
    "a:\tb\n",
    "a: b\tc\n",
    "key with spaces: value with spaces\n",
    "url: http://example.com:8080/path\n",
    "colon: a:b\n",
    "nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3|node-1\n",
    "/proc/sys/kernel/osrelease: 6.8.0-1015-aws\n",
    "a: -1\nb: -x\nc: -\n",
    "dup: 1\ndup: 2\n",
    "1: int key\ntrue: bool key\nnull: null key\n1.5: float key\n",
    "a:\n  b:\n    c: deep\n  d: 1\ne: 2\n",
    "a:\n  - 1\n  -\n    b: 2\n  - \n",
    "weird: 'unterminated\n",
    'weird: "unterminated\n',
    "a: 'x' # c\n",
    "a: [1\n",
    "  indented: root\n",
    "a: 1\n  b: 2\n",
    "a:\n- 1\n  - 2\n",
    "ünïcode: ✓ value ü\n",
    "ctrl: \x85x\n",
    "sep: a\u2028b\n",
    "bom: \ufeffx\n",
    "\ufeffa: 1\n",
    'a: "\\x41\\e"\n',
    'a: "\\ud83d\\ude00"\n',
    "a: '#notcomment'\nb: a#b\nc: a #b\n",
    "?x: 1\n",
    "a: b: c\n",
    "a: b:\n",
    "'k': 1\n\"k2\": 2\n'a'': b': 3\n",
    "",
    "# only a comment\n",
    "a: |\n",
    "- - a\n  - b\n",
    "-   a: 1\n    b: 2\n",
]


@pytest.mark.parametrize("text", BLOCK_CASES)
def test_blockyaml_matches_yamlio(text: str) -> None:
    try:
        want: object = yamlio.load(text)
    except yaml.YAMLError:
        ok, _ = blockyaml.try_load(text)
        assert not ok, "fast path accepted text that yamlio rejects"
        with pytest.raises(yaml.YAMLError):
            blockyaml.load(text)
        return
    assert _same(blockyaml.load(text), want)


def test_blockyaml_takes_the_fast_path_on_snapshot_shapes() -> None:
    doc = {
        "kind": "Snapshot",
        "measurements": [
            {
                "type": "OS",
                "subtypes": [
                    {
                        "subtype": "sysctl",
                        "data": {"/proc/sys/kernel/osrelease": "6.8.0", "/proc/sys/vm/x": "60"},
                    },
                    {"subtype": "kmod", "data": {"nvidia": True}, "context": {}, "items": []},
                    {
                        "subtype": "odd",
                        "data": {"s": "a: b", "t": "it's", "n": 1.5, "q": "#x", "e": "", "ws": " x"},
                    },
                ],
            }
        ],
    }
    for text in (
        yaml.safe_dump(doc, sort_keys=False),
        yaml.safe_dump(doc, sort_keys=False, indent=4, width=10**9),
        json.dumps(doc, indent=2),
    ):
        ok, data = blockyaml.try_load(text)
        if text.startswith("{"):
            assert not ok  # flow style: the full loader handles it
            continue
        assert ok
        assert _same(data, yamlio.load(text))
