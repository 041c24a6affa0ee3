# ruff: noqa: E501  (exact user-facing messages are asserted verbatim)
"""expected-resources: namespaces, expectedResources, readiness signals, health checks."""

from __future__ import annotations

import time
from typing import Any

import pytest
from _kube_store import FakeTime, Store, daemonset, deployment, namespace, obj, statefulset

from aicr_pytest import deployment as d
from aicr_pytest.core.clock import SYSTEM_CLOCK
from aicr_pytest.deployment import CheckFailed

SKYHOOK = "skyhook.nvidia.com/v1alpha1"
TUNING_MANIFEST = """\
# comment
{{- $cust := index .Values "nodewright-customizations" }}
{{- if ne (toString (index $cust "enabled")) "false" }}
---
apiVersion: skyhook.nvidia.com/v1alpha1
kind: Skyhook
metadata:
  annotations:
    "helm.sh/hook": post-install
  labels:
    app.kubernetes.io/managed-by: {{ .Release.Service }}
  name: tuning
  namespace: {{ .Release.Namespace }}
spec:
  packages:
    tuning:
      name: tuning
---
apiVersion: skyhook.nvidia.com/v1alpha1
kind: Skyhook
metadata:
  name: {{ .Values.name }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-a-skyhook
{{- end }}
"""
REGISTRY = """\
components:
  - name: gpu-operator
    healthCheck: {assertFile: checks/gpu-operator/health-check.yaml}
  - name: bad
    healthCheck: {assertFile: checks/bad/health-check.yaml}
"""
GPU_OP_CHECK = """\
apiVersion: chainsaw.kyverno.io/v1alpha1
kind: Test
metadata: {name: gpu-operator-health-check}
spec:
  timeouts: {assert: 5m}
  steps:
    - name: validate-deployment-exists
      try:
        - assert:
            resource:
              apiVersion: apps/v1
              kind: Deployment
              metadata: {name: gpu-operator, namespace: gpu-operator}
              status:
                (availableReplicas > `0`): true
"""
BAD_CHECK = GPU_OP_CHECK.replace("- assert:", "- script:")
FILES = {
    "registry.yaml": REGISTRY,
    "checks/gpu-operator/health-check.yaml": GPU_OP_CHECK,
    "checks/bad/health-check.yaml": BAD_CHECK,
    "components/nodewright-customizations/manifests/tuning.yaml": TUNING_MANIFEST,
}


def read(rel: str) -> str:
    if rel not in FILES:
        raise FileNotFoundError(rel)
    return FILES[rel]


class Run:
    def __init__(self, store: Store, t: FakeTime | None = None) -> None:
        self.store = store
        self.t = t or FakeTime()
        self.lines: list[str] = []

    def __call__(self, refs: list[dict[str, Any]], **kw: Any) -> str:
        return d.check_expected_resources(
            refs,
            self.store.fetch,
            read_data_file=read,
            emit=self.lines.append,
            clock=self.t,
            **kw,
        )

    def fail(self, refs: list[dict[str, Any]], **kw: Any) -> str:
        with pytest.raises(CheckFailed) as exc:
            self(refs, **kw)
        return str(exc.value)


def skyhook(name: str, status: str | None = "complete") -> dict[str, Any]:
    return obj(SKYHOOK, "Skyhook", name, status={} if status is None else {"status": status})


NODEWRIGHT = {
    "name": "nodewright-customizations",
    "namespace": "skyhook",
    "manifestFiles": ["components/nodewright-customizations/manifests/tuning.yaml"],
}
DRA = {"name": "nvidia-dra-driver-gpu", "namespace": "nvidia-dra-driver"}


