"""Fault injection in the fake API server: the facade's results are unchanged and its retries
bounded. Every scenario here injects HTTP faults, which only the fake can do: they are
``k8s_backend`` scenarios marked ``fake_only`` (counted in the backend summary). (429 +
Retry-After: API Priority and Fairness; 5xx and dropped connections: client-go ``OnError`` retry;
410 Gone on watch: API concepts "Efficient detection of changes"; 403: RBAC.)"""

from __future__ import annotations

from typing import Any

import pytest
from _facade_helpers import FAST_RETRIES, assert_rbac_covers, clock_driver, facade, fake_of

from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube import AccessDenied, ApiUnreachable, wait_for_pod_phase
from aicr_pytest.testing import FakeCluster
from tests.harness.backends import K8sBackend

PODS = "/api/v1/namespaces/bulk/pods"


def seed(fc: FakeCluster, n: int = 120) -> None:
    fc.bulk_add(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bulk"}},
            *(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"p{i:04d}", "namespace": "bulk", "labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "main", "image": "x"}]},
                    "status": {"phase": "Running"},
                }
                for i in range(n)
            ),
        ]
    )


def names(items: Any) -> list[str]:
    return [p["metadata"]["name"] for p in items]


def baseline(fc: FakeCluster) -> list[str]:
    cluster, _ = facade(fc)
    return names(cluster.list("v1", "pods", "bulk", label_selector="app=x", page_size=50))


@pytest.mark.fake_only(
    "HTTP fault injection: 429 + Retry-After (a real apiserver throttles only under APF load)"
)
def test_429_with_retry_after_is_honoured(k8s_backend: K8sBackend) -> None:
    fake_cluster = fake_of(k8s_backend)
    seed(fake_cluster)
    expected = baseline(fake_cluster)
    fake_cluster.faults.throttle("GET", PODS, times=2, retry_after=3)
    cluster, sleep = facade(fake_cluster, retry_policy=FAST_RETRIES)
    assert names(cluster.list("v1", "pods", "bulk", label_selector="app=x", page_size=50)) == expected
    assert sleep.calls == [3.0, 3.0]
    assert cluster.retry_count == 2
    assert_rbac_covers(cluster)


@pytest.mark.fake_only("HTTP fault injection: 5xx and dropped connections")
def test_500_and_dropped_connections_are_retried_results_unchanged(k8s_backend: K8sBackend) -> None:
    fake_cluster = fake_of(k8s_backend)
    seed(fake_cluster)
    expected = baseline(fake_cluster)
    fake_cluster.faults.server_error("GET", PODS, times=1)
    fake_cluster.faults.drop_connection("GET", PODS, times=1)
    fake_cluster.faults.server_error("GET", PODS, times=1, status=503)
    cluster, sleep = facade(fake_cluster, retry_policy=FAST_RETRIES)
    assert names(cluster.list("v1", "pods", "bulk", label_selector="app=x", page_size=50)) == expected
    assert cluster.retry_count == 3 and len(sleep.calls) == 3
    assert all(s <= FAST_RETRIES.max_backoff * (1 + FAST_RETRIES.jitter) for s in sleep.calls)


@pytest.mark.fake_only("HTTP fault injection: dropped connection after a create")
def test_dropped_connection_on_create_does_not_fail_or_duplicate(k8s_backend: K8sBackend) -> None:
    fake_cluster = fake_of(k8s_backend)
    cluster, _ = facade(fake_cluster, retry_policy=FAST_RETRIES)
    fake_cluster.faults.drop_connection("POST", "/api/v1/namespaces/default/configmaps", times=1)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
    assert cluster.create(cm)["metadata"]["name"] == "c"
    assert cluster.retry_count == 1
    assert len(fake_cluster.list("v1", "ConfigMap", "default", field_selector="metadata.name=c")) == 1


