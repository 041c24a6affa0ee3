"""OIDC token sources: precedence, ambient GitHub Actions, RFC 8628 device flow, disclosure gate."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence import oidc
from aicr_pytest.plugin import options
from tests.evidence.sigstore_fake import FakeSigstore

GHA = {
    "ACTIONS_ID_TOKEN_REQUEST_URL": "http://x/token?api-version=2.0",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "rt",
}


@pytest.mark.parametrize(
    ("token", "env", "device", "want"),
    [
        ("jwt", GHA, True, "identity-token"),
        (None, GHA, True, "github-actions"),
        (None, {"ACTIONS_ID_TOKEN_REQUEST_URL": "http://x"}, True, "device-flow"),
        (None, {"ACTIONS_ID_TOKEN_REQUEST_TOKEN": "rt"}, False, "browser"),
        (None, {}, False, "browser"),
    ],
)
def test_precedence(token: str | None, env: dict[str, str], device: bool, want: str) -> None:
    assert oidc.select_source(token, env, device) == want


def test_environment_variables_feed_the_settings() -> None:
    env = {"COSIGN_IDENTITY_TOKEN": "from-env", "AICR_OIDC_DEVICE_FLOW": "true", "AICR_ASSUME_YES": "1"}
    s = options.build_evidence_settings({}, environ=env)
    assert (s.identity_token, s.oidc_device_flow, s.assume_yes) == ("from-env", True, True)
    s = options.build_evidence_settings({"identity_token": "from-flag"}, environ=env)
    assert s.identity_token == "from-flag"
    assert "from-flag" not in repr(s), "the token never shows in a repr"
    s = options.build_evidence_settings(
        {}, environ={"AICR_OIDC_DEVICE_FLOW": "false", "AICR_ASSUME_YES": "no"}
    )
    assert (s.identity_token, s.oidc_device_flow, s.assume_yes) == (None, False, False)
    # an empty token (flag or env) is no token; a switch given on the command line wins over its env var
    s = options.build_evidence_settings({"identity_token": ""}, environ={"COSIGN_IDENTITY_TOKEN": ""})
    assert s.identity_token is None
    assert options.build_evidence_settings({"assume_yes": True}, environ={"AICR_ASSUME_YES": "0"}).assume_yes
    # fail closed: a switch's env var that is not a boolean is a usage error, never a silent yes or no
    with pytest.raises(
        UsageError, match=r"^AICR_ASSUME_YES='maybe': invalid boolean value \(use true or false\)$"
    ):
        options.build_evidence_settings({}, environ={"AICR_ASSUME_YES": "maybe"})


class _Stub(ThreadingHTTPServer):
    daemon_threads = True
    answers: list[tuple[int, Any]]
    seen: list[tuple[str, str]]


class _StubHandler(BaseHTTPRequestHandler):
    server: _Stub

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization", "")))
        status, body = self.server.answers.pop(0)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def gha_stub(answers: list[tuple[int, Any]]) -> Iterator[_Stub]:
    server = _Stub(("127.0.0.1", 0), _StubHandler)
    server.answers, server.seen = list(answers), []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _url(server: _Stub) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/token?api-version=2.0"


def test_github_actions_token_retries_5xx_and_sends_audience() -> None:
    sleeps: list[float] = []
    with gha_stub([(502, {}), (503, {}), (200, {"value": "the-jwt"})]) as stub:
        assert oidc.github_actions_token(_url(stub), "request-token", sleep=sleeps.append) == "the-jwt"
    assert sleeps == [1.0, 5.0]
    assert len(stub.seen) == 3
    path, auth = stub.seen[0]
    assert path == "/token?api-version=2.0&audience=sigstore"
    assert auth == "Bearer request-token"


@pytest.mark.parametrize(
    ("answers", "message", "calls"),
    [
        ([(403, {})], "HTTP 403", 1),
        ([(200, {"value": ""})], "has no value", 1),
        ([(200, b"<html>")], "not JSON", 1),
        ([(500, {})] * 3, "after 3 attempts (HTTP 500)", 3),
    ],
)
def test_github_actions_token_fails_fast_on_4xx_and_bad_bodies(
    answers: list[tuple[int, Any]], message: str, calls: int
) -> None:
    with (
        gha_stub(answers) as stub,
        pytest.raises(oidc.OIDCError, match=message.replace("(", r"\(").replace(")", r"\)")),
    ):
        oidc.github_actions_token(_url(stub), "rt", sleep=lambda s: None)
    assert len(stub.seen) == calls


def test_device_flow_polls_pending_and_slow_down_then_returns_the_id_token(
    fake_sigstore: FakeSigstore,
) -> None:
    fake_sigstore.device.answers = ["authorization_pending", "slow_down"]
    lines: list[str] = []
    sleeps: list[float] = []
    token = oidc.device_flow_token(fake_sigstore.oidc_url, write=lines.append, sleep=sleeps.append)
    assert token.count(".") == 2
    assert sleeps == [1.0, 1.0, 11.0], "slow_down adds 10 s to the interval"
    assert lines == [
        "Enter the verification code WXYZ-1234 in your browser at: "
        f"{fake_sigstore.oidc_url}/device?user_code=WXYZ-1234",
        "Code will be valid for 300 seconds",
    ]
    form = fake_sigstore.device_requests[0]
    assert form["client_id"] == "sigstore" and form["scope"] == "openid email"
    assert form["code_challenge_method"] == "S256" and len(form["code_challenge"]) == 43
    assert all(
        r["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code"
        for r in fake_sigstore.token_requests
    )


@pytest.mark.parametrize("error", ["access_denied", "expired_token", "invalid_client"])
def test_device_flow_errors(fake_sigstore: FakeSigstore, error: str) -> None:
    fake_sigstore.device.answers = [error]
    with pytest.raises(oidc.OIDCError, match=error):
        oidc.device_flow_token(fake_sigstore.oidc_url, write=lambda s: None, sleep=lambda s: None)


def test_device_flow_gives_up_after_the_interactive_cap(fake_sigstore: FakeSigstore) -> None:
    fake_sigstore.device.answers = ["authorization_pending"] * 50
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += 100.0

    with pytest.raises(oidc.OIDCError, match="timed out after 300 seconds"):
        oidc.device_flow_token(
            fake_sigstore.oidc_url, write=lambda s: None, sleep=sleep, clock=lambda: now[0]
        )


def test_device_flow_rejects_an_issuer_mismatch(fake_sigstore: FakeSigstore) -> None:
    with pytest.raises(oidc.OIDCError, match="does not match"):
        oidc.device_flow_token(fake_sigstore.base_url + "/auth/", write=lambda s: None, sleep=lambda s: None)


def _gate(source: oidc.Source, *, yes: bool = False, tty: bool = True, answer: str = "") -> list[str]:
    lines: list[str] = []
    oidc.disclosure_gate(
        source,
        assume_yes=yes,
        stdin_is_tty=tty,
        read_line=lambda: answer,
        write=lines.append,
        fulcio_url="https://fulcio.example",
        rekor_url="https://rekor.example",
    )
    return lines


def test_disclosure_gate() -> None:
    assert _gate("identity-token") == [] and _gate("github-actions") == []
    banner = _gate("browser", yes=True)
    assert "https://fulcio.example" in banner[0] and "https://rekor.example" in banner[0]
    assert banner[1] == "Proceeding without confirmation (--yes / AICR_ASSUME_YES set)."
    assert (
        _gate("device-flow", tty=False)[1]
        == "Non-interactive stdin detected; emitting disclosure and proceeding."
    )
    assert (
        _gate("browser", answer="YES\n")[1]
        == "Proceed with interactive keyless signing and publish this identity? [y/N]: "
    )
    for answer in ("", "n", "nope"):
        with pytest.raises(oidc.OIDCError) as err:
            _gate("browser", answer=answer)
        assert str(err.value).startswith("keyless signing declined at the identity-disclosure prompt; ")
