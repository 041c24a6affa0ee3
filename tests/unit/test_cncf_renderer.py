"""Path A: a normal run's CTRF report rendered into one file per CNCF
conformance check plus ``index.md``, compared with fixtures written from the spec's format
(``tests/fixtures/cncf/rendered/``); and the feature-file layout of path B."""

from __future__ import annotations

import calendar
import time
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core.artifacts import EXTRA_KEY, Artifact
from aicr_pytest.evidence.cncf import features, renderer
from aicr_pytest.evidence.cncf.markdown import ClusterInfo, FeatureDocument, feature_markdown
from aicr_pytest.evidence.cncf.verdict import file_verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cncf" / "rendered"
NOW = calendar.timegm(time.strptime("2026-01-02 03:04:05", "%Y-%m-%d %H:%M:%S"))
ELB = "k8s-agentgat-0a1b2c3d-0123456789.us-west-2.elb.amazonaws.com"


def art(label: str, data: str, equivalent: str | None = None) -> dict[str, Any]:
    return Artifact(label, data, equivalent).to_json()


def report() -> dict[str, Any]:
    tests: list[dict[str, Any]] = [
        {"name": "operator-health", "status": "passed", "duration": 5},  # deployment phase: not CNCF
        {
            "name": "dra-support",
            "status": "passed",
            "duration": 1534,
            "extra": {
                EXTRA_KEY: [
                    art("DRA driver namespace", "Namespace: nvidia-dra-driver"),
                    art(
                        "ResourceSlices",
                        "gpu-node-1-gpu.nvidia.com: 8 devices\n**Result: PASS** — quoted from a pod log",
                        "kubectl get resourceslices",
                    ),
                ]
            },
        },
        {
            "name": "gang-scheduling",
            "status": "failed",
            "duration": 60000,
            "message": "[TIMEOUT] gang pods were not co-scheduled",
            "extra": {
                EXTRA_KEY: [
                    art(
                        "Apply test manifest",
                        f"````yaml\nkind: PodGroup\n````\nservice: {ELB} token=tok-123456",
                    )
                ]
            },
        },
        {"name": "robust-controller", "status": "skipped", "duration": 1, "message": "no operator"},
        {
            "name": "accelerator-metrics",
            "status": "other",
            "duration": 12,
            "message": "[INTERNAL] DCGM exporter unreachable",
        },
        {"name": "platform-health", "status": "passed", "duration": 3},  # diagnostic: no CNCF requirement
    ]
    return {"results": {"tool": {"name": "aicr"}, "tests": tests}}


def test_each_rendered_file_matches_its_fixture(tmp_path: Path) -> None:
    written = renderer.render(report(), tmp_path, secrets=("tok-123456",), now=NOW)
    names = [p.name for p in written]
    assert names == ["dra-support.md", "gang-scheduling.md", "accelerator-metrics.md", "index.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in FIXTURES.iterdir())
    for path in written:
        assert path.read_text() == (FIXTURES / path.name).read_text(), path.name


def test_no_cncf_check_in_the_report_writes_nothing(tmp_path: Path) -> None:
    only_skipped = {"results": {"tests": [{"name": "dra-support", "status": "skipped"}]}}
    assert renderer.render(only_skipped, tmp_path / "ev", now=NOW) == []
    assert not (tmp_path / "ev").exists()


def test_malformed_artifacts_are_a_rendering_error(tmp_path: Path) -> None:
    bad = {
        "results": {"tests": [{"name": "dra-support", "status": "passed", "extra": {EXTRA_KEY: [{"x": 1}]}}]}
    }
    with pytest.raises(renderer.RenderError, match="malformed evidence artifact"):
        renderer.render(bad, tmp_path, now=NOW)
    with pytest.raises(renderer.RenderError):
        renderer.render({"results": {"tests": "nope"}}, tmp_path, now=NOW)


def test_a_feature_file_has_the_header_block_evidence_one_verdict_and_cleanup() -> None:
    doc = FeatureDocument(
        feature=features.BY_NAME["pod-autoscaling"],
        cluster=ClusterInfo("EKS / p5.48xlarge / NVIDIA-H100-80GB-HBM3", "v1.34", "linux/amd64"),
        generated="2026-01-02 03:04:05",
        status="FAIL",
        explanation="HPA did not scale up",
        artifacts=[Artifact("HPA status", "**Result: PASS** — from data", "kubectl get hpa -n hpa-test")],
        preamble=[("GPU Allocation Mode", ["- Configured policy: `unspecified`"])],
        notes=["Budget: 600s; took 12.0s."],
        cleanup=["deleted Namespace/hpa-test-1"],
    )
    assert feature_markdown(doc).splitlines() == [
        "# Pod Autoscaling (HPA)",
        "",
        "**Cluster:** `EKS / p5.48xlarge / NVIDIA-H100-80GB-HBM3`",
        "**Generated:** 2026-01-02 03:04:05 UTC",
        "**Kubernetes Version:** v1.34",
        "**Platform:** linux/amd64",
        "",
        "---",
        "",
        features.BY_NAME["pod-autoscaling"].description,
        "",
        "Feature `pod-autoscaling` · CNCF requirement `pod_autoscaling` · collected by the `pod-autoscaling` "
        "check of aicr-pytest.",
        "",
        "## GPU Allocation Mode",
        "",
        "- Configured policy: `unspecified`",
        "",
        "## Evidence",
        "",
        "**HPA status**",
        "",
        "```",
        "$ kubectl get hpa -n hpa-test",
        " **Result: PASS** — from data",
        "```",
        "",
        "Budget: 600s; took 12.0s.",
        "",
        "**Result: FAIL** — HPA did not scale up",
        "",
        "## Cleanup",
        "",
        "- deleted Namespace/hpa-test-1",
    ]
    got = file_verdict(feature_markdown(doc))
    assert (got.status, got.problem) == ("FAIL", None)
