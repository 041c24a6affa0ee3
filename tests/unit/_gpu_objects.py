"""Tiny builders for the Kubernetes-object dicts the allocmode / inference tests feed in."""

from __future__ import annotations

from typing import Any


def node(
    name: str,
    gpus: int | str | None = 8,
    *,
    ready: bool = True,
    unschedulable: bool = False,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    allocatable: dict[str, Any] = {"cpu": "96"}
    if gpus is not None:
        allocatable["nvidia.com/gpu"] = str(gpus)
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def gpu_class(name: str = "gpu.nvidia.com", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def gpu_slice(
    name: str,
    node_name: str | None,
    devices: int = 8,
    *,
    pool: str | None = None,
    driver: str = "gpu.nvidia.com",
    generation: int = 1,
    count: int = 1,
    tainted: int = 0,
    first_device: int = 0,
    **topology: Any,
) -> dict[str, Any]:
    devs: list[dict[str, Any]] = []
    for i in range(devices):
        dev: dict[str, Any] = {"name": f"gpu-{first_device + i}"}
        if i < tainted:
            dev["taints"] = [{"key": "k", "effect": "NoSchedule"}]
        devs.append(dev)
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool or node_name or name, "generation": generation, "resourceSliceCount": count},
        "devices": devs,
        **topology,
    }
    if node_name is not None:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name}, "spec": spec}


def pod(
    name: str,
    node_name: str | None,
    gpus: int = 1,
    *,
    phase: str = "Running",
    namespace: str = "default",
    init: list[dict[str, Any]] | None = None,
    overhead: int = 0,
    limits_only: bool = False,
    ext_claim: tuple[str, str] | None = None,
) -> dict[str, Any]:
    res_key = "limits" if limits_only else "requests"
    container: dict[str, Any] = {
        "name": "c",
        "resources": {res_key: {"nvidia.com/gpu": str(gpus)}} if gpus else {},
    }
    spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    if init:
        spec["initContainers"] = init
    if overhead:
        spec["overhead"] = {"nvidia.com/gpu": str(overhead)}
    status: dict[str, Any] = {"phase": phase}
    if ext_claim:
        status["extendedResourceClaimStatus"] = {
            "resourceClaimName": ext_claim[0],
            "requestMappings": [
                {"containerName": "c", "resourceName": "nvidia.com/gpu", "requestName": ext_claim[1]}
            ],
        }
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec, "status": status}


def claim(
    name: str,
    pool: str,
    devices: int = 1,
    *,
    namespace: str = "default",
    device_class: str = "gpu.nvidia.com",
    driver: str = "gpu.nvidia.com",
    admin: bool = False,
    allocated: bool = True,
    request: str = "gpu",
    first_available: bool = False,
) -> dict[str, Any]:
    if first_available:
        req: dict[str, Any] = {
            "name": request,
            "firstAvailable": [{"name": "a", "deviceClassName": device_class}],
        }
    else:
        req = {"name": request, "exactly": {"deviceClassName": device_class, "count": devices}}
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [req]}},
        "status": {},
    }
    if allocated:
        results = []
        for i in range(devices):
            r: dict[str, Any] = {"request": request, "driver": driver, "pool": pool, "device": f"gpu-{i}"}
            if admin:
                r["adminAccess"] = True
            results.append(r)
        obj["status"]["allocation"] = {"devices": {"results": results}}
    return obj