# ---- stage 1 + 2 ----------------------------------------------------------------------------------
def test_all_healthy() -> None:
    store = Store(
        [
            namespace("nvidia-nim"),
            deployment("k8s-nim-operator", "nvidia-nim", replicas=None, available=1),
            daemonset("ds", "nvidia-nim"),
            statefulset("ss", "nvidia-nim", replicas=2, ready=2),
            obj("v1", "Service", "svc", "nvidia-nim"),
            obj("v1", "ConfigMap", "cm", "nvidia-nim"),
            obj("v1", "Secret", "sec", "nvidia-nim"),
        ]
    )
    ref = {
        "name": "k8s-nim-operator",
        "namespace": "nvidia-nim",
        "expectedResources": [
            {"kind": "Deployment", "name": "k8s-nim-operator", "namespace": "nvidia-nim"},
            {"kind": "DaemonSet", "name": "ds"},
            {"kind": "StatefulSet", "name": "ss"},
            {"kind": "Service", "name": "svc"},
            {"kind": "ConfigMap", "name": "cm"},
            {"kind": "Secret", "name": "sec"},
        ],
    }
    run = Run(store)
    assert run([ref]) == "All deployment resources and required readiness signals are healthy"
    assert run.lines == [
        "  Namespace nvidia-nim: Active",
        "  [expectedResources] Deployment nvidia-nim/k8s-nim-operator: healthy",
        "  [expectedResources] DaemonSet nvidia-nim/ds: healthy",
        "  [expectedResources] StatefulSet nvidia-nim/ss: healthy",
        "  [expectedResources] Service nvidia-nim/svc: healthy",
        "  [expectedResources] ConfigMap nvidia-nim/cm: healthy",
        "  [expectedResources] Secret nvidia-nim/sec: healthy",
        "All deployment resources and required readiness signals are healthy",
    ]
    assert run.t.elapsed == 0


def test_namespace_problems_and_final_message() -> None:
    store = Store([namespace("term", "Terminating")])
    store_err = {"name": "c", "namespace": "term"}
    run = Run(store)
    msg = run.fail([{"name": "a", "namespace": "missing"}, store_err, {"name": "b", "namespace": "missing"}])
    assert msg == (
        "[NOT_FOUND] expected resource check failed: 2 issue(s):\n"
        '  namespace missing: namespaces "missing" not found\n'
        "  namespace term: phase=Terminating (want Active)"
    )
    assert run.lines == [
        "Failed resources:",
        '  namespace missing: namespaces "missing" not found',
        "  namespace term: phase=Terminating (want Active)",
    ]


def test_namespace_get_error() -> None:
    store = Store()
    store.errors["Namespace"] = RuntimeError("forbidden")
    assert "  namespace n: forbidden" in Run(store).fail([{"name": "a", "namespace": "n"}])


@pytest.mark.parametrize(
    ("objects", "resource", "problem"),
    [
        (
            [deployment("dep", "ns", replicas=3, available=2)],
            {"kind": "Deployment", "name": "dep"},
            "[expectedResources] Deployment ns/dep (comp): not healthy: 2/3 replicas available",
        ),
        (
            [deployment("dep", "ns", replicas=None, available=0)],
            {"kind": "Deployment", "name": "dep"},
            "[expectedResources] Deployment ns/dep (comp): not healthy: 0/1 replicas available",
        ),
        (
            [daemonset("ds", "ns", desired=3, ready=2)],
            {"kind": "DaemonSet", "name": "ds"},
            "[expectedResources] DaemonSet ns/ds (comp): not healthy: 2/3 pods ready",
        ),
        (
            [daemonset("ds", "ns", desired=0, ready=0)],
            {"kind": "DaemonSet", "name": "ds"},
            "[expectedResources] DaemonSet ns/ds (comp): not healthy: 0/0 pods ready "
            "(desiredNumberScheduled is 0: the DaemonSet runs on no node)",
        ),
        (
            [statefulset("ss", "ns", replicas=None, ready=0)],
            {"kind": "StatefulSet", "name": "ss"},
            "[expectedResources] StatefulSet ns/ss (comp): not healthy: 0/1 replicas ready",
        ),
        (
            [],
            {"kind": "Service", "name": "svc"},
            '[expectedResources] Service ns/svc (comp): [NOT_FOUND] not found: services "svc" not found',
        ),
        (
            [],
            {"kind": "Deployment", "name": "x", "namespace": "other"},
            '[expectedResources] Deployment other/x (comp): [NOT_FOUND] not found: deployments.apps "x" not found',
        ),
        (
            [],
            {"kind": "Ingress", "name": "i"},
            '[expectedResources] Ingress ns/i (comp): [INVALID_REQUEST] unsupported resource kind "Ingress"',
        ),
    ],
)
def test_expected_resource_rules(
    objects: list[dict[str, Any]], resource: dict[str, str], problem: str
) -> None:
    store = Store([namespace("ns"), *objects])
    msg = Run(store).fail([{"name": "comp", "namespace": "ns", "expectedResources": [resource]}])
    assert msg == f"[NOT_FOUND] expected resource check failed: 1 issue(s):\n  {problem}"


