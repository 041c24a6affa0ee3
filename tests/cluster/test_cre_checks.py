"""The two CRE checks end to end on the fake cluster: the bundled ``checks/performance/test_cre.py``
through pytester against the ``h100-eks-training-cre`` profile, whose player plays NVCRE.

Each scenario proves one rule: pass (the Certification the check submits, the exact lines, the
measurement and NVCRE's goodput metrics in CTRF, nothing left behind), fail (low bandwidth / goodput,
a ``Failed`` Certification, no NVCRE API, fewer than two GPU nodes), skip (no constraint, an
unqualified combination) and ``other`` (a Certification that never ends, unparsable measurements,
a pass measured on simulated GPUs).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.players import cre as player
from aicr_pytest.testing.profiles import resolve_profile
from tests.cluster.check_runner import run_on_fake

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
NCCL, GOODPUT = "nccl-cre-all-reduce-bw", "cre-training-goodput"
PROFILE = "h100-eks-training-cre"
API = "nvcre.nvidia.com/v1alpha1"
CONSTRAINTS = {NCCL: ">= 450", GOODPUT: ">= 0.7"}


def recipe(
    checks: tuple[str, ...], constraints: dict[str, str] | None = None, **criteria: str
) -> dict[str, Any]:
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["criteria"].update(criteria)
    cons = CONSTRAINTS if constraints is None else constraints
    doc["validation"]["performance"] = {
        "checks": list(checks),
        "constraints": [{"name": k, "value": v} for k, v in cons.items() if k in checks],
    }
    return doc


def run(pytester: pytest.Pytester, fc: FakeCluster, doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    phase_run = run_on_fake(pytester, fc, phase="performance", recipe=doc, snapshot=SNAPSHOT)
    assert phase_run.report, phase_run.result.stdout.str()[-3000:]
    return phase_run.tests


def cre_cluster(factory: Any, *faults: str) -> FakeCluster:
    fc: FakeCluster = factory(PROFILE, faults=list(faults))
    return fc


def certifications(fc: FakeCluster) -> list[dict[str, Any]]:
    return fc.list(API, "Certification", None)


def test_both_checks_pass_and_report_their_measurements(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = cre_cluster(aicr_fake_cluster_factory)
    submitted: list[dict[str, Any]] = []
    fc.sim.on_create(
        "nvcre.nvidia.com", "v1alpha1", "certifications", lambda _sim, obj: submitted.append(obj)
    )
    tests = run(pytester, fc, recipe((NCCL, GOODPUT)))

    nccl = tests[NCCL]
    assert nccl["status"] == "passed", nccl.get("message")
    assert nccl["stdout"][-2:] == [f"NCCL All Reduce bandwidth ({NCCL}): 489.80", "Constraint: >= 450 → true"]
    (bw,) = nccl["extra"]["aicr.measurements"]
    assert bw["value"] == pytest.approx(489.8) and bw["unit"] == "GB/s" and bw["passed"] is True
    assert bw["effectiveThreshold"] == 450.0  # upstream compares without tolerance

    goodput = tests[GOODPUT]
    assert goodput["status"] == "passed", goodput.get("message")
    assert goodput["stdout"][-6:] == [
        "CRE NeMo training goodput ratio: 0.7671",
        "Constraint: >= 0.7 → true",
        "avgTFLOPSPerGPU: 412.5",
        "avgStepTimeSec: 1.42",
        "interruptionCount: 0",
        "lostWorkTimeSec: 125.8",
    ]
    info = goodput["extra"]["aicr.creRun"]
    assert info["goodput"]["result"] == "0.7671" and info["goodput"]["trainingTimeSec"] == 540.0
    assert info["workflow"].endswith("-nemotron5-8b")

    # what was submitted: one category each, capped at the two qualified nodes, run-scoped
    by_variant = {s["spec"]["categories"][0]["variant"]: s for s in submitted}
    assert set(by_variant) == {"nccl-all-reduce", "nemotron5-8b"}
    for cert in by_variant.values():
        spec, meta = cert["spec"], cert["metadata"]
        assert spec["target"]["nodeNames"] == ["h100-0", "h100-1"]
        assert spec["nodesPerJob"] == 2 and spec["gpusPerNode"] == 8 and spec["timeoutPerJob"] == "30m0s"
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "aicr-pytest"
        assert meta["name"].startswith(("aicr-cre-nccl-", "aicr-cre-nemo-"))
    assert by_variant["nccl-all-reduce"]["spec"]["categories"][0]["domain"] == "communication"
    # cleanup: the Certifications and what NVCRE made for them are gone
    assert certifications(fc) == []
    assert fc.list(API, "Workflow", None) == []


@pytest.mark.parametrize(("fault", "name", "message"), [
    ("cre-bandwidth-low", NCCL, 'NCCL bandwidth 120.50 does not satisfy constraint ">= 450"'),
    ("cre-goodput-low", GOODPUT, 'goodput ratio 0.4120 does not satisfy constraint ">= 0.7"'),
    ("cre-certification-failed", NCCL, "CRE Certification failed"),
    ("cre-certification-failed", GOODPUT,
     "CRE training Certification failed: Failed (ThresholdsNotMet): 1 of 1 categories failed: "
     "threshold not met on 2 nodes"),
])  # fmt: skip
def test_faults_fail(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, fault: str, name: str, message: str
) -> None:
    fc = cre_cluster(aicr_fake_cluster_factory, fault)
    t = run(pytester, fc, recipe((name,)))[name]
    assert (t["status"], t["message"]) == ("failed", message)
    assert certifications(fc) == []


def test_low_bandwidth_reports_the_failing_measurement(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = cre_cluster(aicr_fake_cluster_factory, "cre-bandwidth-low")
    t = run(pytester, fc, recipe((NCCL,)))[NCCL]
    assert t["stdout"][-1] == "Constraint: >= 450 → false"
    (m,) = t["extra"]["aicr.measurements"]
    assert m["value"] == pytest.approx(player.LOW_BUSBW) and m["passed"] is False


def test_without_nvcre_the_checks_fail_naming_the_component(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training")
    tests = run(pytester, fc, recipe((NCCL, GOODPUT)))
    for name in (NCCL, GOODPUT):
        assert tests[name]["status"] == "failed"
        assert tests[name]["message"] == (
            f"{name}: the NVCRE Certification API (nvcre.nvidia.com/v1alpha1, certifications) is not "
            "served — install the nvcre component (NVIDIA Cluster Readiness Engine)"
        )


def test_fewer_than_two_gpu_nodes_fails(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    profile = resolve_profile(PROFILE)
    (gpu_pool,) = profile.gpu_pools()
    gpu_pool.count = 1
    fc: FakeCluster = aicr_fake_cluster_factory(profile)
    tests = run(pytester, fc, recipe((NCCL, GOODPUT)))
    assert tests[NCCL]["message"].startswith(
        f"recipe declares the {NCCL} NCCL benchmark but the cluster has fewer than 2 GPU nodes"
    )
    assert (
        tests[GOODPUT]["message"] == f"recipe declares {GOODPUT} but the cluster has fewer than 2 GPU nodes"
    )
    assert tests[NCCL]["status"] == tests[GOODPUT]["status"] == "failed"
    assert certifications(fc) == []


@pytest.mark.parametrize(("doc", "reasons"), [
    (recipe((NCCL, GOODPUT), constraints={}),
     {NCCL: f"no {NCCL} constraint in recipe", GOODPUT: f"no {GOODPUT} constraint in recipe"}),
    (recipe((NCCL, GOODPUT), accelerator="gb200"),
     {NCCL: f"skipped - {NCCL} is not qualified on eks × gb200",
      GOODPUT: f"{GOODPUT} currently supports only eks × h100, got eks × gb200"}),
])  # fmt: skip
def test_skips(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, doc: dict[str, Any], reasons: dict[str, str]
) -> None:
    fc = cre_cluster(aicr_fake_cluster_factory)
    tests = run(pytester, fc, doc)
    assert {k: (tests[k]["status"], tests[k]["message"]) for k in reasons} == {
        k: ("skipped", v) for k, v in reasons.items()
    }
    assert certifications(fc) == []  # nothing was submitted


def test_stuck_certification_is_other_with_progress(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = cre_cluster(aicr_fake_cluster_factory, "cre-certification-stuck")
    t = run(pytester, fc, recipe((NCCL,)))[NCCL]
    assert t["status"] == "other"
    assert t["message"].startswith("timed out waiting for Certification aicr-cre-nccl-")
    assert "InProgress=True" in t["message"]
    progress = [line for line in t["stdout"] if line.startswith("Certification aicr-cre-nccl-")]
    assert len(progress) >= 20 and progress[-1].endswith(": InProgress")
    assert certifications(fc) == []


@pytest.mark.parametrize(("name", "message"), [
    (NCCL, "invalid busBW: 'n/a'"),
    (GOODPUT, "invalid goodput result: 'n/a'"),
])  # fmt: skip
def test_unparsable_measurement_is_other(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, name: str, message: str
) -> None:
    fc = cre_cluster(aicr_fake_cluster_factory, "cre-measurement-unparsable")
    t = run(pytester, fc, recipe((name,)))[name]
    assert (t["status"], t["message"]) == ("other", message)


def test_a_pass_on_simulated_gpus_is_other_naming_the_simulator(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    """NVCRE's workload ran on the target nodes, not a pod of ours: their GPUs must be real."""
    fc = cre_cluster(aicr_fake_cluster_factory, "nvml-mock")
    tests = run(pytester, fc, recipe((NCCL, GOODPUT)))
    for name in (NCCL, GOODPUT):
        t = tests[name]
        assert t["status"] == "other", (name, t.get("message"))
        lines = t["message"].splitlines()
        assert lines, name
        for line in lines:
            assert re.fullmatch(
                r"node \S+: NVIDIA's NVML mock simulates its GPUs \(pod nvml-mock/nvml-mock-\S+ runs image "
                r"ghcr\.io/nvidia/nvml-mock:v0\.1\.0\), so what it reports comes from no GPU "
                r"\(--allow-fake-nodes accepts simulated nodes\)",
                line,
            ), line
    assert certifications(fc) == []  # the run's cleanup removed them
