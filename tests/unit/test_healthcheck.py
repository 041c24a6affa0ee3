# ruff: noqa: E501  (exact user-facing messages are asserted verbatim)
"""Component health checks: matcher, loading/allowlist, runner timing, resolution."""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

import pytest
from _kube_store import FakeTime, Store, daemonset, deployment, obj, pod

from aicr_pytest.core.clock import SYSTEM_CLOCK
from aicr_pytest.deployment import healthcheck as hc
from aicr_pytest.deployment.healthcheck import (
    AssertionEngineError,
    HealthCheckRejected,
    HealthCheckResult,
    format_go_duration,
    match_tree,
    parse_go_duration,
    parse_health_check,
)


# ================================================================================================
# matcher
# ================================================================================================
class TestMatcher:
    def test_subset_map_ignores_extra_fields(self) -> None:
        actual = {"status": {"state": "ready", "other": 1}, "spec": {"x": 1}}
        assert match_tree({"status": {"state": "ready"}}, actual) == []

    def test_scalar_mismatch_names_json_path(self) -> None:
        actual = {"status": {"numberReady": 2}}
        assert match_tree({"status": {"numberReady": 3}}, actual) == ["status.numberReady: expected 3, got 2"]

    def test_missing_field_is_null(self) -> None:
        assert match_tree({"status": {"state": "ready"}}, {}) == ['status.state: expected "ready", got null']

    def test_projection_key_filters_and_compares(self) -> None:
        tree = {"status": {"(conditions[?type == 'Established'])": [{"status": "True"}]}}
        ok = {
            "status": {
                "conditions": [
                    {"type": "NamesAccepted", "status": "True"},
                    {"type": "Established", "status": "True"},
                ]
            }
        }
        bad = {"status": {"conditions": [{"type": "Established", "status": "False"}]}}
        assert match_tree(tree, ok) == []
        assert match_tree(tree, bad) == [
            'status.(conditions[?type == \'Established\'])[0].status: expected "True", got "False"'
        ]

    def test_projection_on_missing_list_is_a_mismatch_not_an_error(self) -> None:
        tree = {"status": {"(conditions[?type == 'Established'])": [{"status": "True"}]}}
        assert match_tree(tree, {"status": {}}) == [
            "status.(conditions[?type == 'Established']): expected an array, got null"
        ]

    def test_boolean_projection(self) -> None:
        tree = {"status": {"(availableReplicas > `0`)": True}}
        assert match_tree(tree, {"status": {"availableReplicas": 1}}) == []
        assert match_tree(tree, {"status": {"availableReplicas": 0}}) == [
            "status.(availableReplicas > `0`): expected true, got false"
        ]
        # JMESPath ordering on null yields null, which is not true
        assert match_tree(tree, {"status": {}}) == [
            "status.(availableReplicas > `0`): expected true, got null"
        ]

    def test_length_style_key(self) -> None:
        tree = {"(length(items))": 2}
        assert match_tree(tree, {"items": [1, 2]}) == []
        assert match_tree(tree, {"items": [1]}) == ["(length(items)): expected 2, got 1"]

    def test_nil_safe_idiom(self) -> None:
        key = "((containerStatuses || `[]`)[?state.waiting.reason == 'CrashLoopBackOff'] | length(@) > `0`)"
        tree = {"status": {key: True}}
        assert match_tree(tree, {"status": {"phase": "Pending"}}) != []  # no statuses: does not match
        crash = {
            "status": {
                "containerStatuses": [
                    {"state": {"running": {}}},
                    {"state": {"waiting": {"reason": "CrashLoopBackOff"}}},
                ]
            }
        }
        assert match_tree(tree, crash) == []

    def test_arrays_need_equal_length_then_elementwise(self) -> None:
        assert match_tree({"a": [1, 2]}, {"a": [1, 2]}) == []
        assert match_tree({"a": [1]}, {"a": [1, 2]}) == ["a: expected an array of length 1, got length 2"]
        assert match_tree({"a": [{"x": 1}, {"x": 2}]}, {"a": [{"x": 1}, {"x": 3}]}) == [
            "a[1].x: expected 2, got 3"
        ]
        assert match_tree({"a": [1]}, {"a": "x"}) == ['a: expected an array, got "x"']

    @pytest.mark.parametrize(
        ("expected", "actual", "ok"),
        [
            (3, 3.0, True),
            (3, 3, True),
            ("3", 3, False),
            (3, "3", False),
            (True, 1, False),
            (1, True, False),
            (True, True, True),
            ("True", True, False),
            (None, None, True),
            ("a", "a", True),
            ("a", "A", False),
        ],
    )
    def test_scalar_comparison_rules(self, expected: Any, actual: Any, ok: bool) -> None:
        assert (match_tree({"v": expected}, {"v": actual}) == []) is ok

    def test_map_against_scalar(self) -> None:
        assert match_tree({"status": {"state": "ready"}}, {"status": "x"}) == [
            'status: expected an object, got "x"'
        ]

    def test_empty_map_requires_non_null(self) -> None:
        assert match_tree({"status": {}}, {"status": {"a": 1}}) == []
        assert match_tree({"status": {}}, {}) == ["status: expected a non-null value, got null"]

    def test_bad_jmespath_is_engine_error(self) -> None:
        with pytest.raises(AssertionEngineError, match=r"^status\.\(\(a\): "):
            match_tree({"status": {"((a)": True}}, {"status": {}})

    def test_function_on_null_is_engine_error(self) -> None:
        with pytest.raises(AssertionEngineError, match="length"):
            match_tree({"status": {"(length(containerStatuses))": 0}}, {"status": {}})


