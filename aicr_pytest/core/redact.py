"""Credentials in URLs, redacted wherever a URL is echoed.

A recipe or snapshot given as a presigned URL (S3's ``X-Amz-Signature``, GCS's ``X-Goog-Signature``,
an Azure SAS ``sig``, CloudFront's ``Signature``, a ``token`` parameter) or with ``user:password@``
in its authority carries a credential that must not reach the terminal, the CTRF report, the HTML
report or an evidence bundle.  :func:`redact_url` rewrites one URL, :func:`redact_text` every URL
inside a text; both leave everything else as it was (scheme, host, path, the other parameters, and
their order), so the line still says which object was meant.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

#: what replaces a credential
REDACTED: Final = "REDACTED"

#: query parameter names (lower case) that carry a credential
_SECRET_NAMES: Final = frozenset(
    {
        "sig",
        "signature",
        "token",
        "key",
        "apikey",
        "api_key",
        "access_token",
        "id_token",
        "refresh_token",
        "code",
        "password",
        "passwd",
        "secret",
        "client_secret",
    }
)
#: and any name containing one of these (``X-Amz-Signature``, ``X-Amz-Credential``,
#: ``X-Amz-Security-Token``, ``X-Goog-Signature``, ``auth_token``...)
_SECRET_PARTS: Final = ("signature", "credential", "token", "secret", "password")

_URL: Final = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")


def _secret(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_NAMES or any(part in low for part in _SECRET_PARTS)


def redact_url(url: str) -> str:
    """``url`` with its userinfo and every credential-bearing query value replaced by ``REDACTED``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_secret(k) for k, _ in pairs):
            query = "&".join(
                f"{quote(k, safe='-_.~')}={REDACTED if _secret(k) else quote(v, safe='-_.~/:')}"
                for k, v in pairs
            )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str) -> str:
    """Every URL inside ``text`` passed through :func:`redact_url`."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: redact_url(m.group()), text)


__all__ = ["REDACTED", "redact_text", "redact_url"]