def test_expected_resource_get_error_reported_as_not_found() -> None:
    store = Store([namespace("ns")])
    store.errors["ConfigMap"] = RuntimeError("rbac: forbidden")
    msg = Run(store).fail(
        [{"name": "c", "namespace": "ns", "expectedResources": [{"kind": "ConfigMap", "name": "x"}]}]
    )
    assert "[expectedResources] ConfigMap ns/x (c): [NOT_FOUND] not found: rbac: forbidden" in msg


def test_disabled_refs_are_not_checked() -> None:
    store = Store([namespace("ns")])
    refs = [
        {"name": "ok", "namespace": "ns"},
        {
            "name": "gpu-operator",
            "namespace": "missing",
            "overrides": {"enabled": False},
            "expectedResources": [{"kind": "Deployment", "name": "x"}],
        },
        {**DRA, "overrides": {"enabled": False}},
        {**NODEWRIGHT, "overrides": {"enabled": False}},
    ]
    run = Run(store)
    assert run(refs) == d.MSG_ALL_HEALTHY
    assert {c[1] for c in store.calls} == {"Namespace"}


def test_budget_exhausted_between_components() -> None:
    t = FakeTime()
    refs = [{"name": "a", "expectedResources": [{"kind": "ConfigMap", "name": "x", "namespace": "n"}]}]
    msg = Run(Store(), t).fail(refs, deadline=t.now)
    assert (
        "[TIMEOUT] deployment validation canceled during expected-resources iteration: check budget exhausted"
        in msg
    )


# ---- stage 3: readiness signals -------------------------------------------------------------------------
def test_skyhook_names_extracted_from_templated_manifest() -> None:
    assert d.extract_skyhook_names(TUNING_MANIFEST) == ["tuning"]
    assert d.extract_skyhook_names("kind: ConfigMap\nmetadata:\n  name: x\n") == []


def test_nodewright_complete_needs_one_minute_of_stability() -> None:
    run = Run(Store([namespace("skyhook"), skyhook("tuning")]))
    assert run([NODEWRIGHT]) == d.MSG_ALL_HEALTHY
    assert "  Nodewright tuning: complete (stable ≥1m0s)" in run.lines
    assert run.t.elapsed == 60
    assert set(run.t.sleeps) == {10.0}


def test_nodewright_crd_not_registered_is_skipped() -> None:
    store = Store([namespace("skyhook")], unregistered=[(SKYHOOK, "Skyhook")])
    run = Run(store)
    assert run([NODEWRIGHT]) == d.MSG_ALL_HEALTHY
    assert "  Nodewright: skyhook.nvidia.com/v1alpha1 not registered, skipping" in run.lines
    assert run.t.elapsed == 0


def test_nodewright_discovery_error() -> None:
    store = Store([namespace("skyhook")])
    store.errors["Skyhook"] = RuntimeError("503")
    assert "  [INTERNAL] failed to discover skyhook.nvidia.com/v1alpha1: 503" in Run(store).fail([NODEWRIGHT])


def test_nodewright_without_names() -> None:
    ref = {**NODEWRIGHT, "manifestFiles": ["nope.yaml", "registry.yaml"]}
    msg = Run(Store([namespace("skyhook")])).fail([ref])
    assert (
        "  [NOT_FOUND] no Nodewright CR names could be extracted from component nodewright-customizations "
        "manifestFiles=[nope.yaml registry.yaml]"
    ) in msg


def test_skyhook_names_come_from_the_data_root() -> None:
    custom = {**NODEWRIGHT, "manifestFiles": ["custom.yaml"]}
    FILES["custom.yaml"] = (
        "---\napiVersion: skyhook.nvidia.com/v1alpha1\nkind: Skyhook\nmetadata:\n  name: mine\n"
    )
    try:
        run = Run(Store([namespace("skyhook"), skyhook("mine")]))
        assert run([custom]) == d.MSG_ALL_HEALTHY
        assert "  Nodewright mine: complete (stable ≥1m0s)" in run.lines
    finally:
        del FILES["custom.yaml"]


