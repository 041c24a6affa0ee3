"""Go ``time.Duration`` text: parse (``1m30s`` → 90.0) and format (90.0 → ``1m30s``) as Go prints it.

Chainsaw timeouts and the durations in AICR's messages
use Go's syntax; the deployment and conformance families share this module.
"""

from __future__ import annotations

import re

_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration string (``5m``, ``1m30s``, ``250ms``, ``0``).  ValueError if invalid."""
    s = text.strip()
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    total, pos = 0.0, 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r}")
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def parse_positive_go_duration(text: str) -> float:
    """:func:`parse_go_duration` of a duration that must be more than zero (ValueError otherwise)."""
    seconds = parse_go_duration(text)
    if seconds <= 0:
        raise ValueError(f"duration {text!r} is not positive")
    return seconds


def format_go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` for whole and fractional seconds: ``8m0s``, ``1m0s``, ``30s``."""
    if seconds == 0:
        return "0s"
    neg = seconds < 0
    seconds = abs(seconds)
    if seconds < 1:
        ms = seconds * 1000
        text = f"{ms:g}ms"
    else:
        hours, rest = divmod(seconds, 3600)
        minutes, secs = divmod(rest, 60)
        sec_text = f"{secs:.9f}".rstrip("0").rstrip(".") + "s"
        if hours:
            text = f"{int(hours)}h{int(minutes)}m{sec_text}"
        elif minutes:
            text = f"{int(minutes)}m{sec_text}"
        else:
            text = sec_text
    return "-" + text if neg else text
