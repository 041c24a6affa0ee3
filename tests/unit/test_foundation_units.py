"""Unit tests for the foundation's pure modules: catalog, settings, outcome, ctrf, report, ledger."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from aicr_pytest.core import catalog
from aicr_pytest.core.constraints import ConstraintResult
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.settings import parse_node_selector, parse_toleration
from aicr_pytest.plugin.ledger import PhaseLedger
from aicr_pytest.report import ctrf, outcome
from aicr_pytest.report.results import ResultAccumulator, build_ctrf, phase_table


def test_catalog_has_every_check_of_the_guide_and_spec() -> None:
    aicr = {c.name for c in catalog.CATALOG if c.group is None}  # the rest: opt-in extensions
    by_phase = {p: [n for n in catalog.names_in_phase(p) if n in aicr] for p in catalog.PHASES}
    assert by_phase["deployment"] == [
        "operator-health",
        "expected-resources",
        "gpu-operator-version",
        "check-nvidia-smi",
        "gke-gpu-nic-networks",  # upstream AICR v1.x
        "gke-gpu-nic-topology",  # upstream AICR main (code, not yet in its catalog)
    ]
    assert len(by_phase["conformance"]) == 14  # with upstream AICR v1.x's slinky-slurm-gpu-access
    assert set(by_phase["performance"]) == {
        "nccl-all-reduce-bw",
        "nccl-all-reduce-bw-net",
        "nccl-all-reduce-bw-nvls",
        "nccl-cre-all-reduce-bw",  # upstream AICR v1.x
        "cre-training-goodput",  # upstream AICR v1.x
        "inference-perf",
    }


def test_the_node_health_checks_are_an_opt_in_group() -> None:
    assert catalog.names_in_group(catalog.HEALTH) == [
        "gpu-inventory",
        "gpu-diagnostics",
        "gpu-health",
        "gpu-cuda-smoke",
    ]
    assert all(catalog.BY_NAME[n].phase == "deployment" for n in catalog.names_in_group(catalog.HEALTH))


def test_catalog_rows_are_well_formed() -> None:
    names = [c.name for c in catalog.CATALOG]
    assert len(names) == len(set(names))
    for spec in catalog.CATALOG:
        assert spec.phase in catalog.PHASES
        assert spec.test is not None and spec.test.count("::") == 1, spec
        path, function = spec.test.split("::")
        assert path.endswith(".py") and function.startswith("test_"), spec
        assert spec.entry is None or spec.entry.count(":") == 1, spec


def test_hook_modules_of_the_selected_rows_each_once_in_catalog_order() -> None:
    assert catalog.hook_modules(["inference-perf", "nccl-all-reduce-bw-net", "nccl-all-reduce-bw"]) == [
        "aicr_pytest.nccl.hooks",
        "aicr_pytest.inference.hooks",
    ]
    assert catalog.hook_modules(["operator-health", "dra-support"]) == []


def test_lookups_follow_a_replaced_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    toy = catalog.CheckSpec("toy", "deployment", 1, "toy", test="deployment/test_toy.py::test_toy")
    assert "toy" not in catalog.BY_NAME
    monkeypatch.setattr(catalog, "CATALOG", (*catalog.CATALOG, toy))
    assert catalog.BY_NAME["toy"] is toy
    assert catalog.CATALOG_INDEX["toy"] == len(catalog.CATALOG) - 1
    assert catalog.names_of_test("deployment/test_toy.py::test_toy") == ["toy"]
    assert [s.spec.name for s in catalog.select_checks({"deployment": ["toy"]}, ["deployment"])] == ["toy"]
    monkeypatch.undo()
    assert "toy" not in catalog.BY_NAME and len(catalog.CATALOG_INDEX) == len(catalog.CATALOG)


def test_check_of_feature_needs_exactly_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    assert catalog.check_of_feature("robust-operator") == "robust-controller"
    with pytest.raises(LookupError, match="'nope' is evidenced by 0 catalog checks"):
        catalog.check_of_feature("nope")
    twin = catalog.CheckSpec(
        "twin", "conformance", 1, "twin", cncf=catalog.CncfFeature("robust_controller", "robust-operator")
    )
    monkeypatch.setattr(catalog, "CATALOG", (*catalog.CATALOG, twin))
    with pytest.raises(LookupError, match="'robust-operator' is evidenced by 2 catalog checks"):
        catalog.check_of_feature("robust-operator")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (None, ["deployment", "conformance", "performance"]),
        (["all"], ["deployment", "conformance", "performance"]),
        (["performance", "deployment", "performance"], ["performance", "deployment"]),
        (["conformance,deployment"], ["conformance", "deployment"]),
    ],
)
def test_parse_phases(values: list[str] | None, expected: list[str]) -> None:
    assert catalog.parse_phases(values) == expected


def test_select_checks_orders_by_phase_then_catalog_and_rejects_bad_names() -> None:
    declared = {
        "performance": ["inference-perf", "nccl-all-reduce-bw"],
        "deployment": ["check-nvidia-smi", "operator-health"],
    }
    got = [s.spec.name for s in catalog.select_checks(declared, ["deployment", "performance"])]
    assert got == ["operator-health", "check-nvidia-smi", "nccl-all-reduce-bw", "inference-perf"]
    got = [s.spec.name for s in catalog.select_checks(declared, ["performance", "deployment"])]
    assert got[0] == "nccl-all-reduce-bw"
    with pytest.raises(UsageError, match=r'unknown check "nope" in validation\.deployment\.checks'):
        catalog.select_checks({"deployment": ["nope"]}, ["deployment"])


def test_node_selector_and_toleration_parsing() -> None:
    assert parse_node_selector(["a=1", "b=x=y", "a=2"]) == {"a": "2", "b": "x=y"}
    assert parse_toleration("*").to_k8s() == {"operator": "Exists"}
    assert parse_toleration("k=v:NoSchedule").to_k8s() == {
        "operator": "Equal",
        "key": "k",
        "value": "v",
        "effect": "NoSchedule",
    }
    assert parse_toleration("k:NoExecute").to_k8s() == {
        "operator": "Exists",
        "key": "k",
        "effect": "NoExecute",
    }
    for bad in ("k=v", "k=v:Bogus", ":NoSchedule", "a:b:c"):
        with pytest.raises(UsageError, match="invalid toleration"):
            parse_toleration(bad)


def test_outcome_helpers() -> None:
    assert outcome.truncate_line("é" * 300) == "é" * 256 + "... [truncated 44 chars]"
    assert outcome.cap_stdout(str(i) for i in range(1005))[0] == "5"
    assert outcome.result_summaries(["RESULT: a", "RESULT: ", "x RESULT: b", "RESULT:c"]) == ["a"]
    assert outcome.phase_status([]) == "skipped"
    assert outcome.phase_status(["skipped", "skipped"]) == "skipped"
    assert outcome.phase_status(["passed", "other"]) == "other"
    assert outcome.phase_status(["other", "failed"]) == "failed"
    assert outcome.phase_status(["passed", "skipped"]) == "passed"


def _report_inputs() -> tuple[list[ResultAccumulator], list[ConstraintResult]]:
    results = [
        ResultAccumulator("b", "conformance", 1, "check", status="other", message="API unreachable"),
        ResultAccumulator(
            "a", "deployment", 0, "check", status="skipped", message="skipped - no-cluster mode"
        ),
    ]
    readiness = [
        ConstraintResult(name="K8s.server.version", expected=">= 1.34", actual="v1.33.0", passed=False)
    ]
    return results, readiness


@pytest.mark.compat
def test_report_is_valid_against_the_official_schema(reference_dir: Path) -> None:
    schema = json.loads((reference_dir / "ctrf" / "ctrf.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    validator.validate(build_ctrf([], start_ms=1000, run_id="abc"))
    results, readiness = _report_inputs()
    validator.validate(build_ctrf(results, readiness=readiness, start_ms=1000, run_id="abc"))


def test_report_is_never_null_and_ordered() -> None:
    empty = build_ctrf([], start_ms=1000, run_id="abc")
    assert empty["results"]["tests"] == []
    results, readiness = _report_inputs()
    doc = build_ctrf(results, readiness=readiness, start_ms=1000, run_id="abc")
    assert [t["name"] for t in doc["results"]["tests"]] == ["K8s.server.version", "a", "b"]
    assert doc["results"]["summary"]["other"] == 1
    assert doc["specVersion"] == ctrf.SPEC_VERSION
    assert phase_table(["deployment", "conformance"], results) == [
        ("deployment", "skipped", {"passed": 0, "failed": 0, "skipped": 1, "other": 0}),
        ("conformance", "other", {"passed": 0, "failed": 0, "skipped": 0, "other": 1}),
    ]


def test_ledger_shares_failed_phases_and_plans_through_files(tmp_path: Path) -> None:
    controller = PhaseLedger(tmp_path / "l")
    worker = PhaseLedger(tmp_path / "l")
    assert worker.failed_phases() == set()
    controller.record("deployment", "passed")
    controller.record("conformance", "other")
    controller.record("deployment", "failed")
    assert worker.failed_phases() == {"deployment", "conformance"}
    worker.write_plan("gw0", ["deployment", "conformance", None])
    assert controller.read_plan("gw0") == ["deployment", "conformance", None]
    assert controller.read_plan("gw1") is None
    (tmp_path / "l" / "plan-gw1.json").write_text("{not json")
    assert controller.read_plan("gw1") is None
    one_process = PhaseLedger(None)
    one_process.record("deployment", "failed")
    one_process.write_plan("gw0", ["deployment"])
    assert one_process.failed_phases() == {"deployment"} and one_process.read_plan("gw0") is None