def test_go_durations() -> None:
    assert parse_go_duration("5m") == 300
    assert parse_go_duration("1m30s") == 90
    assert parse_go_duration("250ms") == 0.25
    assert parse_go_duration("1h") == 3600
    assert parse_go_duration("0") == 0
    for bad in ("", "5", "5 m", "m", "1d"):
        with pytest.raises(ValueError):
            parse_go_duration(bad)
    assert format_go_duration(480) == "8m0s"
    assert format_go_duration(60) == "1m0s"
    assert format_go_duration(90) == "1m30s"
    assert format_go_duration(30) == "30s"
    assert format_go_duration(3600) == "1h0m0s"
    assert format_go_duration(0) == "0s"


# ================================================================================================
# loading and the allowlist
# ================================================================================================
def chainsaw(steps: str, spec_extra: str = "") -> str:
    return (
        "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\nspec:\n"
        f"{spec_extra}  timeouts:\n    assert: 2m\n  steps:\n{steps}"
    )


STEP_OK = """\
    - name: s1
      try:
        - assert:
            resource:
              apiVersion: apps/v1
              kind: Deployment
              metadata: {name: d, namespace: ns}
              status: {(availableReplicas > `0`): true}
        - error:
            resource:
              apiVersion: v1
              kind: Pod
              metadata: {namespace: ns, labels: {app: x}}
              status: {phase: Pending}
"""


