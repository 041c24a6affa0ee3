"""Logs by container name (never "container 0"), tail/byte limits, newest pod of a Job
(Job pods carry ``batch.kubernetes.io/job-name``, older clusters only ``job-name``)."""

from __future__ import annotations

from typing import Any

import pytest
from _kube_stub import Call, Reply, make_cluster

from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube import follow_log, job_newest_pod_log, read_log


def pod(name: str, created: str, containers: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": created},
        "spec": {"containers": [{"name": n} for n in containers]},
    }


def test_read_log_passes_container_tail_and_limit() -> None:
    cluster, api, _ = make_cluster(lambda c: Reply(200, b"line1\nline2\n"))
    assert read_log(cluster, "ns", "p", "validator", tail_lines=5, limit_bytes=100) == "line1\nline2\n"
    assert api.calls[0].path == "/api/v1/namespaces/ns/pods/p/log"
    assert api.calls[0].query == {"container": "validator", "tailLines": "5", "limitBytes": "100"}


def test_single_container_name_resolved_from_spec_multi_container_refused() -> None:
    def handler(call: Call) -> Reply:
        if call.path.endswith("/log"):
            return Reply(200, b"ok")
        if call.path.endswith("/pods/single"):
            return Reply(200, pod("single", "t", ["main"]))
        return Reply(200, pod("multi", "t", ["istio-proxy", "main"]))

    cluster, api, _ = make_cluster(handler)
    assert read_log(cluster, "ns", "single", None) == "ok"
    assert api.calls[-1].query["container"] == "main"
    with pytest.raises(Inconclusive, match=r"has containers \['istio-proxy', 'main'\]"):
        read_log(cluster, "ns", "multi", None)


def test_job_newest_pod_log_prefers_new_label_then_falls_back() -> None:
    pods = [pod("j-old", "2026-01-01T00:00:00Z", ["main"]), pod("j-new", "2026-01-01T00:05:00Z", ["main"])]

    def handler(call: Call) -> Reply:
        if call.path.endswith("/log"):
            return Reply(200, call.path.split("/")[-2].encode())
        sel = call.query.get("labelSelector", "")
        items = pods if sel == "job-name=j" else []
        return Reply(200, {"metadata": {}, "items": items})

    cluster, api, _ = make_cluster(handler)
    assert job_newest_pod_log(cluster, "ns", "j", "main") == "j-new"
    sels = [c.query.get("labelSelector") for c in api.calls if not c.path.endswith("/log")]
    assert sels == ["batch.kubernetes.io/job-name=j", "job-name=j"]


def test_job_without_pods_is_inconclusive() -> None:
    cluster, _, _ = make_cluster(lambda c: Reply(200, {"metadata": {}, "items": []}))
    with pytest.raises(Inconclusive, match="has no pods"):
        job_newest_pod_log(cluster, "ns", "j", "main")


def test_follow_log_yields_lines() -> None:
    cluster, api, _ = make_cluster(lambda c: Reply(200, lines=[b"a\nb", b"\nc\r\n", b"tail"]))
    assert list(follow_log(cluster, "ns", "p", "main")) == ["a", "b", "c", "tail"]
    assert api.calls[0].query["follow"] == "true"
