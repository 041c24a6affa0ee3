"""``--cncf-submission`` and ``--evidence-dir`` through both entry points on the simulated
cluster: plain ``pytest`` (in-process pytester, virtual time through ``pytest_aicr_cncf_clock``)
and ``aicr-pytest validate --simulate`` (its exit codes)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.cli import main
from aicr_pytest.core import yamlio
from aicr_pytest.evidence.cncf import features
from aicr_pytest.evidence.cncf.verdict import PREFIX, file_verdict
from aicr_pytest.testing import FakeCluster
from tests.cluster import shared_clock
from tests.cluster.check_runner import backend_args
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"

CONFTEST = """
import pytest
from tests.cluster import shared_clock

@pytest.fixture(scope="session")
def aicr_clock():
    return shared_clock.CURRENT[0]

def pytest_aicr_cncf_clock(config):
    return shared_clock.CURRENT[0]
"""

SENTINEL_ENV = "sentinel-env-hf-4f1d2c9a7b"
SENTINEL_KUBECONFIG = "sentinel-kubeconfig-token-8e2a61"
SENTINEL_SECRET = "sentinel-cluster-secret-5c77d0"


def run_pytest(pytester: pytest.Pytester, fc: FakeCluster, *args: str, kubeconfig: Path | None = None) -> Any:
    shared_clock.CURRENT[:] = [shared_clock.ClusterClock(fc)]
    pytester.makeconftest(CONFTEST)
    with fc.auto_advancing():
        return pytester.runpytest(
            "-p",
            "no:cacheprovider",
            "--aicr-kubeconfig",
            str(kubeconfig or fc.kubeconfig_path),
            *args,
            no_reraise_ctrlc=True,
        )


def md_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*.md"))


def test_two_features_on_plain_pytest_write_exactly_two_files(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    ev = pytester.path / "evidence"
    result = run_pytest(
        pytester,
        fc,
        "--aicr-cncf-submission",
        "--aicr-evidence-dir",
        str(ev),
        "--aicr-feature",
        "gang-scheduling",
        "--aicr-feature",
        "pod-autoscaling",
    )
    assert result.ret == 0, result.stdout.str()
    assert md_files(ev) == ["gang-scheduling.md", "pod-autoscaling.md"]
    for name in md_files(ev):
        assert file_verdict((ev / name).read_text()).status == "PASS"
    out = result.stdout.str()
    assert "Total: 2 | Passed: 2 | Failed: 0 | Skipped: 0" in out
    assert "passed" not in out.split("Total:")[0].split("CNCF submission evidence")[0]  # no test session ran


def test_a_failing_feature_fails_plain_pytest_and_exits_8_under_validate(
    pytester: pytest.Pytester,
    aicr_fake_cluster_factory: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training", faults=["dcgm-exporter-no-gpu-series"])
    ev = pytester.path / "ev"
    result = run_pytest(
        pytester, fc, "--aicr-cncf-submission", "--aicr-evidence-dir", str(ev), "--aicr-feature", "metrics"
    )
    assert result.ret == 1
    assert file_verdict((ev / "accelerator-metrics.md").read_text()).status == "FAIL"
    # the same through `aicr-pytest validate --simulate` (real time: accelerator-metrics does not wait)
    ev2 = tmp_path / "ev2"
    capsys.readouterr()
    code = main(
        [
            "validate",
            "--simulate",
            "h100-eks-training",
            "--fault",
            "dcgm-exporter-no-gpu-series",
            "--cncf-submission",
            "--evidence-dir",
            str(ev2),
            "-f",
            "metrics",
            "-f",
            "gateway",
        ]
    )
    captured = capsys.readouterr()
    assert code == 8, captured.err
    assert md_files(ev2) == ["SIMULATED.md", "accelerator-metrics.md", "inference-gateway.md"]
    assert (ev2 / "accelerator-metrics.md").read_text().startswith("> **SIMULATED: ")
    assert captured.out == ""  # no CTRF report: --cncf-submission runs no phase
    assert "Total: 2 | Passed: 0 | Failed: 1 | Skipped: 1" in captured.err


def test_validate_without_a_recipe_collects_and_skips_are_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = tmp_path / "ev"
    code = main(
        [
            "validate",
            "--simulate",
            "h100-eks-training",
            "--cncf-submission",
            "--evidence-dir",
            str(ev),
            "-f",
            "gateway",
            "-f",
            "operator",
            "-f",
            "cluster-autoscaling",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Total: 3 | Passed: 2 | Failed: 0 | Skipped: 1" in err
    assert "capture" not in err.lower()  # no snapshot was captured first


def test_no_evidence_file_contains_a_token_kubeconfig_content_or_secret_data(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "hf-token",
                "namespace": "gpu-operator",
                "labels": {"app": "nvidia-dcgm-exporter"},
            },
            "data": {"token": base64.b64encode(SENTINEL_SECRET.encode()).decode()},
            "stringData": {"plain": SENTINEL_SECRET},
        }
    )
    monkeypatch.setenv("HF_TOKEN", SENTINEL_ENV)
    monkeypatch.setenv("AICR_REGISTRY_TOKEN", SENTINEL_ENV + "-aicr")  # an AICR_ knob the checks may read
    doc = fc.kubeconfig()
    doc["users"].append(
        {
            "name": "other",
            "user": {"token": SENTINEL_KUBECONFIG, "client-key-data": SENTINEL_KUBECONFIG + "-key"},
        }
    )
    kubeconfig = pytester.path / "kubeconfig"
    kubeconfig.write_text(yamlio.dump(doc))
    ev = pytester.path / "ev"
    result = run_pytest(
        pytester, fc, "--aicr-cncf-submission", "--aicr-evidence-dir", str(ev), kubeconfig=kubeconfig
    )
    assert md_files(ev) == sorted(f.file for f in features.FEATURES), result.stdout.str()
    forbidden = (
        SENTINEL_ENV,
        SENTINEL_KUBECONFIG,
        SENTINEL_SECRET,
        fc.token,
        base64.b64encode(SENTINEL_SECRET.encode()).decode(),
    )
    for name in md_files(ev):
        text = (ev / name).read_text()
        assert sum(1 for line in text.splitlines() if line.startswith(PREFIX)) == 1
        for value in forbidden:
            assert value not in text, f"{value} in {name}"
    assert SENTINEL_ENV not in result.stdout.str() and fc.token not in result.stdout.str()


def test_a_normal_run_with_evidence_dir_renders_one_file_per_conformance_check_and_an_index(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["validation"]["conformance"] = {
        "checks": ["dra-support", "accelerator-metrics", "inference-gateway", "platform-health"]
    }
    recipe = pytester.path / "recipe.yaml"
    recipe.write_text(yamlio.dump(doc))
    ev = pytester.path / "ev"
    ctrf = pytester.path / "ctrf.json"
    result = run_pytest(
        pytester,
        fc,
        "--recipe",
        str(recipe),
        "--snapshot",
        str(SNAPSHOT),
        "--aicr-phase",
        "conformance",
        "--aicr-evidence-dir",
        str(ev),
        "--aicr-ctrf-report",
        str(ctrf),
    )
    assert result.ret == 0, result.stdout.str()
    tests = {t["name"]: t for t in json.loads(ctrf.read_text())["results"]["tests"]}
    assert tests["inference-gateway"]["status"] == "skipped"
    # skipped and non-CNCF checks are not rendered
    assert md_files(ev) == ["accelerator-metrics.md", "dra-support.md", "index.md"]
    index = (ev / "index.md").read_text().splitlines()
    assert index[0] == "# CNCF AI Conformance Evidence"
    rows = [line for line in index if re.match(r"^\| \d+ \|", line)]
    assert rows == [
        "| 1 | `dra_support` | DRA Support (Dynamic Resource Allocation) | PASSED | "
        "[dra-support.md](dra-support.md) |",
        "| 2 | `accelerator_metrics` | Accelerator Metrics (DCGM Exporter) | PASSED | "
        "[accelerator-metrics.md](accelerator-metrics.md) |",
    ]
    metrics = (ev / "accelerator-metrics.md").read_text()
    assert "**Result:** PASSED" in metrics and "--- Required DCGM Metrics ---" in metrics
    assert "CNCF evidence: 3 file(s) written to" in result.stdout.str()


def test_a_normal_run_whose_check_fails_renders_failed(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training", faults=["dcgm-exporter-no-gpu-series"])
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["validation"]["conformance"] = {"checks": ["accelerator-metrics"]}
    recipe = pytester.path / "recipe.yaml"
    recipe.write_text(yamlio.dump(doc))
    ev = pytester.path / "ev"
    result = run_pytest(
        pytester,
        fc,
        "--recipe",
        str(recipe),
        "--snapshot",
        str(SNAPSHOT),
        "--aicr-phase",
        "conformance",
        "--aicr-evidence-dir",
        str(ev),
    )
    assert result.ret == 1
    text = (ev / "accelerator-metrics.md").read_text()
    assert "**Result:** FAILED" in text and "- **Status:** FAILED" in text
    assert "**Error:**" in text and "[NOT_FOUND] DCGM metrics missing" in text


def test_submission_on_both_backends_as_the_least_privileged_user(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    """Plain pytest against the fake and the real control plane, bound to ``deploy/rbac.yaml`` only:
    the header queries, the component detection and the features' checks need no more rights."""
    k8s_backend.seed_profile("h100-eks-training")
    shared_clock.CURRENT[:] = [k8s_backend.check_clock]
    pytester.makeconftest(CONFTEST)
    ev = pytester.path / "ev"
    drive = (
        k8s_backend.fake.auto_advancing()  # type: ignore[attr-defined]
        if k8s_backend.virtual_time
        else k8s_backend.clock_running(step=0.25)
    )
    with drive:
        result = pytester.runpytest(
            "-p", "no:cacheprovider", "--aicr-kubeconfig", str(k8s_backend.restricted_kubeconfig_path),
            "--recipe", str(RECIPE), "--aicr-cncf-submission", "--aicr-evidence-dir", str(ev),
            "--aicr-feature", "metrics", "--aicr-feature", "operator",
            "--aicr-feature", "cluster-autoscaling", "--aicr-feature", "gang", *backend_args(k8s_backend),
        )  # fmt: skip
    out = result.stdout.str()
    assert md_files(ev) == [
        "accelerator-metrics.md",
        "cluster-autoscaling.md",
        "gang-scheduling.md",
        "robust-operator.md",
    ], out
    verdicts = {name: file_verdict((ev / name).read_text()) for name in md_files(ev)}
    assert {n: v.status for n, v in verdicts.items()} == dict.fromkeys(verdicts, "PASS"), out
    assert result.ret == 0
    assert "RBAC" not in out and "403" not in out
    assert k8s_backend.controller_errors() == []