class TestLoading:
    def test_chainsaw_shape(self) -> None:
        check = parse_health_check("c", chainsaw(STEP_OK))
        assert check.shape == "chainsaw"
        (test,) = check.tests
        assert test.timeout == 120
        (step,) = test.steps
        first, second = step.assertions
        assert (first.api_version, first.kind, first.name, first.namespace, first.negative) == (
            "apps/v1",
            "Deployment",
            "d",
            "ns",
            False,
        )
        assert second.negative and second.name is None and dict(second.labels) == {"app": "x"}
        assert second.where == 'doc[0] step "s1" try[1]'

    def test_no_timeout_means_caller_budget(self) -> None:
        text = "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nspec:\n  steps: []\n"
        assert parse_health_check("c", text).tests[0].timeout is None

    @pytest.mark.parametrize(
        "op",
        [
            "apply",
            "command",
            "create",
            "delete",
            "describe",
            "events",
            "get",
            "patch",
            "podLogs",
            "proxy",
            "script",
            "sleep",
            "update",
            "wait",
            "frobnicate",
        ],
    )
    def test_non_allowlisted_operation_rejected(self, op: str) -> None:
        steps = f"    - name: s1\n      try:\n        - assert:\n            resource: {{apiVersion: v1, kind: Pod}}\n        - {op}:\n            content: x\n"
        with pytest.raises(HealthCheckRejected) as exc:
            parse_health_check("c", chainsaw(steps))
        assert str(exc.value) == (
            f'[INVALID_REQUEST] component "c" doc[0] step "s1" try[1]: operation "{op}" is not in the '
            "read-only allowlist (assert, error)"
        )

    @pytest.mark.parametrize("block", ["catch", "finally", "cleanup"])
    def test_step_blocks_rejected(self, block: str) -> None:
        steps = (
            "    - name: s1\n      try:\n        - assert:\n            resource: {apiVersion: v1, kind: Pod}\n"
            f"      {block}:\n        - assert:\n            resource: {{apiVersion: v1, kind: Pod}}\n"
        )
        with pytest.raises(HealthCheckRejected) as exc:
            parse_health_check("c", chainsaw(steps))
        assert str(exc.value) == (
            f'[INVALID_REQUEST] component "c" doc[0] step "s1": "{block}" block is not in the read-only '
            "allowlist (assert, error)"
        )

    def test_test_level_catch_rejected(self) -> None:
        with pytest.raises(HealthCheckRejected, match=r'doc\[0\]: "catch" block is not in the read-only'):
            parse_health_check("c", chainsaw("    []\n", spec_extra="  catch:\n    - script: {content: x}\n"))

    def test_allowlist_checked_on_every_document_before_running(self) -> None:
        bad = chainsaw("    - name: s9\n      try:\n        - script: {content: rm -rf /}\n")
        with pytest.raises(HealthCheckRejected, match=r'doc\[1\] step "s9" try\[0\]: operation "script"'):
            parse_health_check("c", chainsaw(STEP_OK) + "\n---\n" + bad)

    def test_missing_apiversion_or_kind(self) -> None:
        steps = "    - name: s1\n      try:\n        - assert:\n            resource: {kind: Pod}\n"
        with pytest.raises(HealthCheckRejected) as exc:
            parse_health_check("c", chainsaw(steps))
        assert str(exc.value) == (
            '[INVALID_REQUEST] resource missing apiVersion or kind (component "c" doc[0] step "s1" try[0])'
        )

    def test_two_operations_in_one_entry(self) -> None:
        steps = (
            "    - name: s1\n      try:\n        - assert: {resource: {apiVersion: v1, kind: Pod}}\n"
            "          error: {resource: {apiVersion: v1, kind: Pod}}\n"
        )
        with pytest.raises(HealthCheckRejected, match="exactly one operation, got assert, error"):
            parse_health_check("c", chainsaw(steps))

    def test_empty_operation(self) -> None:
        steps = "    - name: s1\n      try:\n        - description: nothing\n"
        with pytest.raises(HealthCheckRejected, match=r"try\[0\]: empty operation"):
            parse_health_check("c", chainsaw(steps))

    def test_file_operand_rejected(self) -> None:
        steps = "    - name: s1\n      try:\n        - assert: {file: x.yaml}\n"
        with pytest.raises(HealthCheckRejected, match='only inline "resource"'):
            parse_health_check("c", chainsaw(steps))

    def test_non_test_document_in_chainsaw_file(self) -> None:
        text = chainsaw(STEP_OK) + "---\napiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Configuration\n"
        with pytest.raises(
            HealthCheckRejected,
            match=r"doc\[1\]: expected a chainsaw Test .*got chainsaw.kyverno.io/v1alpha1 Configuration",
        ):
            parse_health_check("c", text)

    def test_bad_timeout(self) -> None:
        text = "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nspec:\n  timeouts: {assert: soon}\n  steps: []\n"
        with pytest.raises(HealthCheckRejected, match=r"spec\.timeouts\.assert"):
            parse_health_check("c", text)

    def test_bad_yaml(self) -> None:
        with pytest.raises(
            HealthCheckRejected, match=r'^\[INVALID_REQUEST\] component "c": health check is not valid YAML'
        ):
            parse_health_check("c", "a: [1,\n")

    def test_raw_multidoc_shape(self) -> None:
        text = (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, namespace: n}\nstatus: {readyReplicas: 1}\n"
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: n}\n"
        )
        check = parse_health_check("c", text)
        assert check.shape == "raw"
        names = [a.name for a in check.tests[0].steps[0].assertions]
        assert names == ["a", "b"]
        assert check.tests[0].timeout is None

    def test_raw_doc_needs_name(self) -> None:
        with pytest.raises(HealthCheckRejected) as exc:
            parse_health_check("c", "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: n}\n")
        assert str(exc.value) == (
            '[INVALID_REQUEST] resource missing apiVersion, kind or metadata.name (component "c" doc[0])'
        )

    def test_empty_raw_file_passes(self) -> None:
        t = FakeTime()
        check = parse_health_check("c", "# nothing here\n")
        assert hc.run_health_check(check, Store().fetch, clock=t).passed


