"""RunScope: name derivation (DNS-1123 labels, RFC 1123 / Kubernetes "Object Names and IDs"),
label stamping, cleanup bookkeeping, --no-cleanup commands, and signal handling."""

from __future__ import annotations

import copy
import os
import re
import signal
from typing import Any

import pytest
from _kube_stub import Call, Reply, StepClock, make_cluster

from aicr_pytest.kube.client import MANAGED_BY_LABEL, RUN_ID_LABEL, Cluster
from aicr_pytest.kube.run import (
    CLEANUP_INSIST,
    MSG_CLEANUP_ABANDONED,
    MSG_CLEANUP_HOLDING,
    CleanupAbandoned,
    RunScope,
    Terminated,
    defer_signals,
    dns_label,
    install_signal_handlers,
    new_run_id,
    scoped_name,
)

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_new_run_id_is_short_hex_and_random() -> None:
    ids = {new_run_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids)


@pytest.mark.parametrize(
    ("base", "worker", "expected"),
    [
        ("nccl", None, "nccl-a1b2c3d4"),
        ("nccl", "master", "nccl-a1b2c3d4"),
        ("nccl", "gw3", "nccl-a1b2c3d4-gw3"),
        ("NVIDIA_smi.Verify", "gw0", "nvidia-smi-verify-a1b2c3d4-gw0"),
    ],
)
def test_scoped_name(base: str, worker: str | None, expected: str) -> None:
    assert scoped_name(base, "a1b2c3d4", worker) == expected


def test_long_names_are_truncated_keeping_suffix_and_uniqueness() -> None:
    base1 = "nvidia-smi-verify-" + "ip-10-0-12-34.us-west-2.compute.internal-very-long-node-a"
    base2 = base1[:-1] + "b"
    n1 = scoped_name(base1, "a1b2c3d4", "gw12")
    n2 = scoped_name(base2, "a1b2c3d4", "gw12")
    for n in (n1, n2):
        assert len(n) <= 63 and DNS1123_LABEL.match(n), n
        assert n.endswith("-a1b2c3d4-gw12")
    assert n1 != n2


def test_names_unique_across_workers_and_runs() -> None:
    names = {
        scoped_name("job", run, w) for run in ("aaaa0000", "bbbb1111") for w in (None, "gw0", "gw1", "gw10")
    }
    assert len(names) == 8
    assert all(DNS1123_LABEL.match(n) for n in names)


def test_dns_label() -> None:
    assert dns_label("--Foo__Bar..baz--") == "foo-bar-baz"


def unused_cluster() -> Cluster:
    raise AssertionError("no cluster needed")


def test_stamp_labels_name_and_pod_template() -> None:
    scope = RunScope(unused_cluster, "a1b2c3d4", worker_id="gw1")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "nccl", "labels": {"team": "x"}},
        "spec": {"template": {"metadata": {"labels": {"app": "nccl"}}, "spec": {"containers": []}}},
    }
    out = scope.stamp(job)
    assert out["metadata"]["name"] == "nccl-a1b2c3d4-gw1"
    assert out["metadata"]["labels"] == {
        "team": "x",
        MANAGED_BY_LABEL: "aicr-pytest",
        RUN_ID_LABEL: "a1b2c3d4",
    }
    assert out["spec"]["template"]["metadata"]["labels"][RUN_ID_LABEL] == "a1b2c3d4"
    assert out["spec"]["template"]["metadata"]["labels"]["app"] == "nccl"
    assert job["metadata"]["name"] == "nccl"  # input untouched
    assert scope.stamp(out)["metadata"]["name"] == "nccl-a1b2c3d4-gw1"  # idempotent
    gen = scope.stamp({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "x-"}})
    assert "name" not in gen["metadata"]
    with pytest.raises(ValueError):
        scope.stamp({"apiVersion": "v1", "kind": "Pod", "metadata": {}})
    assert scope.labels() == {MANAGED_BY_LABEL: "aicr-pytest", RUN_ID_LABEL: "a1b2c3d4"}


def test_run_id_must_be_dns_safe() -> None:
    with pytest.raises(ValueError):
        RunScope(unused_cluster, "Bad_ID")


