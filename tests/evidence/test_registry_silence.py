"""Every registry operation gives up within its silence budget, retries included, with one line that
names the host, and says so before each retry (loopback servers only; no registry binary needed)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from aicr_pytest.evidence import oci, ociref
from tests.evidence import helpers


@contextmanager
def silent_server() -> Iterator[int]:
    """Accepts TCP connections and never sends a byte (a registry that hung)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        sock.close()


@contextmanager
def unavailable_server() -> Iterator[tuple[int, list[str]]]:
    """Answers every request at once with 503 (a registry that is up and failing)."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_HEAD = do_POST = do_PUT = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_registry_that_never_answers_is_given_up_within_the_budget(tmp_path: Path) -> None:
    lines: list[str] = []
    with silent_server() as port:
        client = oci.RegistryClient(
            ociref.parse(f"127.0.0.1:{port}/ev/x:t"), plain_http=True, timeout=1.5, notify=lines.append
        )
        began = time.monotonic()
        with pytest.raises(oci.RegistryError) as err:
            oci.push_bundle(client, "t", helpers.build(tmp_path / "out").summary_dir, "0.1.0")
        elapsed = time.monotonic() - began
    message = str(err.value)
    assert message.startswith(
        f"registry 127.0.0.1:{port} did not answer within 1.5s (1 attempt(s), last: timed out)"
    )
    assert "\n" not in message
    assert elapsed < 1.5 * oci.ATTEMPTS  # one budget, not ATTEMPTS x the timeout (loose: shared CI)
    assert lines == []  # no retry fits in what is left of the budget


def test_the_default_budget_is_thirty_seconds() -> None:
    client = oci.RegistryClient(ociref.parse("127.0.0.1:9/ev/x:t"), plain_http=True)
    assert oci.SILENCE_S == 30.0
    assert client.reg.silence == 30.0


def test_a_failing_registry_is_retried_with_a_line_before_each_retry(tmp_path: Path) -> None:
    lines: list[str] = []
    sleeps: list[float] = []
    with unavailable_server() as (port, seen):
        client = oci.RegistryClient(
            ociref.parse(f"127.0.0.1:{port}/ev/x:t"),
            plain_http=True,
            sleep=sleeps.append,
            notify=lines.append,
        )
        response = client.request("GET", "/manifests/t")
    assert response.status_code == 503  # the last answer is the caller's to judge
    assert len(seen) == oci.ATTEMPTS
    assert len(sleeps) == oci.ATTEMPTS - 1
    assert [line.split(";")[0] for line in lines] == [f"registry 127.0.0.1:{port}: HTTP 503"] * 2
    assert lines[0].endswith(f"(attempt 2 of {oci.ATTEMPTS})")


def test_a_refused_connection_names_the_host_in_one_line(tmp_path: Path) -> None:
    lines: list[str] = []
    client = oci.RegistryClient(
        ociref.parse("127.0.0.1:9/ev/x:t"), plain_http=True, sleep=lambda s: None, notify=lines.append
    )
    with pytest.raises(oci.RegistryError) as err:
        client.request("GET", "/manifests/t")
    assert str(err.value) == (
        f"registry 127.0.0.1:9: connection refused ({oci.ATTEMPTS} attempts): "
        "GET http://127.0.0.1:9/v2/ev/x/manifests/t"
    )
    assert len(lines) == oci.ATTEMPTS - 1


def test_silence_spans_attempts_and_pauses() -> None:
    """Failed attempts and the pauses between them add up: the budget is the whole operation's."""
    now = [0.0]
    client = oci.RegistryClient(
        ociref.parse("127.0.0.1:9/ev/x:t"),
        plain_http=True,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s + 14.0),  # each attempt as if it took 14 s
        notify=lambda line: None,
    )
    with pytest.raises(oci.RegistryError) as err:
        client.request("GET", "/manifests/t")
    assert str(err.value).startswith(
        "registry 127.0.0.1:9 did not answer within 30s (3 attempt(s), last: connection refused)"
    )


def test_an_answer_restarts_the_budget() -> None:
    """A registry answering 503 is not silent: each answer restarts the clock, ATTEMPTS bound it."""
    now = [0.0]
    with unavailable_server() as (port, seen):
        client = oci.RegistryClient(
            ociref.parse(f"127.0.0.1:{port}/ev/x:t"),
            plain_http=True,
            clock=lambda: now[0],
            sleep=lambda s: now.__setitem__(0, now[0] + s + 25.0),
            notify=lambda line: None,
        )
        response = client.request("GET", "/manifests/t")
    assert response.status_code == 503
    assert len(seen) == oci.ATTEMPTS


@contextmanager
def trickling_server() -> Iterator[int]:
    """Answers a blob request with a 64-byte body sent one byte every 0.1 s (never silent for long)."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "64")
            self.end_headers()
            for _ in range(64):
                if stop.is_set():
                    return
                try:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.1)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def test_a_body_that_trickles_in_is_cut_at_its_total_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_pytest.evidence import ociclient

    monkeypatch.setattr(ociclient, "READ_TOTAL_S", 0.5)
    digest = "sha256:" + "0" * 64
    with trickling_server() as port:
        client = oci.RegistryClient(ociref.parse(f"127.0.0.1:{port}/ev/x:t"), plain_http=True, timeout=5)
        began = time.monotonic()
        with pytest.raises(oci.RegistryError) as err:
            client.get_blob(digest, 64, 1 << 20)
        elapsed = time.monotonic() - began
    assert str(err.value) == (
        f"blob {digest} did not arrive within 0.5s in all (the registry sends it too slowly)"
    )
    assert elapsed < 3.0  # cut at the bound, not after the 6.4 s the whole body takes (loose: CI)


def test_the_default_total_bound_of_one_body_is_two_minutes() -> None:
    from aicr_pytest.evidence import ociclient

    assert ociclient.READ_TOTAL_S == 120.0