# ================================================================================================
# single evaluations
# ================================================================================================
def assertion(tree: dict[str, Any], negative: bool = False) -> hc.ResourceAssertion:
    meta = tree.get("metadata", {})
    return hc.ResourceAssertion(
        api_version=tree["apiVersion"],
        kind=tree["kind"],
        name=meta.get("name"),
        namespace=meta.get("namespace"),
        labels=meta.get("labels", {}),
        tree=tree,
        negative=negative,
    )


POD_LIST = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "ns", "labels": {"app": "x"}}}


class TestEvaluateOnce:
    def test_assert_by_name_mismatch_message(self) -> None:
        store = Store([daemonset("ds", "ns", desired=3, ready=2)])
        a = assertion(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "ds", "namespace": "ns"},
                "status": {"numberReady": 3},
            }
        )
        got = hc.evaluate_once(a, store.fetch)
        assert (
            got.message == "[INTERNAL] DaemonSet ns/ds does not match: status.numberReady: expected 3, got 2"
        )
        assert got.observed and not got.absent

    def test_assert_by_name_not_found(self) -> None:
        a = assertion(
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds", "namespace": "ns"}}
        )
        got = hc.evaluate_once(a, Store().fetch)
        assert got.message == "[NOT_FOUND] DaemonSet ns/ds not found" and got.absent

    def test_cluster_scoped_ref(self) -> None:
        a = assertion(
            {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}}
        )
        assert (
            hc.evaluate_once(a, Store().fetch).message == "[NOT_FOUND] ClusterPolicy cluster-policy not found"
        )

    def test_no_rest_mapping(self) -> None:
        store = Store(unregistered=[("nvidia.com/v1", "ClusterPolicy")])
        a = assertion(
            {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}}
        )
        got = hc.evaluate_once(a, store.fetch)
        assert (
            got.message == "[NOT_FOUND] no REST mapping for nvidia.com/v1, Kind=ClusterPolicy" and got.absent
        )

    def test_get_error_is_transient(self) -> None:
        store = Store()
        store.errors["Deployment"] = RuntimeError("connection reset")
        a = assertion(
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n"}}
        )
        got = hc.evaluate_once(a, store.fetch)
        assert got.message == "[SERVICE_UNAVAILABLE] failed to get Deployment n/d: connection reset"
        assert not got.absent and not got.observed

    def test_list_assert_empty(self) -> None:
        got = hc.evaluate_once(assertion({**POD_LIST, "status": {"phase": "Running"}}), Store().fetch)
        assert got.message == '[NOT_FOUND] Pod in "ns": no resources found (labels=map[app:x])' and got.absent

    def test_list_assert_any_item_matches(self) -> None:
        store = Store(
            [pod("a", "ns", phase="Pending", labels={"app": "x"}), pod("b", "ns", labels={"app": "x"})]
        )
        assert hc.evaluate_once(assertion({**POD_LIST, "status": {"phase": "Running"}}), store.fetch).passed

    def test_list_assert_no_match(self) -> None:
        store = Store([pod("a", "ns", phase="Pending", labels={"app": "x"})])
        got = hc.evaluate_once(assertion({**POD_LIST, "status": {"phase": "Running"}}), store.fetch)
        assert got.message == (
            '[INTERNAL] no Pod in "ns" matched (last reason: a: status.phase: expected "Running", got "Pending")'
        )

    def test_list_error(self) -> None:
        store = Store()
        store.errors["Pod"] = RuntimeError("forbidden")
        got = hc.evaluate_once(assertion({**POD_LIST, "status": {"phase": "Running"}}), store.fetch)
        assert got.message == '[INTERNAL] failed to list Pod in "ns": forbidden'

    def test_error_by_list_fires_on_forbidden_shape(self) -> None:
        store = Store(
            [
                pod("p", "ns", labels={"app": "x"}, waiting="CrashLoopBackOff", node="n1"),
                pod("q", "ns", labels={"app": "x"}),
            ]
        )
        key = "((containerStatuses || `[]`)[?state.waiting.reason == 'CrashLoopBackOff'] | length(@) > `0`)"
        got = hc.evaluate_once(assertion({**POD_LIST, "status": {key: True}}, negative=True), store.fetch)
        assert got.message == (
            "[INTERNAL] Pod ns/p matches forbidden shape (phase=Running, waiting=main:CrashLoopBackOff, node=n1)"
        )

    def test_error_by_list_counts_more_offenders(self) -> None:
        store = Store([pod(f"p{i}", "ns", phase="Pending", labels={"app": "x"}) for i in range(3)])
        got = hc.evaluate_once(
            assertion({**POD_LIST, "status": {"phase": "Pending"}}, negative=True), store.fetch
        )
        assert got.message.endswith("(phase=Pending, waiting=, node=node-1) (+2 more)")

    def test_error_by_list_ignores_terminating_and_nodelost(self) -> None:
        store = Store(
            [
                pod("ghost", "ns", phase="Pending", labels={"app": "x"}, deleting=True),
                pod("lost", "ns", phase="Unknown", labels={"app": "x"}, reason="NodeLost"),
            ]
        )
        for phase in ("Pending", "Unknown"):
            assert hc.evaluate_once(
                assertion({**POD_LIST, "status": {"phase": phase}}, negative=True), store.fetch
            ).passed

    def test_error_by_list_empty_passes(self) -> None:
        assert hc.evaluate_once(
            assertion({**POD_LIST, "status": {"phase": "Pending"}}, negative=True), Store().fetch
        ).passed

    def test_error_by_name(self) -> None:
        tree = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "n"},
            "status": {"availableReplicas": 0},
        }
        a = assertion(tree, negative=True)
        assert hc.evaluate_once(a, Store().fetch).passed  # not found: fine
        assert hc.evaluate_once(a, Store([deployment("d", "n", available=1)]).fetch).passed
        got = hc.evaluate_once(a, Store([deployment("d", "n", available=0)]).fetch)
        assert got.message == "[INTERNAL] Deployment n/d: forbidden shape matched"
        unreg = Store(unregistered=[("apps/v1", "Deployment")])
        assert hc.evaluate_once(a, unreg.fetch).passed

    def test_error_by_name_fails_closed_on_api_error(self) -> None:
        store = Store()
        store.errors["Deployment"] = RuntimeError("503")
        tree = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n"}}
        assert not hc.evaluate_once(assertion(tree, negative=True), store.fetch).passed

    def test_engine_error_message(self) -> None:
        tree = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns"},
            "status": {"(length(nope))": 1},
        }
        with pytest.raises(AssertionEngineError) as exc:
            hc.evaluate_once(assertion(tree), Store([pod("p", "ns")]).fetch)
        assert str(exc.value).startswith(
            "[INVALID_REQUEST] Pod ns/p: assertion engine error: status.(length(nope)): "
        )


