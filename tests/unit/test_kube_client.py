"""Cluster facade: error mapping, bounded retries, pagination, resolution, connect().

Conventions reproduced: HTTP status semantics of the Kubernetes API (API concepts, "Response
codes"); 429 + Retry-After (RFC 9110 §10.2.3, client-go's ``IsTooManyRequests``/``Retry-After``
handling); chunked lists with ``limit``/``continue`` (API concepts, "Retrieving large results sets
in chunks").
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import urllib3.exceptions
from _kube_stub import Call, Reply, make_cluster

from aicr_pytest.core.errors import Inconclusive, UsageError
from aicr_pytest.kube import (
    AccessDenied,
    AdmissionDenied,
    ApiUnreachable,
    Conflict,
    Invalid,
    NotFound,
    RetryPolicy,
    connect,
)
from aicr_pytest.kube.client import RUN_ID_LABEL, parse_retry_after


def status_body(code: int, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


@pytest.mark.parametrize(
    "message",
    [
        'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: runtime must be '
        "created before the TrainJob is created",
        "ValidatingAdmissionPolicy 'no-gpu' with binding 'no-gpu' denied request: GPUs are reserved",
        'pods "x" is forbidden: violates PodSecurity "restricted:latest": privileged',
        'pods "x" is forbidden: exceeded quota: gpu-quota, requested: nvidia.com/gpu=8',
        "unable to create new content in namespace aicr-x because it is being terminated",
    ],
)
def test_403_from_admission_is_not_called_rbac_and_quotes_the_server(message: str) -> None:
    cluster, api, _ = make_cluster(
        lambda c: Reply(403, status_body(403, "Forbidden", message), reason="Forbidden")
    )
    with pytest.raises(AdmissionDenied) as err:
        cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "ns"}})
    expected = f'admission denied: cannot create pods "x" in namespace ns: {message} (403 Forbidden)'
    assert str(err.value) == expected
    assert isinstance(err.value, AccessDenied) and "RBAC" not in str(err.value)
    assert len(api.calls) == 1  # never retried


def test_403_from_rbac_keeps_the_rbac_message() -> None:
    rbac = (
        'pods is forbidden: User "validator" cannot list resource "pods" in API group "" '
        'in the namespace "ns"'
    )
    cluster, _, _ = make_cluster(
        lambda c: Reply(403, status_body(403, "Forbidden", rbac), reason="Forbidden")
    )
    with pytest.raises(AccessDenied) as err:
        list(cluster.list("v1", "pods", "ns"))
    assert not isinstance(err.value, AdmissionDenied)
    assert str(err.value) == "RBAC denied: cannot list pods in namespace ns (403 Forbidden)"


def test_403_maps_to_access_denied_naming_verb_and_resource_and_is_not_retried() -> None:
    cluster, api, sleeps = make_cluster(
        lambda c: Reply(403, status_body(403, "Forbidden"), reason="Forbidden")
    )
    with pytest.raises(AccessDenied) as err:
        list(cluster.list("v1", "pods", "gpu-operator"))
    assert str(err.value) == "RBAC denied: cannot list pods in namespace gpu-operator (403 Forbidden)"
    assert isinstance(err.value, Inconclusive)
    assert (err.value.verb, err.value.resource, err.value.namespace) == ("list", "pods", "gpu-operator")
    assert len(api.calls) == 1 and cluster.retry_count == 0 and sleeps.calls == []


def test_403_on_named_group_resource_and_401() -> None:
    cluster, _, _ = make_cluster(lambda c: Reply(403, status_body(403, "Forbidden"), reason="Forbidden"))
    with pytest.raises(
        AccessDenied, match=r'cannot create jobs\.batch "j" in namespace aicr-validation \(403 Forbidden\)'
    ):
        cluster.create(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "j", "namespace": "aicr-validation"},
            }
        )
    cluster, _, _ = make_cluster(
        lambda c: Reply(401, status_body(401, "Unauthorized"), reason="Unauthorized")
    )
    with pytest.raises(
        AccessDenied, match=r"^authentication failed: cannot get nodes \"n1\" \(401 Unauthorized\)$"
    ):
        cluster.get("v1", "Node", "n1")


@pytest.mark.parametrize(
    ("status", "exc"), [(404, NotFound), (409, Conflict), (422, Invalid), (400, Invalid)]
)
def test_status_mapping(status: int, exc: type[Exception]) -> None:
    cluster, api, _ = make_cluster(lambda c: Reply(status, status_body(status, "X", "boom")))
    with pytest.raises(exc, match="boom"):
        cluster.get("v1", "ConfigMap", "cm", "ns")
    assert len(api.calls) == 1


def test_429_honours_retry_after_then_succeeds() -> None:
    replies = [
        Reply(429, status_body(429, "TooManyRequests"), headers={"Retry-After": "3"}),
        Reply(200, {"data": {"k": "v"}}),
    ]
    cluster, api, sleeps = make_cluster(lambda c: replies.pop(0))
    assert cluster.read_configmap("ns", "cm") == {"k": "v"}
    assert sleeps.calls == [3.0]
    assert cluster.retry_count == 1 and len(api.calls) == 2


def test_retry_after_is_capped() -> None:
    replies = [Reply(429, headers={"Retry-After": "3600"}), Reply(200, {"major": "1", "minor": "33"})]
    cluster, _, sleeps = make_cluster(lambda c: replies.pop(0), policy=RetryPolicy(max_retry_after=10))
    assert cluster.server_version()["minor"] == "33"
    assert sleeps.calls == [10.0]


def test_5xx_retried_with_capped_backoff_then_inconclusive() -> None:
    cluster, api, sleeps = make_cluster(lambda c: Reply(503, status_body(503, "ServiceUnavailable")))
    with pytest.raises(ApiUnreachable, match=r"^API unreachable: GET /api/v1/nodes: 503 .*5 attempts") as err:
        list(cluster.list("v1", "nodes"))
    assert isinstance(err.value, Inconclusive)
    assert len(api.calls) == 5 and cluster.retry_count == 4
    policy = RetryPolicy()
    assert all(s <= policy.max_backoff * (1 + policy.jitter) for s in sleeps.calls)
    assert sleeps.calls == sorted(sleeps.calls)  # exponential


def test_total_sleep_budget_bounds_retries() -> None:
    policy = RetryPolicy(attempts=50, initial_backoff=1.0, max_backoff=1.0, budget=3.5, jitter=0.0)
    cluster, api, sleeps = make_cluster(lambda c: Reply(500), policy=policy)
    with pytest.raises(ApiUnreachable):
        cluster.server_version()
    assert sum(sleeps.calls) <= 3.5 and len(api.calls) == 4


def test_dropped_and_refused_connections_are_retried() -> None:
    errors: list[BaseException] = [
        urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")),
        ConnectionRefusedError(111, "refused"),
    ]

    def handler(call: Call) -> Reply | BaseException:
        return errors.pop(0) if errors else Reply(200, {"gitVersion": "v1.33.0"})

    cluster, _, sleeps = make_cluster(handler)
    assert cluster.server_version()["gitVersion"] == "v1.33.0"
    assert cluster.retry_count == 2 and len(sleeps.calls) == 2


def test_501_is_not_retried() -> None:
    cluster, api, _ = make_cluster(lambda c: Reply(501, status_body(501, "NotImplemented")))
    with pytest.raises(Inconclusive):
        cluster.server_version()
    assert len(api.calls) == 1


def make_pods(n: int) -> list[dict[str, Any]]:
    return [{"metadata": {"name": f"p{i:05d}", "namespace": "ns"}} for i in range(n)]


def test_list_always_paginates_and_passes_selectors() -> None:
    pods = make_pods(1200)

    def handler(call: Call) -> Reply:
        start = int(call.query.get("continue", "0"))
        limit = int(call.query["limit"])
        chunk = pods[start : start + limit]
        nxt = start + limit
        meta = {"resourceVersion": "77", **({"continue": str(nxt)} if nxt < len(pods) else {})}
        return Reply(200, {"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": chunk})

    cluster, api, _ = make_cluster(handler)
    got = list(
        cluster.list("v1", "Pod", None, label_selector="app in (a,b)", field_selector="spec.nodeName=n1")
    )
    assert len(got) == 1200 and got[0]["kind"] == "Pod" and got[0]["apiVersion"] == "v1"
    assert len(api.calls) == 3 and cluster.stats.pages == 3
    assert all(c.path == "/api/v1/pods" for c in api.calls)
    assert all(c.query["limit"] == "500" for c in api.calls)
    assert all(c.query["labelSelector"] == "app in (a,b)" for c in api.calls)
    assert all(c.query["fieldSelector"] == "spec.nodeName=n1" for c in api.calls)
    assert [c.query.get("continue") for c in api.calls] == [None, "500", "1000"]
    with pytest.raises(ValueError, match="paginated"):
        list(cluster.list("v1", "pods", page_size=0))


def test_expired_continue_token_uses_the_inconsistent_continuation() -> None:
    replies = [
        Reply(200, {"metadata": {"continue": "t1"}, "items": make_pods(2)}),
        Reply(410, {**status_body(410, "Expired"), "metadata": {"continue": "t2"}}),
        Reply(200, {"metadata": {}, "items": make_pods(1)}),
    ]
    cluster, api, _ = make_cluster(lambda c: replies.pop(0))
    assert len(list(cluster.list("v1", "pods", "ns", page_size=2))) == 3
    assert [c.query.get("continue") for c in api.calls] == [None, "t1", "t2"]


def test_paths_for_core_named_group_cluster_scoped_and_crd() -> None:
    def handler(call: Call) -> Reply:
        if call.path == "/apis/trainer.kubeflow.org/v1alpha1":
            return Reply(
                200,
                {
                    "resources": [
                        {
                            "name": "trainjobs",
                            "kind": "TrainJob",
                            "namespaced": True,
                            "singularName": "trainjob",
                        },
                        {"name": "trainjobs/status", "kind": "TrainJob", "namespaced": True},
                    ]
                },
            )
        return Reply(200, {"metadata": {"name": "x"}})

    cluster, api, _ = make_cluster(handler, enforce=False)
    cluster.get("apps/v1", "DaemonSet", "x", "gpu-operator")
    cluster.get("v1", "Node", "x", "ignored-for-cluster-scoped")
    cluster.get("resource.k8s.io/v1beta1", "DeviceClass", "gpu.nvidia.com")
    cluster.get("trainer.kubeflow.org/v1alpha1", "TrainJob", "t", "ns")
    cluster.get("trainer.kubeflow.org/v1alpha1", "trainjobs", "t2", "ns")
    assert [c.path for c in api.calls] == [
        "/apis/apps/v1/namespaces/gpu-operator/daemonsets/x",
        "/api/v1/nodes/x",
        "/apis/resource.k8s.io/v1beta1/deviceclasses/gpu.nvidia.com",
        "/apis/trainer.kubeflow.org/v1alpha1",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/t",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/t2",  # discovery cached
    ]
    assert cluster.has_resource("trainer.kubeflow.org", "v1alpha1", "trainjobs")
    with pytest.raises(NotFound, match="does not serve"):
        cluster.resolve("trainer.kubeflow.org/v1alpha1", "NoSuchKind")


def test_unserved_group_has_no_resource() -> None:
    cluster, _, _ = make_cluster(lambda c: Reply(404, status_body(404, "NotFound")))
    assert not cluster.has_resource("nvidia.com", "v1", "clusterpolicies")


def test_delete_sends_foreground_propagation_and_missing_ok() -> None:
    replies = [Reply(200, {"kind": "Status", "status": "Success"}), Reply(404, status_body(404, "NotFound"))]
    cluster, api, _ = make_cluster(lambda c: replies.pop(0))
    assert cluster.delete("batch/v1", "Job", "j", "ns") is not None
    assert cluster.delete("batch/v1", "Job", "j", "ns", missing_ok=True) is None
    assert api.calls[0].method == "DELETE"
    assert api.calls[0].body["propagationPolicy"] == "Foreground"


def test_patch_content_types() -> None:
    cluster, api, _ = make_cluster(lambda c: Reply(200, {}), enforce=False)
    cluster.patch("v1", "ConfigMap", "cm", {"data": {"a": "b"}}, "ns")
    cluster.patch("v1", "ConfigMap", "cm", {"data": {"a": "b"}}, "ns", patch_type="strategic")
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}})
    types = [c.headers["Content-Type"] for c in api.calls]
    assert types == [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ]
    assert api.calls[2].query == {"fieldManager": "aicr-pytest", "force": "true"}
    with pytest.raises(ValueError):
        cluster.patch("v1", "ConfigMap", "cm", {}, "ns", patch_type="bogus")


def test_create_retried_after_lost_response_returns_own_object() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", "labels": {RUN_ID_LABEL: "abcd1234"}},
    }
    replies: list[Reply | BaseException] = [
        urllib3.exceptions.ProtocolError("Connection aborted."),
        Reply(409, status_body(409, "AlreadyExists")),
        Reply(200, {**obj, "metadata": {**obj["metadata"], "uid": "u1"}}),
    ]
    cluster, _, _ = make_cluster(lambda c: replies.pop(0))
    assert cluster.create(obj)["metadata"]["uid"] == "u1"

    # Without a retry, 409 is a real conflict.
    cluster, _, _ = make_cluster(lambda c: Reply(409, status_body(409, "AlreadyExists")))
    with pytest.raises(Conflict):
        cluster.create(obj)


def test_create_requires_namespace_for_namespaced_kinds() -> None:
    cluster, _, _ = make_cluster(lambda c: Reply(201, {}))
    with pytest.raises(ValueError, match="namespaced"):
        cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})


def test_parse_retry_after() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("garbage") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


def test_import_does_not_load_kubernetes() -> None:
    code = "import sys, aicr_pytest.kube; assert 'kubernetes' not in sys.modules, 'kubernetes loaded'"
    subprocess.run([sys.executable, "-c", code], check=True)


KUBECONFIG = textwrap.dedent(
    """\
    apiVersion: v1
    kind: Config
    clusters:
    - name: c
      cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
    - name: d
      cluster: {server: "https://127.0.0.2:6443", insecure-skip-tls-verify: true}
    users:
    - name: u
      user: {token: abc}
    contexts:
    - name: one
      context: {cluster: c, user: u}
    - name: two
      context: {cluster: d, user: u}
    current-context: one
    """
)


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_connect_resolution_order(no_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = no_env / "explicit.yaml"
    explicit.write_text(KUBECONFIG)
    with connect(str(explicit), "two") as cluster:
        assert cluster.host == "https://127.0.0.2:6443"
        assert "context two" in cluster.source
    env_file = no_env / "env.yaml"
    env_file.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(env_file))
    with connect(None, None) as cluster:
        assert cluster.host == "https://127.0.0.1:6443" and str(env_file) in cluster.source
    monkeypatch.delenv("KUBECONFIG")
    (no_env / ".kube").mkdir()
    (no_env / ".kube" / "config").write_text(KUBECONFIG)
    with connect(None, None) as cluster:
        assert ".kube/config" in cluster.source


def test_connect_errors_are_usage_errors(no_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError, match="kubeconfig not found"):
        connect(str(no_env / "missing.yaml"), None)
    with pytest.raises(UsageError, match=r"no Kubernetes configuration found; tried .*in-cluster"):
        connect(None, None)
    good = no_env / "k.yaml"
    good.write_text(KUBECONFIG)
    with pytest.raises(UsageError, match="cannot load kubeconfig"):
        connect(str(good), "no-such-context")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(no_env / "a"), str(no_env / "b")]))
    with pytest.raises(UsageError, match="KUBECONFIG is set"):
        connect(None, None)


def test_connect_disables_urllib3_retries(no_env: Path) -> None:
    cfg = no_env / "k.yaml"
    cfg.write_text(KUBECONFIG)
    with connect(str(cfg)) as cluster:
        assert cluster.api_client.configuration.retries is False
