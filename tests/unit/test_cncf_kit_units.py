"""The wiring of the CNCF submission kit, offline: ``--feature`` takes requirement ids, the
``--cncf-checklist``/metadata options are validated up front (also from ``--config``), and
:func:`~aicr_pytest.evidence.cncf.kit.write_kit` writes PRODUCT.yaml and the hybrid files from a
collector result, for a template with a requirement nothing of ours has seen."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from _cncf_templates import ODD, V137, write

from aicr_pytest.core.aicrconfig import KNOWN_KEYS, parse_validate_config
from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence.cncf import checklist, features, kit, settings
from aicr_pytest.evidence.cncf.collector import FeatureResult, SubmissionResult
from aicr_pytest.plugin import options


def test_every_feature_is_also_named_by_its_requirement_id() -> None:
    for feature in features.FEATURES:
        assert features.resolve_features([feature.requirement]) == (feature,)
    got = features.resolve_features(["gang_scheduling", "hpa", "secure_accelerator_access"])
    assert [f.name for f in got] == ["gang-scheduling", "pod-autoscaling", "secure-access"]


def test_a_requirement_id_without_a_feature_is_still_unknown() -> None:
    with pytest.raises(
        UsageError, match=r'unknown feature "virtualized_accelerator"; valid features: dra-support'
    ):
        features.resolve_features(["virtualized_accelerator"])


def test_the_checklist_needs_a_submission_and_the_metadata_a_checklist(tmp_path: Path) -> None:
    template = write(tmp_path, "v137.yaml", V137)
    with pytest.raises(
        UsageError, match=r"^\[INVALID_REQUEST\] --cncf-checklist requires --cncf-submission$"
    ):
        settings.build_cncf_settings(False, None, tmp_path, template)
    with pytest.raises(
        UsageError, match=r"^\[INVALID_REQUEST\] --cncf-contact-email requires --cncf-checklist$"
    ):
        settings.build_cncf_settings(True, None, tmp_path, None, {"contact_email_address": "a@b.example"})
    got = settings.build_cncf_settings(
        True, None, tmp_path, template, {"vendor_name": "ACME", "platform_name": None}
    )
    assert got.checklist is not None and got.checklist.kubernetes_version == "v1.37"
    assert got.metadata == {"vendor_name": "ACME"}  # None: not given
    assert settings.build_cncf_settings(True, None, tmp_path).checklist is None


def test_a_bad_template_is_caught_before_the_evidence_dir_is_created(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.yaml", "metadata: {}\nspec:\n  security:\n    - {id: x, level: MAY}\n")
    with pytest.raises(UsageError, match="unknown level 'MAY'"):
        settings.build_cncf_settings(True, None, tmp_path / "ev", bad)
    assert not (tmp_path / "ev").exists()


def test_every_cncf_option_has_a_config_key_the_config_reader_knows() -> None:
    cncf = [o for o in options.OPTIONS if o.name.startswith("cncf_") and o.name != "cncf_submission"]
    flags = {o.flags[0] for o in cncf}
    assert flags == {"--cncf-checklist", "--cncf-should", *settings.METADATA_FLAGS.values()}
    assert all(o.config_key in KNOWN_KEYS for o in cncf)
    doc = {
        "kind": "AICRConfig",
        "spec": {"validate": {"cncf": {"checklist": "t.yaml", "vendorName": "ACME"}}},
    }
    config = parse_validate_config(doc, "c.yaml")
    values = options.resolved({}, options.PYTEST, cncf, config=config)
    assert values["cncf_checklist"] == "t.yaml" and values["cncf_vendor_name"] == "ACME"
    assert (
        options.resolved({"cncf_vendor_name": "Flag"}, options.PYTEST, cncf, config=config)[
            "cncf_vendor_name"
        ]
        == "Flag"
    )  # the flag wins over --config


def test_write_kit_fills_an_unseen_template_and_links_the_hybrid_files(tmp_path: Path) -> None:
    template = checklist.load_checklist(write(tmp_path, "odd.yaml", ODD))
    ev = tmp_path / "ev"
    ev.mkdir()
    gang, hpa = features.BY_NAME["gang-scheduling"], features.BY_NAME["pod-autoscaling"]
    result = SubmissionResult(
        (
            FeatureResult(gang, "PASS", "behaved", ev / gang.file),
            FeatureResult(hpa, "FAIL", "HPA stayed at 1 replica", ev / hpa.file),
        )
    )
    got = kit.write_kit(template, result, ev, {"vendor_name": "ACME"})
    assert got.product_path == ev / "PRODUCT.yaml"
    assert (ev / "results" / "junit.xml").is_file() and (ev / "results" / "e2e.log").is_file()
    doc = yaml.safe_load(got.product_path.read_text(encoding="utf-8"))
    by_id = {e["id"]: e for entries in doc["spec"].values() for e in entries}
    assert by_id["quantum_entanglement_scheduling"]["status"] == ""  # never claimed
    assert by_id["gang_scheduling"]["status"] == "Implemented"
    assert "file://results/junit.xml#TestGangScheduling" in by_id["gang_scheduling"]["evidence"]
    assert "pod_autoscaling" not in by_id  # not in this template: only in the hybrid files
    log = (ev / "results" / "e2e.log").read_text(encoding="utf-8")
    assert "--- PASS: TestGangScheduling" in log and "--- FAIL: pod-autoscaling" in log
    assert got.lines[0] == f"CNCF hybrid verification: {ev / 'results/junit.xml'}, {ev / 'results/e2e.log'}"
    assert got.lines[1].startswith(f"CNCF checklist: {ev / 'PRODUCT.yaml'} (")
    assert (
        "(4 requirements: 1 Implemented, 0 Not Implemented, 0 N/A, 3 left to manual evidence)" in got.lines[1]
    )
    assert all(line.startswith("WARNING: PRODUCT.yaml: metadata.") for line in got.lines[2:])
    assert got.lines[2:], "the ODD template's placeholders are reported"
