"""``--label-bad-nodes`` / ``--taint-bad-nodes`` on both backends (``k8s_backend``).

The healthy profile labels every checked GPU node ``passed``; ``gpu-xid`` with ``--node-health
--label-bad-nodes`` labels only the last GPU node ``failed`` (with the reason annotation); without
the flags no node is touched.  On the control plane the least-privilege user is bound to
``deploy/rbac-node-marks.yaml`` as well for the test (the opt-in role), and every node gets its
labels and taints back afterwards.
"""

from __future__ import annotations

import contextlib
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_pytest.health.nodemarks import EXTRA_NODE_MARKS, LABEL, REASON_ANNOTATION
from tests.cluster.test_node_health_backends import HEALTH, gpu_nodes, run_health
from tests.harness.backends import ControlPlaneBackend, K8sBackend

REPO = Path(__file__).resolve().parents[2]
NODE_MARKS_RBAC = REPO / "deploy" / "rbac-node-marks.yaml"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def _node(backend: K8sBackend, name: str) -> dict[str, Any]:
    node = backend.find("v1", "Node", name)
    assert node is not None, name
    return node


def _marks(backend: K8sBackend, name: str) -> tuple[str | None, str | None, list[dict[str, Any]]]:
    node = _node(backend, name)
    meta = node.get("metadata") or {}
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") == LABEL]
    return (
        (meta.get("labels") or {}).get(LABEL),
        (meta.get("annotations") or {}).get(REASON_ANNOTATION),
        taints,
    )


def restore_nodes(cp: Any) -> None:
    """Take the validation label, reason annotation and taint off every node of the control plane."""
    for node in cp.request("GET", "/api/v1/nodes")["items"]:
        meta = node["metadata"]
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != LABEL]
        if LABEL in (meta.get("labels") or {}) or len(kept) != len(taints):
            patch = {
                "metadata": {"labels": {LABEL: None}, "annotations": {REASON_ANNOTATION: None}},
                "spec": {"taints": kept},
            }
            cp.request(
                "PATCH", f"/api/v1/nodes/{meta['name']}", patch, content_type="application/merge-patch+json"
            )


@contextlib.contextmanager
def _node_patch_granted(backend: K8sBackend) -> Iterator[None]:
    """On the control plane: bind the least-privilege user to the opt-in node-marks role, and put
    every node's marks back at the end (the control plane is shared by the tests)."""
    if not isinstance(backend, ControlPlaneBackend):
        yield
        return
    from tests.harness.controlplane import LEAST_PRIVILEGE_USER

    cp = backend.cp
    role = next(
        d for d in yaml.safe_load_all(NODE_MARKS_RBAC.read_text()) if d and d["kind"] == "ClusterRole"
    )
    binding = {
        "metadata": {"name": "aicr-pytest-user-node-marks-test"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role["metadata"]["name"],
        },
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": LEAST_PRIVILEGE_USER}],
    }
    for path, body in ((f"{RBAC}/clusterroles", role), (f"{RBAC}/clusterrolebindings", binding)):
        with contextlib.suppress(urllib.error.HTTPError):  # already there from an earlier test
            cp.request("POST", path, body)
    try:
        yield
    finally:
        restore_nodes(cp)
        cp.request("DELETE", f"{RBAC}/clusterrolebindings/{binding['metadata']['name']}")


def test_a_healthy_cluster_labels_every_checked_gpu_node_passed(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    nodes = gpu_nodes(k8s_backend)
    with _node_patch_granted(k8s_backend):
        run = run_health(pytester, k8s_backend, *HEALTH, extra=("--aicr-label-bad-nodes",))
        assert {n: run.tests[n]["status"] for n in HEALTH} == dict.fromkeys(HEALTH, "passed")
        assert {n: _marks(k8s_backend, n) for n in nodes} == {n: ("passed", None, []) for n in nodes}
        records = run.report["extra"][EXTRA_NODE_MARKS]
        assert [(r["node"], r["verdict"], r["changes"]) for r in records] == [
            (n, "passed", [f"label {LABEL}=passed"]) for n in nodes
        ]
        out = run.result.stdout.str()
        for n in nodes:
            assert f"aicr-pytest: node {n} passed: label {LABEL}=passed" in out


def test_gpu_xid_labels_and_taints_only_the_last_gpu_node_failed(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    nodes = gpu_nodes(k8s_backend)
    last = nodes[-1]
    with _node_patch_granted(k8s_backend):
        run = run_health(
            pytester,
            k8s_backend,
            "gpu-health",
            faults=("gpu-xid",),
            extra=("--aicr-node-health", "--aicr-label-bad-nodes", "--aicr-taint-bad-nodes"),
        )
        assert run.tests["gpu-health"]["status"] == "failed"
        label, reason, taints = _marks(k8s_backend, last)
        assert label == "failed"
        assert reason is not None and reason.startswith("gpu-health: GPU 7 exporter health: ")
        assert "XID 79" in reason
        assert taints == [{"key": LABEL, "value": "failed", "effect": "NoSchedule"}]
        for n in nodes[:-1]:
            assert _marks(k8s_backend, n) == ("passed", None, [])
        (bad,) = [r for r in run.report["extra"][EXTRA_NODE_MARKS] if r["verdict"] == "failed"]
        assert bad["node"] == last
        assert bad["changes"] == [
            f"label {LABEL}=failed",
            f"annotation {REASON_ANNOTATION} set",
            f"taint {LABEL}=failed:NoSchedule added",
        ]
        assert f"aicr-pytest: node {last} failed: label {LABEL}=failed; " in run.result.stdout.str()


def test_without_the_flags_no_node_is_touched(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    nodes = gpu_nodes(k8s_backend)
    run = run_health(pytester, k8s_backend, "gpu-health", faults=("gpu-xid",), extra=("--aicr-node-health",))
    assert run.tests["gpu-health"]["status"] == "failed"
    assert EXTRA_NODE_MARKS not in run.report["extra"]
    for n in nodes:
        assert _marks(k8s_backend, n) == (None, None, [])
    patches = k8s_backend.request_count("PATCH", "/api/v1/nodes")
    assert patches in (None, 0)  # the fake counts: not one node patch
