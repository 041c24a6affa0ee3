"""``--metrics-file`` and ``--pushgateway`` in a run (the fake cluster; the metrics are backend-blind).

A run with ``gpu-xid`` writes its metrics file and pushes to a loopback Pushgateway; one whose
Pushgateway refuses (503) or is not there at all keeps its verdict, its exit status and its CTRF
report, and says so in one warning line.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.test_node_health_backends import gpu_nodes, run_health
from tests.harness.backends import K8sBackend

pytestmark = pytest.mark.parametrize("k8s_backend", ["fake"], indirect=True)


class Gateway(http.server.BaseHTTPRequestHandler):
    status = 200
    bodies: list[bytes]

    def do_PUT(self) -> None:
        type(self).bodies.append(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.send_response(self.status)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def gateway(request: pytest.FixtureRequest) -> Iterator[tuple[str, type[Gateway]]]:
    handler = type("G", (Gateway,), {"bodies": [], "status": getattr(request, "param", 200)})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_run_writes_its_metrics_and_pushes_them(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, gateway: tuple[str, type[Gateway]], tmp_path: Path
) -> None:
    url, handler = gateway
    prom = tmp_path / "aicr.prom"
    run = run_health(
        pytester, k8s_backend, "gpu-health", faults=("gpu-xid",),
        extra=("--aicr-metrics-file", str(prom), "--aicr-pushgateway", url),
    )  # fmt: skip
    assert run.tests["gpu-health"]["status"] == "failed"
    text = prom.read_text()
    assert handler.bodies == [text.encode()]
    last = gpu_nodes(k8s_backend)[-1]
    assert f'aicr_node_health{{cluster="default",node="{last}",recipe=' in text
    assert 'aicr_check_status{check="gpu-health",cluster="default",phase="deployment",recipe=' in text
    assert "warning" not in run.result.stderr.str()


@pytest.mark.parametrize("gateway", [503], indirect=True)
def test_a_refusing_pushgateway_changes_nothing_but_a_warning(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, gateway: tuple[str, type[Gateway]]
) -> None:
    url, _ = gateway
    refused = run_health(
        pytester, k8s_backend, "gpu-health", faults=("gpu-xid",), extra=("--aicr-pushgateway", url)
    )
    assert refused.tests["gpu-health"]["status"] == "failed"
    assert refused.result.ret == pytest.ExitCode.TESTS_FAILED
    (line,) = [line for line in refused.result.stderr.str().splitlines() if "warning" in line]
    assert line == (
        f"aicr-pytest: warning: --pushgateway {url}: push failed (HTTP Error 503: Service Unavailable); "
        "the run's verdict and CTRF report stand"
    )


def test_an_absent_pushgateway_changes_nothing_but_a_warning(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    with socket_closed_port() as url:
        run = run_health(pytester, k8s_backend, "gpu-health", extra=("--aicr-pushgateway", url))
    assert run.tests["gpu-health"]["status"] == "passed" and run.result.ret == pytest.ExitCode.OK
    assert f"aicr-pytest: warning: --pushgateway {url}: push failed (" in run.result.stderr.str()


class socket_closed_port:
    """A loopback URL on a port nothing listens on (bound, then closed)."""

    def __enter__(self) -> str:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        return None