@pytest.mark.fake_only("HTTP fault injection: persistent 503")
def test_persistent_5xx_is_bounded_then_inconclusive(k8s_backend: K8sBackend) -> None:
    fake_cluster = fake_of(k8s_backend)
    seed(fake_cluster, 3)
    fake_cluster.faults.server_error("GET", PODS, times=None, status=503)
    cluster, _ = facade(fake_cluster, retry_policy=FAST_RETRIES)
    before = fake_cluster.request_count("GET", PODS)
    with pytest.raises(
        ApiUnreachable, match=r"^API unreachable: GET /api/v1/namespaces/bulk/pods: 503"
    ) as err:
        list(cluster.list("v1", "pods", "bulk"))
    assert isinstance(err.value, Inconclusive)
    assert fake_cluster.request_count("GET", PODS) - before == FAST_RETRIES.attempts
    assert cluster.retry_count == FAST_RETRIES.attempts - 1


@pytest.mark.fake_only("scripted 403 on a granted resource (real RBAC 403: test_facade_api, both backends)")
def test_403_is_access_denied_naming_verb_and_resource_and_not_retried(k8s_backend: K8sBackend) -> None:
    fake_cluster = fake_of(k8s_backend)
    seed(fake_cluster, 3)
    fake_cluster.faults.deny("GET", PODS)
    cluster, sleep = facade(fake_cluster)
    before = fake_cluster.request_count("GET", PODS)
    with pytest.raises(AccessDenied) as err:
        list(cluster.list("v1", "pods", "bulk"))
    assert str(err.value) == "RBAC denied: cannot list pods in namespace bulk (403 Forbidden)"
    assert fake_cluster.request_count("GET", PODS) - before == 1
    assert cluster.retry_count == 0 and sleep.calls == []


@pytest.mark.fake_only(
    "410 Gone on watch needs an expired resourceVersion (etcd compaction); the fake scripts it"
)
def test_410_during_watch_relists_and_the_wait_still_succeeds(k8s_backend: K8sBackend) -> None:
    fake_cluster = fake_of(k8s_backend)
    fc = fake_cluster
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "x"}]},
            "status": {"phase": "Running"},
        }
    )
    expired = fc.faults.expire_watch("/api/v1/namespaces/default/pods", times=2)
    cluster, _ = facade(fc)
    lists_before = fc.request_count("GET", "/api/v1/namespaces/default/pods", watch=False)

    def finish() -> None:
        pod = fc.get("v1", "Pod", "w", "default")
        pod["status"]["phase"] = "Succeeded"
        fc.add(pod)

    fc.clock.call_later(5, finish)
    with clock_driver(fc):
        got = wait_for_pod_phase(cluster, "default", "w", "Succeeded", timeout=60, clock=fc.clock)
    assert got["status"]["phase"] == "Succeeded"
    # one initial list + one re-list per 410 the waiter met (the pod may finish before the second
    # fault fires: the clock runs on a background thread, so count the 410s actually delivered)
    assert expired.hits >= 1
    assert (
        fc.request_count("GET", "/api/v1/namespaces/default/pods", watch=False) - lists_before
        == 1 + expired.hits
    )
    assert cluster.retry_count == 0
    assert_rbac_covers(cluster)


@pytest.mark.fake_only("HTTP fault injection: dropped list connection before a watch")
def test_dropped_watch_resumes(k8s_backend: K8sBackend) -> None:
    fake_cluster = fake_of(k8s_backend)
    fc = fake_cluster
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "x"}]},
            "status": {"phase": "Pending"},
        }
    )
    fc.faults.drop_connection("GET", "/api/v1/namespaces/default/pods", times=1)  # the initial list
    cluster, _ = facade(fc, retry_policy=FAST_RETRIES)

    def run() -> None:
        pod = fc.get("v1", "Pod", "w", "default")
        pod["status"]["phase"] = "Running"
        fc.add(pod)

    fc.clock.call_later(3, run)
    with clock_driver(fc):
        got = wait_for_pod_phase(cluster, "default", "w", "Running", timeout=60, clock=fc.clock)
    assert got["status"]["phase"] == "Running"
    assert cluster.retry_count == 1
