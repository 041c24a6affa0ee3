"""Push, pull, digest checks and referrer discovery against two real registries on 127.0.0.1:
Debian's docker-registry (distribution 2.8, no Referrers API → tag-schema fallback) and
go-containerregistry's pkg/registry with the OCI 1.1 Referrers API."""

from __future__ import annotations

import io
import json
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence import oci, ociref
from aicr_pytest.evidence.canonical import compact_json, sha256_digest
from tests.evidence import helpers
from tests.evidence.conftest import Registry


def client_for(repo: str, **kw: Any) -> oci.RegistryClient:
    return oci.RegistryClient(ociref.parse(repo + ":t"), plain_http=True, sleep=lambda s: None, **kw)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_push_is_deterministic_and_pulls_back_byte_for_byte(registry: Registry, tmp_path: Path) -> None:
    built = helpers.build(tmp_path / "out")
    client = client_for(registry.repo())
    first = oci.push_bundle(client, "t1", built.summary_dir, "0.1.0")
    again = oci.push_bundle(client, "t2", built.summary_dir, "0.1.0")
    assert first.descriptor.digest == again.descriptor.digest
    assert first.reference == f"{client.ref.name}:t1"

    body, digest = client.get_manifest("t1")
    assert digest == first.descriptor.digest
    doc = json.loads(body)
    assert doc["artifactType"] == C.ARTIFACT_TYPE and doc["mediaType"] == C.MT_MANIFEST
    assert doc["config"] == {"mediaType": C.MT_EMPTY, "digest": C.EMPTY_DIGEST, "size": 2, "data": "e30="}
    (layer,) = doc["layers"]
    assert layer["mediaType"] == C.MT_LAYER_TGZ
    assert layer["annotations"][C.ANN_TITLE] == "." and layer["annotations"][C.ANN_UNPACK] == "true"
    assert doc["annotations"][C.ANN_CREATED] == "1970-01-01T00:00:00Z"

    pulled = oci.pull_bundle(client, first.descriptor.digest, tmp_path / "pulled")
    assert pulled.digest == first.descriptor.digest
    assert tree(pulled.root) == tree(built.summary_dir)
    assert tree(oci.pull_bundle(client, "t2", tmp_path / "by-tag").root) == tree(built.summary_dir)


def test_signature_referrer_discovery(registry: Registry, tmp_path: Path) -> None:
    built = helpers.build(tmp_path / "out")
    client = client_for(registry.repo())
    pushed = oci.push_bundle(client, "t", built.summary_dir, "0.1.0")
    assert oci.fetch_signature(client, pushed.descriptor.digest) is None
    attached = oci.attach_signature(client, pushed.descriptor, b'{"bundle": 1}')
    assert attached.via_referrers_api is registry.referrers_api
    found = oci.list_referrers(client, pushed.descriptor.digest, C.SIGSTORE_BUNDLE_TYPE)
    assert [r["digest"] for r in found] == [attached.descriptor.digest]
    assert oci.fetch_signature(client, pushed.descriptor.digest) == b'{"bundle": 1}'
    assert oci.list_referrers(client, pushed.descriptor.digest, "application/x-other") == []

    fallback = client.request(
        "GET", f"/manifests/{oci.fallback_tag(pushed.descriptor.digest)}", headers={"Accept": C.MT_INDEX}
    )
    referrers_api = client.request("GET", f"/referrers/{pushed.descriptor.digest}")
    if registry.referrers_api:
        assert referrers_api.status_code == 200 and fallback.status_code == 404
    else:
        assert referrers_api.status_code == 404, "distribution 2.8 has no Referrers API"
        assert fallback.status_code == 200
        assert [m["digest"] for m in fallback.json()["manifests"]] == [attached.descriptor.digest]
    oci.attach_signature(client, pushed.descriptor, b'{"bundle": 1}')
    assert len(oci.list_referrers(client, pushed.descriptor.digest, C.SIGSTORE_BUNDLE_TYPE)) == 1, (
        "no duplicate"
    )
    second = oci.attach_signature(client, pushed.descriptor, b'{"bundle": 2}')
    digests = [
        r["digest"] for r in oci.list_referrers(client, pushed.descriptor.digest, C.SIGSTORE_BUNDLE_TYPE)
    ]
    assert sorted(digests) == sorted([attached.descriptor.digest, second.descriptor.digest])


# ---- a registry that lies -------------------------------------------------------------------------


class _Proxy(ThreadingHTTPServer):
    daemon_threads = True
    upstream: str
    mode: str


