"""Pushing evidence bundles to an OCI registry and reading them back, safely.

Push uses oras-py's ``Registry`` (blob upload with its existence check, Docker credential store,
token/basic auth handshake) with our own manifest bytes, because oras-py cannot set
``artifactType``, re-serializes manifests (so their digest is unknowable) and titles directory
layers with their basename.  Reads — manifests, blobs, referrer lists — are plain registry HTTP over
the same session, and every byte read is checked against the digest it was asked for.
oras-py's high-level ``pull()`` is never used: for a layer titled ``.`` it extracts into the
*parent* of its output directory.

Layout (compatible with AICR's oras-go file store): one ``tar+gzip`` layer titled ``.`` holding the
summary-bundle files at its root, an empty config, ``artifactType``
``application/vnd.nvidia.aicr.artifact``, a fixed ``created`` annotation and zeroed tar metadata, so
identical content always yields the same artifact digest.  The Sigstore bundle is attached as an
OCI 1.1 referrer; without the Referrers API (no ``OCI-Subject`` on the PUT) the referrer is added to
the tag-schema index ``sha256-<subject hex>``.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence.canonical import compact_json, sha256_digest
from aicr_pytest.evidence.ociclient import (
    ANY_MANIFEST,
    ATTEMPTS,
    CONNECT_TIMEOUT_S,
    MSG_GAVE_UP,
    MSG_RETRYING,
    MSG_SILENT,
    SILENCE_S,
    Descriptor,
    RegistryClient,
    RegistryError,
)

__all__ = [
    "ANY_MANIFEST",
    "ATTEMPTS",
    "CONNECT_TIMEOUT_S",
    "MSG_GAVE_UP",
    "MSG_RETRYING",
    "MSG_SILENT",
    "SILENCE_S",
    "Descriptor",
    "RegistryClient",
    "RegistryError",
]


# ---- packing -------------------------------------------------------------------------------------


def _walk(root: Path) -> Iterator[Path]:
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        yield entry
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry)


def pack(root: Path, exclude: frozenset[str] = frozenset({C.ATTESTATION_FILE})) -> tuple[bytes, str]:
    """(tar+gzip bytes, sha256 of the tar) of ``root``: ``.`` first, lexical walk, zeroed metadata."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(path: Path, name: str) -> None:
            info = tarfile.TarInfo(name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if path.is_dir():
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                data = path.read_bytes()
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))

        add(root, ".")
        for path in _walk(root):
            rel = path.relative_to(root).as_posix()
            if rel in exclude:
                continue
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                raise ValueError(f"{rel}: only regular files and directories can be pushed")
            add(path, rel)
    tar_bytes = raw.getvalue()
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
        gz.write(tar_bytes)
    return out.getvalue(), sha256_digest(tar_bytes)


def _empty_config() -> dict[str, Any]:
    return {"mediaType": C.MT_EMPTY, "digest": C.EMPTY_DIGEST, "size": 2, "data": "e30="}


def artifact_manifest(layer: Descriptor, tool_version: str) -> bytes:
    doc = {
        "schemaVersion": 2,
        "mediaType": C.MT_MANIFEST,
        "artifactType": C.ARTIFACT_TYPE,
        "config": _empty_config(),
        "layers": [layer.to_json()],
        "annotations": {
            C.ANN_CREATED: C.FIXED_CREATED,
            "org.opencontainers.image.description": (
                "Evidence bundle for an aicr recipe (recipe-evidence/v1)."
            ),
            "org.opencontainers.image.source": "https://github.com/NVIDIA/aicr",
            C.ANN_TITLE: "AICR Recipe Evidence",
            "org.opencontainers.image.vendor": "aicr-pytest",
            "org.opencontainers.image.version": tool_version,
        },
    }
    return compact_json(doc)


@dataclass(frozen=True)
class Pushed:
    reference: str  # registry/repo:tag
    descriptor: Descriptor  # of the artifact manifest