@pytest.mark.parametrize(
    ("objects", "cause"),
    [
        ([], "Nodewright tuning: not found (recipe declared it but the cluster has no such CR)"),
        ([skyhook("tuning", None)], "Nodewright tuning: missing status.status"),
        ([skyhook("tuning", "in_progress")], "Nodewright tuning: status=in_progress (want complete)"),
    ],
)
def test_nodewright_not_ready_within_window(objects: list[dict[str, Any]], cause: str) -> None:
    run = Run(Store([namespace("skyhook"), *objects]))
    msg = run.fail([NODEWRIGHT])
    assert f"  [TIMEOUT] Nodewright CRs [tuning] not ready within 8m0s: {cause}" in msg
    assert run.t.elapsed == 480


def test_nodewright_get_error_cause() -> None:
    store = Store([namespace("skyhook")])
    calls = 0

    def fetch(api_version: str, kind: str, ns: Any, name: Any, labels: Any) -> list[dict[str, Any]]:
        nonlocal calls
        if kind == "Skyhook" and name is not None:
            raise RuntimeError("timeout")
        return store.fetch(api_version, kind, ns, name, labels)

    t = FakeTime()
    with pytest.raises(CheckFailed) as exc:
        d.check_expected_resources([NODEWRIGHT], fetch, read_data_file=read, emit=lambda _: None, clock=t)
    assert "not ready within 8m0s: Nodewright tuning: failed to get: timeout" in str(exc.value)


def test_regression_restarts_the_dwell() -> None:
    t = FakeTime()
    store = Store([namespace("skyhook"), skyhook("tuning")])

    def flap(elapsed: float) -> None:
        if elapsed == 30:
            store.replace(skyhook("tuning", "in_progress"))
        if elapsed == 40:
            store.replace(skyhook("tuning"))

    t.on_advance.append(flap)
    assert Run(store, t)([NODEWRIGHT]) == d.MSG_ALL_HEALTHY
    assert t.elapsed == 100  # healthy again at 40, held until 100


def test_flapping_signal_never_holds() -> None:
    t = FakeTime()
    store = Store([namespace("skyhook"), skyhook("tuning")])
    t.on_advance.append(
        lambda el: store.replace(skyhook("tuning", "in_progress" if int(el) % 50 == 0 else "complete"))
    )
    msg = Run(store, t).fail([NODEWRIGHT])
    assert (
        "[TIMEOUT] Nodewright CRs [tuning] became healthy but did not hold it for the 1m0s stability window "
        "within 8m0s (reboot still settling)"
    ) in msg


def test_parent_budget_exhausted_before_dwell() -> None:
    t = FakeTime()
    store = Store([namespace("skyhook"), skyhook("tuning")])
    msg = Run(store, t).fail([NODEWRIGHT], deadline=t.now + 30)
    assert (
        "[TIMEOUT] Nodewright CRs [tuning] became healthy but the parent check budget was exhausted before it "
        "held the 1m0s stability window"
    ) in msg
    assert t.elapsed == 30 - 3  # a tenth of a short budget is kept to report


def test_parent_budget_not_ready_reports_effective_window() -> None:
    t = FakeTime()
    store = Store([namespace("skyhook"), skyhook("tuning", "in_progress")])
    msg = Run(store, t).fail([NODEWRIGHT], deadline=t.now + 120)
    assert "[TIMEOUT] Nodewright CRs [tuning] not ready within 1m48s: " in msg


def test_a_signal_never_ready_in_the_whole_budget_is_reported_before_the_budget_ends() -> None:
    # the catalog's 8m budget equals the 8m signal window: without a margin the budget's `other`
    # ("validator did not complete") would win the race and hide which signal never became ready
    t = FakeTime()
    store = Store([namespace("skyhook"), skyhook("tuning", "in_progress")])
    msg = Run(store, t).fail([NODEWRIGHT], deadline=t.now + 8 * 60)
    assert "[TIMEOUT] Nodewright CRs [tuning] not ready within 7m45s: " in msg
    assert t.elapsed == 8 * 60 - 15


