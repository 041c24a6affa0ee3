"""Input sources: files, https:// (TLS verified, fail closed), http:// refusal, cm://."""

from __future__ import annotations

import http.server
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from aicr_pytest.core import sources
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.sources import (
    configmap_data_key,
    load_source,
    load_yaml_document,
    parse_configmap_uri,
    parse_yaml_document,
)

#: a presigned object URL's path and query (S3 style): the signature must never be echoed
PRESIGNED_PATH = "/r.yaml?X-Amz-Credential=AKIAEXAMPLE%2Fus-east-1&X-Amz-Signature=feedfacecafe0123"
PRESIGNED_RECIPE = (
    b"kind: RecipeResult\napiVersion: aicr.run/v1alpha2\n"
    b"componentRefs:\n  - {name: gpu-operator, namespace: gpu-operator, type: Helm, "
    b"source: 'https://ci:hunter2@charts.example.com/nvidia', version: v25.10.1}\n"
    b"validation:\n  deployment: {checks: [operator-health]}\n"
)
RECIPE_YAML = b"kind: RecipeResult\napiVersion: aicr.run/v1alpha2\ncriteria: {service: on}\n"

# -- files ----------------------------------------------------------------------------------


def test_file_source(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    f.write_bytes(RECIPE_YAML)
    body, label = load_source(str(f), kind="recipe", configmap_reader=None)
    assert body == RECIPE_YAML
    assert label == str(f)
    doc = load_yaml_document(str(f), "recipe", None)
    assert doc == {"kind": "RecipeResult", "apiVersion": "aicr.run/v1alpha2", "criteria": {"service": "on"}}


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as exc:
        load_source(str(tmp_path / "nope.yaml"), kind="snapshot", configmap_reader=None)
    assert str(exc.value) == f"snapshot file not found: {tmp_path / 'nope.yaml'}"


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a regular file"):
        load_source(str(tmp_path), kind="recipe", configmap_reader=None)


def test_file_too_large(tmp_path: Path) -> None:
    f = tmp_path / "big.yaml"
    f.write_bytes(b"a: " + b"x" * (sources.MAX_INPUT_BYTES + 10))
    with pytest.raises(UsageError, match="larger than the 1 MiB limit"):
        load_source(str(f), kind="recipe", configmap_reader=None)


def test_empty_location() -> None:
    with pytest.raises(UsageError, match="recipe location is empty"):
        load_source("  ", kind="recipe", configmap_reader=None)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b"a: [1, 2\n", "flow sequence"),
        (b"a: 1\n b: 2\n", "mapping values are not allowed"),
        (b"a: 1\n---\nb: 2\n", "expected a single document in the stream"),
    ],
)
def test_malformed_yaml_one_line(text: bytes, problem: str) -> None:
    # Exact wording differs between libyaml and pure-Python PyYAML; the shape does not.
    with pytest.raises(UsageError) as exc:
        parse_yaml_document(text, "src")
    msg = str(exc.value)
    assert msg.startswith("malformed YAML in src: ") and msg.endswith(" (line 2)")
    assert problem in msg and "\n" not in msg


@pytest.mark.parametrize(
    ("text", "what"), [(b"", "an empty document"), (b"- a\n", "a list"), (b"<html>hi</html>", "a scalar")]
)
def test_non_mapping_document(text: bytes, what: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse_yaml_document(text, "src", kind="recipe")
    assert str(exc.value) == f"recipe src is not a YAML mapping (got {what})"


def test_invalid_utf8_is_one_line() -> None:
    with pytest.raises(UsageError, match=r"^malformed YAML in src: "):
        parse_yaml_document(b"a: \xff\xfe\x00bad", "src")


# -- schemes --------------------------------------------------------------------------------


def test_http_refused() -> None:
    with pytest.raises(UsageError) as exc:
        load_source("http://example.com/r.yaml", kind="recipe", configmap_reader=None)
    msg = str(exc.value)
    assert msg.startswith("refusing to fetch recipe over plain http: http://example.com/r.yaml")
    assert "https://" in msg and "\n" not in msg


@pytest.mark.parametrize("uri", ["ftp://host/r.yaml", "s3://bucket/r.yaml", "oci://reg/r:1"])
def test_unknown_scheme_refused(uri: str) -> None:
    with pytest.raises(UsageError, match="unsupported recipe location"):
        load_source(uri, kind="recipe", configmap_reader=None)


# -- cm:// ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("cm://ns/name", ("ns", "name")),
        ("cm:// ns / a/b ", ("ns", "a/b")),
        ("cm://gpu-operator/x", ("gpu-operator", "x")),
    ],
)
def test_parse_configmap_uri(uri: str, expected: tuple[str, str]) -> None:
    assert parse_configmap_uri(uri) == expected


