"""Watch and pod-log semantics of the fake API server through ``kubernetes.watch.Watch`` and
``read_namespaced_pod_log``.

API concepts = https://kubernetes.io/docs/reference/using-api/api-concepts/
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from aicr_pytest.testing import FakeCluster, FakeClusterFactory


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {}}


def _collect(w: watch.Watch, stream: Any, n: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for ev in stream:
        out.append((ev["type"], ev["object"].metadata.name))
        if len(out) >= n:
            w.stop()
    return out


def test_watch_streams_added_modified_deleted_from_resource_version(api: Any) -> None:
    """API concepts "Efficient detection of changes": a watch from a list's resourceVersion
    receives every later change as ADDED/MODIFIED/DELETED, in order, with typed objects."""
    v1 = client.CoreV1Api(api)
    rv = v1.list_namespaced_config_map("default").metadata.resource_version
    v1.create_namespaced_config_map("default", _cm("w"))
    v1.patch_namespaced_config_map("w", "default", {"data": {"a": "1"}})
    v1.delete_namespaced_config_map("w", "default")
    w = watch.Watch()
    events = _collect(w, w.stream(v1.list_namespaced_config_map, "default", resource_version=rv), 3)
    assert events == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_watch_live_events_from_another_thread(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """API concepts "Watches": changes made while a watch is open are pushed immediately."""
    v1 = client.CoreV1Api(api)

    def writer() -> None:
        time.sleep(0.05)
        aicr_fake_cluster.add(_cm("live"))

    t = threading.Thread(target=writer)
    t.start()
    w = watch.Watch()
    rv = v1.list_namespaced_config_map("default").metadata.resource_version
    events = _collect(w, w.stream(v1.list_namespaced_config_map, "default", resource_version=rv), 1)
    t.join()
    assert events == [("ADDED", "live")]


def test_watch_without_resource_version_starts_with_synthetic_added(
    api: Any, aicr_fake_cluster: FakeCluster
) -> None:
    """API concepts "Semantics for watch": with resourceVersion unset the watch first sends
    synthetic ADDED events for every existing object, then live changes."""
    aicr_fake_cluster.add(_cm("a"))
    aicr_fake_cluster.add(_cm("b"))
    v1 = client.CoreV1Api(api)
    w = watch.Watch()
    events = _collect(w, w.stream(v1.list_namespaced_config_map, "default"), 2)
    assert sorted(events) == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_timeout_seconds_follows_the_fake_clock(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """API concepts "Watches": ``timeoutSeconds`` ends the stream; the fake measures it on the
    injected clock (and the wall clock), so advancing the FakeClock ends a watch at once."""
    v1 = client.CoreV1Api(api)

    def advance() -> None:
        time.sleep(0.1)
        aicr_fake_cluster.advance(61)

    t = threading.Thread(target=advance)
    t.start()
    start = time.monotonic()
    events = list(
        watch.Watch().stream(
            v1.list_namespaced_config_map, "default", timeout_seconds=60, resource_version="1"
        )
    )
    t.join()
    assert time.monotonic() - start < 5
    assert all(e["type"] == "ADDED" for e in events)


def test_watch_too_old_resource_version_is_410_gone(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    """API concepts "410 Gone responses": a watch from a resourceVersion older than the server's
    history gets an ERROR event carrying a ``Status`` with code 410 (``reason: Expired``); the
    client raises it."""
    fc = aicr_fake_cluster_factory(history_size=5)
    for i in range(30):
        fc.add(_cm(f"c{i}"))
    api = fc.api_client()
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as ei:
        list(
            watch.Watch().stream(
                v1.list_namespaced_config_map, "default", resource_version="2", timeout_seconds=5
            )
        )
    assert ei.value.status == 410
    assert "too old resource version" in str(ei.value.reason)
    resp = v1.list_namespaced_config_map(
        "default", watch=True, resource_version="2", timeout_seconds=5, _preload_content=False
    )
    assert resp.status == 200  # the error travels inside the stream
    event = json.loads(resp.data.decode().splitlines()[0])
    assert event["type"] == "ERROR"
    assert event["object"]["kind"] == "Status" and event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"
    api.close()


def test_watch_selector_transitions(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """API concepts "Watches" with a label selector: an object that stops matching is reported as
    DELETED and one that starts matching as ADDED (as the watch cache does)."""
    v1 = client.CoreV1Api(api)
    rv = v1.list_namespaced_config_map("default").metadata.resource_version
    v1.create_namespaced_config_map("default", _cm("s", run="a"))
    v1.patch_namespaced_config_map("s", "default", {"metadata": {"labels": {"run": "b"}}})
    v1.patch_namespaced_config_map("s", "default", {"metadata": {"labels": {"run": "a"}}})
    w = watch.Watch()
    events = _collect(
        w, w.stream(v1.list_namespaced_config_map, "default", resource_version=rv, label_selector="run=a"), 3
    )
    assert events == [("ADDED", "s"), ("DELETED", "s"), ("ADDED", "s")]


def test_watch_field_selector_single_object(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Field selector ``metadata.name`` on a watch narrows it to one object (how clients wait for
    one resource)."""
    v1 = client.CoreV1Api(api)
    rv = v1.list_namespaced_config_map("default").metadata.resource_version
    aicr_fake_cluster.add(_cm("other"))
    aicr_fake_cluster.add(_cm("mine"))
    w = watch.Watch()
    events = _collect(
        w,
        w.stream(
            v1.list_namespaced_config_map, "default", resource_version=rv, field_selector="metadata.name=mine"
        ),
        1,
    )
    assert events == [("ADDED", "mine")]