# ================================================================================================
# the runner: retries, grace, shared budget, last failure, concurrency
# ================================================================================================
DS_TEST = chainsaw(
    """\
    - name: ds-ready
      try:
        - assert:
            resource:
              apiVersion: apps/v1
              kind: DaemonSet
              metadata: {name: ds, namespace: ns}
              status:
                (numberReady == desiredNumberScheduled): true
""",
).replace("assert: 2m", "assert: 5m")


class TestRunner:
    def run(self, text: str, store: Store, t: FakeTime, **kw: Any) -> HealthCheckResult:
        return hc.run_health_check(parse_health_check("comp", text), store.fetch, clock=t, **kw)

    def test_pass_first_try_no_sleep(self) -> None:
        t = FakeTime()
        assert self.run(DS_TEST, Store([daemonset("ds", "ns")]), t).passed
        assert t.sleeps == []

    def test_retries_every_5s_until_healthy(self) -> None:
        t = FakeTime()
        store = Store([daemonset("ds", "ns", desired=2, ready=1)])
        t.on_advance.append(lambda el: store.replace(daemonset("ds", "ns")) if el >= 12 else None)
        assert self.run(DS_TEST, store, t).passed
        assert t.sleeps == [5.0, 5.0, 5.0]

    def test_absent_resource_gives_up_after_30s_grace(self) -> None:
        t = FakeTime()
        result = self.run(DS_TEST, Store(), t)
        assert not result.passed
        assert result.error == 'step "ds-ready": [NOT_FOUND] DaemonSet ns/ds not found'
        assert t.elapsed == 30
        assert result.line == (
            '[chainsaw] comp: health check failed\nerror: step "ds-ready": [NOT_FOUND] DaemonSet ns/ds not found'
        )

    def test_missing_crd_gives_up_after_grace(self) -> None:
        t = FakeTime()
        result = self.run(DS_TEST, Store(unregistered=[("apps/v1", "DaemonSet")]), t)
        assert result.error == 'step "ds-ready": [NOT_FOUND] no REST mapping for apps/v1, Kind=DaemonSet'
        assert t.elapsed == 30

    def test_observed_resource_gets_full_budget_and_last_failure_reported(self) -> None:
        t = FakeTime()
        store = Store()
        # appears (unhealthy) at 10 s: from then on the full 5m budget applies
        t.on_advance.append(
            lambda el: store.replace(daemonset("ds", "ns", desired=3, ready=1)) if el >= 10 else None
        )
        result = self.run(DS_TEST, store, t)
        assert t.elapsed == 300
        assert result.error == (
            'step "ds-ready": [INTERNAL] DaemonSet ns/ds does not match: '
            "status.(numberReady == desiredNumberScheduled): expected true, got false"
        )
        assert "deadline" not in str(result.error)

    def test_after_observation_a_vanished_object_does_not_cut_the_budget(self) -> None:
        t = FakeTime()
        store = Store([daemonset("ds", "ns", desired=3, ready=1)])
        t.on_advance.append(lambda el: store.remove("DaemonSet", "ds") if el >= 40 else None)
        result = self.run(DS_TEST, store, t)
        assert t.elapsed == 300  # not 40 + grace
        assert result.error == 'step "ds-ready": [NOT_FOUND] DaemonSet ns/ds not found'

    def test_one_shared_budget_per_test(self) -> None:
        two_steps = DS_TEST + (
            "    - name: deploy\n      try:\n        - assert:\n            resource:\n"
            "              apiVersion: apps/v1\n              kind: Deployment\n"
            "              metadata: {name: d, namespace: ns}\n              status: {(availableReplicas > `0`): true}\n"
        )
        t = FakeTime()
        store = Store([daemonset("ds", "ns", desired=2, ready=1), deployment("d", "ns", available=0)])
        t.on_advance.append(lambda el: store.replace(daemonset("ds", "ns")) if el >= 200 else None)
        result = self.run(two_steps, store, t)
        assert result.step == "deploy"
        assert t.elapsed == 300  # 200 s in step 1 + the 100 s left, not 200 + 300

    def test_caller_deadline_caps_the_test_budget(self) -> None:
        t = FakeTime()
        store = Store([daemonset("ds", "ns", desired=2, ready=1)])
        self.run(DS_TEST, store, t, deadline=t.now + 42)
        assert t.elapsed == 42

    def test_default_budget_when_test_has_none(self) -> None:
        text = DS_TEST.replace("  timeouts:\n    assert: 5m\n", "")
        t = FakeTime()
        self.run(text, Store([daemonset("ds", "ns", desired=2, ready=1)]), t, default_timeout=360)
        assert t.elapsed == 360

    def test_transient_errors_retry_without_latching_or_grace_cut(self) -> None:
        t = FakeTime()
        store = Store([daemonset("ds", "ns")])
        store.errors["DaemonSet"] = RuntimeError("etcd timeout")
        t.on_advance.append(lambda el: store.errors.pop("DaemonSet", None) if el >= 50 else None)
        assert self.run(DS_TEST, store, t).passed
        assert t.elapsed == 50

    def test_engine_error_is_terminal(self) -> None:
        text = DS_TEST.replace("(numberReady == desiredNumberScheduled)", "(length(nope))")
        t = FakeTime()
        store = Store([daemonset("ds", "ns")])
        result = self.run(text, store, t)
        assert not result.passed and "assertion engine error" in str(result.error)
        assert t.sleeps == [] and len(store.calls) == 1

    def test_first_failing_step_stops_the_test(self) -> None:
        text = DS_TEST + (
            "    - name: never\n      try:\n        - assert:\n            resource:\n"
            "              apiVersion: v1\n              kind: ConfigMap\n              metadata: {name: c, namespace: ns}\n"
        )
        t = FakeTime()
        store = Store()
        result = self.run(text, store, t)
        assert result.step == "ds-ready"
        assert all(kind == "DaemonSet" for _, kind, _, _ in store.calls)

    def test_raw_shape_failure_names_the_document(self) -> None:
        text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: n}\n"
        t = FakeTime()
        store = Store([obj("v1", "ConfigMap", "a", "n")])
        result = self.run(text, store, t)
        assert result.error == "doc[1]: [NOT_FOUND] ConfigMap n/b not found"

    def test_multiple_tests_in_a_file_each_get_a_budget(self) -> None:
        text = DS_TEST + "---\n" + DS_TEST
        t = FakeTime()
        assert self.run(text, Store([daemonset("ds", "ns")]), t).passed


