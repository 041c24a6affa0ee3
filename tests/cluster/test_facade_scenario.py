"""End-to-end run scenarios on both backends (``k8s_backend``: the fake, a real control plane): create a
Job, watch it to completion, read its log, clean up, and leave nothing labelled with the run id; the
same interrupted by Ctrl-C / SIGTERM mid-wait; and with --no-cleanup. The facade runs as the
least-privilege user where the backend has one. (Job conditions Complete/Failed: "Jobs" concept page;
foreground cascading deletion: "Garbage Collection"; namespace lifecycle: "Namespaces".)"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import pytest
from _facade_helpers import assert_rbac_covers, backend_facade

from aicr_pytest.kube import (
    RUN_ID_LABEL,
    RunScope,
    Terminated,
    install_signal_handlers,
    job_newest_pod_log,
    job_outcome,
    wait_for_job_complete,
)
from aicr_pytest.kube.run import DEFAULT_NAMESPACE
from tests.harness.backends import K8sBackend


def job(name: str = "hello", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": dict(annotations or {})},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "validator", "image": "registry.example/aicr/hello:1"}],
                },
            },
        },
    }


def make_scope(backend: K8sBackend, namespace: str, **kw: Any) -> RunScope:
    cluster, _ = backend_facade(backend)
    return RunScope(
        lambda: cluster,
        kw.pop("run_id", backend.run_id),
        worker_id=kw.pop("worker_id", None),
        clock=backend.clock,
        namespace=namespace,
        **kw,
    )


def labelled_leftovers(backend: K8sBackend) -> list[str]:
    """What the cluster still holds with the run label (independent of the facade's own query)."""
    found = []
    for api_version, kind in (("v1", "Pod"), ("batch/v1", "Job"), ("v1", "ConfigMap"), ("v1", "Namespace")):
        for obj in backend.list(api_version, kind, label_selector=f"{RUN_ID_LABEL}={backend.run_id}"):
            found.append(f"{kind} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}")
    return found


def test_job_scenario_watch_log_cleanup(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    ns = backend.namespace(DEFAULT_NAMESPACE)
    backend.gpu_nodes()
    annotations = backend.script_pods(
        ns,
        name_prefix="hello-",
        logs={"validator": "RESULT: hello from the fake\n"},
        start_after=2,
        run_for=1,
    )
    scope = make_scope(backend, ns)
    try:
        scope.ensure_namespace()
        created = scope.create(job(annotations=annotations))
        name = created["metadata"]["name"]
        assert name == f"hello-{backend.run_id}"
        with backend.clock_running():
            done = wait_for_job_complete(scope.cluster, ns, name, timeout=120, clock=backend.clock)
        assert job_outcome(done) == "Complete"
        log = job_newest_pod_log(scope.cluster, ns, name, "validator")
        assert log == "RESULT: hello from the fake\n"
        # The Job's pod carries the run labels (stamped on the template).
        assert any(p.startswith("Pod ") for p in scope.leftovers())
    finally:
        report = scope.cleanup()
    assert report.ok, report.warnings
    assert scope.leftovers() == []
    assert labelled_leftovers(backend) == []
    # The shared namespace was created by this run, so it went too.
    assert backend.find("v1", "Namespace", ns) is None
    assert_rbac_covers(scope.cluster)


def test_preexisting_namespace_survives_cleanup(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    ns = backend.namespace(DEFAULT_NAMESPACE)
    backend.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}])
    scope = make_scope(backend, ns)
    scope.ensure_namespace()
    scope.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "data"}, "data": {"a": "b"}})
    report = scope.cleanup()
    assert report.ok and labelled_leftovers(backend) == []
    assert backend.find("v1", "Namespace", ns) is not None


def signal_when_watching(scope: RunScope, signum: int) -> None:
    """Deliver ``signum`` to this process once the waiter has opened its watch (a real signal)."""
    cluster = scope.cluster
    original = cluster.watch
    opened = threading.Event()

    def watch(*args: Any, **kwargs: Any) -> Any:
        opened.set()  # (the fake sends response headers only with the first event)
        return original(*args, **kwargs)

    cluster.watch = watch  # type: ignore[method-assign]

    def fire() -> None:
        if opened.wait(10):
            time.sleep(0.1)  # let the main thread block in the socket read
        os.kill(os.getpid(), signum)

    threading.Thread(target=fire, daemon=True).start()


