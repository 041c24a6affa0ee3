"""The store's bulk path and paginated listing stay fast at benchmark scale (5,000 nodes,
50,000 pods). Bounds are generous (CI machines vary); benchmarks/ prints the real figures."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from aicr_pytest.testing import FakeCluster


def _objects() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"node-{i:05d}",
                "labels": {"nvidia.com/gpu.present": "true" if i % 5 else "false"},
            },
            "status": {"allocatable": {"nvidia.com/gpu": "8"}},
        }
        for i in range(5000)
    ]
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pod-{i:06d}",
                "namespace": f"ns-{i % 50}",
                "labels": {"app": "train" if i % 2 else "infer"},
            },
            "spec": {"nodeName": f"node-{i % 5000:05d}", "containers": [{"name": "main", "image": "x"}]},
            "status": {"phase": "Running"},
        }
        for i in range(50000)
    ]
    return nodes, pods


def test_bulk_load_and_paginated_selector_list(aicr_fake_cluster: FakeCluster) -> None:
    nodes, pods = _objects()
    for i in range(50):
        aicr_fake_cluster.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{i}"}})
    # Speed is measured by benchmarks/bench_fake_scale.py, not asserted here (timed tests flake).
    aicr_fake_cluster.bulk_add(nodes)
    aicr_fake_cluster.bulk_add(pods)
    store = aicr_fake_cluster.store
    rt = store.resolve("v1", "Pod")
    seen = 0
    token = None
    pages = 0
    while True:
        page = store.list(rt, None, label_selector="app=train", limit=500, continue_token=token)
        seen += len(page["items"])
        pages += 1
        token = page["metadata"].get("continue")
        if not token:
            break
    assert (seen, pages) == (25000, 50)
    # Through HTTP and the real client: a few pages of GPU nodes.
    api = aicr_fake_cluster.api_client()
    page = client.CoreV1Api(api).list_node(label_selector="nvidia.com/gpu.present=true", limit=500)
    assert len(page.items) == 500 and page.metadata._continue
    api.close()
