"""PRODUCT.yaml filled from the run's verdicts: order and template text kept exactly (re-read from
both files and compared), the verdict -> status mapping, evidence links, manual evidence for what
we do not check, metadata and the placeholder report; and the verdict adapters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from _cncf_templates import CHECKLIST_136, META, ODD, V137, write

from aicr_pytest.core import yamlio
from aicr_pytest.evidence.cncf import checklist, features, outcomes, product
from aicr_pytest.evidence.cncf.collector import FeatureResult, SubmissionResult
from aicr_pytest.evidence.cncf.outcomes import CheckVerdict

SECRET = "s3cr3t-token-value"
VERDICTS = (
    CheckVerdict("gang-scheduling", "PASS", evidence_file="gang-scheduling.md"),
    CheckVerdict("secure-accelerator-access", "PASS", evidence_file="secure-accelerator-access.md"),
    CheckVerdict(
        "pod-autoscaling", "FAIL", f"HPA stayed at 1 replica\n(token {SECRET})", 3.5, "pod-autoscaling.md"
    ),
    CheckVerdict("cluster-autoscaling", "SKIP", "no Karpenter and no autoscaling node group", 0.1),
)


def requirement_values(data: Any) -> list[tuple[str, str, Any, Any]]:
    return [
        (category, entry["id"], entry.get("description"), entry.get("level"))
        for category, entries in data["spec"].items()
        for entry in entries
    ]


def fill_and_reread(template: Path, tmp_path: Path, **kw: Any) -> tuple[product.Product, dict[str, Any]]:
    filled = product.fill_product(checklist.load_checklist(template), VERDICTS, META, secrets=[SECRET], **kw)
    out = tmp_path / "evidence"
    out.mkdir()
    written = product.write_product(filled, out)
    assert written == out / "PRODUCT.yaml"
    text = written.read_text(encoding="utf-8")
    reread = yamlio.load(text)
    assert yaml.safe_load(text) == reread  # YAML 1.1 readers see the same document
    return filled, reread


def entry(data: dict[str, Any], rid: str) -> dict[str, Any]:
    return next(e for entries in data["spec"].values() for e in entries if e["id"] == rid)


def test_the_1_36_template_filled_keeps_every_requirement_and_its_text(tmp_path: Path) -> None:
    template = CHECKLIST_136
    _, reread = fill_and_reread(template, tmp_path)
    original = yaml.safe_load(template.read_text(encoding="utf-8"))
    assert requirement_values(reread) == requirement_values(original)  # order, ids, texts, levels
    assert list(reread["spec"]) == list(original["spec"])
    for entries in reread["spec"].values():
        for e in entries:
            assert list(e) == ["id", "description", "level", "status", "evidence", "notes"]


def test_verdicts_become_statuses_notes_and_evidence(tmp_path: Path) -> None:
    filled, reread = fill_and_reread(CHECKLIST_136, tmp_path)
    gang = entry(reread, "gang_scheduling")
    assert gang["status"] == "Implemented"
    assert gang["evidence"] == [
        "file://gang-scheduling.md",
        "file://results/junit.xml#TestGangScheduling",
        "file://results/e2e.log",
    ]
    assert "gang-scheduling" in gang["notes"]
    hpa = entry(reread, "pod_autoscaling")
    assert hpa["status"] == "Not Implemented"
    assert "failed: HPA stayed at 1 replica (token <redacted>)" in hpa["notes"]
    assert SECRET not in yaml.safe_dump(reread)
    assert hpa["evidence"][:2] == ["file://pod-autoscaling.md", "file://results/junit.xml#pod-autoscaling"]
    ca = entry(reread, "cluster_autoscaling")
    assert ca["status"] == "N/A"
    assert ca["notes"].endswith("skipped: no Karpenter and no autoscaling node group")
    assert ca["evidence"] == [
        "file://results/junit.xml#TestAcceleratorClusterAutoscaling",
        "file://results/e2e.log",
    ]
    # checked by us but not in this run: never claimed
    for rid in ("ai_inference", "accelerator_metrics", "ai_service_metrics", "robust_controller"):
        e = entry(reread, rid)
        assert (e["status"], e["evidence"]) == ("", [])
        assert e["notes"].startswith("manual evidence required: aicr-pytest did not check it in this run")
    # the SHOULD checks did not run (no --cncf-should): never claimed
    for rid in ("driver_runtime_management", "gpu_sharing", "high_performance_networking"):
        assert entry(reread, rid)["status"] == ""
        assert entry(reread, rid)["notes"].startswith(
            "manual evidence required: aicr-pytest did not check it in this run"
        )
    # nothing of ours checks virtualized accelerators
    assert entry(reread, "virtualized_accelerator")["notes"] == product.NOTE_UNCHECKED
    summary = {r.id: r.status for r in filled.requirements if r.claimed}
    assert summary == {
        "gang_scheduling": "Implemented",
        "cluster_autoscaling": "N/A",
        "pod_autoscaling": "Not Implemented",
        "secure_accelerator_access": "Implemented",
    }


def test_without_hybrid_verification_only_the_feature_files_are_linked(tmp_path: Path) -> None:
    _, reread = fill_and_reread(CHECKLIST_136, tmp_path, hybrid=False)
    assert entry(reread, "gang_scheduling")["evidence"] == ["file://gang-scheduling.md"]
    assert entry(reread, "cluster_autoscaling")["evidence"] == []


def test_a_requirement_never_seen_is_never_claimed(tmp_path: Path) -> None:
    every = tuple(CheckVerdict(f.check, "PASS", evidence_file=f.file) for f in features.FEATURES)
    template = checklist.load_checklist(write(tmp_path, "odd.yaml", ODD))
    filled = product.fill_product(template, every)
    data = yamlio.load(filled.text)
    unseen = entry(data, "quantum_entanglement_scheduling")
    assert (unseen["status"], unseen["evidence"], unseen["notes"]) == ("", [], product.NOTE_UNKNOWN)
    assert unseen["notes"].startswith("manual evidence required")
    assert unseen["owner"] == "nobody"  # keys the program's template does not have are kept
    # a requirement known to us in the odd template is still filled from its verdict
    assert entry(data, "secure_accelerator_access")["status"] == "Implemented"
    assert entry(data, "dra_support")["status"] == "Implemented"
    gang = entry(data, "gang_scheduling")
    assert list(gang) == ["id", "description", "level", "status", "evidence", "notes"]


def test_a_1_37_shaped_template_leaves_workload_sandboxing_to_manual_evidence_unless_it_ran(
    tmp_path: Path,
) -> None:
    every = tuple(CheckVerdict(f.check, "PASS") for f in features.FEATURES)
    template = checklist.load_checklist(write(tmp_path, "v137.yaml", V137))
    data = yamlio.load(product.fill_product(template, every).text)
    sandboxing = entry(data, "workload_sandboxing")
    assert sandboxing["status"] == ""
    assert sandboxing["notes"].startswith("manual evidence required: aicr-pytest did not check it")
    ran = (*every, CheckVerdict("workload-sandboxing", "FAIL", "[CONFLICT] same kernel"))
    sandboxing = entry(yamlio.load(product.fill_product(template, ran).text), "workload_sandboxing")
    assert sandboxing["status"] == "Not Implemented"
    assert "[CONFLICT] same kernel" in sandboxing["notes"]
    assert sandboxing["evidence"][0] == "file://results/junit.xml#TestWorkloadSandboxing"
    assert entry(data, "robust_controller")["evidence"] == [
        "file://results/junit.xml#TestRobustCRDControllerOperation",
        "file://results/e2e.log",
    ]
    assert data["metadata"]["kubernetesVersion"] == "v1.37"


def test_multi_line_and_look_alike_template_strings_round_trip_exactly(tmp_path: Path) -> None:
    path = write(tmp_path, "odd.yaml", ODD)
    filled = product.fill_product(checklist.load_checklist(path), VERDICTS)
    out = tmp_path / "PRODUCT.yaml"
    out.write_text(filled.text, encoding="utf-8")
    mine, theirs = yamlio.load(out.read_text(encoding="utf-8")), yamlio.load(path.read_text(encoding="utf-8"))
    assert requirement_values(mine) == requirement_values(theirs)
    assert mine["extra"] == {"kept": True}
    assert mine["metadata"]["releaseTrain"] == 7


NASTY = [
    "0o17",
    "0x1F",
    "1_000",
    "1e3",
    "yes",
    "No",
    "on",
    "null",
    "~",
    "true",
    "",
    " leading",
    "trailing ",
    "a: b",
    "#hash",
    "- dash",
    "[Platform Name]",
    "{a: 1}",
    "line one\nline two\n",
    "no final newline\nsecond",
    "\n\nblank lines first",
    "windows\r\nline",
    "\ttab first",
    "bell \x07 and escape \x1b[31m",
    "line\u2028separator and \x85 next-line",
    "ünïcødé and emoji 🚀",
    "'single' and \"double\" and back\\slash",
    "x" * 600,
    "Not Implemented",
    "N/A",
]


@pytest.mark.parametrize("text", NASTY)
def test_product_yaml_reads_back_every_string_exactly(text: str) -> None:
    document = {
        "metadata": {text or "k": text},
        "spec": {"c": [{"id": "x", "description": text, "level": "MUST"}]},
    }
    emitted = product.product_yaml(document)
    assert yamlio.load(emitted) == document
    assert yaml.safe_load(emitted) == document


def test_metadata_is_filled_and_placeholders_are_reported() -> None:
    template = checklist.load_checklist(CHECKLIST_136)
    bare = product.fill_product(template, ())
    assert (
        bare.placeholders[0]
        == 'PRODUCT.yaml: metadata.platformName is still the template placeholder "[Platform Name]"'
    )
    assert len(bare.placeholders) == 10  # the nine placeholders and the missing k8sConformanceUrl
    filled = product.fill_product(template, (), META)
    assert filled.document["metadata"]["platformName"] == "Turbo Encabulator"
    assert filled.document["metadata"]["kubernetesVersion"] == "v1.36"
    assert filled.placeholders == (
        'PRODUCT.yaml: metadata.repoUrl is still the template placeholder "[Repository URL]"',
        "PRODUCT.yaml: metadata.k8sConformanceUrl is missing (the program's validator requires it)",
    )
    url = "https://github.com/cncf/k8s-conformance/tree/master/v1.36/turbo"
    complete = META.model_copy(
        update={"repo_url": "https://github.com/yoyo/turbo", "k8s_conformance_url": url}
    )
    done = product.fill_product(template, (), complete)
    assert done.placeholders == ()
    assert list(done.document["metadata"])[-1] == "k8sConformanceUrl"


def test_snake_case_metadata_keys_are_filled_in_place(tmp_path: Path) -> None:
    template = checklist.load_checklist(write(tmp_path, "odd.yaml", ODD))
    meta = product.fill_product(template, (), META).document["metadata"]
    assert meta["vendor_name"] == "Yoyodyne" and "vendorName" not in meta
    assert meta["platformName"] == "Turbo Encabulator"


def test_a_long_failure_is_cut_in_the_notes() -> None:
    template = checklist.load_checklist(CHECKLIST_136)
    long = (CheckVerdict("gang-scheduling", "FAIL", "word " * 500),)
    notes = entry(product.fill_product(template, long).document, "gang_scheduling")["notes"]
    assert notes.endswith("…") and len(notes) < product.NOTE_REASON_MAX + 100


# -- verdict adapters -------------------------------------------------------------------------------


def test_verdicts_from_a_submission_run(tmp_path: Path) -> None:
    gang, hpa = features.BY_NAME["gang-scheduling"], features.BY_NAME["pod-autoscaling"]
    result = SubmissionResult(
        (
            FeatureResult(gang, "PASS", "the capability was exercised", tmp_path / gang.file),
            FeatureResult(hpa, "FAIL", "HPA did not scale", tmp_path / hpa.file),
        )
    )
    verdicts = outcomes.from_submission(result, tmp_path)
    assert [(v.check, v.status, v.message, v.evidence_file) for v in verdicts] == [
        ("gang-scheduling", "PASS", "", "gang-scheduling.md"),
        ("pod-autoscaling", "FAIL", "HPA did not scale", "pod-autoscaling.md"),
    ]


def test_verdicts_from_a_ctrf_report_fail_closed() -> None:
    report = {
        "results": {
            "tests": [
                {"name": "operator-health", "status": "passed"},  # not a CNCF requirement check
                {"name": "gang-scheduling", "status": "passed", "duration": 1500, "stdout": ["a", "b\nc"]},
                {"name": "pod-autoscaling", "status": "other", "duration": 10},
                {"name": "cluster-autoscaling", "status": "skipped", "message": "no autoscaler"},
                {"name": "secure-accelerator-access", "status": "failed", "message": "saw 2 GPUs"},
            ]
        }
    }
    verdicts = outcomes.from_ctrf(report, {"gang-scheduling": "gang-scheduling.md"})
    assert [(v.check, v.status, v.message) for v in verdicts] == [
        ("gang-scheduling", "PASS", ""),
        ("pod-autoscaling", "FAIL", "the check ended other"),
        ("cluster-autoscaling", "SKIP", "no autoscaler"),
        ("secure-accelerator-access", "FAIL", "saw 2 GPUs"),
    ]
    assert verdicts[0].duration_s == 1.5
    assert verdicts[0].log == ("a", "b", "c")
    assert verdicts[0].evidence_file == "gang-scheduling.md"
    assert outcomes.from_ctrf({"results": {"tests": "nope"}}) == ()
