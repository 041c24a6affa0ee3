"""The performance checks end to end on both backends, run with the *least-privilege* kubeconfig.

Like tests/cluster/test_deployment_checks.py: the bundled check runs through pytester with
``--kubeconfig`` set to the backend's restricted kubeconfig (on the control plane: the user bound to
``deploy/rbac.yaml`` only, so any RBAC denial is a red test), against the ``h100-eks-training`` profile.

``nccl-all-reduce-bw`` on the control plane: the check creates its TrainingRuntime and TrainJob on the
real apiserver; the test controllers of :mod:`tests.harness.controlplane_trainer` play Kubeflow
Trainer and JobSet (Secret, JobSet, Indexed Jobs, status), the real Job controller creates the worker
and launcher pods, the real scheduler binds the workers to kwok H100 nodes by ``nvidia.com/gpu`` and
``vpc.amazonaws.com/efa``, and the launcher's ``all_reduce_perf`` log is served by the apiserver's
``pods/log`` through kwok. The check's cleanup (foreground delete of the TrainJob) goes through the
real garbage collector; afterwards nothing labelled with the run id may be left.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs  # one copy of each module across in-process runs
import aicr_pytest.nccl
import aicr_pytest.nccl.cluster
import aicr_pytest.plugin
from aicr_pytest.kube.client import RUN_ID_LABEL
from tests.cluster.check_runner import run_on_backend
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
BW = "nccl-all-reduce-bw"
BW_LINE = re.compile(r"^NCCL All Reduce bandwidth \(nccl-all-reduce-bw\): (?P<bw>\d+\.\d\d) GB/s$")
#: Every kind the NCCL run (or what plays Trainer/JobSet for it) creates.
RUN_KINDS = (
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
    ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"),
    ("batch/v1", "Job"),
    ("v1", "Pod"),
    ("v1", "Secret"),
)


def run_performance(
    pytester: pytest.Pytester, backend: K8sBackend, *extra: str
) -> tuple[dict[str, dict[str, Any]], str]:
    """Run the performance phase with the restricted kubeconfig; (tests by name, the run id)."""
    run = run_on_backend(
        pytester, backend, phase="performance", recipe=RECIPE, snapshot=SNAPSHOT, extra=extra
    )
    return run.tests, run.run_id


def run_leftovers(backend: K8sBackend, run_id: str, trainjob: str) -> list[str]:
    """Objects of the run's kinds labelled with ``run_id``, and any pod of its JobSet (all namespaces)."""
    found = [
        f"{kind} {(o.get('metadata') or {}).get('namespace')}/{o['metadata']['name']}"
        for api, kind in RUN_KINDS
        for o in backend.list(api, kind, None, label_selector=f"{RUN_ID_LABEL}={run_id}")
    ]
    found += [
        f"Pod {p['metadata']['namespace']}/{p['metadata']['name']}"
        for p in backend.list("v1", "Pod", None, label_selector=f"jobset.sigs.k8s.io/jobset-name={trainjob}")
    ]
    return sorted(set(found))


