"""Today's AICR refuses to emit an attestation naming a mutable validator image unless
``--allow-mutable-validator-tags`` (``docs/user/cli-reference.md``).  aicr-pytest's own runs use no
validator image, so its bundles are emitted as before; the rule applies to references it is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicr_pytest.evidence import emit, validatorrefs
from aicr_pytest.evidence.settings import EvidenceSettings, build_evidence_settings
from tests.evidence import helpers

SHA = "0123456789abcdef0123456789abcdef01234567"
DIGEST = "sha256:" + "ab" * 32
NS = "ghcr.io/nvidia/aicr-validators/"


@pytest.mark.parametrize(
    "ref",
    [
        f"{NS}deployment:v1.3.0",
        f"{NS}conformance:v1.3.0-rc.1",
        f"{NS}performance:sha-{SHA}",
        f"{NS}deployment:uat-20261201.7",
        "GHCR.io/NVIDIA/aicr-validators/deployment:v1.0.0",
        f"registry.example.com/mirror/deployment:edge@{DIGEST}",
        f"registry.example.com/mirror/deployment@{DIGEST}",
    ],
)
def test_immutable_references(ref: str) -> None:
    assert validatorrefs.is_immutable(ref)


@pytest.mark.parametrize(
    "ref",
    [
        f"{NS}deployment:edge",
        f"{NS}deployment:latest",
        f"{NS}deployment",  # no tag: latest
        f"{NS}deployment:v1.3",
        f"{NS}deployment:sha-{SHA[:12]}",  # a short commit moves
        "registry.example.com/mirror/deployment:v1.3.0",  # tag syntax proves nothing elsewhere
        "ghcr.io/nvidia/aicr-validators-fork/deployment:v1.3.0",
        f"registry.example.com/x@sha256:{'ab' * 31}",
    ],
)
def test_mutable_references(ref: str) -> None:
    assert not validatorrefs.is_immutable(ref)


def test_refusal_names_each_mutable_reference_once() -> None:
    refs = [f"{NS}a:edge", f"{NS}b:v1.0.0", f"{NS}a:edge", "x:latest"]
    assert validatorrefs.mutable_refs(refs) == [f"{NS}a:edge", "x:latest"]
    assert validatorrefs.refusal(refs) == validatorrefs.MSG_MUTABLE.format(refs=f"{NS}a:edge, x:latest")
    assert validatorrefs.refusal([f"{NS}b:v1.0.0"]) is None
    assert validatorrefs.refusal([]) is None


def _emit(out: Path, allow: bool, images: list[str]) -> emit.Emitted:
    settings = EvidenceSettings(out_dir=out, allow_mutable_validator_tags=allow)
    plan = emit.prepare(settings, {}, write=lambda s: None, read_line=lambda: "", stdin_is_tty=False)
    assert plan is not None
    return emit.emit(
        plan,
        report=helpers.report(),
        recipe=helpers.example_recipe(),
        snapshot=helpers.example_snapshot(),
        registry_entries=helpers.data_tree().registry(),
        tool_version="0.1.0",
        env={},
        write=lambda s: None,
        validator_images=images,
    )


def test_emission_fails_closed_on_a_mutable_image_unless_allowed(tmp_path: Path) -> None:
    with pytest.raises(emit.EvidenceError) as err:
        _emit(tmp_path / "refused", False, [f"{NS}deployment:edge"])
    assert str(err.value) == validatorrefs.MSG_MUTABLE.format(refs=f"{NS}deployment:edge")
    assert not (tmp_path / "refused").exists()  # refused before anything is written
    assert _emit(tmp_path / "allowed", True, [f"{NS}deployment:edge"]).pointer_path.is_file()
    assert _emit(tmp_path / "pinned", False, [f"{NS}deployment:v1.3.0"]).pointer_path.is_file()
    # aicr-pytest's own runs: no validator image, so nothing to refuse (today's behaviour)
    assert _emit(tmp_path / "ours", False, []).pointer_path.is_file()


def test_the_flag_is_an_evidence_setting_that_needs_emission() -> None:
    assert build_evidence_settings({"allow_mutable_validator_tags": True}).allow_mutable_validator_tags
    assert not build_evidence_settings({}).allow_mutable_validator_tags
    assert EvidenceSettings(allow_mutable_validator_tags=True).given_without_emit == [
        "--allow-mutable-validator-tags"
    ]