@pytest.mark.parametrize("uri", ["cm://foo", "cm://", "cm:///name", "cm://ns/", "cm:// /x"])
def test_invalid_configmap_uri(uri: str) -> None:
    with pytest.raises(UsageError) as exc:
        load_source(uri, kind="snapshot", configmap_reader=lambda ns, n: {})
    assert str(exc.value) == f'invalid ConfigMap URI "{uri}": expected cm://namespace/name'


def test_configmap_needs_a_cluster() -> None:
    with pytest.raises(UsageError) as exc:
        load_source("cm://ns/r", kind="recipe", configmap_reader=None)
    assert (
        str(exc.value)
        == "cannot read recipe from cm://ns/r: reading a ConfigMap needs a cluster (kubeconfig)"
    )


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"snapshot.yaml": "a: 1"}, "snapshot.yaml"),
        ({"format": "json", "snapshot.json": "{}", "snapshot.yaml": "a: 1"}, "snapshot.json"),
        ({"format": "json", "snapshot.yaml": "a: 1"}, "snapshot.yaml"),
        ({"format": "", "snapshot.json": "{}"}, "snapshot.json"),
        ({"snapshot.txt": "x"}, "snapshot.txt"),
        ({"recipe.yaml": "a: 1"}, None),
    ],
)
def test_configmap_key_scheme(data: dict[str, str], key: str | None) -> None:
    assert configmap_data_key(data) == key


@pytest.mark.parametrize("kind", ["recipe", "snapshot"])
def test_configmap_source(kind: str) -> None:
    calls: list[tuple[str, str]] = []

    def reader(ns: str, name: str) -> dict[str, str]:
        calls.append((ns, name))
        return {"format": "yaml", "snapshot.yaml": RECIPE_YAML.decode(), "timestamp": "t"}

    body, label = load_source("cm://gpu-operator/aicr-x", kind=kind, configmap_reader=reader)  # type: ignore[arg-type]
    assert body == RECIPE_YAML
    assert label == "cm://gpu-operator/aicr-x (key snapshot.yaml)"
    assert calls == [("gpu-operator", "aicr-x")]


def test_configmap_without_data() -> None:
    with pytest.raises(UsageError) as exc:
        load_source("cm://ns/name", kind="recipe", configmap_reader=lambda ns, n: {"other": "x"})
    assert str(exc.value) == "ConfigMap ns/name has no snapshot data"


def test_configmap_table_format_refused() -> None:
    with pytest.raises(UsageError, match="table output"):
        load_source("cm://ns/name", kind="snapshot", configmap_reader=lambda ns, n: {"snapshot.txt": "x"})


def test_configmap_reader_error_is_one_line() -> None:
    def reader(ns: str, name: str) -> dict[str, str]:
        raise RuntimeError("(404)\nReason: Not Found\nbody...")

    with pytest.raises(UsageError) as exc:
        load_source("cm://ns/name", kind="snapshot", configmap_reader=reader)
    assert str(exc.value) == "cannot read snapshot from cm://ns/name: (404)"


# -- https ----------------------------------------------------------------------------------