def test_at_most_four_components_run_concurrently() -> None:
    active = 0
    peak = 0
    lock = threading.Lock()

    def fetch(*_: Any) -> list[dict[str, Any]]:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return [daemonset("ds", "ns")]

    checks = [parse_health_check(f"c{i}", DS_TEST) for i in range(10)]
    rejected = HealthCheckResult("bad", False, "x")
    results = hc.run_health_checks([*checks, rejected], fetch, clock=SYSTEM_CLOCK)
    assert peak == 4
    assert [r.component for r in results] == [f"c{i}" for i in range(10)] + ["bad"]
    assert all(r.passed for r in results[:10]) and results[10] is rejected


def test_result_lines() -> None:
    assert HealthCheckResult("gpu-operator", True).line == "[chainsaw] gpu-operator: health check passed"
    assert HealthCheckResult("x", False, "boom").line == "[chainsaw] x: health check failed\nerror: boom"


# ================================================================================================
# resolution through the data root
# ================================================================================================
REGISTRY = """\
apiVersion: aicr.run/v1alpha2
kind: ComponentRegistry
components:
  - name: gpu-operator
    healthCheck:
      assertFile: checks/gpu-operator/health-check.yaml
  - name: no-check
"""


def reader(files: dict[str, str]) -> Any:
    def read(rel: str) -> str:
        if rel not in files:
            raise FileNotFoundError(rel)
        return files[rel]

    return read