class MiniServer:
    """Just enough of an API server for RunScope bookkeeping: create, get, delete, list/watch."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.deletes: list[str] = []
        self.fail_delete: set[str] = set()
        self.preexisting_ns: set[str] = set()

    def __call__(self, call: Call) -> Reply:
        parts = call.path.strip("/").split("/")
        if call.method == "POST":
            body = call.body
            key = f"{parts[-1]}/{body['metadata'].get('namespace', '')}/{body['metadata']['name']}"
            self.objects[key] = body
            return Reply(201, body)
        if call.method == "DELETE":
            name = parts[-1]
            plural = parts[-2]
            ns = parts[-3] if "namespaces" in parts[:-2] and plural != "namespaces" else ""
            key = f"{plural}/{ns}/{name}"
            wanted_rv = ((call.body or {}).get("preconditions") or {}).get("resourceVersion")
            stored = self.objects.get(key)
            if wanted_rv and stored is not None and stored["metadata"].get("resourceVersion") != wanted_rv:
                return Reply(409, {"kind": "Status", "reason": "Conflict", "message": "object modified"})
            self.deletes.append(key)
            if key in self.fail_delete:
                return Reply(500, {"message": "etcd down"})
            if self.objects.pop(key, None) is None:
                return Reply(404, {"message": "not found"})
            return Reply(200, {"kind": "Status", "status": "Success"})
        if call.method in ("GET", "PATCH") and parts[-2:] == ["namespaces", parts[-1]] and len(parts) == 4:
            if parts[-1] in self.preexisting_ns:
                return Reply(200, {"metadata": {"name": parts[-1]}})
            ns = self.objects.get(f"namespaces//{parts[-1]}")
            if ns is None:
                return Reply(404, {"message": "not found"})
            meta = ns["metadata"]
            if call.method == "PATCH":  # lease changes: a merge patch of annotations (None removes)
                for key, value in call.body["metadata"]["annotations"].items():
                    annotations = meta.setdefault("annotations", {})
                    if value is None:
                        annotations.pop(key, None)
                    else:
                        annotations[key] = value
                meta["resourceVersion"] = str(int(meta.get("resourceVersion", "1")) + 1)
            meta.setdefault("resourceVersion", "1")
            return Reply(200, copy.deepcopy(ns))
        if call.query.get("watch"):
            return Reply(200, lines=[])
        # lists: empty (objects are gone after delete in this mini server)
        return Reply(200, {"metadata": {"resourceVersion": "5"}, "items": []})


def make_scope(server: MiniServer, **kw: Any) -> tuple[RunScope, Any]:
    cluster, api, _ = make_cluster(server)
    scope = RunScope(lambda: cluster, "a1b2c3d4", worker_id="gw0", clock=StepClock(), **kw)
    return scope, api


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def test_cleanup_deletes_in_reverse_creation_order_with_foreground() -> None:
    server = MiniServer()
    scope, api = make_scope(server)
    scope.ensure_namespace()
    scope.create(cm("a"))
    scope.create(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {}}}
    )
    report = scope.cleanup()
    assert report.ok, report.warnings
    assert server.deletes == [
        "jobs/aicr-validation/j-a1b2c3d4-gw0",
        "configmaps/aicr-validation/a-a1b2c3d4-gw0",
        "namespaces//aicr-validation",
    ]
    assert all(c.body["propagationPolicy"] == "Foreground" for c in api.calls if c.method == "DELETE")
    assert len(report.deleted) == 3
    assert scope.cleanup() is report  # idempotent


class JoinDuringRelease(MiniServer):
    """Another run joins the shared namespace right after this run released its lease."""

    def __call__(self, call: Call) -> Reply:
        reply = super().__call__(call)
        if call.method == "PATCH" and None in call.body["metadata"]["annotations"].values():
            meta = self.objects["namespaces//aicr-validation"]["metadata"]
            meta["annotations"]["aicr.run/lease-0badcafe"] = "held"
            meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        return reply


def test_a_run_that_joins_while_the_last_lease_is_released_keeps_the_namespace() -> None:
    server = JoinDuringRelease()
    scope, api = make_scope(server)
    scope.ensure_namespace()
    report = scope.cleanup()
    assert report.ok, report.warnings
    assert "namespaces//aicr-validation" in server.objects  # the precondition saved it
    assert server.deletes == []
    refused = [c for c in api.calls if c.method == "DELETE"]
    assert len(refused) == 1 and refused[0].body["preconditions"]["resourceVersion"] == "2"


def test_joining_takes_a_lease_with_a_resource_version_precondition() -> None:
    server = MiniServer()
    server.objects["namespaces//aicr-validation"] = {
        "metadata": {
            "name": "aicr-validation",
            "resourceVersion": "4",
            "labels": {MANAGED_BY_LABEL: "aicr-pytest", RUN_ID_LABEL: "0badcafe"},
            "annotations": {"aicr.run/lease-0badcafe": "held"},
        }
    }
    scope, api = make_scope(server)
    scope.ensure_namespace()
    (patch,) = [c for c in api.calls if c.method == "PATCH"]
    assert patch.body == {
        "metadata": {"resourceVersion": "4", "annotations": {"aicr.run/lease-a1b2c3d4-gw0": "held"}}
    }
    assert scope.cleanup().ok
    assert "namespaces//aicr-validation" in server.objects  # 0badcafe still holds it
    assert server.objects["namespaces//aicr-validation"]["metadata"]["annotations"] == {
        "aicr.run/lease-0badcafe": "held"
    }


def test_preexisting_shared_namespace_is_never_deleted() -> None:
    server = MiniServer()
    server.preexisting_ns.add("aicr-validation")
    scope, _ = make_scope(server)
    assert scope.ensure_namespace() == "aicr-validation"
    scope.create(cm("a"))
    scope.cleanup()
    assert server.deletes == ["configmaps/aicr-validation/a-a1b2c3d4-gw0"]


def test_per_run_namespace_is_deleted_with_its_contents_in_one_request() -> None:
    server = MiniServer()
    scope, _ = make_scope(server)
    ns = scope.create_namespace_for_run("aicr-inference-perf")
    assert ns == "aicr-inference-perf-a1b2c3d4-gw0"
    scope.create({**cm("x"), "metadata": {"name": "x", "namespace": ns}})
    scope.cleanup()
    assert server.deletes == [f"namespaces//{ns}"]


def test_cleanup_errors_become_warnings_not_exceptions() -> None:
    server = MiniServer()
    server.preexisting_ns.add("aicr-validation")
    scope, _ = make_scope(server)
    scope.create(cm("a"))
    scope.create(cm("b"))
    server.fail_delete.add("configmaps/aicr-validation/b-a1b2c3d4-gw0")
    report = scope.cleanup()
    assert not report.ok
    assert any("ConfigMap b-a1b2c3d4-gw0" in w and "orphaned" in w for w in report.warnings)
    assert report.deleted == ["ConfigMap a-a1b2c3d4-gw0 in namespace aicr-validation"]
    assert any("delete configmaps" in c for c in report.commands)
    assert report.as_extra()["warnings"] == report.warnings


def test_no_cleanup_keeps_everything_and_prints_kubectl_commands() -> None:
    server = MiniServer()
    scope, _ = make_scope(server, no_cleanup=True)
    ns = scope.create_namespace_for_run("aicr-inference-perf")
    scope.create(cm("a"))
    scope.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {}})
    scope.create({**cm("x"), "metadata": {"name": "x", "namespace": ns}})
    report = scope.cleanup()
    assert server.deletes == []
    assert len(report.kept) == 4
    sel = "aicr.run/run-id=a1b2c3d4"
    assert report.commands == [
        f"kubectl -n aicr-validation get pods,configmaps,jobs.batch -l {sel}",
        f"kubectl -n aicr-validation logs -l {sel} --all-containers --prefix",
        f"kubectl -n {ns} get pods,configmaps -l {sel}",
        f"kubectl -n {ns} logs -l {sel} --all-containers --prefix",
        f"kubectl get namespaces -l {sel}",
        f"kubectl -n aicr-validation delete configmaps,jobs.batch -l {sel} --cascade=foreground",
        f"kubectl -n {ns} delete configmaps -l {sel} --cascade=foreground",
        f"kubectl delete namespaces -l {sel} --cascade=foreground",
    ]
    assert report.lines()[0].startswith("cleanup disabled (--no-cleanup): 4 object(s) of run a1b2c3d4")


def test_context_manager_cleans_up_on_keyboard_interrupt() -> None:
    server = MiniServer()
    server.preexisting_ns.add("aicr-validation")
    scope, _ = make_scope(server)
    with pytest.raises(KeyboardInterrupt), scope:
        scope.create(cm("a"))
        raise KeyboardInterrupt
    assert server.deletes == ["configmaps/aicr-validation/a-a1b2c3d4-gw0"]


def test_sigterm_unwinds_so_finally_runs() -> None:
    ran: list[str] = []
    with pytest.raises(Terminated), install_signal_handlers():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.pthread_sigmask(signal.SIG_BLOCK, [])  # let the handler run
        finally:
            ran.append("cleanup")
    assert ran == ["cleanup"]
    assert isinstance(Terminated(), KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) is not None


def test_defer_signals_finishes_the_block_then_reraises() -> None:
    done: list[str] = []
    with pytest.raises(Terminated, match="cleanup completed first"), defer_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        done.append("after signal")
    assert done == ["after signal"]


class _Reason(KeyboardInterrupt):
    pass


def _raising(reason: str) -> Any:
    def handler(signum: int, frame: object) -> None:
        raise _Reason(reason)

    return handler


@pytest.mark.usefixtures("sigint_raises")
def test_a_second_signal_is_held_too_and_the_first_reaches_the_previous_handler() -> None:
    lines: list[str] = []
    previous = signal.signal(signal.SIGTERM, _raising("interrupted by SIGTERM"))
    try:
        done: list[str] = []
        with pytest.raises(_Reason, match="interrupted by SIGTERM"), defer_signals(notify=lines.append):
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            done.append("cleanup finished")
        assert done == ["cleanup finished"]
        assert lines == [MSG_CLEANUP_HOLDING]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_the_deadline_during_cleanup_waits_for_it_and_keeps_its_reason() -> None:
    previous = signal.signal(signal.SIGALRM, _raising("timed out after 5s"))
    try:
        done: list[str] = []
        with pytest.raises(_Reason, match="timed out after 5s"), defer_signals(notify=lambda line: None):
            signal.raise_signal(signal.SIGALRM)
            done.append("cleanup finished")
        assert done == ["cleanup finished"]
    finally:
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.usefixtures("sigint_raises")
def test_a_third_interrupt_abandons_cleanup_and_says_what_is_left() -> None:
    server = MiniServer()
    server.preexisting_ns.add("aicr-validation")
    scope, _ = make_scope(server)
    scope.create(cm("a"))
    scope.create(cm("b"))

    real_delete = scope.cluster.delete

    def impatient_delete(*args: Any, **kwargs: Any) -> Any:
        for _ in range(CLEANUP_INSIST):
            os.kill(os.getpid(), signal.SIGINT)
        return real_delete(*args, **kwargs)

    scope.cluster.delete = impatient_delete  # type: ignore[method-assign]
    with pytest.raises(CleanupAbandoned):
        scope.cleanup()
    report = scope.cleanup()  # the same report, also after the interrupt
    assert report.warnings == [
        MSG_CLEANUP_ABANDONED.format(
            count=2,
            run_id="a1b2c3d4",
            what="ConfigMap a-a1b2c3d4-gw0 in namespace aicr-validation; "
            "ConfigMap b-a1b2c3d4-gw0 in namespace aicr-validation",
        )
    ]
    lines = report.lines()
    assert "to find and delete what run a1b2c3d4 left behind:" in lines
    delete = "kubectl -n aicr-validation delete configmaps -l aicr.run/run-id=a1b2c3d4 --cascade=foreground"
    assert f"  {delete}" in lines


def test_an_existing_sigterm_handler_is_kept() -> None:
    mine = _raising("interrupted by SIGTERM")
    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with install_signal_handlers():
            assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_defer_signals_leaves_an_ignored_signal_ignored() -> None:
    """Started with SIGINT ignored (a background job), a SIGINT during cleanup interrupts nothing."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        done: list[str] = []
        with defer_signals():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN  # SIGTERM is still held
            os.kill(os.getpid(), signal.SIGINT)
            signal.pthread_sigmask(signal.SIG_BLOCK, [])  # let a handler run, were there one
            done.append("after signal")
        assert done == ["after signal"]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