def push_bundle(client: RegistryClient, tag: str, summary_dir: Path, tool_version: str) -> Pushed:
    """Push ``summary_dir`` (without ``attestation.intoto.jsonl``) as one artifact tagged ``tag``."""
    layer_bytes, tar_digest = pack(summary_dir)
    client.upload_blob(C.EMPTY_CONFIG, C.MT_EMPTY)
    layer = client.upload_blob(layer_bytes, C.MT_LAYER_TGZ)
    layer = Descriptor(
        layer.media_type,
        layer.digest,
        layer.size,
        annotations=((C.ANN_CONTENT_DIGEST, tar_digest), (C.ANN_UNPACK, "true"), (C.ANN_TITLE, ".")),
    )
    body = artifact_manifest(layer, tool_version)
    client.put_manifest(body, C.MT_MANIFEST, tag)
    desc = Descriptor(C.MT_MANIFEST, sha256_digest(body), len(body), C.ARTIFACT_TYPE)
    return Pushed(f"{client.ref.name}:{tag}", desc)


@dataclass(frozen=True)
class Attached:
    descriptor: Descriptor
    via_referrers_api: bool


def attach_signature(
    client: RegistryClient, subject: Descriptor, bundle_json: bytes, predicate_type: str = C.PREDICATE_TYPE
) -> Attached:
    """Push the Sigstore bundle as a referrer of ``subject`` (tag = its own digest hex)."""
    client.upload_blob(C.EMPTY_CONFIG, C.MT_EMPTY)
    blob = client.upload_blob(bundle_json, C.SIGSTORE_BUNDLE_TYPE)
    layer = Descriptor(blob.media_type, blob.digest, blob.size, annotations=((C.ANN_TITLE, "payload"),))
    annotations = {
        "dev.sigstore.bundle.content": "dsse-envelope",
        "dev.sigstore.bundle.predicateType": predicate_type,
        C.ANN_CREATED: C.FIXED_CREATED,
        "org.opencontainers.image.vendor": "aicr-pytest",
    }
    doc = {
        "schemaVersion": 2,
        "mediaType": C.MT_MANIFEST,
        "artifactType": C.SIGSTORE_BUNDLE_TYPE,
        "config": _empty_config(),
        "layers": [layer.to_json()],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest, "size": subject.size},
        "annotations": annotations,
    }
    body = compact_json(doc)
    digest = sha256_digest(body)
    response = client.put_manifest(body, C.MT_MANIFEST, digest.removeprefix("sha256:"))
    desc = Descriptor(
        C.MT_MANIFEST, digest, len(body), C.SIGSTORE_BUNDLE_TYPE, tuple(sorted(annotations.items()))
    )
    if response.headers.get("OCI-Subject"):
        return Attached(desc, True)
    _add_to_tag_schema_index(client, subject, desc)
    return Attached(desc, False)


def fallback_tag(subject_digest: str) -> str:
    return subject_digest.replace(":", "-")


def _add_to_tag_schema_index(client: RegistryClient, subject: Descriptor, desc: Descriptor) -> None:
    tag = fallback_tag(subject.digest)
    old_digest = ""
    manifests: list[dict[str, Any]] = []
    response = client.request("GET", f"/manifests/{tag}", headers={"Accept": ANY_MANIFEST}, stream=True)
    if response.status_code == 200:
        body = client._read(response, C.MAX_OCI_MANIFEST, f"referrers index {tag}")
        index = _parse_index(body)
        if index is None:
            raise RegistryError(
                f"tag {tag} holds something other than an OCI index; refusing to overwrite it"
            )
        manifests = index
        old_digest = sha256_digest(body)
    elif response.status_code != 404:
        raise RegistryError(f"referrers index {tag}: HTTP {response.status_code}", response.status_code)
    if any(m.get("digest") == desc.digest for m in manifests):
        return
    manifests.append(desc.to_json())
    body = compact_json({"schemaVersion": 2, "mediaType": C.MT_INDEX, "manifests": manifests})
    client.put_manifest(body, C.MT_INDEX, tag)
    if old_digest and old_digest != sha256_digest(body):
        client.request("DELETE", f"/manifests/{old_digest}")  # best effort, like oras-go's GC


