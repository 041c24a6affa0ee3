"""gang-scheduling's Kueue path: the objects it creates and the no-partial-admission verdict, and
the test kit's Kueue player arithmetic."""

from __future__ import annotations

import pytest

from aicr_pytest.conformance import gang_kueue as gk
from aicr_pytest.testing.players import kueue


def test_the_queue_gates_on_a_cpu_quota_that_fits_two_workers_not_three() -> None:
    flavor, cq, lq = gk.build_queue_objects("f", "cq", "lq", "ns")
    assert (flavor["kind"], cq["kind"], lq["kind"]) == ("ResourceFlavor", "ClusterQueue", "LocalQueue")
    assert lq["spec"] == {"clusterQueue": "cq"} and lq["metadata"]["namespace"] == "ns"
    fits = gk.build_job("j", "ns", "lq", gk.FIT_REPLICAS, [])
    too_big = gk.build_job("k", "ns", "lq", gk.OVERSIZED_REPLICAS, [])
    assert fits["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "lq"}
    assert fits["spec"]["suspend"] is True and fits["spec"]["parallelism"] == 2
    quota = kueue.queue_cpu(cq)
    assert kueue.job_cpu(fits) <= quota < kueue.job_cpu(too_big)


def _pod(name: str, node: str = "") -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}}


def test_a_denied_gang_is_no_violation_and_each_breach_is_named() -> None:
    suspended = {"spec": {"suspend": True}}
    pending = {"metadata": {"name": "wl"}, "status": {}}
    assert gk.denial_violation("j", pending, suspended, [_pod("a")]) == ""
    admitted = {"metadata": {"name": "wl"}, "status": {"admission": {"clusterQueue": "cq"}}}
    assert gk.denial_violation("j", admitted, suspended, []) == (
        "Kueue admitted Workload wl of the oversized gang Job j beyond the queue quota"
    )
    assert gk.denial_violation("j", pending, {"spec": {"suspend": False}}, []) == (
        "the oversized gang Job j was unsuspended beyond the queue quota"
    )
    assert gk.denial_violation("j", pending, {"spec": {}}, []) != ""  # no suspend field: not denied
    assert gk.denial_violation("j", pending, suspended, [_pod("b", "n1"), _pod("a")]) == (
        "pod b of the oversized gang Job j was scheduled to node n1: the gang was partially scheduled"
    )


def test_result_lines_carry_the_suites_names() -> None:
    assert (
        gk.result_line(gk.NO_PARTIAL, "FAIL", "x")
        == "RESULT: TestGangScheduling/NoPartialScheduling: FAIL - x"
    )


def test_kueue_admits_a_whole_gang_or_nothing_and_records_what_it_holds() -> None:
    _, cq, _ = gk.build_queue_objects("f", "cq", "lq", "ns")
    fits = gk.build_job("j", "ns", "lq", gk.FIT_REPLICAS, [])
    fits["metadata"]["uid"] = "0123456789"
    too_big = gk.build_job("k", "ns", "lq", gk.OVERSIZED_REPLICAS, [])
    quota = kueue.queue_cpu(cq)
    assert kueue.admits(0.0, kueue.job_cpu(fits), quota)
    workload = kueue.workload_for(fits)
    assert workload["metadata"]["name"] == "job-j-01234"
    assert workload["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": "0123456789"}
    assert workload["spec"] == {"queueName": "lq", "podSets": [{"name": "main", "count": 2}]}
    workload["status"] = {"admission": kueue.admission(cq, fits)}
    assert workload["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "200m"}
    used = kueue.admitted_cpu([workload], "cq")
    assert used == pytest.approx(0.2) and kueue.admitted_cpu([workload], "other") == 0
    assert not kueue.admits(used, kueue.job_cpu(too_big), quota)
    assert not kueue.admits(0.0, kueue.job_cpu(too_big), quota)  # never fits, even alone
    assert kueue.admits(used, kueue.job_cpu(too_big), quota, ignore_quota=True)  # gang-partial-admission


def test_kueue_runs_only_where_a_profile_models_it_with_structural_crds() -> None:
    assert kueue.plays_kueue(["kueue-gang"]) and kueue.plays_kueue(["gang-partial-admission"])
    assert not kueue.plays_kueue(["no-kai"]) and not kueue.plays_kueue([])
    crds = {c["metadata"]["name"]: c for c in kueue.kueue_crds()}
    assert sorted(crds) == [
        "clusterqueues.kueue.x-k8s.io",
        "localqueues.kueue.x-k8s.io",
        "resourceflavors.kueue.x-k8s.io",
        "workloads.kueue.x-k8s.io",
    ]
    assert crds["clusterqueues.kueue.x-k8s.io"]["spec"]["scope"] == "Cluster"
    schema = crds["workloads.kueue.x-k8s.io"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert "x-kubernetes-preserve-unknown-fields" not in schema
    admission = schema["properties"]["status"]["properties"]["admission"]["properties"]
    assert sorted(admission) == ["clusterQueue", "podSetAssignments"]
