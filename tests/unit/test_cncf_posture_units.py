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
