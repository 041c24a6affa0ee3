"""The single-verdict rule of a CNCF evidence file and AWS ELB redaction.

A feature file records its verdict in exactly one line that starts at column 0::

    **Result: PASS|SKIP|FAIL[ (qualifier)]** — explanation

:func:`file_verdict` reads it back, failing closed: a file with no such line, with two or more, or
whose one line does not have the exact shape is a FAIL.  Pure functions only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

Status = Literal["PASS", "SKIP", "FAIL"]
STATUSES: Final[tuple[Status, ...]] = ("PASS", "SKIP", "FAIL")

#: lines that count as verdict lines: ``**Result:`` at column 0 (numbered prose is ignored)
PREFIX: Final = "**Result:"
#: the one accepted shape (em dash before the explanation)
VERDICT_RE: Final = re.compile(r"^\*\*Result:\s*(PASS|SKIP|FAIL)(\s+\([^*]+\))?\*\*(\s+—.*)?\s*$")

#: AWS ELB hostnames: classic/application (``a1b2c3-1234567890.us-west-2.elb.amazonaws.com``, AICR's
#: pattern, here also with more dashes and ``internal-``) and network load balancers
#: (``name-0123abcd.elb.us-west-2.amazonaws.com``, which AICR's pattern misses); any case
ELB_RE: Final = re.compile(
    r"(?<![a-z0-9-])[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+\.elb|\.elb\.[a-z0-9-]+)\.amazonaws\.com",
    re.IGNORECASE,
)
ELB_REDACTED: Final = "<elb-redacted>.elb.amazonaws.com"


@dataclass(frozen=True)
class Verdict:
    """What a file's verdict says; ``problem`` is set when the file failed the single-verdict rule."""

    status: Status
    qualifier: str | None = None
    explanation: str = ""
    problem: str | None = None


def verdict_line(status: Status, explanation: str, qualifier: str | None = None) -> str:
    """The verdict line for ``status`` (explanation collapsed to one line, never empty)."""
    text = " ".join(explanation.split()) or status.lower()
    qual = ""
    if qualifier:
        cleaned = " ".join(qualifier.replace("*", "").replace("(", "").replace(")", "").split())
        qual = f" ({cleaned})" if cleaned else ""
    return f"**Result: {status}{qual}** — {text}"


def file_verdict(text: str | None) -> Verdict:
    """The verdict of an evidence file's text (``None``: the file is missing); fail closed."""
    if text is None:
        return Verdict("FAIL", problem="evidence file missing")
    candidates = [line for line in text.splitlines() if line.startswith(PREFIX)]
    if not candidates:
        return Verdict("FAIL", problem="no verdict line")
    if len(candidates) > 1:
        return Verdict("FAIL", problem=f"{len(candidates)} verdict lines (exactly one allowed)")
    match = VERDICT_RE.match(candidates[0])
    if match is None:
        return Verdict("FAIL", problem=f"malformed verdict line: {candidates[0]!r}")
    status: Status = match.group(1)  # type: ignore[assignment]
    qualifier = match.group(2).strip()[1:-1].strip() if match.group(2) else None
    explanation = match.group(3).strip().removeprefix("—").strip() if match.group(3) else ""
    return Verdict(status, qualifier, explanation)


def redact_elb(text: str) -> str:
    """Every AWS ELB hostname replaced by ``<elb-redacted>.elb.amazonaws.com``."""
    return ELB_RE.sub(ELB_REDACTED, text)


def neutralize_verdicts(text: str) -> str:
    """Recorded data quoted into a file can never add a verdict line: a data line that starts with
    ``**Result:`` is indented by one space."""
    return "\n".join(f" {line}" if line.startswith(PREFIX) else line for line in text.split("\n"))


__all__ = [
    "ELB_RE",
    "ELB_REDACTED",
    "PREFIX",
    "STATUSES",
    "VERDICT_RE",
    "Status",
    "Verdict",
    "file_verdict",
    "neutralize_verdicts",
    "redact_elb",
    "verdict_line",
]
