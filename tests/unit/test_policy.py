"""GPU allocation policy: hydration, decision order, and the exact E1–E5 texts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core import yamlio
from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.policy import (
    E1_GPUS_ENABLED_UNSET,
    E2_WAIVER_MISSING,
    E3_DUAL_ADVERTISEMENT,
    E4_NO_ADVERTISER,
    E5_INERT_WAIVER,
    INVALID_REQUEST_PREFIX,
    hydrate_values,
    merge_values,
    resolve_allocation_policy,
)
from aicr_pytest.core.recipe import Recipe, parse_recipe

EXAMPLES = Path(__file__).resolve().parents[2] / "recipes" / "examples"
DRA_VF = "components/nvidia-dra-driver-gpu/values.yaml"
OP_VF = "components/gpu-operator/values.yaml"


def recipe(*refs: dict[str, Any]) -> Recipe:
    r, _ = parse_recipe({"kind": "RecipeResult", "componentRefs": list(refs)}, "test")
    return r


def dra(gpus: object = False, waiver: object = False, **extra: Any) -> dict[str, Any]:
    overrides: dict[str, Any] = {
        "resources": {"gpus": {"enabled": gpus}},
        "gpuResourcesEnabledOverride": waiver,
    }
    overrides.update(extra)
    return {"name": "nvidia-dra-driver-gpu", "overrides": overrides}


def op(dp: object = True, name: str = "gpu-operator", **extra: Any) -> dict[str, Any]:
    overrides: dict[str, Any] = {"devicePlugin": {"enabled": dp}}
    overrides.update(extra)
    return {"name": name, "overrides": overrides}


@pytest.fixture
def tree(tmp_path: Path) -> DataTree:
    """A data tree with the stock-shaped base values, and no --data layer."""
    root = tmp_path / "emb"
    (root / "components/nvidia-dra-driver-gpu").mkdir(parents=True)
    (root / "components/gpu-operator").mkdir(parents=True)
    (root / "registry.yaml").write_text("components: []\n")
    (root / DRA_VF).write_text("gpuResourcesEnabledOverride: false\nresources: {gpus: {enabled: false}}\n")
    (root / OP_VF).write_text("devicePlugin: {enabled: true}\nother: {a: 1}\n")
    (root / "components/gpu-operator/values-eks.yaml").write_text("other: {b: 2}\ndevicePlugin: {env: []}\n")
    return DataTree(root)


def fails(r: Recipe | None, data: DataTree) -> str:
    with pytest.raises(UsageError) as exc:
        resolve_allocation_policy(r, data)
    return str(exc.value)


def invalid(text: str) -> str:
    return INVALID_REQUEST_PREFIX + text


# -- truth table ----------------------------------------------------------------


def test_no_recipe_is_unspecified(tree: DataTree) -> None:
    p = resolve_allocation_policy(None, tree)
    assert p.mode == "unspecified"
    assert p.reason == "no recipe"


def test_stock_default_device_plugin(tree: DataTree) -> None:
    p = resolve_allocation_policy(recipe(dra(False, False), op(True)), tree)
    assert p.mode == "device-plugin-extended-resource"
    assert p.operator == "gpu-operator"
    assert (p.dra_enabled, p.gpus_enabled, p.waiver, p.device_plugin_enabled) == (True, False, False, True)
    assert (
        p.reason
        == "nvidia-dra-driver-gpu resources.gpus.enabled=false and gpu-operator devicePlugin.enabled=true"
    )
    assert p.warnings == []


def test_dra_opt_in(tree: DataTree) -> None:
    p = resolve_allocation_policy(recipe(dra(True, True), op(False)), tree)
    assert p.mode == "dra-resource-claim"
    assert p.device_plugin_enabled is False


def test_dra_without_operator(tree: DataTree) -> None:
    p = resolve_allocation_policy(recipe(dra(True, True)), tree)
    assert p.mode == "dra-resource-claim"
    assert p.operator is None


def test_e3_dual_advertisement(tree: DataTree) -> None:
    assert fails(recipe(dra(True, True), op(True)), tree) == invalid(
        E3_DUAL_ADVERTISEMENT.format(op="gpu-operator")
    )


@pytest.mark.parametrize("dp", [True, False])
def test_e2_missing_waiver(tree: DataTree, dp: bool) -> None:
    assert fails(recipe(dra(True, False), op(dp)), tree) == invalid(E2_WAIVER_MISSING)


def test_e5_inert_waiver(tree: DataTree) -> None:
    assert fails(recipe(dra(False, True), op(True)), tree) == invalid(
        E5_INERT_WAIVER.format(op="gpu-operator")
    )


@pytest.mark.parametrize("waiver", [True, False])
def test_e4_device_plugin_off(tree: DataTree, waiver: bool) -> None:
    assert fails(recipe(dra(False, waiver), op(False)), tree) == invalid(E4_NO_ADVERTISER)


@pytest.mark.parametrize("extra", [{}, {"resources": {"gpus": None}}])
def test_e1_gpus_absent(tree: DataTree, extra: dict[str, Any]) -> None:
    ref = {"name": "nvidia-dra-driver-gpu", "overrides": {"gpuResourcesEnabledOverride": True, **extra}}
    assert fails(recipe(ref, op(True)), tree) == invalid(E1_GPUS_ENABLED_UNSET)


def test_e1_bare_ref_hydrates_to_nothing(tree: DataTree) -> None:
    # No valuesFile and no overrides: hydrated values are {} (base file not consulted).
    assert fails(recipe({"name": "nvidia-dra-driver-gpu"}, op(True)), tree) == invalid(E1_GPUS_ENABLED_UNSET)


def test_e1_null_override_deletes_base_value(tree: DataTree) -> None:
    ref = {
        "name": "nvidia-dra-driver-gpu",
        "valuesFile": DRA_VF,
        "overrides": {"resources": {"gpus": {"enabled": None}}},
    }
    assert fails(recipe(ref, op(True)), tree) == invalid(E1_GPUS_ENABLED_UNSET)


def test_e1_is_checked_before_the_operator(tree: DataTree) -> None:
    assert fails(recipe({"name": "nvidia-dra-driver-gpu", "overrides": {"x": 1}}), tree) == invalid(
        E1_GPUS_ENABLED_UNSET
    )


def test_dra_absent_device_plugin(tree: DataTree) -> None:
    p = resolve_allocation_policy(recipe(op(True)), tree)
    assert p.mode == "device-plugin-extended-resource"
    assert p.dra_enabled is False
    assert p.reason == "nvidia-dra-driver-gpu absent/disabled and gpu-operator devicePlugin.enabled=true"


def test_dra_disabled_is_ignored_even_with_gpus_true(tree: DataTree) -> None:
    disabled = dra(True, False, enabled=False)
    p = resolve_allocation_policy(recipe(disabled, op(True)), tree)
    assert p.mode == "device-plugin-extended-resource"
    assert p.dra_enabled is False


@pytest.mark.parametrize(
    "refs",
    [
        [],
        [op(False)],
        [{"name": "gpu-operator", "overrides": {"enabled": False}}],
        [{"name": "cert-manager"}],
    ],
)
def test_e4_no_advertiser(tree: DataTree, refs: list[dict[str, Any]]) -> None:
    assert fails(recipe(*refs), tree) == invalid(E4_NO_ADVERTISER)


def test_dra_absent_waiver_irrelevant(tree: DataTree) -> None:
    # E5 needs an enabled DRA component.
    p = resolve_allocation_policy(recipe(dra(False, True, enabled=False), op(True)), tree)
    assert p.mode == "device-plugin-extended-resource"


# -- operator choice ------------------------------------------------------------------------


def test_operator_without_device_plugin_key_defaults_true(tree: DataTree) -> None:
    p = resolve_allocation_policy(recipe(dra(), {"name": "gpu-operator"}), tree)
    assert p.mode == "device-plugin-extended-resource"


def test_device_plugin_null_means_absent_means_true(tree: DataTree) -> None:
    p = resolve_allocation_policy(recipe(dra(), op(None)), tree)
    assert p.device_plugin_enabled is True


def test_ocp_operator_used_when_gpu_operator_absent(tree: DataTree) -> None:
    r = recipe(dra(True, True), op(True, name="gpu-operator-ocp"))
    assert fails(r, tree) == invalid(E3_DUAL_ADVERTISEMENT.format(op="gpu-operator-ocp"))
    assert "gpu-operator-ocp devicePlugin.enabled=false (issue #1327)" in fails(r, tree)


def test_ocp_operator_used_when_gpu_operator_disabled(tree: DataTree) -> None:
    r = recipe(
        dra(False, True),
        {"name": "gpu-operator", "overrides": {"enabled": False}},
        op(True, "gpu-operator-ocp"),
    )
    assert fails(r, tree) == invalid(E5_INERT_WAIVER.format(op="gpu-operator-ocp"))
    p = resolve_allocation_policy(recipe(dra(), op(True, "gpu-operator-ocp")), tree)
    assert p.operator == "gpu-operator-ocp"
    assert p.reason.endswith("gpu-operator-ocp devicePlugin.enabled=true")


def test_both_operators_gpu_operator_wins_with_warning(tree: DataTree) -> None:
    p = resolve_allocation_policy(recipe(dra(), op(True), op(False, "gpu-operator-ocp")), tree)
    assert p.mode == "device-plugin-extended-resource"
    assert p.operator == "gpu-operator"
    assert p.warnings == [
        "recipe enables both gpu-operator and gpu-operator-ocp; "
        "using gpu-operator for the GPU allocation policy"
    ]


# -- malformed values -----------------------------------------------------------------------


TAIL = " — cannot resolve the GPU allocation policy from a malformed value"
DRA_GPUS = 'component "nvidia-dra-driver-gpu" value "resources.gpus.enabled"'


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"resources": "gpus"}, DRA_GPUS + ': segment "resources" is not a map' + TAIL),
        ({"resources": {"gpus": [True]}}, DRA_GPUS + ': segment "resources.gpus" is not a map' + TAIL),
        ({"resources": {"gpus": {"enabled": "true"}}}, DRA_GPUS + " must be a boolean, got string" + TAIL),
        ({"resources": {"gpus": {"enabled": 1}}}, DRA_GPUS + " must be a boolean, got int" + TAIL),
        (
            {"resources": {"gpus": {"enabled": False}}, "gpuResourcesEnabledOverride": 0.5},
            'component "nvidia-dra-driver-gpu" value "gpuResourcesEnabledOverride" '
            "must be a boolean, got float64" + TAIL,
        ),
    ],
)
def test_malformed_dra_values(tree: DataTree, overrides: dict[str, Any], expected: str) -> None:
    r = recipe({"name": "nvidia-dra-driver-gpu", "overrides": overrides}, op(True))
    assert fails(r, tree) == invalid(expected)


def test_malformed_device_plugin(tree: DataTree) -> None:
    r = recipe(dra(), {"name": "gpu-operator", "overrides": {"devicePlugin": {"enabled": "yes"}}})
    assert fails(r, tree) == invalid(
        'component "gpu-operator" value "devicePlugin.enabled" must be a boolean, got string '
        "— cannot resolve the GPU allocation policy from a malformed value"
    )
    r = recipe(dra(), {"name": "gpu-operator", "overrides": {"devicePlugin": [1]}})
    assert "got []interface {}" not in fails(r, tree)
    assert 'segment "devicePlugin" is not a map' in fails(r, tree)


# -- hydration ------------------------------------------------------------------------------


def test_hydration_precedence(tree: DataTree) -> None:
    ref = recipe(
        {
            "name": "gpu-operator",
            "valuesFile": "components/gpu-operator/values-eks.yaml",
            "overrides": {"other": {"c": 3, "a": None}, "devicePlugin": {"enabled": False}},
        }
    ).component_refs[0]
    values = hydrate_values(ref, tree)
    # base -> valuesFile (maps merge, lists replace) -> overrides (null deletes)
    assert values == {"devicePlugin": {"enabled": False, "env": []}, "other": {"b": 2, "c": 3}}


def test_hydration_base_values_file_loaded_once(tree: DataTree) -> None:
    ref = recipe({"name": "gpu-operator", "valuesFile": OP_VF}).component_refs[0]
    assert hydrate_values(ref, tree) == {"devicePlugin": {"enabled": True}, "other": {"a": 1}}


def test_hydration_overrides_only_skips_base(tree: DataTree) -> None:
    ref = recipe({"name": "gpu-operator", "overrides": {"x": 1}}).component_refs[0]
    assert hydrate_values(ref, tree) == {"x": 1}


def test_values_file_through_data_layer(tree: DataTree, tmp_path: Path) -> None:
    ext = tmp_path / "ext"
    (ext / "components/gpu-operator").mkdir(parents=True)
    (ext / "registry.yaml").write_text("components: []\n")
    (ext / OP_VF).write_text("devicePlugin: {enabled: false}\n")
    layered = DataTree(tree.embedded_root, ext)
    r = recipe(dra(), {"name": "gpu-operator", "valuesFile": OP_VF})
    assert fails(r, layered) == invalid(E4_NO_ADVERTISER)
    assert resolve_allocation_policy(r, tree).mode == "device-plugin-extended-resource"


def test_missing_values_file_with_data_dir_fails(tree: DataTree, tmp_path: Path) -> None:
    ext = tmp_path / "ext2"
    ext.mkdir()
    (ext / "registry.yaml").write_text("components: []\n")
    r = recipe(dra(), {"name": "gpu-operator", "valuesFile": "components/gpu-operator/values-nope.yaml"})
    msg = fails(r, DataTree(tree.embedded_root, ext))
    assert msg.startswith(
        "component \"gpu-operator\": values file 'components/gpu-operator/values-nope.yaml' "
        "not found in the data"
    )


def test_missing_values_file_embedded_only_falls_back(tree: DataTree) -> None:
    r = recipe(dra(), {"name": "gpu-operator", "valuesFile": "components/gpu-operator/values-nope.yaml"})
    p = resolve_allocation_policy(r, tree)
    assert p.mode == "device-plugin-extended-resource"
    assert len(p.warnings) == 1
    assert "not in aicr-pytest's embedded data" in p.warnings[0]


def test_values_file_escape_rejected(tree: DataTree) -> None:
    r = recipe(dra(), {"name": "gpu-operator", "valuesFile": "../../etc/passwd"})
    assert "must not contain '..'" in fails(r, tree)


def test_values_file_not_a_mapping(tree: DataTree) -> None:
    (tree.embedded_root / "components/gpu-operator/values-list.yaml").write_text("- a\n")
    r = recipe(dra(), {"name": "gpu-operator", "valuesFile": "components/gpu-operator/values-list.yaml"})
    assert "is not a YAML mapping" in fails(r, tree)


def test_merge_values_semantics() -> None:
    dst = {"a": {"b": 1, "c": [1, 2]}, "d": 1, "e": {"f": 1}}
    src = {"a": {"c": [3], "g": None}, "d": None, "e": "scalar", "h": {"i": None}}
    assert merge_values(dst, src) == {"a": {"b": 1, "c": [3]}, "e": "scalar", "h": {"i": None}}


# -- embedded data --------------------------------------------------------------------------


def test_embedded_example_resolves_device_plugin() -> None:
    data = yamlio.load((EXAMPLES / "h100-eks-training.yaml").read_bytes())
    r, _ = parse_recipe(data, "h100-eks-training.yaml")
    p = resolve_allocation_policy(r, DataTree.default())
    assert p.mode == "device-plugin-extended-resource"
    assert p.warnings == []


def test_embedded_defaults_are_the_production_default() -> None:
    tree = DataTree.default()
    assert tree.load_yaml(DRA_VF)["resources"]["gpus"]["enabled"] is False
    assert tree.load_yaml(DRA_VF)["gpuResourcesEnabledOverride"] is False
    assert tree.load_yaml(OP_VF)["devicePlugin"]["enabled"] is True
    assert tree.load_yaml("components/gpu-operator-ocp/values.yaml")["devicePlugin"]["enabled"] is True
    # A bare-bones recipe pointing at the embedded base files resolves to the production default.
    r = recipe(
        {"name": "nvidia-dra-driver-gpu", "valuesFile": DRA_VF},
        {"name": "gpu-operator-ocp", "valuesFile": "components/gpu-operator-ocp/values.yaml"},
    )
    assert resolve_allocation_policy(r, tree).mode == "device-plugin-extended-resource"
