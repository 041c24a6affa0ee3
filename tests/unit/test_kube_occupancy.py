"""Effective pod requests per the Kubernetes resource model ("Resource Management for Pods and
Containers", init containers and sidecars per KEP-753, Pod Overhead per KEP-688)."""

from __future__ import annotations

from typing import Any

from aicr_pytest.kube.occupancy import GpuOccupancy, occupancy_from, parse_count, pod_request


def c(name: str, gpus: int | str | None = None, *, limit: bool = False, **extra: Any) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if gpus is not None:
        res = {"limits" if limit else "requests": {"nvidia.com/gpu": gpus}}
    return {"name": name, "resources": res, **extra}


def pod(
    containers: list[Any],
    init: list[Any] | None = None,
    node: str = "n1",
    phase: str = "Running",
    overhead: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers, "nodeName": node}
    if init:
        spec["initContainers"] = init
    if overhead:
        spec["overhead"] = overhead
    return {"spec": spec, "status": {"phase": phase}}


def test_parse_count() -> None:
    assert parse_count("8") == 8 and parse_count(4) == 4 and parse_count("1k") == 1000
    assert parse_count(None) == 0 and parse_count("bogus") == 0 and parse_count(True) == 0


def test_app_containers_add_up_and_limits_default_requests() -> None:
    assert pod_request(pod([c("a", 2), c("b", "3", limit=True), c("c")])) == 5


def test_init_containers_take_the_max_with_app_sum() -> None:
    assert pod_request(pod([c("a", 2)], init=[c("i1", 4), c("i2", 1)])) == 4
    assert pod_request(pod([c("a", 5)], init=[c("i1", 4)])) == 5


def test_sidecars_add_to_app_sum_and_to_later_init_containers() -> None:
    sidecar = c("s", 1, restartPolicy="Always")
    # app: 2 + sidecar 1 = 3; init after sidecar: 3 + 1 = 4 -> 4
    assert pod_request(pod([c("a", 2)], init=[sidecar, c("i", 3)])) == 4
    # init before the sidecar does not see it: max(3, 2 + 1) = 3
    assert pod_request(pod([c("a", 2)], init=[c("i", 3), sidecar])) == 3


def test_overhead_is_added() -> None:
    assert pod_request(pod([c("a", 1)], overhead={"nvidia.com/gpu": "1"})) == 2


def test_occupancy_skips_terminal_and_unscheduled_pods() -> None:
    nodes = [
        {"metadata": {"name": "n1"}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}},
        {"metadata": {"name": "n2"}, "status": {"allocatable": {}}},
    ]
    pods = [
        pod([c("a", 2)]),
        pod([c("a", 3)], phase="Succeeded"),
        pod([c("a", 1)], phase="Pending"),
        pod([c("a", 4)], node="elsewhere"),
        {"spec": {"containers": [c("a", 1)]}, "status": {"phase": "Pending"}},
    ]
    occ = occupancy_from(nodes, pods)
    assert occ == {"n1": GpuOccupancy(8, 3), "n2": GpuOccupancy(0, 0)}
    assert occ["n1"].free == 5