def plugin(
    name: str = "nvidia-dra-driver-gpu-kubelet-plugin", desired: int = 2, ready: int = 2
) -> dict[str, Any]:
    return daemonset(name, "nvidia-dra-driver", desired=desired, ready=ready)


def test_dra_kubelet_plugin_healthy() -> None:
    run = Run(Store([namespace("nvidia-dra-driver"), plugin(), daemonset("controller", "nvidia-dra-driver")]))
    assert run([DRA]) == d.MSG_ALL_HEALTHY
    assert (
        "  DaemonSet nvidia-dra-driver/nvidia-dra-driver-gpu-kubelet-plugin: healthy (stable ≥1m0s)"
        in run.lines
    )


def test_dra_ambiguous_fails_immediately() -> None:
    run = Run(Store([namespace("nvidia-dra-driver"), plugin("a-kubelet-plugin"), plugin("b-kubelet-plugin")]))
    msg = run.fail([DRA])
    assert (
        "  ambiguous: 2 DaemonSets in namespace nvidia-dra-driver match kubelet-plugin role suffix "
        '"-kubelet-plugin": [a-kubelet-plugin, b-kubelet-plugin]'
    ) in msg
    assert run.t.elapsed == 0


@pytest.mark.parametrize(
    ("objects", "cause"),
    [
        (
            [daemonset("controller", "nvidia-dra-driver")],
            'no kubelet-plugin DaemonSet (name suffix "-kubelet-plugin") found in namespace nvidia-dra-driver '
            "(DaemonSets in namespace: [controller])",
        ),
        (
            [daemonset("controller", "nvidia-dra-driver"), daemonset("webhook", "nvidia-dra-driver")],
            'no kubelet-plugin DaemonSet (name suffix "-kubelet-plugin") found in namespace nvidia-dra-driver '
            "(DaemonSets in namespace: [controller, webhook])",
        ),
        (
            [plugin(desired=0, ready=0)],
            "DaemonSet nvidia-dra-driver/nvidia-dra-driver-gpu-kubelet-plugin: no ready kubelet-plugin pods "
            "scheduled (0/0 pods ready)",
        ),
        (
            [plugin(desired=2, ready=0)],
            "DaemonSet nvidia-dra-driver/nvidia-dra-driver-gpu-kubelet-plugin: no ready kubelet-plugin pods "
            "scheduled (0/2 pods ready)",
        ),
        (
            [plugin(desired=3, ready=2)],
            "DaemonSet nvidia-dra-driver/nvidia-dra-driver-gpu-kubelet-plugin: not healthy: 2/3 pods ready",
        ),
    ],
)
def testdra_probe_causes(objects: list[dict[str, Any]], cause: str) -> None:
    msg = Run(Store([namespace("nvidia-dra-driver"), *objects])).fail([DRA])
    assert (
        f"  [TIMEOUT] nvidia-dra-driver-gpu kubelet-plugin DaemonSet in namespace nvidia-dra-driver not ready "
        f"within 8m0s: {cause}"
    ) in msg


def test_dra_list_error_cause() -> None:
    store = Store([namespace("nvidia-dra-driver")])
    store.errors["DaemonSet"] = RuntimeError("boom")
    msg = Run(store).fail([DRA])
    assert "not ready within 8m0s: failed to list DaemonSets in namespace nvidia-dra-driver: boom" in msg


def test_dwell_windows_run_concurrently() -> None:
    run = Run(Store([namespace("skyhook"), namespace("nvidia-dra-driver"), skyhook("tuning"), plugin()]))
    assert run([NODEWRIGHT, DRA]) == d.MSG_ALL_HEALTHY
    assert run.t.elapsed == 60  # one dwell, not two


def test_dwell_windows_share_real_wall_time() -> None:
    store = Store([skyhook("tuning"), plugin()])
    signals = [
        d.ReadinessSignal("a", d.nodewright_probe(store.fetch, ["tuning"], 0.3)),
        d.ReadinessSignal("b", d.dra_probe(store.fetch, "nvidia-dra-driver", 0.3)),
    ]
    start = time.monotonic()
    outcomes = d.wait_for_readiness_signals(signals, clock=SYSTEM_CLOCK, dwell=0.3, interval=0.05, window=5)
    took = time.monotonic() - start
    assert all(o.ok for o in outcomes)
    assert 0.3 <= took < 0.55


