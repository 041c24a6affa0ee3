"""Pure parts of emission: canonical recipe, minimization, per-phase CTRF, manifest, predicate, BOM,
pointer, references and the derived tag."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.recipe import parse_recipe
from aicr_pytest.core.snapshot import parse_snapshot
from aicr_pytest.evidence import bom, bundle, fingerprint, manifest, ociref, pointer, predicate, redact
from aicr_pytest.evidence import constants as C
from tests.evidence import helpers

# ---- canonical recipe -----------------------------------------------------------------------------


def test_canonical_recipe_ignores_key_order_and_comments() -> None:
    raw = yamlio.load(helpers.EXAMPLE_RECIPE.read_text())
    shuffled = {k: raw[k] for k in reversed(list(raw))}
    text = "# a comment\n" + yaml.safe_dump(shuffled, sort_keys=False)
    again, _ = parse_recipe(yamlio.load(text), "shuffled")
    assert bundle.canonical_recipe(again) == bundle.canonical_recipe(helpers.example_recipe())
    body = bundle.canonical_recipe(again).decode()
    assert "#" not in body.splitlines()[0]
    keys = [line.split(":")[0] for line in body.splitlines() if line and not line.startswith(" ")]
    assert keys == sorted(keys)


def test_recipe_digest_is_sha256_of_recipe_yaml(tmp_path: Path) -> None:
    built = helpers.build(tmp_path)
    data = (built.summary_dir / C.RECIPE_FILE).read_bytes()
    assert built.recipe_digest == hashlib.sha256(data).hexdigest()
    assert len(built.recipe_digest) == 64 and not built.recipe_digest.startswith("sha256:")


# ---- snapshot minimization ------------------------------------------------------------------------

RAW_SNAPSHOT: dict[str, Any] = {
    "kind": "Snapshot",
    "apiVersion": "aicr.run/v1alpha2",
    "metadata": {"timestamp": "2026-07-01T10:30:00Z", "version": "v0.12.0", "source-node": "ip-10-0-1-23"},
    "fingerprint": {"service": {"value": "eks"}},
    "measurements": [
        {
            "type": "K8s",
            "subtypes": [
                {
                    "subtype": "server",
                    "data": {"version": "v1.33.5", "secret-ish": "x"},
                    "context": {"a": "b"},
                },
                {
                    "subtype": "node",
                    "data": {
                        "provider": "eks",
                        "source-node": "ip-10-0-1-23",
                        "provider-id": "aws:///i-0abc",
                    },
                    "items": [{"data": {"x": 1}}],
                },
                {"subtype": "image", "data": {"gpu-operator": "v25.10.1"}},
            ],
        },
        {"type": "OS", "subtypes": [{"subtype": "sysctl", "data": {"/proc/sys/x": "1"}}]},
        {"type": "GPU", "subtypes": [{"subtype": "hardware", "data": {"bogus": 1}}]},
        {
            "type": "NodeTopology",
            "subtypes": [
                {"subtype": "summary", "data": {"node-count": 3, "taint-count": 1, "label-count": 40}},
                {"subtype": "label", "data": {"topology.kubernetes.io/region": "us-west-2|ip-10-0-1-23"}},
            ],
        },
        {"type": "FutureType", "subtypes": [{"subtype": "server", "data": {"version": "1"}}]},
    ],
}


def test_minimal_snapshot_keeps_only_the_allowlist() -> None:
    before = helpers.deep(RAW_SNAPSHOT)
    out, rules = redact.minimize_snapshot(RAW_SNAPSHOT)
    assert before == RAW_SNAPSHOT, "minimization must not mutate its input"
    assert rules == ["snapshot.header.allowlist", "snapshot.measurements.allowlist"]
    assert out["metadata"] == {"timestamp": "2026-07-01T10:30:00Z", "version": "v0.12.0"}
    assert out["fingerprint"] == {"service": {"value": "eks"}}
    assert out["measurements"] == [
        {
            "type": "K8s",
            "subtypes": [
                {"subtype": "server", "data": {"version": "v1.33.5"}},
                {"subtype": "node", "data": {"provider": "eks"}},
            ],
        },
        {
            "type": "NodeTopology",
            "subtypes": [
                {"subtype": "summary", "data": RAW_SNAPSHOT["measurements"][3]["subtypes"][0]["data"]}
            ],
        },
    ]
    text = json.dumps(out)
    for leaked in (
        "ip-10-0-1-23",
        "i-0abc",
        "/proc/sys",
        "gpu-operator",
        "us-west-2",
        "FutureType",
        "context",
        "items",
    ):
        assert leaked not in text, leaked


def test_every_allowlisted_key_survives() -> None:
    measurements = {}
    for (mtype, sub), keys in redact.ALLOWLIST.items():
        measurements.setdefault(mtype, []).append({"subtype": sub, "data": {k: "v" for k in sorted(keys)}})
    snap = {"measurements": [{"type": t, "subtypes": s} for t, s in measurements.items()]}
    out, _ = redact.minimize_snapshot(snap)
    kept = {(m["type"], s["subtype"]): set(s["data"]) for m in out["measurements"] for s in m["subtypes"]}
    assert kept == {k: set(v) for k, v in redact.ALLOWLIST.items()}


def test_ctrf_minimization_and_split_by_phase() -> None:
    rep = helpers.report(
        {
            "deployment": [("operator-health", "passed"), ("check-nvidia-smi", "other")],
            "conformance": [("dra-support", "failed")],
        },
        readiness=[("K8s.server.version", "passed")],
    )
    per_phase = redact.split_ctrf_by_phase(rep, C.PHASES)
    assert list(per_phase) == ["deployment", "conformance"]
    dep = per_phase["deployment"]["results"]
    assert [t["name"] for t in dep["tests"]] == ["operator-health", "check-nvidia-smi"]
    assert dep["summary"]["tests"] == 2 and dep["summary"]["other"] == 1 and dep["summary"]["passed"] == 1
    assert dep["summary"]["start"] == rep["results"]["summary"]["start"]
    ids = {doc["reportId"] for doc in per_phase.values()}  # each document has its own reportId
    assert len(ids) == 2 and rep["reportId"] not in ids
    assert ids == {d["reportId"] for d in redact.split_ctrf_by_phase(rep, C.PHASES).values()}
    minimal = redact.minimize_ctrf(per_phase["deployment"])
    for test in minimal["results"]["tests"]:
        assert set(test) == {"name", "status", "duration", "suite"}
    rerun = {
        "name": "x",
        "status": "failed",
        "duration": 1,
        "suite": ["deployment"],
        "trace": "T",
        "retries": 1,
        "retryAttempts": [{"attempt": 1, "status": "failed", "message": "M", "trace": "T"}],
    }
    (kept,) = redact.minimize_ctrf({"results": {"tests": [rerun]}})["results"]["tests"]
    assert kept == {
        "name": "x",
        "status": "failed",
        "duration": 1,
        "suite": ["deployment"],
        "retries": 1,
        "retryAttempts": [{"attempt": 1, "status": "failed"}],
    }
    assert per_phase["deployment"]["results"]["tests"][0]["stdout"], "the input is not modified"


# ---- bundle ---------------------------------------------------------------------------------------


def test_bundle_layout_manifest_and_statement(tmp_path: Path) -> None:
    (tmp_path / C.SUMMARY_DIR).mkdir()
    (tmp_path / C.SUMMARY_DIR / "stale.log").write_text("left over from an earlier run")
    built = helpers.build(tmp_path)
    files = sorted(
        p.relative_to(built.summary_dir).as_posix() for p in built.summary_dir.rglob("*") if p.is_file()
    )
    assert files == [
        "bom.cdx.json",
        "ctrf/deployment.json",
        "ctrf/performance.json",
        "manifest.json",
        "recipe.yaml",
        "snapshot.yaml",
        "statement.intoto.json",
    ]
    doc = json.loads((built.summary_dir / C.MANIFEST_FILE).read_bytes())
    assert doc["schemaVersion"] == "1.0.0"
    assert [f["path"] for f in doc["files"]] == [
        "bom.cdx.json",
        "ctrf/deployment.json",
        "ctrf/performance.json",
        "recipe.yaml",
        "snapshot.yaml",
    ]
    for entry in doc["files"]:
        assert list(entry) == ["path", "size", "sha256", "mediaType"]
        data = (built.summary_dir / entry["path"]).read_bytes()
        assert entry["size"] == len(data) and entry["sha256"] == "sha256:" + hashlib.sha256(data).hexdigest()
    assert {e["path"]: e["mediaType"] for e in doc["files"]}[
        "bom.cdx.json"
    ] == "application/vnd.cyclonedx+json"

    raw = (built.summary_dir / C.STATEMENT_FILE).read_bytes()
    assert not raw.endswith(b"\n") and b": " not in raw[:200]
    stmt = json.loads(raw)
    assert list(stmt) == ["_type", "subject", "predicateType", "predicate"]
    assert stmt["subject"] == [
        {"name": "recipe:h100-eks-ubuntu-training-kubeflow", "digest": {"sha256": built.recipe_digest}}
    ]
    pred = stmt["predicate"]
    assert list(pred) == sorted(pred)
    assert pred["phases"]["deployment"]["passed"] == 2 and b'"passed":2,' in raw, "counts stay integers"
    assert pred["manifest"] == {"digest": built.manifest_digest, "fileCount": 5}
    assert (
        built.manifest_digest
        == "sha256:" + hashlib.sha256((built.summary_dir / C.MANIFEST_FILE).read_bytes()).hexdigest()
    )
    assert pred["redaction"] == {
        "applied": [
            "ctrf.tests.omit:extra",
            "ctrf.tests.omit:message",
            "ctrf.tests.omit:stdout",
            "ctrf.tests.omit:trace",
            "snapshot.header.allowlist",
            "snapshot.measurements.allowlist",
        ],
        "policy": "minimal",
        "version": "v1",
    }
    assert pred["validatorImages"] is None
    assert pred["attestedAt"] == "2026-07-01T12:00:00Z"
    ctrf_dep = (built.summary_dir / "ctrf/deployment.json").read_bytes()
    assert pred["phases"]["deployment"]["ctrfDigest"] == "sha256:" + hashlib.sha256(ctrf_dep).hexdigest()
    assert b"ip-10-42-7-118" not in ctrf_dep and ctrf_dep.endswith(b"}\n")


def test_full_bundle_is_raw_and_has_no_redaction(tmp_path: Path) -> None:
    built = helpers.build(tmp_path, full=True)
    assert "redaction" not in built.predicate
    snap = (built.summary_dir / C.SNAPSHOT_FILE).read_text()
    assert "source-node: ip-10-42-7-118.us-west-2.compute.internal" in snap
    assert "nvidia.com/gpu.product" in snap
    test = json.loads((built.summary_dir / "ctrf/deployment.json").read_text())["results"]["tests"][0]
    assert test["stdout"] == ["evidence line from node ip-10-42-7-118"]


def test_fingerprint_comes_from_the_raw_snapshot(tmp_path: Path) -> None:
    snap = parse_snapshot(RAW_SNAPSHOT, "raw")
    built = helpers.build(tmp_path, snapshot=snap)
    assert built.predicate["fingerprint"]["region"] == {
        "value": "us-west-2",
        "source": "nodeTopology.label.topology.kubernetes.io/region",
    }
    assert "us-west-2" not in (built.summary_dir / C.SNAPSHOT_FILE).read_text()


def test_fingerprint_dimensions_and_criteria_match() -> None:
    fp = fingerprint.compute(helpers.example_snapshot())
    assert fp["accelerator"] == {"value": "h100", "source": "nodeTopology.label.nvidia.com/gpu.product"}
    assert fp["k8sVersion"]["value"] == "1.33.5" and fp["nodeCount"]["value"] == 3
    assert fp["os"] == {"value": "ubuntu", "source": "os.release", "version": "24.04"}
    labels = {
        "nvidia.com/gpu.product.NVIDIA-H100": "NVIDIA-H100|a,b",
        "nvidia.com/gpu.product.NVIDIA-B200": "NVIDIA-B200|c (+2 more)",
    }
    assert fingerprint.label_values(labels, "nvidia.com/gpu.product") == [
        ("NVIDIA-B200", 3),
        ("NVIDIA-H100", 2),
    ]
    assert fingerprint.sku_of("NVIDIA-GB200-186GB") == "gb200" and fingerprint.sku_of("Tesla-X9") == ""
    crit = helpers.example_recipe().criteria.model_copy(update={"service": "gke"})
    match = fingerprint.criteria_match(crit, fp)
    assert match["matched"] is False
    assert match["perDimension"][0] == {
        "dimension": "service",
        "recipeRequires": "gke",
        "fingerprintProvides": "eks",
        "match": "mismatched",
    }
    assert (
        fingerprint.criteria_match(helpers.example_recipe().criteria, {})["perDimension"][0]["match"]
        == "unknown"
    )


# ---- BOM ------------------------------------------------------------------------------------------


def test_auto_bom_components_images_and_count(tmp_path: Path) -> None:
    built = helpers.build(tmp_path)
    doc = json.loads((built.summary_dir / C.BOM_FILE).read_text())
    assert doc["bomFormat"] == "CycloneDX" and doc["specVersion"] == "1.6"
    recipe = helpers.example_recipe()
    names = {c["name"] for c in doc["components"] if c["type"] == "application"}
    assert names == {c.name for c in recipe.enabled_components()} | {"observed-images"}
    images = [c for c in doc["components"] if c["type"] == "container"]
    assert "docker.io/library/gpu-operator" in {c["name"] for c in images}
    assert built.predicate["bom"]["imageCount"] == len(doc["components"])
    gpu_op = next(c for c in doc["components"] if c["name"] == "gpu-operator")
    props = {p["name"]: p["value"] for p in gpu_op["properties"]}
    assert props["aicr:version:pinned"] == "true" and props["aicr:helm:namespace"]


def test_user_bom_is_embedded_verbatim_with_limits(tmp_path: Path) -> None:
    user = tmp_path / "bom.json"
    user.write_bytes(b'{"bomFormat": "CycloneDX", "components": [{}, {}, {}]}')
    built = helpers.build(tmp_path / "out", user_bom=bom.load_user_bom(str(user)))
    assert (built.summary_dir / C.BOM_FILE).read_bytes() == user.read_bytes()
    assert built.predicate["bom"]["imageCount"] == 3 and built.predicate["bom"]["version"] == "1.6"
    user.write_bytes(b"{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        bom.load_user_bom(str(user))
    user.write_bytes(b" " * (C.MAX_BOM + 1))
    with pytest.raises(UsageError, match="larger than the 8 MiB limit"):
        bom.load_user_bom(str(user))


# ---- predicate parsing ----------------------------------------------------------------------------


def test_predicate_parse_is_lenient_about_floats_and_unknown_fields() -> None:
    raw = predicate.statement_bytes(
        "recipe:x", "a" * 64, {"phases": {"deployment": {"passed": 1, "failed": 0}}}
    )
    doc = json.loads(raw)
    doc["predicate"]["phases"]["deployment"]["passed"] = 12.0
    doc["predicate"]["futureField"] = {"x": 1}
    _, pred = predicate.parse_statement(json.dumps(doc).encode())
    assert pred.phases["deployment"].passed == 12
    doc["predicate"]["phases"]["deployment"]["passed"] = 1.5
    with pytest.raises(predicate.StatementError, match="passed"):
        predicate.parse_statement(json.dumps(doc).encode())
    doc["predicateType"] = "https://slsa.dev/provenance/v1"
    with pytest.raises(predicate.StatementError, match="predicateType"):
        predicate.parse_statement(json.dumps(doc).encode())
    with pytest.raises(ValueError, match="64 lowercase hex"):
        predicate.statement_bytes("recipe:x", "sha256:" + "a" * 64, {})


# ---- pointer --------------------------------------------------------------------------------------

AT = datetime(2026, 6, 30, 22, 17, 15, tzinfo=UTC)


def test_pointer_states_and_copy_to() -> None:
    unsigned = pointer.build("h100-gke-cos-training", AT)
    assert b'digest: ""\n' in unsigned.render() and b"signer" not in unsigned.render()
    assert pointer.copy_to(unsigned) == pointer.PENDING_HINT.format(recipe="h100-gke-cos-training")
    digest = "sha256:" + "be4680f26ad9ebeb57145f1953f18311ca00e81a4edb37773e0ec1060c6bd261"
    signed = pointer.build(
        "h100-gke-cos-training", AT, oci="r.io/x:t", digest=digest, identity="yuanchen97@gmail.com",
        issuer="https://github.com/login/oauth", rekor_log_index=0,
    )  # fmt: skip
    assert b"rekorLogIndex" not in signed.render(), "0 is the no-Rekor-entry sentinel"
    assert pointer.copy_to(signed) == (
        "recipes/evidence/h100-gke-cos-training/7c4c0edc8c765a95a0f3afdb3bbb8e91/"
        "sha256-be4680f26ad9ebeb57145f1953f18311ca00e81a4edb37773e0ec1060c6bd261.yaml"
    )
    with pytest.raises(ValueError, match="single path segment"):
        pointer.copy_to(pointer.build("../etc", AT, oci="r.io/x:t", digest=digest, identity="a", issuer="b"))
    assert (
        pointer.source_slug("https://github.com/login/oauth", "yuanchen97@gmail.com")
        == "7c4c0edc8c765a95a0f3afdb3bbb8e91"
    )


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(schemaVersion="2.0.0"), "unsupported schemaVersion"),
        (lambda d: d.update(recipe=""), "recipe"),
        (lambda d: d.update(attestations=[]), "no attestation"),
        (lambda d: d["attestations"].append(d["attestations"][0]), "schema 2.0 not yet supported"),
        (lambda d: d["attestations"][0]["bundle"].update(predicateType="x"), "predicateType"),
        (lambda d: d["attestations"][0]["bundle"].update(digest="md5:1"), "sha256"),
        (lambda d: d["attestations"][0]["bundle"].update(digest=""), "bundle.digest is empty"),
        (lambda d: d["attestations"][0]["signer"].pop("issuer"), "issuer"),
        (lambda d: d["attestations"][0].update(attestedAt="yesterday"), "attestedAt"),
    ],
)
def test_pointer_validation_errors(tmp_path: Path, mutate: Any, message: str) -> None:
    doc = {
        "attestations": [
            {
                "attestedAt": "2026-06-30T22:17:15Z",
                "bundle": {
                    "digest": "sha256:" + "a" * 64,
                    "oci": "r.io/x:t",
                    "predicateType": C.PREDICATE_TYPE,
                },
                "signer": {"identity": "a@b.c", "issuer": "https://i"},
            }
        ],
        "recipe": "r",
        "schemaVersion": "1.0.0",
    }
    mutate(doc)
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(UsageError, match=message):
        pointer.load(path)


# ---- references and tags --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Foo Bar Baz", "foo-bar-baz"),
        ("ghcr.io/owner:tag", "ghcr.io-owner-tag"),
        ("--weird.name--", "weird.name"),
        ("", "recipe"),
        ("///", "recipe"),
        ("a" * 200, "a" * 80),
    ],
)
def test_slug(name: str, slug: str) -> None:
    assert ociref.slug(name) == slug


def test_derived_tag_and_reference_parsing() -> None:
    assert (
        ociref.derived_tag("h100-eks-ubuntu-training", "sha256:3f9a1c2b4d5e" + "0" * 52)
        == "h100-eks-ubuntu-training-3f9a1c2b4d5e"
    )
    ref = ociref.parse("oci://ghcr.io/Owner-lower/aicr-evidence".replace("Owner-lower", "owner"))
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == ("ghcr.io", "owner/aicr-evidence", "", "")
    assert str(ociref.parse("localhost:5000/a/b:t@sha256:" + "a" * 64)).endswith("@sha256:" + "a" * 64)
    assert ociref.parse("ubuntu").name == "docker.io/library/ubuntu"
    assert ociref.parse("docker.io/x/y").api_host == "registry-1.docker.io"
    for bad in ("ghcr.io/UPPER/x", "ghcr.io/x@sha256:short", "bad host/x", "ghcr.io/x:ta:g"):
        with pytest.raises(UsageError, match="invalid OCI reference"):
            ociref.parse(bad)
    assert ociref.looks_like_reference("127.0.0.1:5000/x") and not ociref.looks_like_reference("./dir/x")


def test_manifest_check_reports_each_problem(tmp_path: Path) -> None:
    built = helpers.build(tmp_path)
    root = built.summary_dir
    doc = json.loads((root / C.MANIFEST_FILE).read_text())
    assert manifest.check_files(root, doc) == []
    doc["files"].append({"path": "../outside", "size": 1, "sha256": "sha256:00"})
    (root / "extra.txt").write_text("x")
    (root / "snapshot.yaml").unlink()
    found = {(p.key, p.value) for p in manifest.check_files(root, doc)}
    assert ("../outside", "manifest entry is not a local path (rejecting potential traversal)") in found
    assert ("snapshot.yaml", "file missing from bundle: snapshot.yaml") in found
    assert ("extra.txt", "file not in manifest.json (unsigned)") in found
