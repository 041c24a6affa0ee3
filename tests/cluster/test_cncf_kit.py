"""The CNCF submission kit end to end on the simulated cluster: ``aicr-pytest validate --simulate
--cncf-submission --cncf-checklist <the official 1.36 template, read in place>`` writes PRODUCT.yaml
(requirements byte-for-byte the template's, statuses from the verdicts), results/junit.xml and
results/e2e.log that its evidence links into, and ``aicr-pytest cncf check`` judges the result."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_pytest.cli import main
from aicr_pytest.evidence.cncf import requirements
from aicr_pytest.evidence.cncf.simulated import MARKER_FILE, MSG_PROBLEM

REPO = Path(__file__).resolve().parents[2]
INFERENCE_RECIPE = REPO / "recipes" / "examples" / "h100-eks-inference.yaml"
V136 = "cncf/KubernetesAIConformance-1.36.yaml"

METADATA = {
    "platformName": "ACME AI Platform",
    "platformVersion": "1.0",
    "vendorName": "ACME",
    "websiteUrl": "https://acme.example.com",
    "repoUrl": "https://github.com/acme/ai-platform",
    "documentationUrl": "https://acme.example.com/docs",
    "productLogoUrl": "https://acme.example.com/logo.svg",
    "description": "ACME's AI platform on Kubernetes",
    "contactEmailAddress": "ai@acme.example.com",
    "k8sConformanceUrl": "https://github.com/cncf/k8s-conformance/tree/master/v1.36/acme",
}


def requirement_fields(doc: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [
        (category, e["id"], e["description"], e["level"])
        for category, entries in doc["spec"].items()
        for e in entries
    ]


def entry(doc: dict[str, Any], rid: str) -> dict[str, Any]:
    return next(e for entries in doc["spec"].values() for e in entries if e["id"] == rid)


def validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["validate", *args])
    return code, capsys.readouterr().err


def cncf_check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    capsys.readouterr()
    code = main(["cncf", "check", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def assert_links_resolve(ev: Path, doc: dict[str, Any]) -> None:
    """Every evidence link names a file under ``ev``; a junit fragment names one of its test cases."""
    cases = {c.get("name") for c in ET.parse(ev / "results" / "junit.xml").getroot().iter("testcase")}
    for entries in doc["spec"].values():
        for e in entries:
            for link in e["evidence"]:
                assert link.startswith("file://"), link
                path, _, fragment = link.removeprefix("file://").partition("#")
                assert (ev / path).is_file(), link
                if fragment:
                    assert path == "results/junit.xml" and fragment in cases, link


def test_the_training_profile_fills_the_1_36_checklist_from_the_verdicts(
    reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = reference_dir / V136
    ev = tmp_path / "ev"
    code, err = validate(
        capsys,
        "--simulate",
        "h100-eks-training",
        "--cncf-submission",
        "--evidence-dir",
        str(ev),
        "--cncf-checklist",
        str(template),
        "--cncf-vendor-name",
        "ACME",
    )
    assert code == 8, err  # ai-service-metrics FAILs without a recipe
    doc = yaml.safe_load((ev / "PRODUCT.yaml").read_text(encoding="utf-8"))
    original = yaml.safe_load(template.read_text(encoding="utf-8"))
    assert requirement_fields(doc) == requirement_fields(original)  # order, ids, texts, levels
    assert doc["metadata"]["vendorName"] == "ACME"
    assert doc["metadata"]["kubernetesVersion"] == original["metadata"]["kubernetesVersion"]

    gang = entry(doc, "gang_scheduling")
    links = [
        "file://gang-scheduling.md",
        "file://results/junit.xml#TestGangScheduling",
        "file://results/e2e.log",
    ]
    assert (gang["status"], gang["evidence"]) == ("Implemented", links)
    metrics = entry(doc, "ai_service_metrics")
    assert metrics["status"] == "Not Implemented"
    assert "check ai-service-metrics failed: " in metrics["notes"]
    gateway = entry(doc, "ai_inference")
    assert gateway["status"] == "N/A"
    assert "check inference-gateway skipped: " in gateway["notes"]
    sandbox = entry(doc, "driver_runtime_management")  # nothing of ours checks it: never claimed
    assert (sandbox["status"], sandbox["evidence"]) == ("", [])
    assert sandbox["notes"].startswith("manual evidence required")
    assert_links_resolve(ev, doc)

    log = (ev / "results" / "e2e.log").read_text(encoding="utf-8")
    assert "--- PASS: TestGangScheduling" in log and "--- FAIL: TestAIServiceMetrics" in log
    assert log.rstrip().endswith("FAIL")
    assert "CNCF checklist: " in err
    assert 'metadata.platformName is still the template placeholder "[Platform Name]"' in err
    assert "metadata.k8sConformanceUrl is missing" in err

    check, problems, check_err = cncf_check(capsys, str(ev / "PRODUCT.yaml"), "--checklist", str(template))
    assert check == 1, check_err
    assert (
        "spec.observability.ai_service_metrics: MUST requirement with status 'Not Implemented'; "
        "it must be Implemented" in problems
    )
    assert "metadata.platformName: placeholder value [Platform Name]" in problems


def test_an_inference_submission_passes_cncf_check_and_a_mutation_fails_it(
    reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = reference_dir / V136
    config = tmp_path / "aicr.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "kind": "AICRConfig",
                "spec": {"validate": {"cncf": {"checklist": str(template), **METADATA}}},
            }
        ),
        encoding="utf-8",
    )
    # the template's MUST requirements, named by their ids (--feature takes requirement ids)
    musts = [e["id"] for e in requirement_entries(template) if e["level"] == "MUST"]
    assert all(requirements.lookup(rid) is not None for rid in musts)
    ev = tmp_path / "ev"
    code, err = validate(
        capsys,
        "-r",
        str(INFERENCE_RECIPE),
        "--simulate",
        "h100-eks-inference-gateway",
        "--cncf-submission",
        "--evidence-dir",
        str(ev),
        "--config",
        str(config),
        *(f"--feature={rid}" for rid in musts),
    )
    assert code == 0, err
    assert "WARNING" not in err  # every metadata field filled from --config
    product = ev / "PRODUCT.yaml"
    doc = yaml.safe_load(product.read_text(encoding="utf-8"))
    assert {k: doc["metadata"][k] for k in METADATA} == METADATA
    assert [entry(doc, rid)["status"] for rid in musts] == ["Implemented"] * len(musts)
    assert_links_resolve(ev, doc)

    # written from a simulated cluster: the offline check refuses it for that alone
    refused = [MSG_PROBLEM.format(path=product)]
    assert cncf_check(capsys, str(product), "--checklist", str(template)) == (1, refused, "")
    (ev / MARKER_FILE).unlink()  # the marks taken off, the rest of the submission is clean
    product.write_text(product.read_text(encoding="utf-8").split("\n", 1)[1], encoding="utf-8")
    assert cncf_check(capsys, str(product), "--checklist", str(template)) == (0, [], "")

    # a description edited, a linked file gone: one line each, exit 1
    text = product.read_text(encoding="utf-8")
    gang = entry(doc, "gang_scheduling")["description"]
    product.write_text(text.replace(gang, "Gang scheduling works."), encoding="utf-8")
    (ev / "results" / "e2e.log").unlink()
    check, problems, _ = cncf_check(capsys, str(product), "--checklist", str(template))
    assert check == 1
    assert any(p.startswith("spec.schedulingOrchestration.gang_scheduling: description") for p in problems), (
        problems
    )
    assert any("results/e2e.log" in p for p in problems), problems


def requirement_entries(template: Path) -> list[dict[str, Any]]:
    doc = yaml.safe_load(template.read_text(encoding="utf-8"))
    return [e for entries in doc["spec"].values() for e in entries]


def test_cncf_should_collects_the_should_features_and_fills_their_rows(
    reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = reference_dir / V136
    ev = tmp_path / "ev"
    code, err = validate(
        capsys,
        "--simulate",
        "h100-eks-training",
        "--fault",
        "driver-version-skew",
        "--cncf-submission",
        "--cncf-should",
        "--evidence-dir",
        str(ev),
        "--cncf-checklist",
        str(template),
    )
    assert code == 8, err
    for name in (
        "gpu-sharing",
        "driver-runtime-management",
        "workload-sandboxing",
        "high-performance-networking",
    ):
        assert (ev / f"{name}.md").is_file(), name
    doc = yaml.safe_load((ev / "PRODUCT.yaml").read_text(encoding="utf-8"))
    skew = entry(doc, "driver_runtime_management")
    assert skew["status"] == "Not Implemented"
    assert "570.172.08 on h100-3" in skew["notes"]
    assert skew["evidence"] == [
        "file://driver-runtime-management.md",
        "file://results/junit.xml#TestAcceleratorDriverRuntimeManagement",
        "file://results/e2e.log",
    ]
    assert entry(doc, "gpu_sharing")["status"] == "Not Implemented"
    assert entry(doc, "high_performance_networking")["status"] == "Implemented"
    assert "h100-0: vpc.amazonaws.com/efa=32" in (ev / "high-performance-networking.md").read_text()
    assert "SKIP" in (ev / "workload-sandboxing.md").read_text()  # 1.36 has no workload_sandboxing row
    assert_links_resolve(ev, doc)
