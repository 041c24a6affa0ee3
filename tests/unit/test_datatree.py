"""DataTree: --data layering over the embedded recipes/ and path confinement."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aicr_pytest.core.datatree import DataTree, embedded_data_root, merge_by_name
from aicr_pytest.core.errors import UsageError

REGISTRY_EMBEDDED = """\
apiVersion: aicr.run/v1alpha2
kind: ComponentRegistry
components:
  - {name: a, helm: {defaultNamespace: ns-a}}
  - {name: b, helm: {defaultNamespace: ns-b}}
  - {name: c, helm: {defaultNamespace: ns-c}}
"""
REGISTRY_EXTERNAL = """\
apiVersion: aicr.run/v1alpha2
kind: ComponentRegistry
components:
  - {name: d, helm: {defaultNamespace: ns-d}}
  - {name: b, helm: {defaultNamespace: custom-b}}
"""


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def layers(tmp_path: Path) -> tuple[Path, Path]:
    emb, ext = tmp_path / "embedded", tmp_path / "external"
    _write(emb, "registry.yaml", REGISTRY_EMBEDDED)
    _write(emb, "components/a/values.yaml", "x: 1\nnested: {k: v, keep: true}\n")
    _write(emb, "components/b/values.yaml", "y: 2\n")
    _write(
        emb, "validators/catalog.yaml", "kind: ValidatorCatalog\nvalidators:\n  - {name: v1, timeout: 1m}\n"
    )
    _write(ext, "registry.yaml", REGISTRY_EXTERNAL)
    _write(ext, "components/a/values.yaml", "nested: {k: other}\n")
    _write(ext, "components/z/values-extra.yaml", "z: 3\n")
    _write(ext, "validators/catalog.yaml", "validators:\n  - {name: v2}\n  - {name: v1, timeout: 5m}\n")
    return emb, ext


def test_embedded_root_is_the_bundled_recipes_dir() -> None:
    root = embedded_data_root()
    assert root.name == "recipes" and (root / "registry.yaml").is_file()
    tree = DataTree.default()
    assert tree.external_root is None
    assert tree.resolve("components/gpu-operator/values.yaml").is_file()
    assert tree.registry_entry("gpu-operator") is not None


def test_external_dir_must_exist(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as exc:
        DataTree(tmp_path, tmp_path / "missing")
    assert str(exc.value) == f"--data {tmp_path / 'missing'}: directory not found"


def test_external_dir_needs_registry(tmp_path: Path) -> None:
    (tmp_path / "ext").mkdir()
    with pytest.raises(UsageError, match=r"registry\.yaml not found"):
        DataTree(tmp_path, tmp_path / "ext")


def test_external_file_replaces_embedded_file_whole(layers: tuple[Path, Path]) -> None:
    emb, ext = layers
    tree = DataTree(emb, ext)
    assert tree.resolve("components/a/values.yaml") == ext / "components/a/values.yaml"
    # Whole-file replacement: no deep merge of values across layers.
    assert tree.load_yaml("components/a/values.yaml") == {"nested": {"k": "other"}}
    assert tree.resolve("components/b/values.yaml") == emb / "components/b/values.yaml"
    assert tree.load_yaml("components/z/values-extra.yaml") == {"z": 3}
    assert tree.roots == [ext, emb]


def test_registry_merged_by_name(layers: tuple[Path, Path]) -> None:
    tree = DataTree(*layers)
    comps = tree.registry()
    assert [c["name"] for c in comps] == ["a", "b", "c", "d"]
    assert comps[1]["helm"]["defaultNamespace"] == "custom-b"
    entry = tree.registry_entry("d")
    assert entry is not None and entry["helm"]["defaultNamespace"] == "ns-d"
    merged = tree.load_yaml("registry.yaml")
    assert merged["kind"] == "ComponentRegistry"
    assert [c["name"] for c in merged["components"]] == ["a", "b", "c", "d"]


def test_catalog_merged_by_name(layers: tuple[Path, Path]) -> None:
    tree = DataTree(*layers)
    doc = tree.load_yaml("validators/catalog.yaml")
    assert doc["kind"] == "ValidatorCatalog"
    assert doc["validators"] == [{"name": "v1", "timeout": "5m"}, {"name": "v2"}]


def test_embedded_only(layers: tuple[Path, Path]) -> None:
    emb, _ = layers
    tree = DataTree(emb)
    assert tree.load_yaml("components/a/values.yaml")["x"] == 1
    assert [c["name"] for c in tree.registry()] == ["a", "b", "c"]
    assert tree.resolve_external("components/a/values.yaml") is None


def test_merge_by_name_keeps_order_and_appends() -> None:
    base = [{"name": "a", "v": 1}, {"name": "b", "v": 1}]
    over = [{"name": "c"}, {"name": "a", "v": 2}, {"name": "c", "v": 3}]
    assert merge_by_name(base, over) == [{"name": "a", "v": 2}, {"name": "b", "v": 1}, {"name": "c", "v": 3}]


def test_missing_file(layers: tuple[Path, Path]) -> None:
    tree = DataTree(*layers)
    assert tree.find("components/nope/values.yaml") is None
    with pytest.raises(UsageError, match=r"data file 'components/nope/values\.yaml' not found in"):
        tree.resolve("components/nope/values.yaml")


def test_directory_is_not_a_data_file(layers: tuple[Path, Path]) -> None:
    with pytest.raises(UsageError, match="is not a regular file"):
        DataTree(*layers).resolve("components/a")


def test_dot_components_normalised(layers: tuple[Path, Path]) -> None:
    emb, ext = layers
    tree = DataTree(emb, ext)
    assert tree.resolve("./components//a/./values.yaml") == ext / "components/a/values.yaml"


# -- escapes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [
        "../outside.yaml",
        "components/../../outside.yaml",
        "components/a/../../../etc/passwd",
        "..\\outside.yaml",
    ],
)
def test_parent_components_rejected(layers: tuple[Path, Path], rel: str) -> None:
    tree = DataTree(*layers)
    with pytest.raises(UsageError, match=r"must not contain '\.\.'"):
        tree.resolve(rel)
    with pytest.raises(UsageError, match=r"must not contain '\.\.'"):
        tree.resolve_external(rel)


@pytest.mark.parametrize("rel", ["/etc/passwd", "//server/share", "C:/Windows/win.ini", "\\etc\\passwd"])
def test_absolute_paths_rejected(layers: tuple[Path, Path], rel: str) -> None:
    tree = DataTree(*layers)
    with pytest.raises(UsageError, match="must be relative"):
        tree.find(rel)
    with pytest.raises(UsageError, match="must be relative"):
        tree.resolve_external(rel)


@pytest.mark.parametrize("rel", ["", "  ", ".", "./"])
def test_empty_paths_rejected(layers: tuple[Path, Path], rel: str) -> None:
    with pytest.raises(UsageError, match="data path is empty"):
        DataTree(*layers).find(rel)


def test_exit_code_is_two() -> None:
    assert UsageError.exit_code == 2


def test_file_symlink_outside_root_rejected(layers: tuple[Path, Path], tmp_path: Path) -> None:
    emb, ext = layers
    secret = _write(tmp_path / "secret", "creds.yaml", "token: hunter2\n")
    (ext / "components" / "leak").mkdir(parents=True)
    os.symlink(secret, ext / "components" / "leak" / "values.yaml")
    tree = DataTree(emb, ext)
    with pytest.raises(UsageError) as exc:
        tree.resolve("components/leak/values.yaml")
    assert "resolves outside" in str(exc.value) and str(ext) in str(exc.value)
    with pytest.raises(UsageError, match="resolves outside"):
        tree.resolve_external("components/leak/values.yaml")


def test_directory_symlink_outside_root_rejected(layers: tuple[Path, Path], tmp_path: Path) -> None:
    emb, ext = layers
    _write(tmp_path / "elsewhere", "values.yaml", "a: 1\n")
    os.symlink(tmp_path / "elsewhere", ext / "components" / "linked")
    with pytest.raises(UsageError, match="resolves outside"):
        DataTree(emb, ext).resolve("components/linked/values.yaml")


def test_dangling_symlink_outside_root_rejected(layers: tuple[Path, Path], tmp_path: Path) -> None:
    emb, ext = layers
    os.symlink(tmp_path / "does-not-exist.yaml", ext / "dangling.yaml")
    with pytest.raises(UsageError, match="resolves outside"):
        DataTree(emb, ext).find("dangling.yaml")


def test_relative_symlink_escape_rejected(layers: tuple[Path, Path], tmp_path: Path) -> None:
    emb, ext = layers
    _write(tmp_path, "outside.yaml", "a: 1\n")
    os.symlink("../../outside.yaml", ext / "components" / "sneaky.yaml")
    with pytest.raises(UsageError, match="resolves outside"):
        DataTree(emb, ext).resolve("components/sneaky.yaml")


def test_symlink_inside_root_followed(layers: tuple[Path, Path]) -> None:
    emb, ext = layers
    os.symlink(ext / "components" / "a" / "values.yaml", ext / "components" / "alias.yaml")
    tree = DataTree(emb, ext)
    assert tree.load_yaml("components/alias.yaml") == {"nested": {"k": "other"}}


def test_embedded_symlink_escape_rejected(tmp_path: Path) -> None:
    emb = tmp_path / "emb"
    _write(emb, "registry.yaml", "components: []\n")
    _write(tmp_path, "outside.yaml", "a: 1\n")
    os.symlink(tmp_path / "outside.yaml", emb / "x.yaml")
    with pytest.raises(UsageError, match="resolves outside"):
        DataTree(emb).resolve("x.yaml")


def test_external_root_given_through_symlink(layers: tuple[Path, Path], tmp_path: Path) -> None:
    emb, ext = layers
    os.symlink(ext, tmp_path / "data-link")
    tree = DataTree(emb, tmp_path / "data-link")
    assert tree.load_yaml("components/z/values-extra.yaml") == {"z": 3}


def test_resolve_external_for_runtime_refs(layers: tuple[Path, Path]) -> None:
    emb, ext = layers
    _write(ext, "validators/performance/testdata/h100/eks/runtime.yaml", "kind: TrainingRuntime\n")
    tree = DataTree(emb, ext)
    found = tree.resolve_external("validators/performance/testdata/h100/eks/runtime.yaml")
    assert found == ext / "validators/performance/testdata/h100/eks/runtime.yaml"
    assert tree.resolve_external("validators/performance/testdata/h100/gke/runtime.yaml") is None
    # Embedded files are not visible through resolve_external.
    assert tree.resolve_external("components/b/values.yaml") is None


def test_malformed_data_yaml_is_one_line(layers: tuple[Path, Path]) -> None:
    emb, ext = layers
    _write(ext, "components/bad/values.yaml", "a: [1,\n")
    with pytest.raises(UsageError) as exc:
        DataTree(emb, ext).load_yaml("components/bad/values.yaml")
    assert str(exc.value).startswith("malformed YAML in data file ")
    assert "\n" not in str(exc.value)


def test_registry_not_a_list(layers: tuple[Path, Path]) -> None:
    emb, ext = layers
    (ext / "registry.yaml").write_text("components: {a: 1}\n")
    with pytest.raises(UsageError, match="'components' must be a list"):
        DataTree(emb, ext).registry()
