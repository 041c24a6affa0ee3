"""The run as Prometheus metrics: the series from a CTRF document, the textfile, the push (loopback)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from prometheus_client import generate_latest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.report import metrics

CTRF: dict[str, Any] = {
    "reportFormat": "CTRF",
    "results": {
        "summary": {"start": 1_700_000_000_000},
        "tests": [
            {"name": "K8s.server.version", "status": "passed", "suite": ["readiness"]},
            {
                "name": "nccl-all-reduce-bw",
                "status": "failed",
                "duration": 125_500,
                "suite": ["performance"],
                "extra": {
                    "aicr.measurements": [
                        {
                            "name": "busbw",
                            "value": 310.5,
                            "unit": "GB/s",
                            "constraint": ">= 400",
                            "effectiveThreshold": 360.0,
                        }
                    ],
                    "aicr.ncclIsolation": {"suspects": ["n3"]},
                },
                "insights": {
                    "extra": {"aicr.baseline": [{"name": "busbw", "node": None, "baseline": 402.0}]}
                },
            },
            {
                "name": "gpu-health",
                "status": "passed",
                "duration": 61_000,
                "suite": ["deployment"],
                "extra": {"aicr.healthTable": [{"node": "n1", "gpu": "0", "test": "t", "result": "pass"}]},
            },
            {"name": "dra-support", "status": "skipped", "duration": 0, "suite": ["conformance"]},
        ],
    },
}


def text(ctrf: dict[str, Any] = CTRF) -> str:
    return generate_latest(metrics.registry(ctrf, recipe="h100", cluster="prod")).decode()


def samples() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text())
        for s in family.samples
    }


def key(series: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return series, frozenset({"recipe": "h100", "cluster": "prod", **labels}.items())


def test_the_series_of_a_run() -> None:
    got = samples()
    nccl = {"check": "nccl-all-reduce-bw", "phase": "performance"}
    busbw = {**nccl, "name": "busbw", "unit": "GB/s", "node": ""}
    assert got == {
        key("aicr_check_status", **nccl): 0.0,
        key("aicr_check_status", check="gpu-health", phase="deployment"): 1.0,
        key("aicr_check_status", check="dra-support", phase="conformance"): 2.0,
        key("aicr_check_duration_seconds", **nccl): 125.5,
        key("aicr_check_duration_seconds", check="gpu-health", phase="deployment"): 61.0,
        key("aicr_check_duration_seconds", check="dra-support", phase="conformance"): 0.0,
        key("aicr_measurement", **busbw): 310.5,
        key("aicr_measurement_floor", **busbw): 360.0,
        key("aicr_measurement_baseline", **busbw): 402.0,
        key(
            "aicr_measurement",
            check="gpu-health",
            phase="deployment",
            name="unhealthy GPUs",
            unit="",
            node="n1",
        ): 0,
        key(
            "aicr_measurement_floor",
            check="gpu-health",
            phase="deployment",
            name="unhealthy GPUs",
            unit="",
            node="n1",
        ): 0,
        key(
            "aicr_measurement",
            check="gpu-health",
            phase="deployment",
            name="unjudged GPUs",
            unit="",
            node="n1",
        ): 0,
        key(
            "aicr_measurement_floor",
            check="gpu-health",
            phase="deployment",
            name="unjudged GPUs",
            unit="",
            node="n1",
        ): 0,
        key("aicr_node_health", node="n1"): 1.0,
        key("aicr_node_health", node="n3"): 0.0,
        key("aicr_run_timestamp_seconds"): 1_700_000_000.0,
    }  # readiness constraints are not checks; the duration is not a measurement series


def test_the_cluster_label_prefers_the_runs_fingerprint() -> None:
    assert metrics.cluster_label({"extra": {"aicr.identity": {"cluster": "fp123"}}}, "ctx") == "fp123"
    assert metrics.cluster_label({}, "ctx") == "ctx"


def test_the_textfile(tmp_path: Path) -> None:
    path = tmp_path / "aicr.prom"
    metrics.write_textfile(str(path), metrics.registry(CTRF, recipe="h100", cluster="prod"))
    assert path.read_text() == text()


@pytest.mark.parametrize("url", ["pushgateway:9091", "ftp://x", "http://", "http://host:port"])
def test_a_pushgateway_that_is_not_an_http_url_is_one_line(url: str) -> None:
    with pytest.raises(UsageError) as err:
        metrics.check_pushgateway(url)
    assert str(err.value) == f"--pushgateway {url!r}: not an http:// or https:// URL"


class _Gateway(http.server.BaseHTTPRequestHandler):
    status = 200
    seen: ClassVar[list[tuple[str, str, bytes]]] = []

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append(("PUT", self.path, body))
        self.send_response(self.status)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def gateway() -> Iterator[tuple[str, type[_Gateway]]]:
    handler = type("Gateway", (_Gateway,), {"seen": [], "status": 200})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_push_replaces_the_runs_group(gateway: tuple[str, type[_Gateway]]) -> None:
    url, handler = gateway
    metrics.push(
        url, metrics.registry(CTRF, recipe="h100", cluster="prod"), recipe="h100", cluster="prod", timeout=5
    )
    ((method, path, body),) = handler.seen
    assert (method, path) == ("PUT", "/metrics/job/aicr-pytest/cluster/prod/recipe/h100")
    assert b'aicr_check_status{check="gpu-health"' in body


def test_a_refusing_pushgateway_raises_oserror(gateway: tuple[str, type[_Gateway]]) -> None:
    url, handler = gateway
    handler.status = 503
    with pytest.raises(OSError, match="503"):
        metrics.push(url, metrics.registry(CTRF, recipe="h", cluster="c"), recipe="h", cluster="c", timeout=5)