@dataclass
class TlsServer:
    base: str
    cert: Path


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[int, bytes, dict[str, str]]]] = {}

    def do_GET(self) -> None:
        if self.path == "/trickle.yaml":  # one byte every 0.2 s: never idle long, never done
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass  # the client cut the fetch
            return
        status, body, headers = self.routes.get(self.path, (404, b"not found", {}))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl CLI not available to make a test certificate")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        [
            openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
            "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    base = f"https://127.0.0.1:{port}"
    _Handler.routes = {
        "/recipe.yaml": (200, RECIPE_YAML, {"Content-Type": "application/yaml"}),
        "/page.html": (200, b"<!doctype html><html><body>login</body></html>", {"Content-Type": "text/html"}),
        "/broken.yaml": (200, b"a: [1,\n", {}),
        "/big.yaml": (200, b"a: " + b"x" * (sources.MAX_INPUT_BYTES + 1), {}),
        "/to-http": (302, b"", {"Location": f"http://127.0.0.1:{port}/recipe.yaml"}),
        "/to-https": (302, b"", {"Location": f"{base}/recipe.yaml"}),
        "/gone": (500, b"boom", {}),
        PRESIGNED_PATH: (200, PRESIGNED_RECIPE, {"Content-Type": "application/yaml"}),
    }
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield TlsServer(base=base, cert=cert)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def trust_test_cert(tls_server: TlsServer, monkeypatch: pytest.MonkeyPatch) -> TlsServer:
    monkeypatch.setattr(
        sources, "_ssl_context", lambda: ssl.create_default_context(cafile=str(tls_server.cert))
    )
    return tls_server


def test_https_unverified_certificate_is_rejected(tls_server: TlsServer) -> None:
    """Fail closed: a self-signed certificate not in the trust store never yields content."""
    uri = f"{tls_server.base}/recipe.yaml"
    with pytest.raises(UsageError) as exc:
        load_source(uri, kind="recipe", configmap_reader=None)
    msg = str(exc.value)
    assert msg.startswith(f"failed to fetch recipe from {uri}: TLS verification failed: ")
    assert "CERTIFICATE_VERIFY_FAILED" in msg
    assert "\n" not in msg


def test_https_hostname_is_verified(trust_test_cert: TlsServer) -> None:
    # Trusted CA, but the URL names a host the certificate does not cover.
    uri = trust_test_cert.base.replace("127.0.0.1", "127.0.0.2") + "/recipe.yaml"
    with pytest.raises(UsageError, match=r"TLS verification failed|failed to fetch"):
        load_source(uri, kind="recipe", configmap_reader=None)


def test_https_ssl_cert_file_env_is_honoured(tls_server: TlsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_server.cert))
    body, _ = load_source(f"{tls_server.base}/recipe.yaml", kind="recipe", configmap_reader=None)
    assert body == RECIPE_YAML


def test_https_200(trust_test_cert: TlsServer) -> None:
    uri = f"{trust_test_cert.base}/recipe.yaml"
    body, label = load_source(uri, kind="recipe", configmap_reader=None)
    assert body == RECIPE_YAML and label == uri
    assert load_yaml_document(uri, "recipe", None) == {
        "kind": "RecipeResult",
        "apiVersion": "aicr.run/v1alpha2",
        "criteria": {"service": "on"},
    }


@pytest.mark.parametrize(("path", "status"), [("/missing.yaml", "404 Not Found"), ("/gone", "500")])
def test_https_non_200(trust_test_cert: TlsServer, path: str, status: str) -> None:
    uri = f"{trust_test_cert.base}{path}"
    with pytest.raises(UsageError) as exc:
        load_source(uri, kind="snapshot", configmap_reader=None)
    assert str(exc.value).startswith(f"failed to fetch snapshot from {uri}: status {status}")


def test_https_html_body_is_not_yaml(trust_test_cert: TlsServer) -> None:
    uri = f"{trust_test_cert.base}/page.html"
    with pytest.raises(UsageError) as exc:
        load_yaml_document(uri, "recipe", None)
    assert str(exc.value) == f"recipe {uri} is not a YAML mapping (got a scalar)"


def test_https_malformed_yaml(trust_test_cert: TlsServer) -> None:
    uri = f"{trust_test_cert.base}/broken.yaml"
    with pytest.raises(UsageError, match=rf"^malformed YAML in {uri}: .*\(line 2\)$"):
        load_yaml_document(uri, "recipe", None)