@pytest.mark.usefixtures("sigint_raises")
def test_keyboard_interrupt_mid_wait_still_cleans_up(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    ns = backend.namespace(DEFAULT_NAMESPACE)
    backend.gpu_nodes()
    # runs until deleted: the wait never ends
    annotations = backend.script_pods(ns, name_prefix="hello-", run_for=None)
    scope = make_scope(backend, ns)
    assert threading.current_thread() is threading.main_thread()
    with pytest.raises(KeyboardInterrupt), scope:
        scope.ensure_namespace()
        name = scope.create(job(annotations=annotations))["metadata"]["name"]
        signal_when_watching(scope, signal.SIGINT)  # a real Ctrl-C while blocked on the watch
        wait_for_job_complete(scope.cluster, ns, name, timeout=600, clock=backend.clock)
    assert scope.cleanup().ok
    assert labelled_leftovers(backend) == []


def test_sigterm_mid_wait_unwinds_and_cleans_up(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    ns = backend.namespace(DEFAULT_NAMESPACE)
    backend.gpu_nodes()
    annotations = backend.script_pods(ns, name_prefix="hello-", run_for=None)
    scope = make_scope(backend, ns)
    with pytest.raises(Terminated), install_signal_handlers(), scope:
        scope.ensure_namespace()
        name = scope.create(job(annotations=annotations))["metadata"]["name"]
        signal_when_watching(scope, signal.SIGTERM)
        wait_for_job_complete(scope.cluster, ns, name, timeout=600, clock=backend.clock)
    assert scope.cleanup().ok
    assert labelled_leftovers(backend) == []


def test_no_cleanup_keeps_objects_and_prints_kubectl_commands(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    ns = backend.namespace(DEFAULT_NAMESPACE)
    run_id = backend.run_id
    backend.gpu_nodes()
    annotations = backend.script_pods(ns, name_prefix="hello-", logs="ok\n", run_for=1)
    scope = make_scope(backend, ns, no_cleanup=True)
    scope.ensure_namespace()
    name = scope.create(job(annotations=annotations))["metadata"]["name"]
    with backend.clock_running():
        wait_for_job_complete(scope.cluster, ns, name, timeout=60, clock=backend.clock)
    report = scope.cleanup()
    kept = labelled_leftovers(backend)
    assert f"Job {ns}/{name}" in kept and f"Namespace /{ns}" in kept
    assert any(k.startswith("Pod ") for k in kept)
    assert report.kept == [f"Namespace {ns}", f"Job {name} in namespace {ns}"]
    assert f"kubectl -n {ns} get pods,jobs.batch -l aicr.run/run-id={run_id}" in report.commands
    assert (
        f"kubectl -n {ns} delete jobs.batch -l aicr.run/run-id={run_id} --cascade=foreground"
        in report.commands
    )
    assert f"kubectl delete namespaces -l aicr.run/run-id={run_id} --cascade=foreground" in report.commands
    assert report.lines()[0].startswith("cleanup disabled (--no-cleanup)")


def test_per_run_namespace_created_and_deleted(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    scope = make_scope(backend, backend.namespace(DEFAULT_NAMESPACE), worker_id="gw1")
    ns = scope.create_namespace_for_run("aicr-inference-perf")
    assert ns == f"aicr-inference-perf-{backend.run_id}-gw1"
    scope.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": ns}})
    assert backend.find("v1", "ConfigMap", f"cfg-{backend.run_id}-gw1", ns) is not None
    report = scope.cleanup()
    assert report.ok, report.warnings
    assert backend.find("v1", "Namespace", ns) is None and labelled_leftovers(backend) == []


def test_two_workers_share_the_namespace_and_never_collide(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    ns = backend.namespace(DEFAULT_NAMESPACE)
    gw0 = make_scope(backend, ns, worker_id="gw0")
    gw1 = make_scope(backend, ns, worker_id="gw1")
    gw0.ensure_namespace()
    gw1.ensure_namespace()  # already there: gw1 joins it with a lease of its own
    a = gw0.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "data"}})
    b = gw1.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "data"}})
    assert a["metadata"]["name"] != b["metadata"]["name"]
    # gw0 created the namespace but gw1 still holds a lease: gw0 leaves it in place, quietly.
    assert gw0.cleanup().ok
    assert backend.find("v1", "Namespace", ns) is not None
    assert backend.find("v1", "ConfigMap", b["metadata"]["name"], ns) is not None
    # gw1 is the last one out: it removes the namespace.
    assert gw1.cleanup().ok
    assert backend.find("v1", "Namespace", ns) is None
    assert labelled_leftovers(backend) == []