class _ProxyHandler(BaseHTTPRequestHandler):
    server: _Proxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        upstream = requests.get(
            f"http://{self.server.upstream}{self.path}",
            headers={"Accept": self.headers.get("Accept", "*/*")},
            timeout=10,
        )
        status, body, ctype = upstream.status_code, upstream.content, upstream.headers.get("Content-Type", "")
        mode = self.server.mode
        if mode == "flip-blobs" and "/blobs/" in self.path and body:
            body = body[:-1] + bytes([body[-1] ^ 1])
        if mode == "referrers-500" and ("/referrers/" in self.path or "/manifests/sha256-" in self.path):
            status, body = 500, b"{}"
        if mode == "referrers-garbage" and "/referrers/" in self.path:
            status, body, ctype = 200, b'{"manifests": "not a list"}', C.MT_INDEX
        if mode == "wrong-manifest" and "/manifests/sha256:" in self.path:
            body = body.replace(b'"schemaVersion":2', b'"schemaVersion":2 ')
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def lying(registry: Registry, mode: str) -> Iterator[str]:
    server = _Proxy(("127.0.0.1", 0), _ProxyHandler)
    server.upstream, server.mode = registry.host, mode
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def pushed_bundle(referrers_registry: Registry, tmp_path: Path) -> tuple[str, oci.Pushed]:
    repo = referrers_registry.repo()
    client = client_for(repo)
    pushed = oci.push_bundle(client, "t", helpers.build(tmp_path / "out").summary_dir, "0.1.0")
    oci.attach_signature(client, pushed.descriptor, b'{"bundle": 1}')
    return repo.split("/", 1)[1], pushed


@pytest.mark.parametrize(
    ("mode", "call", "message"),
    [
        ("flip-blobs", "pull", "registry returned content with digest"),
        ("wrong-manifest", "pull", "registry returned content with digest"),
        ("referrers-500", "signature", "HTTP 500"),
        ("referrers-garbage", "signature", "malformed referrers list"),
    ],
)
def test_every_byte_read_is_checked_and_discovery_fails_closed(
    referrers_registry: Registry,
    pushed_bundle: tuple[str, oci.Pushed],
    tmp_path: Path,
    mode: str,
    call: str,
    message: str,
) -> None:
    path, pushed = pushed_bundle
    with lying(referrers_registry, mode) as host:
        client = client_for(f"{host}/{path}")
        with pytest.raises(oci.RegistryError, match=message):
            if call == "pull":
                oci.pull_bundle(client, pushed.descriptor.digest, tmp_path / "pulled")
            else:
                oci.fetch_signature(client, pushed.descriptor.digest)


def _evil_layer(name: str, kind: bytes = tarfile.REGTYPE) -> bytes:
    import gzip

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.type = kind
        if kind == tarfile.SYMTYPE:
            info.linkname = "/etc/passwd"
            tar.addfile(info)
        else:
            info.size = 4
            tar.addfile(info, io.BytesIO(b"evil"))
    return gzip.compress(raw.getvalue(), mtime=0)


@pytest.mark.parametrize(
    ("name", "kind"),
    [("../escape.txt", tarfile.REGTYPE), ("link", tarfile.SYMTYPE), ("/abs", tarfile.REGTYPE)],
)
def test_pull_refuses_entries_outside_the_bundle(
    referrers_registry: Registry, tmp_path: Path, name: str, kind: bytes
) -> None:
    client = client_for(referrers_registry.repo())
    layer = client.upload_blob(_evil_layer(name, kind), C.MT_LAYER_TGZ)
    client.upload_blob(C.EMPTY_CONFIG, C.MT_EMPTY)
    layer = oci.Descriptor(
        layer.media_type, layer.digest, layer.size, annotations=((C.ANN_TITLE, "."), (C.ANN_UNPACK, "true"))
    )
    body = oci.artifact_manifest(layer, "0")
    client.put_manifest(body, C.MT_MANIFEST, "evil")
    dest = tmp_path / "a" / "pulled"
    with pytest.raises(oci.RegistryError, match=r"not a local path|not a regular file"):
        oci.pull_bundle(client, sha256_digest(body), dest)
    assert not (tmp_path / "a" / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()
    assert (tmp_path / "a").stat().st_mode & 0o777 != 0 and not (dest / "link").exists()


def test_tag_schema_index_is_never_overwritten_with_foreign_content(
    distribution_registry: Registry, tmp_path: Path
) -> None:
    client = client_for(distribution_registry.repo())
    pushed = oci.push_bundle(client, "t", helpers.build(tmp_path / "out").summary_dir, "0.1.0")
    # someone put an image manifest (not an index) at the fallback tag
    client.put_manifest(
        compact_json(
            {
                "schemaVersion": 2,
                "mediaType": C.MT_MANIFEST,
                "config": {"mediaType": C.MT_EMPTY, "digest": C.EMPTY_DIGEST, "size": 2},
                "layers": [],
            }
        ),
        C.MT_MANIFEST,
        oci.fallback_tag(pushed.descriptor.digest),
    )
    with pytest.raises(oci.RegistryError, match="holds something other than an OCI index"):
        oci.attach_signature(client, pushed.descriptor, b"{}")


def test_unreachable_registry_fails_after_bounded_retries(tmp_path: Path) -> None:
    sleeps: list[float] = []
    client = oci.RegistryClient(ociref.parse("127.0.0.1:9/ev/x:t"), plain_http=True, sleep=sleeps.append)
    with pytest.raises(oci.RegistryError, match=r"127\.0\.0\.1:9"):
        oci.push_bundle(client, "t", helpers.build(tmp_path / "out").summary_dir, "0.1.0")
    assert len(sleeps) == oci.ATTEMPTS - 1
