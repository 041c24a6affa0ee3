"""Pure decisions behind robust-controller's posture (:mod:`aicr_pytest.conformance.operator_posture`)
and accelerator-metrics' scrape configuration (:mod:`aicr_pytest.conformance.scrape_config`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from aicr_pytest.conformance import operator_posture as posture
from aicr_pytest.conformance.scrape_config import monitor_selects, selector_matches

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC).timestamp()


def lease(
    holder: str = "ctrl-abc12-xyz_1234", renew: str | None = "2026-03-01T11:59:55.000000Z", duration: Any = 15
) -> dict[str, Any]:
    spec: dict[str, Any] = {"holderIdentity": holder, "leaseTransitions": 2}
    if renew is not None:
        spec["renewTime"] = renew
    if duration is not None:
        spec["leaseDurationSeconds"] = duration
    return {"metadata": {"name": "l", "namespace": "ns"}, "spec": spec}


@pytest.mark.parametrize(
    ("replicas", "ready", "problem"),
    [
        (1, 1, None),
        (2, 2, None),
        (None, 1, None),
        (2, 1, "T controller not ready: 1/2 replicas ready"),
        (1, None, "T controller not ready: 0/1 replicas ready"),
        (0, 0, "T controller not ready: 0/0 replicas ready"),
    ],
)
def test_readiness(replicas: int | None, ready: int | None, problem: str | None) -> None:
    dep: dict[str, Any] = {"spec": {} if replicas is None else {"replicas": replicas}, "status": {}}
    if ready is not None:
        dep["status"]["readyReplicas"] = ready
    assert posture.readiness_problem(dep, "T") == problem


def test_controller_pods_and_holder() -> None:
    pods = [
        {"metadata": {"name": "ctrl-abc12-xyz"}},
        {"metadata": {"name": "ctrl-abc12-old", "deletionTimestamp": "2026-03-01T00:00:00Z"}},
        {"metadata": {"name": "other-1"}},
    ]
    assert posture.controller_pods(pods, "ctrl") == ["ctrl-abc12-xyz"]
    assert posture.holder_pod(lease()) == "ctrl-abc12-xyz"
    assert posture.holder_pod(lease(holder="")) == ""


def test_pick_lease_prefers_a_live_holder_and_the_latest_renewal() -> None:
    old = lease(renew="2026-03-01T11:00:00Z")
    new = lease(renew="2026-03-01T11:59:59Z")
    foreign = lease(holder="someone-else_1")
    assert posture.pick_lease([foreign], ["ctrl-abc12-xyz"]) is None
    assert posture.pick_lease([old, foreign, new], ["ctrl-abc12-xyz"]) is new
    assert posture.pick_lease([old], []) is None


def test_live_lease() -> None:
    verdict = posture.lease_verdict(lease(), NOW, "T")
    assert verdict.problem is None
    assert verdict.report == [
        "Lease: ns/l",
        "Holder: ctrl-abc12-xyz_1234",
        "Last renewed: 5s ago",
        "Lease duration: 15s",
        "Transitions: 2",
    ]


def test_stale_lease() -> None:
    verdict = posture.lease_verdict(lease(renew="2026-03-01T11:50:00Z"), NOW, "T")
    assert verdict.problem == (
        "leader-election Lease ns/l held by ctrl-abc12-xyz_1234 was last renewed 10m0s ago "
        "(lease duration 15s): the T controller is not renewing it"
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"renew": None},
        {"renew": "yesterday"},
        {"renew": "2026-03-01T11:59:55"},  # no zone
        {"duration": None},
        {"duration": 0},
        {"duration": "15"},
        {"duration": True},
    ],
)
def test_unjudgeable_lease_fails_closed(bad: dict[str, Any]) -> None:
    verdict = posture.lease_verdict(lease(**bad), NOW, "T")
    assert verdict.problem == (
        "leader-election Lease ns/l has no renewTime or leaseDurationSeconds — cannot verify renewal"
    )


LABELS = {"app": "nvidia-dcgm-exporter", "tier": "gpu"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ({"matchLabels": {"app": "nvidia-dcgm-exporter"}}, True),
        ({"matchLabels": {"app": "other"}}, False),
        (
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x", "nvidia-dcgm-exporter"]}]},
            True,
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["nvidia-dcgm-exporter"]}]},
            False,
        ),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["1"]}]}, False),
        ({}, False),
        (None, False),
    ],
)
def test_selector_matches(selector: dict[str, Any] | None, matches: bool) -> None:
    assert selector_matches(selector, LABELS) is matches


@pytest.mark.parametrize(
    ("monitor_ns", "ns_selector", "selects"),
    [
        ("gpu-operator", None, True),
        ("monitoring", None, False),
        ("monitoring", {"any": True}, True),
        ("monitoring", {"matchNames": ["gpu-operator"]}, True),
        ("monitoring", {"matchNames": ["kube-system"]}, False),
    ],
)
def test_monitor_namespace_coverage(
    monitor_ns: str, ns_selector: dict[str, Any] | None, selects: bool
) -> None:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}}}
    if ns_selector is not None:
        spec["namespaceSelector"] = ns_selector
    monitor = {"metadata": {"name": "m", "namespace": monitor_ns}, "spec": spec}
    assert monitor_selects(monitor, "gpu-operator", LABELS) is selects


# --- SubjectAccessReview: the request, the answer, and the fake's RBAC evaluation ------------------


def test_review_body_and_verdict() -> None:
    from aicr_pytest.conformance.access_posture import ANONYMOUS_PROBES, review_body, review_verdict

    body = review_body(ANONYMOUS_PROBES[1])
    assert body["spec"] == {
        "user": "system:anonymous",
        "groups": ["system:unauthenticated"],
        "resourceAttributes": {"verb": "create", "group": "", "resource": "pods", "namespace": "default"},
    }
    assert review_verdict({"status": {"allowed": False}}) == (False, "")
    assert review_verdict({"status": {"allowed": True, "reason": "r"}}) == (True, "r")
    assert review_verdict({"status": {"allowed": "true"}}) is None  # not a boolean: fail closed
    assert review_verdict({}) is None


def _rbac_store(
    subject: dict[str, str], rules: list[dict[str, Any]], *, namespaced: str | None = None
) -> Any:
    from aicr_pytest.testing.store import Store

    store = Store()
    role_kind, binding_kind = ("Role", "RoleBinding") if namespaced else ("ClusterRole", "ClusterRoleBinding")
    meta: dict[str, Any] = {"name": "r", **({"namespace": namespaced} if namespaced else {})}
    api = "rbac.authorization.k8s.io/v1"
    store.add({"apiVersion": api, "kind": role_kind, "metadata": dict(meta), "rules": rules})
    store.add(
        {
            "apiVersion": api,
            "kind": binding_kind,
            "metadata": dict(meta),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": "r"},
            "subjects": [subject],
        }
    )
    return store


def _ask(
    store: Any, verb: str, resource: str, namespace: str | None = None, group: str = ""
) -> dict[str, Any]:
    from aicr_pytest.testing.server.authz import review_access

    attrs = {
        "verb": verb,
        "group": group,
        "resource": resource,
        **({"namespace": namespace} if namespace else {}),
    }
    spec = {"user": "system:anonymous", "groups": ["system:unauthenticated"], "resourceAttributes": attrs}
    status: dict[str, Any] = review_access(store, {"spec": spec})["status"]
    return status


ANON_GROUP = {"kind": "Group", "name": "system:unauthenticated"}


def test_fake_review_allows_only_what_a_binding_grants() -> None:
    store = _rbac_store(ANON_GROUP, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}])
    assert _ask(store, "list", "pods") == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "r"',
    }
    assert _ask(store, "create", "pods") == {"allowed": False}
    assert _ask(store, "list", "secrets") == {"allowed": False}
    assert _ask(store, "list", "pods", group="apps") == {"allowed": False}


def test_fake_review_wildcards_namespaces_and_other_subjects() -> None:
    wild = _rbac_store(
        {"kind": "User", "name": "system:anonymous"},
        [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    )
    assert _ask(wild, "delete", "resourceclaims", group="resource.k8s.io")["allowed"] is True
    other = _rbac_store(
        {"kind": "User", "name": "alice"}, [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    )
    assert _ask(other, "list", "pods")["allowed"] is False
    ns_only = _rbac_store(
        ANON_GROUP, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}], namespaced="default"
    )
    assert _ask(ns_only, "create", "pods", namespace="default")["allowed"] is True
    assert _ask(ns_only, "create", "pods", namespace="kube-system")["allowed"] is False
    assert _ask(ns_only, "create", "pods")["allowed"] is False  # cluster-wide: a RoleBinding never counts
