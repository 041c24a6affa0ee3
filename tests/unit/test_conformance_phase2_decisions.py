"""Decision functions of the phase-II conformance checks and the endpoint access layer (no cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.conformance import accelerator_metrics as am
from aicr_pytest.conformance import ai_service_metrics as asm
from aicr_pytest.conformance import autoscaling as auto
from aicr_pytest.conformance import cluster_autoscaling as ca
from aicr_pytest.conformance import inference_gateway as gw
from aicr_pytest.conformance import slinky
from aicr_pytest.conformance.common import ConformanceFailure
from aicr_pytest.conformance.endpoints import (
    EndpointAnswerError,
    Endpoints,
    EndpointUnreachable,
    HttpAnswer,
    ServiceEndpoint,
    access_mode,
)
from aicr_pytest.conformance.inference_gateway import go_parse_bool
from aicr_pytest.core.errors import Inconclusive, UsageError
from aicr_pytest.kube.podexec import ExecResult, exec_status
from aicr_pytest.kube.rawhttp import RawResponse, apiserver_status, service_proxy_path

# -- endpoints ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "mode"),
    [
        ({}, "proxy"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "direct"),
        ({"KUBERNETES_SERVICE_HOST": " "}, "proxy"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "AICR_ENDPOINT_ACCESS": "proxy"}, "proxy"),
        ({"AICR_ENDPOINT_ACCESS": "Direct"}, "direct"),
        ({"AICR_ENDPOINT_ACCESS": "auto"}, "proxy"),
    ],
)
def test_access_mode(env: dict[str, str], mode: str) -> None:
    assert access_mode(env) == mode


def test_access_mode_rejects_unknown_values() -> None:
    with pytest.raises(UsageError, match=r"^AICR_ENDPOINT_ACCESS='tunnel': expected proxy, direct or auto$"):
        access_mode({"AICR_ENDPOINT_ACCESS": "tunnel"})


DCGM = ServiceEndpoint("gpu-operator", "nvidia-dcgm-exporter", 9400)


def test_service_proxy_path_and_route() -> None:
    assert service_proxy_path("monitoring", "prom", 9090, "/api/v1/query") == (
        "/api/v1/namespaces/monitoring/services/prom:9090/proxy/api/v1/query"
    )
    assert (
        service_proxy_path("ns", "svc", 80, "x", scheme="https")
        == "/api/v1/namespaces/ns/services/https:svc:80/proxy/x"
    )
    endpoints = Endpoints(None, {})  # type: ignore[arg-type]
    assert endpoints.url(DCGM, "/metrics") == "http://nvidia-dcgm-exporter.gpu-operator.svc:9400/metrics"
    assert endpoints.route(DCGM, "/q", [("query", "A B")]) == (
        "GET /api/v1/namespaces/gpu-operator/services/nvidia-dcgm-exporter:9400/proxy/q?query=A%20B "
        "(the API server's service proxy)"
    )


def test_direct_mode_answers_and_failures() -> None:
    calls: list[tuple[str, float, int]] = []

    def opener(url: str, timeout: float, limit: int) -> tuple[int, bytes]:
        calls.append((url, timeout, limit))
        if "down" in url:
            raise ConnectionRefusedError(111, "Connection refused")
        if "big" in url:
            return 200, b"x" * (limit + 1)
        return 404, b"404 page not found\n"

    endpoints = Endpoints(None, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, opener=opener)  # type: ignore[arg-type]
    answer = endpoints.get(DCGM, "/metrics")
    assert calls[0] == ("http://nvidia-dcgm-exporter.gpu-operator.svc:9400/metrics", 30.0, 1 << 20)
    assert answer.status == 404 and answer.route.endswith("(direct, in-cluster)")
    with pytest.raises(EndpointAnswerError) as err:
        answer.require_ok()
    assert (
        str(err.value) == "[INTERNAL] HTTP 404 from http://nvidia-dcgm-exporter.gpu-operator.svc:9400/metrics"
    )
    big = endpoints.get(ServiceEndpoint("ns", "big", 1), "/")
    assert big.oversize and len(big.body) == 1 << 20
    with pytest.raises(
        EndpointAnswerError,
        match=r"^\[INVALID_REQUEST\] response from http://big.ns.svc:1/ exceeds 1048576 byte limit$",
    ):
        big.require_ok()
    with pytest.raises(EndpointUnreachable) as down:
        endpoints.get(ServiceEndpoint("ns", "down", 9), "/x")
    assert isinstance(down.value, Inconclusive)
    assert str(down.value) == (
        "[SERVICE_UNAVAILABLE] failed to reach http://down.ns.svc:9/x: ConnectionRefusedError: [Errno 111] "
        "Connection refused (tried: GET http://down.ns.svc:9/x (direct, in-cluster))"
    )


def test_apiserver_status_tells_the_api_server_from_the_endpoint() -> None:
    status = b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no endpoints","code":503}'
    assert apiserver_status(RawResponse(503, "", {"Content-Type": "application/json"}, status)) is not None
    assert apiserver_status(RawResponse(503, "", {"Content-Type": "text/plain"}, status)) is None
    assert (
        apiserver_status(RawResponse(503, "", {"Content-Type": "application/json"}, b'{"status":"error"}'))
        is None
    )
    assert apiserver_status(RawResponse(500, "", {"content-type": "application/json"}, b"not json")) is None


def test_http_answer_ok() -> None:
    answer = HttpAnswer(200, b"body", "http://x", "GET x")
    assert answer.require_ok() is answer and answer.text() == "body"


# -- accelerator-metrics -----------------------------------------------------------------------------

HELP_ONLY = "\n".join(f"# HELP {m} help\n# TYPE {m} gauge" for m in am.REQUIRED_METRICS)


def test_metrics_found_needs_a_sample_line_not_just_help() -> None:
    assert am.metrics_found(HELP_ONLY) == dict.fromkeys(am.REQUIRED_METRICS, False)
    body = (
        HELP_ONLY
        + '\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} 3\nDCGM_FI_DEV_FB_USED 10\nDCGM_FI_DEV_GPU_TEMP_X{gpu="0"} 1\n'
    )
    found = am.metrics_found(body)
    assert found == {
        "DCGM_FI_DEV_GPU_UTIL": True,
        "DCGM_FI_DEV_FB_USED": True,
        "DCGM_FI_DEV_GPU_TEMP": False,  # another metric sharing the prefix does not count
        "DCGM_FI_DEV_POWER_USAGE": False,
    }
    assert am.required_metrics_report(found).splitlines() == [
        "  DCGM_FI_DEV_GPU_UTIL           FOUND",
        "  DCGM_FI_DEV_FB_USED            FOUND",
        "  DCGM_FI_DEV_GPU_TEMP           MISSING",
        "  DCGM_FI_DEV_POWER_USAGE        MISSING",
    ]


def test_sample_of_keeps_eight_lines() -> None:
    body = "\n".join(f"line {i}" for i in range(12))
    assert am.sample_of(body).splitlines() == [*[f"line {i}" for i in range(8)], "... [truncated]"]
    assert am.sample_of("a\nb") == "a\nb"


# -- ai-service-metrics ------------------------------------------------------------------------------


def test_prometheus_namespace_ignores_enabled_but_needs_a_namespace() -> None:
    refs = [{"name": "kube-prometheus-stack", "namespace": " monitoring ", "overrides": {"enabled": False}}]
    assert asm.prometheus_namespace(refs) == "monitoring"
    for bad in (
        [],
        [{"name": "kube-prometheus-stack", "namespace": ""}],
        [{"name": "prometheus", "namespace": "m"}],
    ):
        with pytest.raises(ConformanceFailure) as err:
            asm.prometheus_namespace(bad)
        assert (
            str(err.value)
            == '[NOT_FOUND] component "kube-prometheus-stack" not found in recipe or has no namespace'
        )


def svc(name: str, *ports: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"ports": [{"port": p} for p in ports]}}


def test_pick_prometheus_service() -> None:
    assert (
        asm.pick_prometheus_service([svc("operated", 8080), svc("prom", 80, 9090), svc("other", 9090)])
        == "prom"
    )
    assert asm.pick_prometheus_service([svc("operated", 8080)]) is None


def test_parse_query_result() -> None:
    assert asm.parse_query_result(b'{"status":"success","data":{"result":[{"a":1}]}}') == (
        "success",
        [{"a": 1}],
    )
    assert asm.parse_query_result(b'{"status":"error","error":"bad"}') == ("error", [])
    with pytest.raises(ConformanceFailure, match=r"^\[INTERNAL\] failed to parse Prometheus response: "):
        asm.parse_query_result(b"<html>")


def test_custom_metrics_discovery_parse_and_report() -> None:
    body = (
        b'{"groupVersion":"custom.metrics.k8s.io/v1beta1",'
        b'"resources":[{"name":"pods/gpu_utilization","namespaced":true}]}'
    )
    summary = asm.parse_api_resource_list(body)
    assert asm.custom_metrics_report(200, summary) == (
        "HTTP status: 200\ngroupVersion: custom.metrics.k8s.io/v1beta1\nResource count: 1\n"
        "  - pods/gpu_utilization (namespaced=true)"
    )
    empty = asm.parse_api_resource_list(b'{"groupVersion":"custom.metrics.k8s.io/v1beta1","resources":[]}')
    assert empty.resources == []  # an empty list still passes
    with pytest.raises(
        ConformanceFailure, match=r"^\[INTERNAL\] failed to parse custom metrics API response: "
    ):
        asm.parse_api_resource_list(b'{"resources": "nope"}')


# -- inference-gateway -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1", "t", "T", "TRUE", "true", "True", " true "])
def test_go_parse_bool_truthy(value: str) -> None:
    assert go_parse_bool(value)


@pytest.mark.parametrize("value", [None, "", "yes", "on", "y", "tRUE", "0", "false", "2"])
def test_go_parse_bool_falsy(value: str | None) -> None:
    assert not go_parse_bool(value)


def test_proxy_name_predicate() -> None:
    assert gw.is_proxy_name("inference-gateway")
    assert gw.is_proxy_name("agentgateway-inference-gateway-lb")
    for name in (
        "inference-gateway-controller-manager",
        "inference-gateway-webhook",
        "inference-gateway-metrics",
        "gw",
    ):
        assert not gw.is_proxy_name(name)


def test_open_source_ranges() -> None:
    assert gw.is_open([]) == (True, "sourceRanges=<empty> (OPEN to 0.0.0.0/0)")
    assert gw.is_open(None)[0]
    assert gw.is_open(["10.0.0.0/8", "::/0"]) == (
        True,
        "sourceRanges=['10.0.0.0/8', '::/0'] (OPEN: includes an any-source CIDR)",
    )
    assert gw.is_open([" 0.0.0.0/0 "])[0]
    assert gw.is_open(["10.0.0.0/8", "not-a-cidr"]) == (False, "sourceRanges=['10.0.0.0/8', 'not-a-cidr']")


def lb(name: str, kind: str = "LoadBalancer", ranges: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": kind}
    if ranges is not None:
        spec["loadBalancerSourceRanges"] = ranges
    return {"metadata": {"name": name}, "spec": spec}


def test_assess_exposure_scopes_to_proxy_load_balancers() -> None:
    exposure = gw.assess_exposure(
        [
            lb("inference-gateway"),
            lb("inference-gateway-controller-manager"),
            lb("inference-gateway-internal", "ClusterIP"),
            lb("inference-gateway-b", ranges=["192.168.0.0/16"]),
        ]
    )
    assert exposure.in_scope == 2 and exposure.open_services == ["inference-gateway"]
    assert exposure.lines == [
        "agentgateway-system/inference-gateway: type=LoadBalancer sourceRanges=<empty> (OPEN to 0.0.0.0/0)",
        "agentgateway-system/inference-gateway-b: type=LoadBalancer sourceRanges=['192.168.0.0/16']",
    ]


def test_exposure_message_is_aicrs() -> None:
    assert gw.exposure_message(["a", "b"]) == (
        "inference-gateway LoadBalancer Service(s) [a, b] are open to the entire internet (0.0.0.0/0): "
        "spec.loadBalancerSourceRanges is empty or includes an any-source CIDR. Scope to trusted CIDRs via "
        "agentgateway.allowedSourceRanges — a recipe componentRef override or "
        "`--set-json agentgateway:allowedSourceRanges='[\"<cidr>\"]'`."
    )


def test_ready_endpoints_counts_proxy_slices_only() -> None:
    def sl(service: str, *ready: Any) -> dict[str, Any]:
        return {
            "metadata": {"labels": {"kubernetes.io/service-name": service}},
            "endpoints": [{"conditions": {"ready": r}} for r in ready],
        }

    slices = [
        sl("inference-gateway", True, False, None),
        sl("inference-gateway-metrics", True),
        sl("other", True),
    ]
    assert gw.ready_endpoints(slices) == (1, 1)
    assert gw.ready_endpoints([sl("inference-gateway", False)]) == (1, 0)


# -- autoscaling -------------------------------------------------------------------------------------


def test_hpa_manifests() -> None:
    pod = auto.hpa_manifest("hpa-test-1", "hpa-test-1", max_replicas=3, scale_down_window=0)
    assert pod["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "hpa-test-1",
    }
    assert (pod["spec"]["minReplicas"], pod["spec"]["maxReplicas"]) == (1, 3)
    assert pod["spec"]["metrics"] == [
        {
            "type": "External",
            "external": {
                "metric": {"name": "dcgm_gpu_power_usage"},
                "target": {"type": "AverageValue", "averageValue": "10"},
            },
        }
    ]
    assert pod["spec"]["behavior"] == {"scaleDown": {"stabilizationWindowSeconds": 0}}
    cluster = auto.hpa_manifest("c", "c", max_replicas=4, scale_down_window=None)
    assert cluster["spec"]["maxReplicas"] == 4 and "behavior" not in cluster["spec"]
    assert auto.hpa_replicas({"status": {"desiredReplicas": 3, "currentReplicas": 1}}) == (3, 1)
    assert auto.hpa_replicas({}) == (0, 0)
    assert auto.external_metric_path("default") == (
        "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/dcgm_gpu_power_usage"
    )


def test_metric_items() -> None:
    assert auto.metric_items(RawResponse(200, "", {}, b'{"items":[{"value":"46"}]}')) == [{"value": "46"}]
    assert auto.metric_items(RawResponse(200, "", {}, b'{"items":null}')) == []
    assert auto.metric_items(RawResponse(200, "", {}, b"garbage")) == []


def test_platform_and_gpu_pools() -> None:
    assert ca.platform_of({"spec": {"providerID": "aws:///us-east-1a/i-1"}}) == "eks"
    assert ca.platform_of({"spec": {"providerID": "gce://p/z/n"}}) == "gke"
    assert ca.platform_of({"spec": {"providerID": "kind://docker/x"}}) is None
    assert ca.platform_of(None) is None
    pools = [
        {"metadata": {"name": "cpu"}, "spec": {"limits": {"cpu": "100"}}},
        {"metadata": {"name": "gpu"}, "spec": {"limits": {"nvidia.com/gpu": "8"}}},
        {"metadata": {"name": "nolimits"}, "spec": {}},
    ]
    assert ca.gpu_nodepools(pools) == ["gpu"]


def test_gpu_workload_is_aicrs_shape() -> None:
    dep = ca.gpu_workload_manifest("cluster-auto-test-x", "cluster-auto-test-x", "gpu")
    pod = dep["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"karpenter.sh/nodepool": "gpu"}
    assert {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    container = pod["containers"][0]
    assert container["image"] == "ubuntu:22.04" and container["command"] == ["sleep", "120"]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}}
    assert pod["securityContext"]["runAsUser"] == 65534


# -- Slinky ------------------------------------------------------------------------------------------


def pod(
    name: str, created: str, phase: str = "Running", ready: bool = True, deleting: bool = False
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = created
    return {
        "metadata": meta,
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_pick_login_pod_takes_the_newest_ready_one() -> None:
    pods = [
        pod("old", "2026-01-01T00:00:00Z"),
        pod("new", "2026-01-02T00:00:00Z"),
        pod("newest-unready", "2026-01-03T00:00:00Z", ready=False),
        pod("newest-deleting", "2026-01-04T00:00:00Z", deleting=True),
        pod("failed", "2026-01-05T00:00:00Z", phase="Failed"),
    ]
    chosen = slinky.pick_login_pod(pods)
    assert chosen is not None and chosen["metadata"]["name"] == "new"
    assert slinky.pick_login_pod([pods[2], pods[4]]) is None


def test_exec_container() -> None:
    def p(annotation: str | None, *names: str) -> dict[str, Any]:
        meta: dict[str, Any] = (
            {"annotations": {"kubectl.kubernetes.io/default-container": annotation}} if annotation else {}
        )
        return {"metadata": meta, "spec": {"containers": [{"name": n} for n in names]}}

    assert slinky.exec_container(p("sackd", "login", "sackd")) == "sackd"
    assert slinky.exec_container(p("missing", "sidecar", "login")) == "login"
    assert slinky.exec_container(p(None, "first", "second")) == "first"


def test_command_failure() -> None:
    ping, sinfo = slinky.HEALTH_COMMANDS[0], slinky.HEALTH_COMMANDS[1]
    assert slinky.command_failure(ping, ExecResult("UP\n", "", 0)) is None
    assert slinky.command_failure(ping, ExecResult("  \n", "", 0)) == "empty stdout"
    assert slinky.command_failure(sinfo, ExecResult("", "", 0)) is None  # sinfo needs no output
    assert slinky.command_failure(ping, ExecResult("", "", 1)) == "exit code 1"
    assert (
        slinky.command_failure(ping, ExecResult("", "", None, "stream closed"))
        == "exec failed: stream closed"
    )


def test_imex_channels() -> None:
    out = (
        "noise\nIMEX_CHANNEL=/dev/nvidia-caps-imex-channels/channel0\n"
        " IMEX_CHANNEL=/dev/nvidia-caps-imex-channels/channel7 \n"
    )
    assert slinky.imex_channels(out) == [
        "/dev/nvidia-caps-imex-channels/channel0",
        "/dev/nvidia-caps-imex-channels/channel7",
    ]
    cases = {
        "IMEX_CHANNEL=/dev/nvidia-caps-imex-channels/channel\nIMEX_CHANNEL=/dev/nvidia-caps-imex-channels/channel1":
            '[INTERNAL] invalid IMEX channel path "/dev/nvidia-caps-imex-channels/channel"',
        "IMEX_CHANNEL=/dev/nvidia-caps-imex-channels/channel1/x":
            '[INTERNAL] invalid IMEX channel path "/dev/nvidia-caps-imex-channels/channel1/x"',
        "IMEX_CHANNEL=/tmp/channel1": '[INTERNAL] invalid IMEX channel path "/tmp/channel1"',
        "IMEX_CHANNEL=/dev/nvidia-caps-imex-channels/channel1":
            "[INTERNAL] expected two IMEX channels, got 1",
        "": "[INTERNAL] expected two IMEX channels, got 0",
        "IMEX_CHANNEL=/dev/nvidia-caps-imex-channels/channel2\nIMEX_CHANNEL=/dev/nvidia-caps-imex-channels/channel2":
            "[INTERNAL] concurrent Slurm jobs received the same IMEX channel "
            '"/dev/nvidia-caps-imex-channels/channel2"',
    }  # fmt: skip
    for stdout, message in cases.items():
        with pytest.raises(ConformanceFailure) as err:
            slinky.imex_channels(stdout)
        assert str(err.value) == message


def test_imex_script_runs_two_overlapping_one_gpu_jobs() -> None:
    assert slinky.IMEX_SCRIPT.count("srun --immediate=30 --time=1:00 --nodes=1 --ntasks=1") == 2
    assert slinky.IMEX_SCRIPT.count("--gres=gpu:1") == 2
    assert "sleep 40" in slinky.IMEX_SCRIPT and "/dev/nvidia-caps-imex-channels" in slinky.IMEX_SCRIPT


# -- pods/exec status ---------------------------------------------------------------------------------


def test_exec_status() -> None:
    assert exec_status(b'{"metadata":{},"status":"Success"}') == (0, None)
    nonzero = (
        b'{"status":"Failure","reason":"NonZeroExitCode","message":"command terminated",'
        b'"details":{"causes":[{"reason":"ExitCode","message":"3"}]}}'
    )
    assert exec_status(nonzero) == (3, None)
    assert exec_status(b'{"status":"Failure","reason":"InternalError","message":"cmd wait: boom"}') == (
        None,
        "cmd wait: boom",
    )
    code, error = exec_status(b"{")
    assert code is None and error is not None and error.startswith("unparsable exec status")