@pytest.mark.parametrize("last_out", ["creator", "joiner"])
def test_concurrent_runs_share_the_namespace_and_the_last_one_out_removes_it(
    k8s_backend: K8sBackend, last_out: str
) -> None:
    """Two runs (two run ids) at once: neither deletes the namespace under the other, none leaks it."""
    backend = k8s_backend
    ns = backend.namespace(DEFAULT_NAMESPACE)
    other_id = "0" + backend.run_id[1:] if backend.run_id[0] != "0" else "1" + backend.run_id[1:]
    creator = make_scope(backend, ns)
    joiner = make_scope(backend, ns, run_id=other_id)
    assert creator.ensure_namespace() == ns
    assert joiner.ensure_namespace() == ns
    leases = (backend.find("v1", "Namespace", ns) or {})["metadata"].get("annotations") or {}
    assert {creator.lease_key, joiner.lease_key} <= set(leases)
    for scope in (creator, joiner):
        scope.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "data"}})
    first, last = (joiner, creator) if last_out == "creator" else (creator, joiner)
    assert first.cleanup().ok
    shared = backend.find("v1", "Namespace", ns)
    assert shared is not None and first.lease_key not in (shared["metadata"].get("annotations") or {})
    assert backend.find("v1", "ConfigMap", last.name("data"), ns) is not None
    assert last.cleanup().ok
    assert backend.find("v1", "Namespace", ns) is None
    for run_id in (backend.run_id, other_id):
        assert backend.list("v1", "ConfigMap", label_selector=f"{RUN_ID_LABEL}={run_id}") == []


def test_a_namespace_the_user_created_is_used_and_never_deleted(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    ns = backend.namespace(DEFAULT_NAMESPACE)
    backend.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}])
    scope = make_scope(backend, ns)
    assert scope.ensure_namespace() == ns
    scope.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "data"}})
    assert scope.cleanup().ok
    kept = backend.find("v1", "Namespace", ns)
    assert kept is not None and not (kept["metadata"].get("annotations") or {})
    assert labelled_leftovers(backend) == []


def test_two_xdist_workers_create_no_object_with_the_same_name(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Acceptance: two runs in parallel (``-n 2``) create no object with the same name.

    ``--dist each`` runs the same test on both workers, against this one cluster, with the
    same run id and the same base names: only the worker id keeps them apart (a clash would 409).
    """
    ns = k8s_backend.namespace(DEFAULT_NAMESPACE)
    monkeypatch.setenv("AICR_TEST_KUBECONFIG", str(k8s_backend.restricted_kubeconfig_path))
    monkeypatch.setenv("AICR_TEST_NAMESPACE", ns)
    pytester.makepyfile(
        test_parallel="""
        import os
        from aicr_pytest.kube import RunScope, connect

        def test_make():
            cluster = connect(os.environ["AICR_TEST_KUBECONFIG"])
            worker = os.environ.get("PYTEST_XDIST_WORKER")
            scope = RunScope(
                lambda: cluster, "feedf00d", worker_id=worker, namespace=os.environ["AICR_TEST_NAMESPACE"]
            )
            scope.ensure_namespace()
            for base in ("data", "nccl-hostfile"):
                scope.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": base}})
        """
    )
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "each", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    selector = f"{RUN_ID_LABEL}=feedf00d"
    names = sorted(
        cm["metadata"]["name"] for cm in k8s_backend.list("v1", "ConfigMap", ns, label_selector=selector)
    )
    assert names == [
        "data-feedf00d-gw0",
        "data-feedf00d-gw1",
        "nccl-hostfile-feedf00d-gw0",
        "nccl-hostfile-feedf00d-gw1",
    ]


def test_install_signal_handlers_is_noop_off_main_thread() -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with install_signal_handlers():
                pass
        except BaseException as exc:  # pragma: no cover - would be a bug
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert errors == []
