"""Where the OIDC identity token for keyless signing comes from, in the guide's precedence order.

1. ``--identity-token`` (or ``COSIGN_IDENTITY_TOKEN``): used verbatim.
2. GitHub Actions ambient OIDC: both ``ACTIONS_ID_TOKEN_REQUEST_URL`` and
   ``ACTIONS_ID_TOKEN_REQUEST_TOKEN`` set -> ``GET <url>&audience=sigstore`` with the bearer token.
3. ``--oidc-device-flow`` (or ``AICR_OIDC_DEVICE_FLOW=true``): RFC 8628 device authorization grant
   with PKCE against the signing config's OIDC issuer (sigstore-python has no device flow).
4. Otherwise the interactive browser flow of sigstore-python.

Selection is a pure function of the inputs (environment values are passed in).  Interactive flows
(3, 4) publish the signer's e-mail address in the public transparency log, so they are preceded by
an identity-disclosure notice (:func:`disclosure_gate`) and capped at five minutes.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal
from urllib.parse import urlencode, urlsplit, urlunsplit

import requests

from aicr_pytest.evidence import constants as C

Source = Literal["identity-token", "github-actions", "device-flow", "browser"]
INTERACTIVE: Final = frozenset({"device-flow", "browser"})
INTERACTIVE_TIMEOUT_S: Final = 300.0
GHA_ATTEMPTS: Final = 3
GHA_ATTEMPT_TIMEOUT_S: Final = 30.0
GRANT_DEVICE_CODE: Final = "urn:ietf:params:oauth:grant-type:device_code"
SCOPE: Final = "openid email"

MSG_PROCEED_YES: Final = "Proceeding without confirmation (--yes / AICR_ASSUME_YES set)."
MSG_NON_INTERACTIVE: Final = "Non-interactive stdin detected; emitting disclosure and proceeding."
PROMPT: Final = "Proceed with interactive keyless signing and publish this identity? [y/N]: "
MSG_DECLINED: Final = (
    "keyless signing declined at the identity-disclosure prompt; pass --identity-token to sign with "
    "a token you chose, or drop --push for an unsigned local bundle"
)


class OIDCError(Exception):
    """No identity token could be obtained (the message is safe to print: it never holds a token)."""


def select_source(identity_token: str | None, env: Mapping[str, str], device_flow: bool) -> Source:
    if identity_token:
        return "identity-token"
    if env.get("ACTIONS_ID_TOKEN_REQUEST_URL") and env.get("ACTIONS_ID_TOKEN_REQUEST_TOKEN"):
        return "github-actions"
    if device_flow:
        return "device-flow"
    return "browser"


def disclosure_gate(
    source: Source,
    *,
    assume_yes: bool,
    stdin_is_tty: bool,
    read_line: Callable[[], str],
    write: Callable[[str], None],
    fulcio_url: str,
    rekor_url: str,
) -> None:
    """Tell the user what an interactive keyless signature publishes; raise :class:`OIDCError` on "no"."""
    if source not in INTERACTIVE:
        return
    write(
        "Keyless signing: your OIDC identity (e-mail address) and its issuer will be sent to the "
        f"certificate authority {fulcio_url}, recorded permanently in the public transparency log "
        f"{rekor_url} and attached to the pushed evidence bundle."
    )
    if assume_yes:
        write(MSG_PROCEED_YES)
        return
    if not stdin_is_tty:
        write(MSG_NON_INTERACTIVE)
        return
    write(PROMPT)
    try:
        answer = read_line()
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        raise OIDCError(MSG_DECLINED)


def _with_audience(url: str) -> str:
    parts = urlsplit(url)
    query = parts.query + ("&" if parts.query else "") + urlencode({"audience": C.OIDC_CLIENT_ID})
    return urlunsplit(parts._replace(query=query))


def github_actions_token(
    request_url: str,
    request_token: str,
    *,
    session: requests.Session | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """The ambient GitHub Actions OIDC token (3 attempts; only transport errors and 5xx are retried)."""
    http = session or requests.Session()
    url = _with_audience(request_url)
    delay = 1.0
    last = ""
    for attempt in range(1, GHA_ATTEMPTS + 1):
        try:
            response = http.get(
                url, headers={"Authorization": f"Bearer {request_token}"}, timeout=GHA_ATTEMPT_TIMEOUT_S
            )
        except requests.RequestException as err:
            last = f"request failed: {type(err).__name__}"
        else:
            if response.status_code >= 500:
                last = f"HTTP {response.status_code}"
            elif response.status_code != 200:
                raise OIDCError(f"GitHub Actions OIDC token request failed: HTTP {response.status_code}")
            else:
                try:
                    value = response.json().get("value")
                except (ValueError, AttributeError):
                    raise OIDCError("GitHub Actions OIDC token response is not JSON") from None
                if not isinstance(value, str) or not value:
                    raise OIDCError("GitHub Actions OIDC token response has no value")
                return value
        if attempt < GHA_ATTEMPTS:
            sleep(delay)
            delay *= 5
    raise OIDCError(f"GitHub Actions OIDC token request failed after {GHA_ATTEMPTS} attempts ({last})")


def _pkce() -> tuple[str, str]:
    verifier = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def _json(response: requests.Response, what: str) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        raise OIDCError(f"{what}: response is not JSON (HTTP {response.status_code})") from None
    if not isinstance(data, dict):
        raise OIDCError(f"{what}: response is not a JSON object")
    return data


def device_flow_token(
    issuer: str,
    *,
    write: Callable[[str], None],
    client_id: str = C.OIDC_CLIENT_ID,
    session: requests.Session | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    timeout_s: float = INTERACTIVE_TIMEOUT_S,
) -> str:
    """RFC 8628 device authorization grant (with PKCE); returns the ``id_token``."""
    http = session or requests.Session()
    deadline = clock() + timeout_s
    try:
        conf = _json(
            http.get(issuer.rstrip("/") + "/.well-known/openid-configuration", timeout=30), "OIDC discovery"
        )
    except requests.RequestException as err:
        raise OIDCError(f"OIDC discovery at {issuer} failed: {type(err).__name__}") from None
    if conf.get("issuer") != issuer:
        raise OIDCError(f"OIDC discovery: issuer {conf.get('issuer')!r} does not match {issuer}")
    device_endpoint = conf.get("device_authorization_endpoint")
    token_endpoint = conf.get("token_endpoint")
    if not isinstance(device_endpoint, str) or not isinstance(token_endpoint, str):
        raise OIDCError(f"OIDC issuer {issuer} does not offer the device authorization grant")
    verifier, challenge = _pkce()
    try:
        response = http.post(
            device_endpoint,
            data={
                "client_id": client_id,
                "scope": SCOPE,
                "code_challenge_method": "S256",
                "code_challenge": challenge,
            },
            timeout=30,
        )
    except requests.RequestException as err:
        raise OIDCError(f"device authorization request failed: {type(err).__name__}") from None
    auth = _json(response, "device authorization")
    if response.status_code != 200 or "device_code" not in auth:
        raise OIDCError(f"device authorization failed: {auth.get('error', f'HTTP {response.status_code}')}")
    uri = auth.get("verification_uri_complete") or auth.get("verification_uri")
    write(f"Enter the verification code {auth.get('user_code', '')} in your browser at: {uri}")
    if auth.get("expires_in"):
        write(f"Code will be valid for {auth['expires_in']} seconds")
    interval = float(auth.get("interval") or 5)
    while True:
        if clock() >= deadline:
            raise OIDCError(f"device authorization timed out after {int(timeout_s)} seconds")
        sleep(interval)
        try:
            response = http.post(
                token_endpoint,
                data={
                    "grant_type": GRANT_DEVICE_CODE,
                    "device_code": auth["device_code"],
                    "client_id": client_id,
                    "scope": SCOPE,
                    "code_verifier": verifier,
                },
                timeout=30,
            )
        except requests.RequestException as err:
            raise OIDCError(f"device token request failed: {type(err).__name__}") from None
        body = _json(response, "device token")
        if response.status_code == 200 and isinstance(body.get("id_token"), str) and body["id_token"]:
            return str(body["id_token"])
        error = body.get("error")
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += 10
            continue
        if error in ("access_denied", "expired_token"):
            raise OIDCError(f"device authorization failed: {error}")
        raise OIDCError(f"device token request failed: {error or f'HTTP {response.status_code}'}")


def browser_token(issuer: str) -> str:  # pragma: no cover - needs a human and a browser
    from sigstore.oidc import Issuer

    return str(Issuer(issuer).identity_token())


def resolve_token(
    source: Source,
    *,
    identity_token: str | None,
    env: Mapping[str, str],
    issuer: str,
    write: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Obtain the raw token from ``source`` (done late, just before signing: Fulcio wants it fresh)."""
    if source == "identity-token":
        assert identity_token
        return identity_token
    if source == "github-actions":
        return github_actions_token(
            env["ACTIONS_ID_TOKEN_REQUEST_URL"], env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"], sleep=sleep
        )
    if source == "device-flow":
        return device_flow_token(issuer, write=write, sleep=sleep)
    return browser_token(issuer)
