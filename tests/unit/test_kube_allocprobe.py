"""kube.allocprobe: the allocation-mode probe's reads (newest served resource.k8s.io version, fail closed)."""

from __future__ import annotations

from typing import Any

import pytest
from _gpu_objects import gpu_class, gpu_slice, node
from _kube_stub import Call, Reply, make_cluster

from aicr_pytest.kube import AccessDenied
from aicr_pytest.kube.allocprobe import probe_allocation_mode

NODES = [node("gpu-0"), node("gpu-1")]


def _list(items: list[dict[str, Any]]) -> Reply:
    return Reply(body={"kind": "List", "metadata": {"resourceVersion": "1"}, "items": items})


def _discovery(*plurals: str) -> Reply:
    return Reply(body={"resources": [{"name": p, "namespaced": False} for p in plurals]})


def _handler(served: dict[str, Reply], objects: dict[str, list[dict[str, Any]]]) -> Any:
    def handle(call: Call) -> Reply:
        if call.path == "/api/v1/nodes":
            return _list(NODES)
        for version, reply in served.items():
            if call.path == f"/apis/resource.k8s.io/{version}":
                return reply
            if call.path.startswith(f"/apis/resource.k8s.io/{version}/"):
                return _list(objects[call.path.rsplit("/", 1)[1]])
        return Reply(status=404, body={"kind": "Status", "code": 404, "reason": "NotFound"})

    return handle


def test_no_served_dra_group_is_no_dra_and_lists_nothing_more() -> None:
    cluster, api, _ = make_cluster(_handler({}, {}))
    mode = probe_allocation_mode(cluster)
    assert mode.api_version is None
    assert not mode.dra_usable
    assert mode.device_plugin_usable
    assert [c.path for c in api.calls] == [
        "/api/v1/nodes",
        "/apis/resource.k8s.io/v1",
        "/apis/resource.k8s.io/v1beta2",
        "/apis/resource.k8s.io/v1beta1",
    ]


def test_lists_classes_and_slices_at_the_newest_served_version() -> None:
    objects = {
        "deviceclasses": [gpu_class()],
        "resourceslices": [gpu_slice("s0", "gpu-0"), gpu_slice("s1", "gpu-1")],
    }
    served = {
        "v1beta2": _discovery("deviceclasses", "resourceslices"),
        "v1beta1": _discovery("deviceclasses"),
    }
    cluster, api, _ = make_cluster(_handler(served, objects))
    mode = probe_allocation_mode(cluster, NODES)
    assert mode.api_version == "v1beta2"
    assert mode.dra_usable
    assert sorted(mode.dra_nodes) == ["gpu-0", "gpu-1"]
    paths = [c.path for c in api.calls]
    assert "/api/v1/nodes" not in paths  # the caller's node list is used
    assert paths[-2:] == [
        "/apis/resource.k8s.io/v1beta2/deviceclasses",
        "/apis/resource.k8s.io/v1beta2/resourceslices",
    ]


def test_a_denied_discovery_propagates_instead_of_meaning_no_dra() -> None:
    denied = Reply(status=403, body={"kind": "Status", "code": 403, "reason": "Forbidden", "message": "no"})
    cluster, _, _ = make_cluster(_handler({"v1": denied}, {}), enforce=False)
    with pytest.raises(AccessDenied):
        probe_allocation_mode(cluster)


def test_a_failing_slice_list_propagates() -> None:
    def handle(call: Call) -> Reply:
        if call.path.endswith("/resourceslices"):
            return Reply(status=403, body={"kind": "Status", "code": 403, "reason": "Forbidden"})
        return _handler({"v1": _discovery("deviceclasses", "resourceslices")}, {"deviceclasses": []})(call)

    cluster, _, _ = make_cluster(handle, enforce=False)
    with pytest.raises(AccessDenied):
        probe_allocation_mode(cluster, NODES)
