"""The conformance family's shared layer: AICR's error text, pod/condition readers, the GPU work
budget, namespace ownership decisions and the context (pure parts; the I/O is covered by the
scenario tests in tests/cluster/test_conformance_checks.py)."""

from __future__ import annotations

import pytest

from aicr_pytest.conformance import common, testns
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.errors import AccessDenied, ApiUnreachable, Invalid, NotFound


def test_aicr_error_formats_code_message_and_one_line_cause() -> None:
    assert (
        common.aicr_error("NOT_FOUND", "deployment a/b not found") == "[NOT_FOUND] deployment a/b not found"
    )
    err = NotFound('get deployments a/b: 404 Not Found:\n  deployments.apps "b" not found')
    assert common.aicr_error("NOT_FOUND", "deployment a/b not found", err) == (
        "[NOT_FOUND] deployment a/b not found: "
        'get deployments a/b: 404 Not Found: deployments.apps "b" not found'
    )
    assert common.aicr_error("INTERNAL", "x", "") == "[INTERNAL] x"


@pytest.mark.parametrize(
    ("text", "structured"),
    [("[NOT_FOUND] x", True), ("[SERVICE_UNAVAILABLE] x", True), ("plain", False), ("[x] y", False)],
)
def test_is_structured(text: str, structured: bool) -> None:
    assert common.is_structured(text) is structured


def test_read_error_classification() -> None:
    subject = "deployment kai-scheduler/binder"
    nf = common.read_error(NotFound("404"), subject)
    assert isinstance(nf, common.ConformanceFailure)
    assert str(nf) == "[NOT_FOUND] deployment kai-scheduler/binder not found: 404"
    denied = common.read_error(AccessDenied("RBAC denied: cannot get deployments.apps"), subject)
    assert isinstance(denied, Inconclusive) and not isinstance(denied, AssertionError)
    assert str(denied).startswith("[INTERNAL] failed to read deployment kai-scheduler/binder: RBAC denied")
    slow = common.read_error(ApiUnreachable("API unreachable: GET /x: read timed out"), subject)
    assert str(slow).startswith("[TIMEOUT] timed out reading deployment kai-scheduler/binder: ")


def test_status_of_reads_the_status_body() -> None:
    body = '{"kind":"Status","code":422,"reason":"Invalid","message":"admission webhook \\"v\\" denied"}'
    err = Invalid("create trainjobs: 422", status=422, reason="Unprocessable Entity", body=body)
    assert common.status_of(err) == (422, "Invalid", 'admission webhook "v" denied')


def _pod(**status: object) -> dict[str, object]:
    return {"metadata": {"name": "p"}, "status": status}


def test_pod_stuck_reason_image_pull_and_init_and_unschedulable() -> None:
    pod = _pod(
        containerStatuses=[
            {
                "name": "c",
                "image": "nvidia/cuda:x",
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": "pull"}},
            }
        ]
    )
    assert common.pod_stuck_reason(pod, "GPU test pod") == (
        "[INTERNAL] GPU test pod stuck: ImagePullBackOff: pull (image: nvidia/cuda:x)"
    )
    init = _pod(
        initContainerStatuses=[
            {
                "name": "i",
                "image": "busybox",
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "m"}},
            }
        ]
    )
    assert (
        common.pod_stuck_reason(init, "w")
        == "[INTERNAL] w stuck: CrashLoopBackOff: m (init container, image: busybox)"
    )
    unsched = _pod(
        conditions=[
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/5 nodes"}
        ]
    )
    assert common.pod_stuck_reason(unsched, "w") == "[INTERNAL] w stuck: Unschedulable: 0/5 nodes"
    creating = _pod(containerStatuses=[{"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}}])
    assert common.pod_stuck_reason(creating, "w") is None


def test_find_condition() -> None:
    obj = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "", "message": "ok"}]}}
    assert common.find_condition(obj, "Ready") == common.Condition("Ready", "True", "unknown", "ok")
    with pytest.raises(common.ConformanceFailure, match=r"^\[NOT_FOUND\] condition Accepted not found$"):
        common.find_condition(obj, "Accepted")
    with pytest.raises(common.ConformanceFailure, match=r"^\[INTERNAL\] status.conditions not found$"):
        common.find_condition({"status": {}}, "Ready")


