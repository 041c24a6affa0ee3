"""operator-health and component-ref helpers."""

from __future__ import annotations

from typing import Any

import pytest
from _kube_store import Store, pod

from aicr_pytest import deployment as d
from aicr_pytest.core.errors import Inconclusive


def operator_pod(name: str, phase: str = "Running", ns: str = "gpu-operator") -> dict[str, Any]:
    return pod(name, ns, phase=phase, labels={"app": "gpu-operator"})


def run(store: Store, refs: list[dict[str, Any]] | None = None) -> tuple[str, list[str]]:
    lines: list[str] = []
    msg = d.check_operator_health(store.fetch, refs or [], emit=lines.append)
    return msg, lines


def test_pass_lists_pods_and_running_count() -> None:
    store = Store([operator_pod("gpu-operator-a"), operator_pod("gpu-operator-b", "Pending")])
    msg, lines = run(store)
    assert msg == "operator-health: passed running=1"
    assert lines == [
        "Found 2 gpu-operator pod(s):",
        "  gpu-operator-a: Running",
        "  gpu-operator-b: Pending",
        "Running: 1/2",
    ]


def test_only_app_gpu_operator_pods_in_the_namespace_count() -> None:
    store = Store(
        [
            pod("other", "gpu-operator", labels={"app": "nvidia-device-plugin"}),
            operator_pod("elsewhere", ns="default"),
        ]
    )
    with pytest.raises(d.CheckFailed) as exc:
        run(store)
    assert str(exc.value) == "[NOT_FOUND] no gpu-operator pods found"


def test_none_running() -> None:
    store = Store([operator_pod("a", "Pending"), operator_pod("b", "Failed")])
    lines: list[str] = []
    with pytest.raises(d.CheckFailed) as exc:
        d.check_operator_health(store.fetch, [], emit=lines.append)
    assert str(exc.value) == "[INTERNAL] no gpu-operator pods are in Running state (2 total)"
    assert lines[-1] == "Running: 0/2"


def test_check_failed_is_an_assertion_error() -> None:
    assert issubclass(d.CheckFailed, AssertionError)


def test_list_error_is_inconclusive_with_spec_text() -> None:
    store = Store()
    store.errors["Pod"] = RuntimeError("connection refused")
    with pytest.raises(Inconclusive) as exc:
        run(store)
    assert str(exc.value) == "[INTERNAL] failed to list gpu-operator pods: connection refused"


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ([], "gpu-operator"),
        ([{"name": "gpu-operator", "namespace": "gpu-op-custom"}], "gpu-op-custom"),
        ([{"name": "gpu-operator"}], "gpu-operator"),
        ([{"name": "gpu-operator-ocp", "namespace": "nvidia-gpu-operator"}], "nvidia-gpu-operator"),
        (
            [
                {"name": "gpu-operator", "namespace": "a", "overrides": {"enabled": False}},
                {"name": "gpu-operator-ocp", "namespace": "nvidia-gpu-operator"},
            ],
            "nvidia-gpu-operator",
        ),
        (
            [{"name": "gpu-operator-ocp", "namespace": "b"}, {"name": "gpu-operator", "namespace": "a"}],
            "a",
        ),
    ],
)
def test_namespace_from_component_ref(refs: list[dict[str, Any]], expected: str) -> None:
    assert d.operator_namespace(refs) == expected


def test_ocp_namespace_is_listed() -> None:
    store = Store([operator_pod("gpu-operator-x", ns="nvidia-gpu-operator")])
    msg, _ = run(store, [{"name": "gpu-operator-ocp", "namespace": "nvidia-gpu-operator"}])
    assert msg == "operator-health: passed running=1"
    assert store.calls == [("v1", "Pod", "nvidia-gpu-operator", None)]


def test_explicit_namespace_wins() -> None:
    store = Store([operator_pod("x", ns="elsewhere")])
    assert d.check_operator_health(store.fetch, [], emit=lambda _: None, namespace="elsewhere")


@pytest.mark.parametrize(
    ("overrides", "enabled"),
    [
        (None, True),
        ({}, True),
        ({"enabled": True}, True),
        ({"enabled": False}, False),
        ({"enabled": "false"}, True),
    ],
)
def test_enabled_refs(overrides: dict[str, Any] | None, enabled: bool) -> None:
    ref: dict[str, Any] = {"name": "x"}
    if overrides is not None:
        ref["overrides"] = overrides
    assert d.is_enabled(ref) is enabled
    assert (d.enabled_refs([ref]) == [ref]) is enabled


def test_enabled_refs_accepts_models() -> None:
    from aicr_pytest.core.recipe import ComponentRef

    on = ComponentRef.model_validate({"name": "a", "namespace": "n"})
    off = ComponentRef.model_validate({"name": "b", "overrides": {"enabled": False}})
    (got,) = d.enabled_refs([on, off])
    assert got["name"] == "a" and got["namespace"] == "n"
