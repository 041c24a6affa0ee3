"""gang-scheduling's Kueue path: the objects it creates and the no-partial-admission verdict, and
the test kit's Kueue player arithmetic."""

from __future__ import annotations

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