def test_deployment_replicas_defaults_and_garbage() -> None:
    assert common.deployment_replicas({"spec": {}, "status": {"availableReplicas": 2}}) == (2, 1)
    assert common.deployment_replicas({"spec": {"replicas": 3}, "status": {"availableReplicas": "x"}}) == (
        0,
        3,
    )


def test_gpu_work_budget() -> None:
    assert common.gpu_work_budget(None, 210.0) == 210.0
    assert common.gpu_work_budget(300.0, 210.0) == 210.0
    assert common.gpu_work_budget(120.0, 1.0) == 30.0
    with pytest.raises(Inconclusive) as info:
        common.gpu_work_budget(119.0, 210.0)
    assert str(info.value) == (
        "[TIMEOUT] check timeout too short to guarantee cleanup: 1m59s remain until the deadline but at "
        "least 2m0s is needed (30s minimum work + 1m30s cleanup reserve) — no test resources were "
        "created; raise the check's catalog timeout"
    )


def test_inner_tolerations_default_tolerates_all() -> None:
    assert common.inner_tolerations(None) == [{"operator": "Exists"}]
    given = ({"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},)
    assert common.inner_tolerations(given) == [dict(given[0])]
    assert common.inner_tolerations(()) == []


def test_namespace_ownership_decisions() -> None:
    assert testns.ownership({testns.OWNER_LABEL: "abc"}, "abc") is testns.Ownership.OWNED
    assert testns.ownership({testns.OWNER_LABEL: "other"}, "abc") is testns.Ownership.FOREIGN
    assert testns.ownership(None, "abc") is testns.Ownership.FOREIGN
    assert testns.create_error_ownership(AccessDenied("403", status=403)) is testns.Ownership.NEVER_CREATED
    assert testns.create_error_ownership(Invalid("422", status=422)) is testns.Ownership.NEVER_CREATED
    assert testns.create_error_ownership(ApiUnreachable("503", status=503)) is testns.Ownership.AMBIGUOUS


def test_cleanup_failure_never_replaces_a_primary_error() -> None:
    failed = testns.CleanupStatus("CLEANUP FAILED: namespace x …", failed=True)
    with pytest.raises(common.ConformanceFailure, match=r"^\[INTERNAL\] CLEANUP FAILED: namespace x"):
        testns.raise_cleanup_failure(failed, None)
    testns.raise_cleanup_failure(failed, RuntimeError("primary"))  # the primary error wins: no raise
    testns.raise_cleanup_failure(testns.CleanupStatus("ok"), None)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_context_components_deadline_and_tolerations() -> None:
    clock = _Clock()
    lines: list[str] = []
    refs = [
        {"name": "gpu-operator", "namespace": " gpu-operator "},
        {"name": "nvidia-dra-driver-gpu", "namespace": "dra", "overrides": {"enabled": False}},
        {"name": "kai-scheduler", "overrides": {"enabled": "no"}},  # non-bool: enabled (AICR warns)
    ]
    ctx = ConformanceContext.create(
        "dra-support",
        None,
        None,
        lines.append,
        component_refs=refs,
        clock=clock,
        timeout_s=300,  # type: ignore[arg-type]
    )
    assert ctx.has_recipe and ctx.allocation_policy == "unspecified"
    assert (
        ctx.has_component("gpu-operator") and ctx.component_namespace("gpu-operator", "x") == "gpu-operator"
    )
    assert not ctx.has_component("nvidia-dra-driver-gpu")
    assert ctx.component_namespace("nvidia-dra-driver-gpu", "nvidia-dra-driver") == "nvidia-dra-driver"
    assert ctx.has_component("kai-scheduler")
    assert [r["name"] for r in ctx.enabled_refs()] == ["gpu-operator", "kai-scheduler"]
    clock.now += 100
    assert ctx.remaining() == 200 and ctx.bounded(500) == 200 and ctx.bounded(5) == 5
    assert ctx.inner_tolerations() == [{"operator": "Exists"}]
    ctx.record("DRA driver namespace", {"Namespace": "dra", "Source": "recipe"}, "kubectl get ns dra")
    assert lines == [
        "--- DRA driver namespace ---",
        "Equivalent: kubectl get ns dra",
        "",
        "Namespace: dra",
        "Source: recipe",
    ]
    assert ctx.artifacts_json() == [
        {
            "label": "DRA driver namespace",
            "data": "Namespace: dra\nSource: recipe",
            "equivalent": "kubectl get ns dra",
        }
    ]
