"""Conformance check functions called directly (as the CNCF evidence collector will, outside pytest)
on the fake cluster: the paths a recipe-driven pytest run cannot reach (no recipe context, a deadline
too short for the GPU work budget, a namespace that already exists, Ctrl-C in the middle, the
ServiceAccount race, a cleanup the API refuses)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from aicr_pytest.conformance import (
    ConformanceContext,
    check_function,
    common,
    dra_support,
    secure_access,
    testns,
)
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.kube import RunScope, connect
from aicr_pytest.testing import FakeCluster
from aicr_pytest.testing.profiles import resolve_profile
from tests.cluster.shared_clock import ClusterClock

RUN_ID = "d1c2b3a4"


@contextmanager
def direct(
    fc: FakeCluster, check: str, *, refs: list[dict[str, Any]] | None = None, policy: str = "unspecified",
    timeout: float = 600.0,
) -> Iterator[tuple[ConformanceContext, list[str]]]:  # fmt: skip
    cluster = connect(str(fc.kubeconfig_path), sleep=fc.clock.sleep)
    run = RunScope(lambda: cluster, RUN_ID, clock=fc.clock)
    lines: list[str] = []
    ctx = ConformanceContext.create(
        check, cluster, run, lines.append, component_refs=refs or [], allocation_policy=policy,
        clock=ClusterClock(fc), timeout_s=timeout,
    )  # fmt: skip
    with fc.auto_advancing():
        try:
            yield ctx, lines
        finally:
            run.cleanup()
            cluster.close()


def gpu_namespaces(fc: FakeCluster) -> list[str]:
    return [n["metadata"]["name"] for n in fc.list("v1", "Namespace", label_selector=testns.OWNER_LABEL)]


def test_standalone_run_probes_the_driver_live_and_runs_the_claim(aicr_fake_cluster_factory: Any) -> None:
    """No componentRefs: the driver is found in its default namespace, the policy is unspecified and
    DRA is usable, so the behavioural claim runs."""
    fc = aicr_fake_cluster_factory("h100-eks-training-dra")
    with direct(fc, "dra-support") as (ctx, lines):
        dra_support.run_dra_support(ctx)
    labels = [a.label for a in ctx.artifacts.artifacts]
    assert labels[0] == "DRA driver namespace" and "Created test resources" in labels
    assert ctx.artifacts.artifacts[0].data == (
        "Namespace: nvidia-dra-driver\nSource: default (no recipe componentRefs; live detection)"
    )
    assert "--- Delete test namespace ---" in lines
    assert gpu_namespaces(fc) == []


def test_standalone_run_without_a_driver_skips(aicr_fake_cluster_factory: Any) -> None:
    profile = resolve_profile("h100-eks-training")
    profile.remove("nvidia-dra-driver-gpu")
    fc = aicr_fake_cluster_factory(profile)
    with direct(fc, "dra-support") as (ctx, _), pytest.raises(CheckSkip) as info:
        dra_support.run_dra_support(ctx)
    assert info.value.reason == dra_support.MSG_SKIP_STANDALONE.format(ns="nvidia-dra-driver")


def test_skip_is_decided_before_the_work_budget(aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    refs = [{"name": "nvidia-dra-driver-gpu", "overrides": {"enabled": False}}, {"name": "gpu-operator"}]
    with direct(fc, "dra-support", refs=refs, timeout=10) as (ctx, _), pytest.raises(CheckSkip):
        dra_support.run_dra_support(ctx)


def test_too_short_a_deadline_creates_nothing(aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    with (
        direct(fc, "secure-accelerator-access", timeout=100) as (ctx, _),
        pytest.raises(Inconclusive) as info,
    ):
        secure_access.run_secure_accelerator_access(ctx)
    assert str(info.value).startswith(
        "[TIMEOUT] check timeout too short to guarantee cleanup: 1m40s remain until the deadline but at "
        "least 2m0s"
    )
    assert fc.request_count("POST") == 0


def test_no_usable_mechanism_fails(aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training", ["gpu-operator-missing", "dra-gpu-slices-missing"])
    with (
        direct(fc, "secure-accelerator-access") as (ctx, _),
        pytest.raises(common.ConformanceFailure) as info,
    ):
        secure_access.run_secure_accelerator_access(ctx)
    assert str(info.value) == (
        "[SERVICE_UNAVAILABLE] no usable GPU allocation mechanism for the secure accelerator access test: "
        "full-GPU DRA not usable: DeviceClass gpu.nvidia.com not found; device plugin not usable: no Ready, "
        "schedulable node advertises allocatable nvidia.com/gpu"
    )


def test_foreign_namespace_is_never_reused_or_deleted(aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    with direct(fc, "dra-support") as (ctx, _):
        ns = testns.GpuTestNamespace(ctx.run, ctx.clock, token="f" * 32)
        fc.add({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns.name, "labels": {testns.OWNER_LABEL: "someone-else"}}})  # fmt: skip
        with pytest.raises(Inconclusive) as info:
            ns.create()
        assert str(info.value) == testns.MSG_FOREIGN.format(ns=ns.name)
        status = ns.cleanup()
        assert not status.failed and "deliberately left untouched" in status.text
    assert fc.find("v1", "Namespace", ns.name) is not None  # the run's cleanup left it alone too


def test_own_namespace_is_adopted_and_deleted(aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    with direct(fc, "dra-support") as (ctx, _):
        ns = testns.GpuTestNamespace(ctx.run, ctx.clock, token="a" * 32)
        fc.add(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns.name, "labels": ns.labels()}}
        )
        ns.create()
        assert ns.state is testns.Ownership.OWNED and ns.uid
        status = ns.cleanup()
        assert status.text == testns.STATUS_DELETED.format(ns=ns.name)
    assert fc.find("v1", "Namespace", ns.name) is None


def test_cleanup_that_is_refused_fails_a_passing_check(aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training-dra")
    fc.faults.deny("DELETE", r"^/api/v1/namespaces/aicr-gpu-test-")
    refs = [{"name": "nvidia-dra-driver-gpu", "namespace": "nvidia-dra-driver"}]
    with direct(fc, "dra-support", refs=refs, policy="dra-resource-claim") as (ctx, _):
        with pytest.raises(common.ConformanceFailure) as info:
            dra_support.run_dra_support(ctx)
        fc.faults.clear()
    assert str(info.value).startswith("[INTERNAL] CLEANUP FAILED: namespace aicr-gpu-test-")
    assert "deletion was never accepted within the 30s cleanup budget" in str(info.value)


def test_interrupt_mid_check_still_cleans_up(
    aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while waiting for the GPU pod: the test namespace (claim and pod first) is deleted."""
    fc = aicr_fake_cluster_factory("h100-eks-training-dra")

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(dra_support, "wait_pod_terminal", interrupted)
    refs = [{"name": "nvidia-dra-driver-gpu", "namespace": "nvidia-dra-driver"}]
    with direct(fc, "dra-support", refs=refs, policy="dra-resource-claim") as (ctx, _):
        with pytest.raises(KeyboardInterrupt):
            dra_support.run_dra_support(ctx)
        assert [a.label for a in ctx.artifacts.artifacts][-1] == "Delete test namespace"
    assert gpu_namespaces(fc) == []
    assert fc.list("resource.k8s.io/v1", "ResourceClaim") == []