def test_https_body_too_large(trust_test_cert: TlsServer) -> None:
    with pytest.raises(UsageError, match="larger than the 1 MiB limit"):
        load_source(f"{trust_test_cert.base}/big.yaml", kind="recipe", configmap_reader=None)


def test_https_redirect_to_http_refused(trust_test_cert: TlsServer) -> None:
    with pytest.raises(UsageError, match="redirect to a non-https location refused"):
        load_source(f"{trust_test_cert.base}/to-http", kind="recipe", configmap_reader=None)


def test_https_redirect_to_https_followed(trust_test_cert: TlsServer) -> None:
    body, _ = load_source(f"{trust_test_cert.base}/to-https", kind="recipe", configmap_reader=None)
    assert body == RECIPE_YAML


def test_https_connection_refused(trust_test_cert: TlsServer) -> None:
    with pytest.raises(UsageError, match=r"^failed to fetch recipe from https://127\.0\.0\.1:1/r\.yaml: "):
        load_source("https://127.0.0.1:1/r.yaml", kind="recipe", configmap_reader=None)


def test_a_presigned_recipe_url_leaves_no_credential_in_any_output(
    tls_server: TlsServer, tmp_path: Path
) -> None:
    """Terminal, CTRF and HTML report of a real run: the URL is named, its signature never."""
    import json
    import os
    import sys

    snapshot = tmp_path / "snap.yaml"
    snapshot.write_text(
        "kind: Snapshot\napiVersion: aicr.run/v1alpha2\nmeasurements:\n  - type: K8s\n    subtypes:\n"
        "      - subtype: server\n        data: {version: v1.33.0}\n"
    )
    url = tls_server.base + PRESIGNED_PATH
    env = {**os.environ, "SSL_CERT_FILE": str(tls_server.cert)}
    proc = subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", "validate", "-r", url, "-s", str(snapshot), "--no-cluster",
         "-o", str(tmp_path / "ctrf.json"), "--html", str(tmp_path / "report.html")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    outputs = {
        "stderr": proc.stderr,
        "stdout": proc.stdout,
        "ctrf": (tmp_path / "ctrf.json").read_text(),
        "html": (tmp_path / "report.html").read_text(),
    }
    for name, text in outputs.items():
        for secret in ("feedfacecafe0123", "AKIAEXAMPLE", "hunter2"):
            assert secret not in text, f"{secret} in {name}"
    assert "X-Amz-Signature=REDACTED" in outputs["stderr"]  # named, redacted
    assert "X-Amz-Signature=REDACTED" in outputs["html"]
    assert json.loads(outputs["ctrf"])["results"]["summary"]["tests"] >= 1


def test_https_a_trickling_server_is_cut_at_the_total_bound(
    trust_test_cert: TlsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The idle timeout never trips on a byte every 0.2 s; the total bound does (here 0.6 s)."""
    monkeypatch.setattr(sources, "HTTP_TOTAL_S", 0.6)
    uri = f"{trust_test_cert.base}/trickle.yaml"
    start = time.monotonic()
    with pytest.raises(UsageError) as exc:
        load_source(uri, kind="recipe", configmap_reader=None)
    assert time.monotonic() - start < 3
    assert str(exc.value) == (
        f"failed to fetch recipe from {uri}: no complete response within 0.6s "
        "(the server is too slow or stalls)"
    )


def test_https_a_silent_server_is_cut_at_the_total_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that accepts and never answers (not even the TLS handshake)."""
    monkeypatch.setattr(sources, "HTTP_TOTAL_S", 0.5)
    with socket.create_server(("127.0.0.1", 0)) as server:
        uri = f"https://127.0.0.1:{server.getsockname()[1]}/r.yaml"
        start = time.monotonic()
        with pytest.raises(UsageError, match=r"no complete response within 0\.5s"):
            load_source(uri, kind="recipe", configmap_reader=None)
        assert time.monotonic() - start < 3
