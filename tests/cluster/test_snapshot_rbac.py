"""``deploy/rbac-snapshot.yaml`` grants exactly what a capture uses, and nothing else.

Two sides: the manifest's two ClusterRoles equal :data:`SNAPSHOT_CLUSTER_PERMISSIONS` and
:data:`SNAPSHOT_NAMESPACED_PERMISSIONS` (no wildcards, no Secrets, no namespace writes); a whole capture
with ``--output cm://`` on the fake uses only that set (every request classified as the RBAC authorizer
sees it), and all of it but the watches a cleanup opens only while an object is still terminating.
tests/controlplane/test_snapshot_on_controlplane.py then runs the capture on a real apiserver as an
identity bound to this file only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_pytest.cli import main
from aicr_pytest.kube import connect
from aicr_pytest.kube.rbac import (
    REQUIRED_PERMISSIONS,
    SNAPSHOT_CLUSTER_PERMISSIONS,
    SNAPSHOT_NAMESPACED_PERMISSIONS,
    SNAPSHOT_PERMISSIONS,
    Permission,
    granted_permissions,
)
from aicr_pytest.testing import FakeClusterFactory

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy" / "rbac-snapshot.yaml"
WATCHED_WHILE_TERMINATING = {Permission("watch", "batch", "jobs"), Permission("watch", "", "configmaps")}


def docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def role(name: str) -> dict[str, Any]:
    (found,) = [d for d in docs() if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
    return found


def test_the_two_roles_grant_exactly_the_declared_sets() -> None:
    cluster_wide = granted_permissions([role("aicr-pytest-snapshot")])
    namespaced = granted_permissions([role("aicr-pytest-snapshot-agent")])
    assert cluster_wide == SNAPSHOT_CLUSTER_PERMISSIONS
    assert namespaced == SNAPSHOT_NAMESPACED_PERMISSIONS
    assert SNAPSHOT_PERMISSIONS <= REQUIRED_PERMISSIONS  # validate's role covers a capture too
    everything = cluster_wide | namespaced
    assert not [p for p in everything if "*" in (p.verb, p.group) or p.resource == "*"]
    assert not [p for p in everything if p.resource in ("secrets", "namespaces") and p.verb != "get"]
    assert not [p for p in everything if p.group == "rbac.authorization.k8s.io"]


def test_the_agent_role_is_bound_per_namespace_only() -> None:
    bindings = [d for d in docs() if d["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    by_role = {b["roleRef"]["name"]: b["kind"] for b in bindings}
    assert by_role == {
        "aicr-pytest-snapshot": "ClusterRoleBinding",
        "aicr-pytest-snapshot-agent": "RoleBinding",
    }
    assert all(b["roleRef"]["name"] != "cluster-admin" for b in bindings)


def test_a_capture_with_configmap_output_uses_only_the_granted_set(
    aicr_fake_cluster_factory: FakeClusterFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import aicr_pytest.kube as kube

    fc = aicr_fake_cluster_factory("h100-eks-training", auto_advance=True)
    cluster = connect(str(fc.kubeconfig_path), enforce_declared=True)
    monkeypatch.setattr(kube, "connect", lambda *a, **k: cluster)
    assert main(["snapshot", "-n", "default", "-o", "cm://default/aicr-snapshot"]) == 0
    used = cluster.permissions.seen
    assert used <= SNAPSHOT_PERMISSIONS, sorted(map(str, used - SNAPSHOT_PERMISSIONS))
    # Cleanup watches an object only while it is still terminating; the fake deletes at once.
    assert SNAPSHOT_PERMISSIONS - used == WATCHED_WHILE_TERMINATING
    cm = fc.get("v1", "ConfigMap", "aicr-snapshot", "default")
    assert cm["data"]["format"] == "yaml" and "kind: Snapshot" in cm["data"]["snapshot.yaml"]
    assert "written to cm://default/aicr-snapshot" in capsys.readouterr().err