def test_nccl_all_reduce_h100_passes_with_least_privilege(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, tmp_path: Path
) -> None:
    k8s_backend.seed_profile(PROFILE)
    evidence = tmp_path / "evidence"
    started = time.monotonic()
    tests, run_id = run_performance(pytester, k8s_backend, "--aicr-evidence-dir", str(evidence))
    elapsed = time.monotonic() - started
    t = tests[BW]
    assert t["status"] == "passed", (t.get("message"), k8s_backend.controller_errors())
    # exactly AICR's two lines: the measured bus bandwidth, then the constraint verdict
    assert len(t["stdout"]) == 2, t["stdout"]
    m = BW_LINE.match(t["stdout"][0])
    assert m, t["stdout"]
    bw = float(m.group("bw"))
    assert 300 <= bw <= 480
    assert t["stdout"][1] == "Constraint: >= 300 → true"

    run_info = t["extra"]["aicr.ncclRun"]
    workers = len(k8s_backend.gpu_nodes(2)) if k8s_backend.name == "controlplane" else 4
    assert run_info["workers"] == workers and run_info["gpusPerWorker"] == 8
    assert run_info["runtime"] == "h100/eks/runtime.yaml"
    # EFA on every worker node: the full 16G sweep (without EFA the runtime falls back to TCP and 4G)
    sweep = t["extra"]["aicr.ncclSweep"]
    assert sweep["size_bytes"] == 16 << 30 and sweep["complete"] is True
    assert [r["size_bytes"] for r in sweep["rows"]] == [1024 << i for i in range(25)]
    assert sweep["busbw_gbps"] == pytest.approx(bw, abs=0.01)
    log = (evidence / f"{BW}-launcher.log").read_text()
    assert "# Avg bus bandwidth" in log and "NCCL INFO" not in log  # NCCL_DEBUG=WARN on h100/eks
    assert f"Rank {workers * 8 - 1:2d} Group" in log  # every rank on a worker
    assert aicr_pytest.nccl.parse_all_reduce(log).busbw_gbps == pytest.approx(bw, abs=0.01)

    # the run's cleanup removed everything (on the control plane: real foreground GC)
    trainjob = str(run_info["trainJob"]).split("/", 1)[1]
    assert run_leftovers(k8s_backend, run_id, trainjob) == []
    assert k8s_backend.controller_errors() == []
    if k8s_backend.name == "controlplane":
        assert elapsed < 60, f"NCCL check on the control plane took {elapsed:.1f}s"


def test_nccl_slow_node_is_named_by_bad_node_isolation(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    """``nccl-slow-node`` (the last GPU node in name order makes every run it joins slow) with
    ``--isolate-bad-nodes``: the reruns, pinned to one node each by node affinity (on the control
    plane: the real scheduler), name that node; nothing of the reruns is left."""
    k8s_backend.seed_profile(PROFILE, ["nccl-slow-node"])
    tests, run_id = run_performance(pytester, k8s_backend, "--aicr-isolate-bad-nodes")
    t = tests[BW]
    assert t["status"] == "failed", (t.get("message"), k8s_backend.controller_errors())
    nodes = sorted(t["extra"]["aicr.ncclRun"]["nodes"])
    slow = nodes[-1]
    assert t["message"].startswith("NCCL bandwidth ")
    assert t["message"].endswith(
        f"; bad-node isolation: suspect node {slow}: fails alone against the intra-node floor "
        f"(isolation: 1 round, {len(nodes)} reruns)"
    )
    iso = t["extra"]["aicr.ncclIsolation"]
    assert iso["suspects"] == [slow]
    assert [r["nodes"] for r in iso["rounds"][0]] == [[n] for n in nodes]
    trainjob = str(t["extra"]["aicr.ncclRun"]["trainJob"]).split("/", 1)[1]
    assert run_leftovers(k8s_backend, run_id, trainjob) == []
    assert k8s_backend.controller_errors() == []


#: the example recipe's phase-II conformance checks (a training cluster has their prerequisites)
PHASE_II_TRAINING = ("accelerator-metrics", "ai-service-metrics", "pod-autoscaling", "cluster-autoscaling")


def test_conformance_checks_of_the_example_pass(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    """Every conformance check the example recipe declares is implemented and passes on a real
    cluster as the least-privilege user (no request refused)."""
    from aicr_pytest.core import yamlio

    recipe = yamlio.load(RECIPE.read_text())
    declared = list(recipe["validation"]["conformance"]["checks"])
    assert set(PHASE_II_TRAINING) <= set(declared)
    k8s_backend.seed_profile(PROFILE)
    run = run_on_backend(pytester, k8s_backend, phase="conformance", recipe=RECIPE, snapshot=SNAPSHOT)
    assert sorted(run.tests) == sorted(declared)
    for name, t in run.tests.items():
        assert t["status"] == "passed", (name, t.get("message"), k8s_backend.controller_errors())
    run.result.stdout.re_match_lines([rf"^conformance\s+passed\s+{len(declared)}\s+0\s+0\s+0$"])
    assert run.result.ret == 0
