"""``slinky-slurm-gpu-access`` end to end on the fake cluster: the bundled check through pytester.

The ``gb200-eks-training-slurm`` profile runs Slinky (NodeSet ``slinky-slurm-gpu`` on the 4-GPU GB200
nodes, a Ready login pod); its player answers the two probe jobs as confining Slurm would.  With the
component option ``nodeset_gpus`` the NodeSet pods hold their nodes' GPUs (as a real GPU NodeSet
does); without it no NodeSet pod requests a GPU.  Each scenario proves one rule: pass, the isolation
failure (fault ``slurm-gpu-isolation-broken``), the probe that cannot allocate (fault
``slurm-controller-down``), the GPU-less NodeSet (fail on concrete criteria, skip otherwise), the
recipe guards (no ``slinky-slurm``, service ``kind``) and ``other`` when exec is refused.
"""

from __future__ import annotations

from typing import Any

import pytest

import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.conformance import slinky_gpu_access as gpu_access
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.profiles import resolve_profile
from tests.cluster.check_runner import run_on_fake
from tests.cluster.test_conformance_phase2 import SLINKY, SNAPSHOT, artifacts, recipe

CHECK = "slinky-slurm-gpu-access"
PROFILE = "gb200-eks-training-slurm"


def slurm_cluster(factory: Any, *faults: str, gpus: bool = True) -> FakeCluster:
    profile = resolve_profile(PROFILE)
    comp = profile.component("slinky-slurm")
    assert comp is not None
    comp.options["nodeset_gpus"] = gpus
    fc: FakeCluster = factory(profile, faults=list(faults))
    return fc


def run(
    pytester: pytest.Pytester, fc: FakeCluster, *, slinky: bool = True, **criteria: str
) -> dict[str, Any]:
    doc = recipe((CHECK,), extra_refs=(SLINKY,) if slinky else ())
    doc["criteria"].update(criteria)
    phase_run = run_on_fake(pytester, fc, phase="conformance", recipe=doc, snapshot=SNAPSHOT)
    assert phase_run.report, phase_run.result.stdout.str()[-3000:]
    result: dict[str, Any] = phase_run.tests[CHECK]
    return result


def probe_commands(fc: FakeCluster) -> list[list[str]]:
    commands: list[list[str]] = fc.state.get("slinky", {}).get("commands", [])
    return [c for c in commands if c[:1] == ["srun"] and c[-1] == gpu_access.PROBE_SCRIPT]


def test_confined_slurm_passes(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = slurm_cluster(aicr_fake_cluster_factory)
    t = run(pytester, fc)
    assert t["status"] == "passed", t.get("message")
    verdict = artifacts(t)["Slinky Slurm GPU access and isolation"].splitlines()
    assert verdict[0] == "Node:             slinky-slurm-gpu-0"
    assert "opened=1 denied(EPERM)=3" in verdict[1]
    assert "GPUs=[] " in verdict[2] and "opened=0 denied(EPERM)=4" in verdict[2]
    assert verdict[3] == "Verdict:          PASS"
    # the second job runs on the first one's node, without a GPU request
    first, second = probe_commands(fc)
    assert "--gpus=1" in first and "--nodelist=slinky-slurm-gpu-0" in second
    assert not any(a.startswith("--gpus") or a.startswith("--gres") for a in second)


@pytest.mark.parametrize(("fault", "message", "jobs"), [
    ("slurm-gpu-isolation-broken",
     "[INTERNAL] unallocated job (no GPU request) opened 4 GPU device node(s) without a GPU allocation: "
     "Slurm GPU isolation is broken", 2),
    ("slurm-controller-down",  # the first job cannot allocate: the second never runs
     "[INTERNAL] GPU access (allocated job): exit code 1: srun: error: Unable to allocate resources: "
     "Unable to contact slurm controller", 1),
])  # fmt: skip
def test_broken_slurm_fails(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, fault: str, message: str, jobs: int
) -> None:
    fc = slurm_cluster(aicr_fake_cluster_factory, fault)
    t = run(pytester, fc)
    assert t["status"] == "failed"
    assert t["message"] == message
    assert len(probe_commands(fc)) == jobs
    if jobs == 2:  # the verdict artifact records the failing rule
        verdict = artifacts(t)["Slinky Slurm GPU access and isolation"]
        assert verdict.splitlines()[-1] == f"Verdict:          FAIL: {message}"


def test_the_isolation_fault_from_its_name_alone_fails(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    """The fault by itself (as ``--simulate`` applies it) gives the NodeSet its GPUs."""
    fc: FakeCluster = aicr_fake_cluster_factory(PROFILE, faults=["slurm-gpu-isolation-broken"])
    assert run(pytester, fc)["status"] == "failed"


def test_gpu_less_nodeset_fails_on_concrete_criteria(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = slurm_cluster(aicr_fake_cluster_factory, gpus=False)
    t = run(pytester, fc)
    assert t["status"] == "failed"
    assert t["message"] == (
        "[UNAVAILABLE] recipe criteria require service=eks accelerator=h100, but no NodeSet pod has a "
        "positive nvidia.com/gpu request or limit"
    )
    assert probe_commands(fc) == []


def test_gpu_less_nodeset_skips_on_incomplete_criteria(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = slurm_cluster(aicr_fake_cluster_factory, gpus=False)
    t = run(pytester, fc, accelerator="any")
    assert t["status"] == "skipped"
    assert t["message"] == gpu_access.SKIP_NO_GPU_PODS


@pytest.mark.parametrize(("slinky", "criteria", "reason"), [
    (False, {}, "slinky-slurm component not present in recipe"),
    (True, {"service": "kind"}, gpu_access.SKIP_KIND),
])  # fmt: skip
def test_recipe_guards_skip_before_reading_the_cluster(
    pytester: pytest.Pytester,
    aicr_fake_cluster_factory: Any,
    slinky: bool,
    criteria: dict[str, str],
    reason: str,
) -> None:
    fc = slurm_cluster(aicr_fake_cluster_factory)
    t = run(pytester, fc, slinky=slinky, **criteria)
    assert t["status"] == "skipped"
    assert t["message"] == reason
    assert fc.request_count("GET", r"/apis/slinky\.slurm\.net") == 0


def test_refused_exec_is_other(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = slurm_cluster(aicr_fake_cluster_factory)
    fc.faults.deny(path=r"/pods/[^/]+/exec")
    t = run(pytester, fc)
    assert t["status"] == "other", t.get("message")
    assert probe_commands(fc) == []