class TestResolution:
    files: ClassVar[dict[str, str]] = {
        "registry.yaml": REGISTRY,
        "checks/gpu-operator/health-check.yaml": "RAW",
    }

    def test_registry_assert_file_read_through_data_root(self) -> None:
        got = hc.resolve_health_check_source({"name": "gpu-operator"}, reader(self.files))
        assert got == ("RAW", "checks/gpu-operator/health-check.yaml")

    def test_inline_wins(self) -> None:
        ref = {"name": "gpu-operator", "healthCheckAsserts": "INLINE"}
        assert hc.resolve_health_check_source(ref, reader(self.files)) == ("INLINE", "inline")

    def test_skip_opts_out_of_registry(self) -> None:
        ref = {"name": "gpu-operator", "healthCheckSkip": True}
        assert hc.resolve_health_check_source(ref, reader(self.files)) is None

    def test_unregistered_or_no_assert_file(self) -> None:
        assert hc.resolve_health_check_source({"name": "no-check"}, reader(self.files)) is None
        assert hc.resolve_health_check_source({"name": "unknown"}, reader(self.files)) is None
        assert hc.resolve_health_check_source({"name": "gpu-operator"}, reader({})) is None  # no registry

    def test_unreadable_assert_file(self) -> None:
        with pytest.raises(HealthCheckRejected) as exc:
            hc.resolve_health_check_source({"name": "gpu-operator"}, reader({"registry.yaml": REGISTRY}))
        assert str(exc.value) == (
            "[NOT_FOUND] health check file checks/gpu-operator/health-check.yaml for component gpu-operator: "
            "checks/gpu-operator/health-check.yaml"
        )

    def test_injected_registry_lookup(self) -> None:
        entry = {"healthCheck": {"assertFile": "custom.yaml"}}
        got = hc.resolve_health_check_source({"name": "x"}, reader({"custom.yaml": "C"}), lambda n: entry)
        assert got == ("C", "custom.yaml")

    def test_model_refs_accepted(self) -> None:
        from aicr_pytest.core.recipe import ComponentRef

        ref = ComponentRef.model_validate({"name": "gpu-operator", "healthCheckAsserts": "INLINE"})
        assert hc.resolve_health_check_source(ref, reader({})) == ("INLINE", "inline")

    def test_load_and_parse_turns_rejection_into_result(self) -> None:
        bad = chainsaw("    - name: s\n      try:\n        - script: {content: x}\n")
        got = hc.load_and_parse("c", (bad, "inline"))
        assert isinstance(got, HealthCheckResult) and not got.passed
        assert hc.load_and_parse("c", None) is None
