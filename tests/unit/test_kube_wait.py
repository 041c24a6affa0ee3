"""Watch-based waits against a scripted server: list-then-watch from the list's resourceVersion,
resume from the last seen version when a stream ends, re-list on 410 Gone (API concepts,
"Efficient detection of changes" / "410 Gone responses"), deadlines, vanished objects."""

from __future__ import annotations

from typing import Any

import pytest
from _kube_stub import Call, Reply, StepClock, event, make_cluster, obj_meta

from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube import ObjectVanished, WaitTimeout, wait_for, wait_for_job_complete, wait_for_pod_phase
from aicr_pytest.kube.wait import job_outcome, summarize, wait_for_pods


def pod(name: str, phase: str, rv: str, **labels: str) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": obj_meta(name, "ns", rv, labels=labels), "status": {"phase": phase}}


class Script:
    """Serves lists and watch streams from queues, recording the calls."""

    def __init__(self, lists: list[Reply], watches: list[Reply]) -> None:
        self.lists = lists
        self.watches = watches
        self.calls: list[Call] = []

    def __call__(self, call: Call) -> Reply:
        self.calls.append(call)
        if call.query.get("watch") == "true":
            return self.watches.pop(0)
        return self.lists.pop(0)


def list_reply(items: list[dict[str, Any]], rv: str) -> Reply:
    return Reply(200, {"metadata": {"resourceVersion": rv}, "items": items})


def test_list_then_watch_resume_and_relist_on_410() -> None:
    script = Script(
        lists=[list_reply([pod("p", "Pending", "10")], "10"), list_reply([pod("p", "Running", "30")], "30")],
        watches=[
            Reply(200, lines=[event("MODIFIED", pod("p", "Pending", "11"))]),  # stream ends: resume
            Reply(200, lines=[event("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"})]),
            Reply(
                200,
                lines=[
                    event("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "35"}}),
                    event("MODIFIED", pod("p", "Succeeded", "40")),
                ],
            ),
        ],
    )
    cluster, _, _ = make_cluster(script)
    got = wait_for_pod_phase(cluster, "ns", "p", "Succeeded", timeout=60, clock=StepClock())
    assert got["status"]["phase"] == "Succeeded"
    kinds = [
        ("watch" if c.query.get("watch") else "list", c.query.get("resourceVersion")) for c in script.calls
    ]
    assert kinds == [("list", None), ("watch", "10"), ("watch", "11"), ("list", None), ("watch", "30")]
    assert all(c.query["fieldSelector"] == "metadata.name=p" for c in script.calls)
    assert all(c.query.get("allowWatchBookmarks") == "true" for c in script.calls if c.query.get("watch"))


def test_http_410_on_watch_also_relists() -> None:
    script = Script(
        lists=[list_reply([pod("p", "Pending", "1")], "1"), list_reply([pod("p", "Running", "9")], "9")],
        watches=[Reply(410, {"kind": "Status", "code": 410, "reason": "Expired"})],
    )
    cluster, _, _ = make_cluster(script)
    assert wait_for_pod_phase(cluster, "ns", "p", "Running", timeout=5, clock=StepClock())


def test_deleted_while_waiting_is_vanished() -> None:
    script = Script(
        lists=[list_reply([pod("p", "Running", "1")], "1")],
        watches=[Reply(200, lines=[event("DELETED", pod("p", "Running", "2"))])],
    )
    cluster, _, _ = make_cluster(script)
    with pytest.raises(ObjectVanished, match="pods ns/p vanished"):
        wait_for_pod_phase(cluster, "ns", "p", "Succeeded", timeout=5, clock=StepClock())


def test_object_not_yet_created_is_waited_for() -> None:
    script = Script(
        lists=[list_reply([], "1")],
        watches=[Reply(200, lines=[event("ADDED", pod("p", "Running", "2"))])],
    )
    cluster, _, _ = make_cluster(script)
    assert wait_for_pod_phase(cluster, "ns", "p", timeout=5, clock=StepClock())["metadata"]["name"] == "p"


