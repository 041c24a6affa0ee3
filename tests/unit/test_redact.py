"""Credentials in URLs are redacted wherever a URL is echoed: one function, used at every echo point."""

from __future__ import annotations

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.recipe import parse_recipe
from aicr_pytest.core.redact import redact_text, redact_url
from aicr_pytest.core.snapshot import parse_snapshot
from aicr_pytest.core.sources import load_source
from aicr_pytest.report.terminal import header_line

PRESIGNED = (
    "https://bucket.s3.us-east-1.amazonaws.com/recipes/h100.yaml?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIAEXAMPLE%2F20261205%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261205T080000Z"
    "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=0123456789abcdef0123456789abcdef"
)
SECRETS = ("0123456789abcdef0123456789abcdef", "AKIAEXAMPLE", "s3cr3t", "sv-sig-value", "tok123")


@pytest.mark.parametrize(
    ("url", "want"),
    [
        (
            PRESIGNED,
            "https://bucket.s3.us-east-1.amazonaws.com/recipes/h100.yaml?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=REDACTED&X-Amz-Date=20261205T080000Z&X-Amz-Expires=3600"
            "&X-Amz-SignedHeaders=host&X-Amz-Signature=REDACTED",
        ),
        ("https://alice:s3cr3t@example.com/r.yaml", "https://REDACTED@example.com/r.yaml"),
        (
            "https://acct.blob.core.windows.net/c/r.yaml?sv=2022-11-02&sig=sv-sig-value",
            "https://acct.blob.core.windows.net/c/r.yaml?sv=2022-11-02&sig=REDACTED",
        ),
        (
            "https://cdn.example.com/r.yaml?Expires=1&Signature=abc&Key-Pair-Id=K",
            "https://cdn.example.com/r.yaml?Expires=1&Signature=REDACTED&Key-Pair-Id=K",
        ),
        ("https://example.com/r.yaml?token=tok123", "https://example.com/r.yaml?token=REDACTED"),
        ("https://example.com/r.yaml?version=2", "https://example.com/r.yaml?version=2"),
        ("recipes/h100.yaml", "recipes/h100.yaml"),
        ("cm://gpu-operator/recipe", "cm://gpu-operator/recipe"),
    ],
)
def test_redact_url(url: str, want: str) -> None:
    assert redact_url(url) == want


def test_redact_text_finds_every_url_in_a_line() -> None:
    line = f"recipe {PRESIGNED} and https://u:s3cr3t@h/x, snapshot snap.yaml"
    out = redact_text(line)
    assert not any(s in out for s in SECRETS)
    assert out.endswith("https://REDACTED@h/x, snapshot snap.yaml")


def test_a_presigned_recipe_url_is_redacted_in_messages_header_and_recipe_source() -> None:
    # a fetch that fails (nothing listens on port 9) still names the URL, redacted
    url = PRESIGNED.replace("bucket.s3.us-east-1.amazonaws.com", "127.0.0.1:9")
    with pytest.raises(UsageError) as err:
        load_source(url, kind="recipe")
    assert "X-Amz-Signature=REDACTED" in str(err.value)
    assert not any(s in str(err.value) for s in SECRETS)
    with pytest.raises(UsageError) as http:
        load_source(url.replace("https://", "http://"), kind="recipe")
    assert not any(s in str(http.value) for s in SECRETS)
    recipe, _ = parse_recipe(
        {"kind": "RecipeResult", "apiVersion": "aicr.run/v1alpha2", "componentRefs": []}, PRESIGNED
    )
    assert recipe.source == redact_url(PRESIGNED)
    header = header_line(
        recipe.header_line(), snapshot=PRESIGNED, no_cluster=False, simulated=None, run_id="r"
    )
    assert "X-Amz-Signature=REDACTED" in header
    assert not any(s in header for s in SECRETS)
    with pytest.raises(UsageError) as snap:
        parse_snapshot({"kind": "Nope"}, PRESIGNED)
    assert not any(s in str(snap.value) for s in SECRETS)