# ---- stage 4: health checks ----------------------------------------------------------------------------
def test_health_check_from_registry_passes() -> None:
    store = Store([namespace("gpu-operator"), deployment("gpu-operator", "gpu-operator")])
    run = Run(store)
    assert run([{"name": "gpu-operator", "namespace": "gpu-operator"}]) == d.MSG_ALL_HEALTHY
    assert "  [chainsaw] gpu-operator: health check passed" in run.lines


def test_health_check_failure_line_and_shared_time() -> None:
    store = Store(
        [
            namespace("gpu-operator"),
            namespace("skyhook"),
            skyhook("tuning"),
            deployment("gpu-operator", "gpu-operator", available=0),
        ]
    )
    run = Run(store)
    msg = run.fail([{"name": "gpu-operator", "namespace": "gpu-operator"}, NODEWRIGHT])
    assert msg == (
        "[NOT_FOUND] expected resource check failed: 1 issue(s):\n"
        "  [chainsaw] gpu-operator: health check failed\n"
        '    error: step "validate-deployment-exists": [INTERNAL] Deployment gpu-operator/gpu-operator does not '
        "match: status.(availableReplicas > `0`): expected true, got false"
    )
    assert "  Nodewright tuning: complete (stable ≥1m0s)" in run.lines


def test_rejected_health_check_is_a_failure_line() -> None:
    msg = Run(Store()).fail([{"name": "bad"}])
    assert (
        '[chainsaw] bad: health check failed\n    error: [INVALID_REQUEST] component "bad" doc[0] step '
        '"validate-deployment-exists" try[0]: operation "script" is not in the read-only allowlist (assert, error)'
    ) in msg


def test_unreadable_health_check_file_is_a_failure_line() -> None:
    FILES_BACKUP = FILES.pop("checks/gpu-operator/health-check.yaml")
    try:
        msg = Run(Store()).fail([{"name": "gpu-operator"}])
    finally:
        FILES["checks/gpu-operator/health-check.yaml"] = FILES_BACKUP
    assert (
        "[NOT_FOUND] health check file checks/gpu-operator/health-check.yaml for component gpu-operator"
        in msg
    )


def test_inline_asserts_and_skip() -> None:
    inline = {
        "name": "x",
        "healthCheckAsserts": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\n",
    }
    skipped = {"name": "gpu-operator", "healthCheckSkip": True}
    run = Run(Store([obj("v1", "ConfigMap", "c", "n")]))
    assert run([inline, skipped]) == d.MSG_ALL_HEALTHY
    assert run.lines == ["  [chainsaw] x: health check passed", d.MSG_ALL_HEALTHY]


def test_health_checks_run_even_with_expected_resources() -> None:
    store = Store([namespace("gpu-operator"), deployment("gpu-operator", "gpu-operator")])
    ref = {
        "name": "gpu-operator",
        "namespace": "gpu-operator",
        "expectedResources": [{"kind": "Deployment", "name": "gpu-operator"}],
    }
    run = Run(store)
    run([ref])
    assert "  [chainsaw] gpu-operator: health check passed" in run.lines
    assert "  [expectedResources] Deployment gpu-operator/gpu-operator: healthy" in run.lines


def test_many_components_fast_with_injected_clock() -> None:
    objects: list[dict[str, Any]] = [
        namespace("skyhook"),
        namespace("nvidia-dra-driver"),
        skyhook("tuning"),
        plugin(),
    ]
    refs: list[dict[str, Any]] = [NODEWRIGHT, DRA]
    for i in range(10):
        objects += [namespace(f"ns{i}"), obj("v1", "ConfigMap", "c", f"ns{i}")]
        refs.append(
            {
                "name": f"comp{i}",
                "namespace": f"ns{i}",
                "healthCheckAsserts": f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: ns{i}}}\n",
            }
        )
    run = Run(Store(objects))
    start = time.monotonic()
    assert run(refs) == d.MSG_ALL_HEALTHY
    assert time.monotonic() - start < 2
    assert run.t.elapsed == 60
