"""The CNCF checklist template loader and the requirement-id table of the submission kit.

The official v1.36 template is read in place (``reference_dir``); a v1.37-shaped template and
one with a requirement nobody has seen are hand-made (``_cncf_templates``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from _cncf_templates import CHECKLIST_136, ODD, V136, V137, write

from aicr_pytest.core import catalog
from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence.cncf import checklist, features, requirements

V136_IDS = [
    ("accelerators", "driver_runtime_management", "SHOULD"),
    ("accelerators", "gpu_sharing", "SHOULD"),
    ("accelerators", "virtualized_accelerator", "SHOULD"),
    ("networking", "ai_inference", "MUST"),
    ("networking", "advanced_inference_ingress", "SHOULD"),
    ("networking", "high_performance_networking", "SHOULD"),
    ("networking", "disaggregated_inference", "SHOULD"),
    ("schedulingOrchestration", "gang_scheduling", "MUST"),
    ("schedulingOrchestration", "cluster_autoscaling", "MUST"),
    ("schedulingOrchestration", "pod_autoscaling", "MUST"),
    ("observability", "accelerator_metrics", "MUST"),
    ("observability", "ai_service_metrics", "MUST"),
    ("security", "secure_accelerator_access", "MUST"),
    ("operator", "robust_controller", "MUST"),
]

# -- loading ----------------------------------------------------------------------------------------


@pytest.mark.compat
def test_the_official_1_36_template_loads_in_its_order(reference_dir: Path) -> None:
    path = reference_dir / V136
    loaded = checklist.load_checklist(path)
    assert [(r.category, r.id, r.level) for r in loaded.requirements] == V136_IDS
    assert loaded.categories == (
        "accelerators",
        "networking",
        "schedulingOrchestration",
        "observability",
        "security",
        "operator",
    )
    assert loaded.kubernetes_version == "v1.36"
    assert loaded.path == path
    # every description is the template's own text, as PyYAML reads the file independently
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    for req in loaded.requirements:
        expected = next(e for e in raw["spec"][req.category] if e["id"] == req.id)
        assert req.description == expected["description"]
        assert req.entry == expected
    assert loaded.requirement("dra_support") is None  # no longer a requirement in 1.36


def test_a_1_37_shaped_template_adds_workload_sandboxing(tmp_path: Path) -> None:
    loaded = checklist.load_checklist(write(tmp_path, "AIConformance-1.37.yaml", V137))
    assert loaded.kubernetes_version == "v1.37"
    sandboxing = loaded.requirement("workload_sandboxing")
    assert sandboxing is not None and (sandboxing.category, sandboxing.level) == ("security", "SHOULD")
    assert [r.id for r in loaded.in_category("security")] == [
        "secure_accelerator_access",
        "workload_sandboxing",
    ]
    assert len(loaded.requirements) == 15


def test_a_template_with_unseen_ids_and_odd_strings_loads_as_written(tmp_path: Path) -> None:
    loaded = checklist.load_checklist(write(tmp_path, "odd.yaml", ODD))
    assert [r.id for r in loaded.requirements] == [
        "quantum_entanglement_scheduling",
        "gang_scheduling",
        "secure_accelerator_access",
        "dra_support",
    ]
    first = loaded.requirements[0]
    assert first.description == 'Line one: with a colon.\nLine two\twith a tab, "quotes" and ünïcødé.\n'
    assert loaded.requirements[2].description == "0o17"  # quoted: a string, even under YAML 1.2
    assert loaded.requirements[3].description == "yes"
    assert loaded.document["extra"] == {"kept": True}


MSG = "[INVALID_REQUEST] --cncf-checklist {path}: "


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "not a CNCF AI-conformance checklist: no metadata/spec mapping"),
        ("metadata: {}\n", "not a CNCF AI-conformance checklist: no spec mapping"),
        ("spec: {}\n", "not a CNCF AI-conformance checklist: no metadata mapping"),
        ("metadata: {}\nspec: []\n", "not a CNCF AI-conformance checklist: no spec mapping"),
        ("metadata: {}\nspec: {a: 3}\n", "spec.a is not a list of requirements"),
        ("metadata: {}\nspec: {a: [x]}\n", "spec.a[0] is not a mapping"),
        ("metadata: {}\nspec: {a: [{level: MUST}]}\n", "spec.a[0] has no id"),
        ("metadata: {}\nspec: {a: [{id: x}]}\n", 'requirement "x" (spec.a) has no level'),
        (
            "metadata: {}\nspec: {a: [{id: x, level: MAY}]}\n",
            "requirement \"x\" (spec.a): unknown level 'MAY' (expected MUST or SHOULD)",
        ),
        (
            "metadata: {}\nspec: {a: [{id: x, level: must}]}\n",
            "requirement \"x\" (spec.a): unknown level 'must' (expected MUST or SHOULD)",
        ),
        (
            "metadata: {}\nspec: {a: [{id: x, level: MUST}], b: [{id: x, level: SHOULD}]}\n",
            'requirement "x" appears more than once (spec.a and spec.b)',
        ),
        ("metadata: {}\nspec: {a: [{id: 7, level: MUST}]}\n", 'requirement "7" (spec.a): id is not a string'),
        (
            "metadata: {}\nspec: {a: [{id: x, level: MUST, description: [1]}]}\n",
            'requirement "x" (spec.a): description is not a string',
        ),
        ("metadata: {}\nspec: {a: []}\n", "the checklist has no requirements"),
        ("metadata: [\n", "not valid YAML: "),
    ],
)
def test_a_template_that_is_not_a_checklist_is_one_usage_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(UsageError) as info:
        checklist.load_checklist(path)
    text_of = str(info.value)
    assert text_of.startswith(MSG.format(path=path) + message)
    assert "\n" not in text_of


def test_a_missing_or_unreadable_template_is_one_usage_line(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^\[INVALID_REQUEST\] --checklist .*nope.yaml: file not found$"):
        checklist.load_checklist(tmp_path / "nope.yaml", "--checklist")
    with pytest.raises(UsageError, match=r"cannot read the file: Is a directory$"):
        checklist.load_checklist(tmp_path)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UsageError, match=r"cannot read the file: "):
        checklist.load_checklist(binary)


def test_an_alias_bomb_template_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    path = write(tmp_path, "bomb.yaml", "\n".join(lines) + "\nmetadata: {}\nspec: {}\n")
    with pytest.raises(UsageError, match="not valid YAML: document contains excessive aliasing"):
        checklist.load_checklist(path)


# -- the requirement-id table -----------------------------------------------------------------------


def test_our_1_36_checklist_has_the_programs_ids_and_levels_in_its_order() -> None:
    loaded = checklist.load_checklist(CHECKLIST_136)
    assert [(r.category, r.id, r.level) for r in loaded.requirements] == V136_IDS


def test_every_requirement_id_of_1_36_and_1_37_is_in_the_table(tmp_path: Path) -> None:
    for template in (CHECKLIST_136, write(tmp_path, "v137.yaml", V137)):
        for req in checklist.load_checklist(template).requirements:
            assert requirements.lookup(req.id) is not None, req.id
    assert requirements.lookup("quantum_entanglement_scheduling") is None


def test_the_table_agrees_with_the_features_and_the_catalog() -> None:
    for row in requirements.REQUIREMENTS:
        for check in row.checks:
            assert check in catalog.BY_NAME
        if row.feature is not None:
            feature = features.BY_NAME[row.feature]
            assert feature.requirement == row.id
            assert row.checks == (feature.check,)
    # every feature answers a requirement row
    assert {f.requirement for f in features.ALL_FEATURES} <= set(requirements.BY_ID)


def test_junit_names_follow_the_programs_suite_where_it_has_one() -> None:
    names = {check: requirements.junit_name(check) for check in requirements.BY_CHECK}
    assert names == {
        "dra-support": "dra-support",
        "inference-gateway": "inference-gateway",
        "gang-scheduling": "TestGangScheduling",
        "cluster-autoscaling": "TestAcceleratorClusterAutoscaling",
        "pod-autoscaling": "pod-autoscaling",
        "accelerator-metrics": "TestAcceleratorPerformanceMetrics",
        "ai-service-metrics": "TestAIServiceMetrics",
        "secure-accelerator-access": "TestSecureAcceleratorAccess",
        "robust-controller": "TestRobustCRDControllerOperation",
        "gpu-sharing": "gpu-sharing",
        "driver-runtime-management": "TestAcceleratorDriverRuntimeManagement",
        "workload-sandboxing": "TestWorkloadSandboxing",
        "high-performance-networking": "high-performance-networking",
    }
    assert requirements.BY_ID["workload_sandboxing"].checked
    assert not requirements.BY_ID["virtualized_accelerator"].checked


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("secure_accelerator_access", "secure_accelerator_access"),
        ("secure-access", "secure_accelerator_access"),
        ("secure", "secure_accelerator_access"),
        ("robust-operator", "robust_controller"),
        ("operator", "robust_controller"),
        ("robust_controller", "robust_controller"),
        ("inference-gateway", "ai_inference"),
        ("ai_inference", "ai_inference"),
        ("dra", "dra_support"),
        (" hpa ", "pod_autoscaling"),
    ],
)
def test_old_feature_names_map_to_template_ids(given: str, expected: str) -> None:
    assert requirements.requirement_of_feature_name(given) == expected


def test_feature_selection_in_order_with_all_and_unknown_names() -> None:
    assert requirements.requirement_ids_of_features(["gang", "secure_accelerator_access"]) == (
        "gang_scheduling",
        "secure_accelerator_access",
    )
    every = requirements.requirement_ids_of_features(None)
    assert every == requirements.requirement_ids_of_features(["all", "gang"])
    assert set(every) == {f.requirement for f in features.ALL_FEATURES}
    with pytest.raises(UsageError) as info:
        requirements.requirement_ids_of_features(["all", "virtualized_accelerator"])  # nothing checks it
    assert str(info.value) == (
        '[INVALID_REQUEST] unknown feature "virtualized_accelerator"; valid features: ' + ", ".join(every)
    )
