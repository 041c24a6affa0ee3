"""Evidence artifacts: AICR's ``--- label ---`` block format and the structured copy."""

from __future__ import annotations

import pytest

from aicr_pytest.core.artifacts import (
    EXTRA_KEY,
    MAX_ARTIFACT_LINES,
    Artifact,
    ArtifactRecorder,
    artifacts_from_extra,
)


def test_block_format_with_and_without_equivalent() -> None:
    assert Artifact("DRA driver pods", "pod-a Running\npod-b Running").block() == [
        "--- DRA driver pods ---",
        "",
        "pod-a Running",
        "pod-b Running",
    ]
    assert Artifact("CRDs", "x", equivalent="kubectl get crd x").block() == [
        "--- CRDs ---",
        "Equivalent: kubectl get crd x",
        "",
        "x",
    ]


def test_recorder_emits_each_block_and_keeps_the_structured_copy() -> None:
    lines: list[str] = []
    rec = ArtifactRecorder(emit=lines.append)
    rec.record("Namespace", {"Namespace": "nvidia-dra-driver", "Source": "recipe"})
    rec.record("Pods", ["a", "b"], equivalent="kubectl get pods")
    assert lines == [
        "--- Namespace ---",
        "",
        "Namespace: nvidia-dra-driver",
        "Source: recipe",
        "--- Pods ---",
        "Equivalent: kubectl get pods",
        "",
        "a",
        "b",
    ]
    structured = rec.to_json()
    assert artifacts_from_extra({EXTRA_KEY: structured}) == rec.artifacts


def test_secrets_are_redacted_in_label_data_and_equivalent() -> None:
    lines: list[str] = []
    rec = ArtifactRecorder(emit=lines.append, secrets=["hf_SECRET", ""])
    rec.record("token hf_SECRET", "Authorization: Bearer hf_SECRET", equivalent="curl -H hf_SECRET")
    text = "\n".join(lines) + repr(rec.to_json())
    assert "hf_SECRET" not in text
    assert "<redacted>" in text


def test_structured_copy_is_capped() -> None:
    data = "\n".join(f"line {i}" for i in range(MAX_ARTIFACT_LINES + 5)) + "\n" + "x" * 600
    raw = Artifact("big", data).to_json()
    kept = raw["data"].splitlines()
    assert len(kept) == MAX_ARTIFACT_LINES
    assert raw["truncatedLines"] == 6
    assert kept[-1].endswith("... [truncated 88 chars]")


@pytest.mark.parametrize(
    "extra",
    [{EXTRA_KEY: "not a list"}, {EXTRA_KEY: [{"label": "", "data": "x"}]}, {EXTRA_KEY: [{"label": "a"}]}],
)
def test_malformed_structured_artifacts_fail_closed(extra: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="malformed"):
        artifacts_from_extra(extra)


def test_no_artifacts() -> None:
    assert artifacts_from_extra(None) == []
    assert artifacts_from_extra({}) == []