def test_timeout_reports_last_observed_state_and_never_busy_polls() -> None:
    clock = StepClock()
    streams = [Reply(200, lines=[]) for _ in range(200)]
    script = Script(lists=[list_reply([pod("p", "Pending", "1")], "1")], watches=streams)
    cluster, _, _ = make_cluster(script)
    with pytest.raises(
        WaitTimeout, match=r"timed out after 10s waiting for pods ns/p: phase Pending \(phase=Pending\)"
    ):
        wait_for_pod_phase(cluster, "ns", "p", "Succeeded", timeout=10, clock=clock)
    watches = sum(1 for c in script.calls if c.query.get("watch"))
    assert watches < 20  # empty streams back off on the clock instead of spinning


def test_terminal_phase_other_than_wanted_is_inconclusive() -> None:
    script = Script(lists=[list_reply([pod("p", "Failed", "1")], "1")], watches=[])
    cluster, _, _ = make_cluster(script)
    with pytest.raises(Inconclusive, match="ended in phase Failed while waiting for Running"):
        wait_for_pod_phase(cluster, "ns", "p", "Running", timeout=5, clock=StepClock())


def job(conditions: list[dict[str, str]], rv: str) -> dict[str, Any]:
    return {
        "kind": "Job",
        "metadata": obj_meta("j", "ns", rv),
        "status": {"conditions": conditions, "active": 1},
    }


def test_wait_for_job_complete_and_failed() -> None:
    failed = [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]
    script = Script(
        lists=[list_reply([job([], "1")], "1")],
        watches=[Reply(200, lines=[event("MODIFIED", job(failed, "2"))])],
    )
    cluster, _, _ = make_cluster(script)
    got = wait_for_job_complete(cluster, "ns", "j", timeout=5, clock=StepClock())
    assert job_outcome(got) == "Failed"
    assert script.calls[0].path == "/apis/batch/v1/namespaces/ns/jobs"
    assert job_outcome(job([{"type": "Complete", "status": "True"}], "3")) == "Complete"
    assert job_outcome(job([{"type": "Complete", "status": "False"}], "3")) is None


def test_predicate_string_is_quoted_in_timeout() -> None:
    script = Script(
        lists=[list_reply([pod("p", "Running", "1")], "1")], watches=[Reply(200, lines=[]) for _ in range(50)]
    )
    cluster, _, _ = make_cluster(script)
    with pytest.raises(WaitTimeout, match="waiting on GPU burn"):
        wait_for(
            cluster, "v1", "Pod", "p", "ns", lambda o: "waiting on GPU burn", timeout=3, clock=StepClock()
        )


def test_wait_for_pods_count() -> None:
    script = Script(
        lists=[list_reply([pod("a", "Running", "1", app="w"), pod("b", "Pending", "1", app="w")], "1")],
        watches=[Reply(200, lines=[event("MODIFIED", pod("b", "Running", "2", app="w"))])],
    )
    cluster, _, _ = make_cluster(script)
    pods = wait_for_pods(
        cluster, "ns", "app=w", lambda p: p["status"]["phase"] == "Running", 2, timeout=5, clock=StepClock()
    )
    assert [p["metadata"]["name"] for p in pods] == ["a", "b"]
    assert script.calls[0].query["labelSelector"] == "app=w"


def test_summarize() -> None:
    p = {
        "kind": "Pod",
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/4 nodes"}
            ],
            "containerStatuses": [{"name": "main", "state": {"waiting": {"reason": "ImagePullBackOff"}}}],
        },
    }
    assert summarize(p) == (
        "phase=Pending, PodScheduled=False(Unschedulable: 0/4 nodes), "
        "container main: waiting ImagePullBackOff"
    )
    assert summarize(None) == "not seen yet"
