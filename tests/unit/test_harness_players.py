"""The control-plane test controllers forgive a 404 that raced with a test's clean-up, and only that.

A controller reads a pod, then writes its log and status. When the test deletes the pod (or its
namespace) in between, the write answers 404: no controller error. A 404 for a pod that is still
there is a controller bug and stays an error. One error fails the test that saw it, not the rest
of the session.
"""

from __future__ import annotations

import io
import urllib.error
from typing import Any

import pytest

from tests.harness.backends import ControlPlaneSession
from tests.harness.controlplane_players import PodPlayer, Poller, describe_error, vanished

POD = "/api/v1/namespaces/ns-1/pods/verify-0"
NODE = "/api/v1/nodes/gpu-0"
LOGS = "/apis/kwok.x-k8s.io/v1alpha1/namespaces/ns-1/logs"


def _not_found(url: str) -> urllib.error.HTTPError:
    return urllib.error.HTTPError(url, 404, "Not Found", {}, io.BytesIO(b"{}"))  # type: ignore[arg-type]


class StubControlPlane:
    """The apiserver as a dict of path -> object; writes to ``LOGS`` answer 404 (pod deleted meanwhile)."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.patched: list[str] = []

    def get(self, path: str) -> Any:
        if path.startswith("/api/v1/pods?"):
            return {"items": [o for p, o in self.objects.items() if "/pods/" in p]}
        if path not in self.objects:
            raise _not_found("https://127.0.0.1:6443" + path)
        return self.objects[path]

    def get_text(self, path: str) -> str:
        return ""

    def set_pod_logs(self, namespace: str, pod: str, logs: Any) -> None:
        raise _not_found("https://127.0.0.1:6443" + LOGS)

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        self.patched.append(path)
        return {}


def _running_pod(**meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "verify-0", "namespace": "ns-1", "uid": "u-1", **meta},
        "spec": {"nodeName": "gpu-0", "containers": [{"name": "verify"}]},
        "status": {"phase": "Running"},
    }


def test_vanished_is_true_for_a_gone_or_terminating_object_and_false_for_a_live_one() -> None:
    cp = StubControlPlane({POD: _running_pod(), NODE: {"metadata": {"name": "gpu-0"}}})
    assert vanished(cp, POD) is False  # type: ignore[arg-type]
    assert vanished(cp, "/api/v1/namespaces/ns-1/pods/other") is True  # type: ignore[arg-type]
    cp.objects[POD] = _running_pod(deletionTimestamp="2026-12-01T00:00:00Z")
    assert vanished(cp, POD) is True  # type: ignore[arg-type]


def _tick_once(cp: StubControlPlane) -> PodPlayer:
    player = PodPlayer(cp, "app=verify", lambda pod, node: {"verify": ("ok\n", 0)})  # type: ignore[arg-type]
    player.tick()
    return player


def test_a_404_for_a_pod_that_is_still_there_is_an_error() -> None:
    cp = StubControlPlane({POD: _running_pod(), NODE: {"metadata": {"name": "gpu-0"}}})
    with pytest.raises(urllib.error.HTTPError) as info:
        _tick_once(cp)
    assert info.value.code == 404


def test_a_404_for_a_pod_deleted_meanwhile_is_no_error() -> None:
    class Racing(StubControlPlane):
        def set_pod_logs(self, namespace: str, pod: str, logs: Any) -> None:
            del self.objects[POD]  # the test's clean-up won the race
            super().set_pod_logs(namespace, pod, logs)

    cp = Racing({POD: _running_pod(), NODE: {"metadata": {"name": "gpu-0"}}})
    player = _tick_once(cp)
    assert player.played == {"u-1": "ns-1/verify-0"}
    assert cp.patched == []  # nothing written for a pod that is gone


NAMESPACE = "/api/v1/namespaces/ns-1"


class Forbidden(StubControlPlane):
    """A write into the pod's namespace answers 403, as the apiserver does once it is terminating."""

    def set_pod_logs(self, namespace: str, pod: str, logs: Any) -> None:
        raise urllib.error.HTTPError(LOGS, 403, "Forbidden", {}, io.BytesIO(b"{}"))  # type: ignore[arg-type]


def test_a_403_from_a_namespace_being_deleted_is_no_error() -> None:
    terminating = {"metadata": {"name": "ns-1", "deletionTimestamp": "2026-12-01T00:00:00Z"}}
    cp = Forbidden({POD: _running_pod(), NODE: {"metadata": {"name": "gpu-0"}}, NAMESPACE: terminating})
    assert _tick_once(cp).played == {"u-1": "ns-1/verify-0"}


def test_a_403_from_a_live_namespace_is_an_error() -> None:
    live = {"metadata": {"name": "ns-1"}}
    cp = Forbidden({POD: _running_pod(), NODE: {"metadata": {"name": "gpu-0"}}, NAMESPACE: live})
    with pytest.raises(urllib.error.HTTPError) as info:
        _tick_once(cp)
    assert info.value.code == 403


def test_the_error_names_the_controller_and_the_url() -> None:
    class Failing(Poller):
        name = "failing-controller"

        def tick(self) -> None:
            self._stop.set()
            raise _not_found("https://127.0.0.1:6443" + NODE)

    poller = Failing(StubControlPlane({}), interval=0)  # type: ignore[arg-type]
    poller._run()
    assert poller.errors == [
        f"failing-controller: HTTPError: HTTP Error 404: Not Found (https://127.0.0.1:6443{NODE})"
    ]
    assert describe_error(ValueError("x")) == "ValueError: x"


def test_an_error_is_reported_to_the_test_that_saw_it_and_not_to_later_ones() -> None:
    class Quiet(Poller):
        name = "quiet"

        def tick(self) -> None:
            return

    session = ControlPlaneSession.__new__(ControlPlaneSession)
    player = Quiet(StubControlPlane({}))  # type: ignore[arg-type]
    session.players = [player]
    session._error_marks = {}
    player.errors.append("quiet: boom")
    assert session.player_errors() == ["quiet: boom"]
    session.mark_player_errors()  # that test's teardown
    assert session.player_errors() == []
    player.errors.append("quiet: again")
    assert session.player_errors() == ["quiet: again"]