SA_MISSING = (
    'pods "p" is forbidden: error looking up service account ns/default: serviceaccount "default" not found'
)


def test_pod_create_retries_while_the_service_account_is_missing(aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    fc.faults.reject("POST", r"/pods$", status=403, reason="Forbidden", message=SA_MISSING, times=3)
    with direct(fc, "dra-support") as (ctx, _):
        ns = ctx.run.create_namespace_for_run("sa-race")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
        created = common.create_pod_when_sa_ready(ctx.run, pod, ctx.clock)
        assert created["metadata"]["name"].startswith("p-")
    assert fc.request_count("POST", r"/pods") == 4


def test_pod_create_gives_up_after_the_service_account_window(aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    fc.faults.reject("POST", r"/pods$", status=403, reason="Forbidden", message=SA_MISSING, times=None)
    with direct(fc, "dra-support") as (ctx, _):
        ns = ctx.run.create_namespace_for_run("sa-race")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
        with pytest.raises(Inconclusive) as info:
            common.create_pod_when_sa_ready(ctx.run, pod, ctx.clock)
    assert str(info.value) == (
        f"[TIMEOUT] namespace {ns} default ServiceAccount was not provisioned within 15s — pod creation kept "
        f"failing SA admission: {SA_MISSING}"
    )


def test_every_check_function_runs_outside_pytest(aicr_fake_cluster_factory: Any) -> None:
    """What the CNCF evidence collector does: build a context, call the function, read the artifacts."""
    fc = aicr_fake_cluster_factory("h100-eks-training")
    refs = [
        {"name": "gpu-operator", "namespace": "gpu-operator"},
        {"name": "kai-scheduler", "namespace": "kai-scheduler"},
        {"name": "kubeflow-trainer", "namespace": "kubeflow"},
    ]
    for name in ("gang-scheduling", "robust-controller", "gpu-operator-health", "platform-health"):
        with direct(fc, name, refs=refs) as (ctx, lines):
            check_function(name)(ctx)
        assert ctx.artifacts_json(), name
        assert lines[0].startswith("--- "), name


KAI_GATE = r"^/apis/apps/v1/namespaces/kai-scheduler/deployments/kai-scheduler-default$"


@pytest.mark.parametrize(
    ("inject", "expected"),
    [
        (
            lambda fc: fc.faults.deny("GET", KAI_GATE),
            "[INTERNAL] failed to read deployment kai-scheduler/kai-scheduler-default: RBAC denied: "
            'cannot get deployments.apps "kai-scheduler-default" in namespace kai-scheduler (403 Forbidden)',
        ),
        (
            lambda fc: fc.faults.server_error("GET", KAI_GATE, times=None, status=503),
            "[INTERNAL] failed to read deployment kai-scheduler/kai-scheduler-default: API unreachable: GET ",
        ),
        (
            lambda fc: fc.faults.drop_connection("GET", KAI_GATE, times=None),
            "[INTERNAL] failed to read deployment kai-scheduler/kai-scheduler-default: API unreachable: GET ",
        ),
    ],
    ids=["rbac", "5xx", "transport"],
)
def test_gang_gate_errors_are_other_not_skip(
    aicr_fake_cluster_factory: Any, inject: Any, expected: str
) -> None:
    from aicr_pytest.conformance import gang_scheduling

    fc = aicr_fake_cluster_factory("h100-eks-training")
    inject(fc)
    with direct(fc, "gang-scheduling") as (ctx, _), pytest.raises(Inconclusive) as info:
        gang_scheduling.run_gang_scheduling(ctx)
    assert not isinstance(info.value, CheckSkip)
    assert str(info.value).startswith(expected), str(info.value)


def test_gang_gate_skips_when_a_kai_crd_is_absent(aicr_fake_cluster_factory: Any) -> None:
    from aicr_pytest.conformance import gang_scheduling

    fc = aicr_fake_cluster_factory("h100-eks-training")
    fc.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "podgroups.scheduling.run.ai")
    with direct(fc, "gang-scheduling") as (ctx, _), pytest.raises(CheckSkip) as info:
        gang_scheduling.run_gang_scheduling(ctx)
    assert info.value.reason == (
        "KAI scheduler not found — cluster may use a different scheduler "
        "(CustomResourceDefinition podgroups.scheduling.run.ai not found)"
    )