# --- logs ----------------------------------------------------------------------------------------


def _running_pod(fc: FakeCluster, name: str, containers: list[str], phase: str = "Running") -> None:
    fc.sim.enabled = False
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"nodeName": "n1", "containers": [{"name": c, "image": "i"} for c in containers]},
            "status": {
                "phase": phase,
                "containerStatuses": [
                    {
                        "name": c,
                        "image": "i",
                        "imageID": "",
                        "ready": True,
                        "restartCount": 0,
                        "state": {"running": {}},
                    }
                    for c in containers
                ],
            },
        }
    )


def test_pod_log_by_container_tail_and_limit(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Pod log subresource (``GET /api/v1/namespaces/{ns}/pods/{name}/log``): ``container``
    selects the container, ``tailLines`` keeps the last N lines, ``limitBytes`` truncates."""
    _running_pod(aicr_fake_cluster, "p", ["main"])
    aicr_fake_cluster.set_pod_log("default", "p", "main", "one\ntwo\nthree\n")
    v1 = client.CoreV1Api(api)
    assert v1.read_namespaced_pod_log("p", "default") == "one\ntwo\nthree\n"
    assert v1.read_namespaced_pod_log("p", "default", container="main", tail_lines=2) == "two\nthree\n"
    assert v1.read_namespaced_pod_log("p", "default", limit_bytes=5) == "one\nt"
    with pytest.raises(ApiException) as ei:
        v1.read_namespaced_pod_log("p", "default", container="nope")
    assert ei.value.status == 400
    with pytest.raises(ApiException) as ei:
        v1.read_namespaced_pod_log("ghost", "default")
    assert ei.value.status == 404


def test_pod_log_needs_container_name_when_several(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Like the kubelet/apiserver: with several containers and no ``container`` parameter the
    request is 400 ``a container name must be specified for pod P, choose one of: [a b]``."""
    _running_pod(aicr_fake_cluster, "multi", ["launcher", "worker"])
    aicr_fake_cluster.set_pod_log("default", "multi", "worker", "w\n")
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as ei:
        v1.read_namespaced_pod_log("multi", "default")
    assert ei.value.status == 400
    assert (
        "a container name must be specified for pod multi, choose one of: [launcher worker]" in ei.value.body
    )
    assert v1.read_namespaced_pod_log("multi", "default", container="worker") == "w\n"


def test_pod_log_of_container_not_started_is_400(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """A container that has not started yet has no log: 400 ``... is waiting to start: <reason>``."""
    aicr_fake_cluster.sim.enabled = False
    aicr_fake_cluster.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pending"},
            "spec": {"containers": [{"name": "main", "image": "i"}]},
            "status": {"phase": "Pending"},
        }
    )
    with pytest.raises(ApiException) as ei:
        client.CoreV1Api(api).read_namespaced_pod_log("pending", "default")
    assert ei.value.status == 400 and "is waiting to start: ContainerCreating" in ei.value.body


def test_pod_log_previous(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """``previous=true`` returns the log of the previous (crashed) container instance."""
    _running_pod(aicr_fake_cluster, "crashy", ["main"])
    aicr_fake_cluster.set_pod_log("default", "crashy", "main", "boom\n", previous=True)
    v1 = client.CoreV1Api(api)
    assert v1.read_namespaced_pod_log("crashy", "default", previous=True) == "boom\n"
    _running_pod(aicr_fake_cluster, "fresh", ["main"])
    with pytest.raises(ApiException) as ei:
        v1.read_namespaced_pod_log("fresh", "default", previous=True)
    assert ei.value.status == 400


def test_pod_log_follow_streams_until_container_terminates(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """``follow=true`` streams appended log text and ends when the container terminates."""
    _running_pod(aicr_fake_cluster, "f", ["main"])
    aicr_fake_cluster.set_pod_log("default", "f", "main", "start\n")

    def producer() -> None:
        time.sleep(0.05)
        aicr_fake_cluster.append_pod_log("default", "f", "main", "step 1\n")
        time.sleep(0.05)
        aicr_fake_cluster.append_pod_log("default", "f", "main", "done\n")

        def finish(obj: dict[str, Any]) -> None:
            obj["status"]["phase"] = "Succeeded"

        aicr_fake_cluster.store.mutate(aicr_fake_cluster.store.resolve("v1", "Pod"), "default", "f", finish)

    t = threading.Thread(target=producer)
    t.start()
    v1 = client.CoreV1Api(api)
    resp = v1.read_namespaced_pod_log("f", "default", container="main", follow=True, _preload_content=False)
    text = b"".join(resp.stream(amt=None, decode_content=False)).decode()
    t.join()
    assert text == "start\nstep 1\ndone\n"
    lines = list(watch.Watch().stream(v1.read_namespaced_pod_log, "f", "default", container="main"))
    assert lines == ["start", "step 1", "done"]