def _parse_index(body: bytes) -> list[dict[str, Any]] | None:
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict) or doc.get("mediaType", C.MT_INDEX) != C.MT_INDEX:
        return None
    manifests = doc.get("manifests")
    if not isinstance(manifests, list) or not all(isinstance(m, dict) for m in manifests):
        return None
    return list(manifests)


# ---- referrer discovery --------------------------------------------------------------------------


def list_referrers(client: RegistryClient, subject_digest: str, artifact_type: str) -> list[dict[str, Any]]:
    """Referrer descriptors of ``artifact_type``: Referrers API, else the tag-schema index.

    Fails closed (:class:`RegistryError`) on anything but a usable answer, so a registry or a
    man-in-the-middle cannot turn a signed bundle into an "unsigned" one by answering garbage.
    """
    path = f"/referrers/{subject_digest}?artifactType={quote(artifact_type, safe='')}"
    found: list[dict[str, Any]] = []
    for _ in range(20):  # bounded pagination
        response = client.request("GET", path, headers={"Accept": C.MT_INDEX}, stream=True)
        ctype = response.headers.get("content-type", "").split(";")[0].strip()
        if response.status_code == 404 or (response.status_code == 200 and ctype != C.MT_INDEX):
            return _tag_schema_referrers(client, subject_digest, artifact_type)
        if response.status_code != 200:
            raise RegistryError(
                f"referrers of {subject_digest}: HTTP {response.status_code}", response.status_code
            )
        index = _parse_index(client._read(response, C.MAX_OCI_MANIFEST, "referrers list"))
        if index is None:
            raise RegistryError("registry returned a malformed referrers list")
        found.extend(m for m in index if m.get("artifactType") == artifact_type)
        link = response.links.get("next", {}).get("url")
        if not link:
            return found
        path = "/referrers/" + link.split("/referrers/", 1)[-1] if "/referrers/" in link else ""
        if not path:
            raise RegistryError(f"unusable referrers pagination link {link!r}")
    raise RegistryError("referrers list has too many pages")


def _tag_schema_referrers(
    client: RegistryClient, subject_digest: str, artifact_type: str
) -> list[dict[str, Any]]:
    response = client.request(
        "GET", f"/manifests/{fallback_tag(subject_digest)}", headers={"Accept": ANY_MANIFEST}, stream=True
    )
    if response.status_code == 404:
        return []
    if response.status_code != 200:
        raise RegistryError(
            f"referrers index of {subject_digest}: HTTP {response.status_code}", response.status_code
        )
    index = _parse_index(client._read(response, C.MAX_OCI_MANIFEST, "referrers index"))
    if index is None:
        raise RegistryError("registry returned a malformed referrers index")
    return [m for m in index if m.get("artifactType") == artifact_type]


def fetch_signature(client: RegistryClient, subject_digest: str) -> bytes | None:
    """The first Sigstore-bundle referrer's payload, or ``None`` when there is no referrer."""
    referrers = list_referrers(client, subject_digest, C.SIGSTORE_BUNDLE_TYPE)
    if not referrers:
        return None
    digest = str(referrers[0].get("digest", ""))
    try:
        body, _ = client.get_manifest(digest, accept=C.MT_MANIFEST)
        doc = json.loads(body)
    except (RegistryError, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RegistryError(f"registry returned a malformed Sigstore Bundle referrer ({err})") from None
    layers = doc.get("layers") if isinstance(doc, dict) else None
    subject = doc.get("subject") if isinstance(doc, dict) else None
    if not isinstance(layers, list) or len(layers) != 1 or not isinstance(layers[0], dict):
        raise RegistryError("registry returned a malformed Sigstore Bundle referrer (want exactly one layer)")
    if doc.get("artifactType") != C.SIGSTORE_BUNDLE_TYPE:
        raise RegistryError("registry returned a malformed Sigstore Bundle referrer (artifactType)")
    if not isinstance(subject, dict) or subject.get("digest") != subject_digest:
        raise RegistryError("registry returned a malformed Sigstore Bundle referrer (subject)")
    layer = layers[0]
    size = layer.get("size")
    if not isinstance(size, int) or size > C.MAX_SIGSTORE_BUNDLE:
        raise RegistryError("registry returned a malformed Sigstore Bundle referrer (layer size)")
    return client.get_blob(str(layer.get("digest", "")), size, C.MAX_SIGSTORE_BUNDLE)


# ---- pull ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pulled:
    digest: str
    descriptor: Descriptor
    root: Path


def _safe_rel(name: str) -> str | None:
    p = PurePosixPath(name)
    if p.is_absolute() or ".." in p.parts or "\\" in name or "\x00" in name:
        return None
    text = p.as_posix()
    return None if text in ("", ".") else text


def _unpack(data: bytes, dest: Path, want_tar_digest: str | None) -> None:
    try:
        tar_bytes = gzip.decompress(data)
    except (OSError, EOFError) as err:
        raise RegistryError(f"layer is not gzip: {err}") from None
    if len(tar_bytes) > C.MAX_UNPACKED:
        raise RegistryError("layer unpacks to more than the size limit")
    if want_tar_digest and sha256_digest(tar_bytes) != want_tar_digest:
        raise RegistryError("layer content digest does not match its io.deis.oras.content.digest annotation")
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
        for member in tar.getmembers():
            if member.name in (".", "./"):
                continue
            rel = _safe_rel(member.name)
            if rel is None:
                raise RegistryError(f"layer entry {member.name!r} is not a local path")
            if not (member.isfile() or member.isdir()):
                raise RegistryError(f"layer entry {member.name!r} is not a regular file or directory")
            tar.extract(member, path=dest, filter="data")


def pull_bundle(client: RegistryClient, reference: str, dest: Path) -> Pulled:
    """Download the artifact at ``reference`` (a digest or a tag) into ``dest``, verifying every byte."""
    body, digest = client.get_manifest(reference, accept=C.MT_MANIFEST)
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RegistryError(f"manifest {digest} is not JSON") from None
    layers = doc.get("layers") if isinstance(doc, dict) else None
    if not isinstance(layers, list) or not layers:
        raise RegistryError(f"manifest {digest} has no layers")
    dest.mkdir(parents=True, exist_ok=True)
    for layer in layers:
        if not isinstance(layer, dict):
            raise RegistryError(f"manifest {digest} has a malformed layer")
        raw_ann = layer.get("annotations")
        ann: dict[str, Any] = raw_ann if isinstance(raw_ann, dict) else {}
        size = layer.get("size")
        data = client.get_blob(
            str(layer.get("digest", "")), size if isinstance(size, int) else None, C.MAX_LAYER
        )
        title = str(ann.get(C.ANN_TITLE, ""))
        if ann.get(C.ANN_UNPACK) == "true":
            target = dest
            if title not in ("", "."):
                sub = _safe_rel(title)
                if sub is None:
                    raise RegistryError(f"layer title {title!r} is not a local path")
                target = dest / sub
            target.mkdir(parents=True, exist_ok=True)
            _unpack(data, target, ann.get(C.ANN_CONTENT_DIGEST))
        else:
            rel = _safe_rel(title)
            if rel is None:
                raise RegistryError(f"layer title {title!r} is not a local file name")
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_bytes(data)
    media_type = str(doc.get("mediaType") or C.MT_MANIFEST)
    artifact_type = str(doc.get("artifactType") or "")
    return Pulled(digest, Descriptor(media_type, digest, len(body), artifact_type), dest)
