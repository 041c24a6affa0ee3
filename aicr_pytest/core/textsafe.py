"""Text from a cluster or a log, made safe to print: control characters become visible escapes.

A pod log or a saved launcher log can hold anything, terminal escape sequences and BEL included;
echoed as they are, they retitle the terminal, move the cursor or ring the bell.  :func:`printable`
keeps every printable character (any script) and tabs, and writes each other C0/C1 control
character as ``\\xNN`` (so the line still says what was there).
"""

from __future__ import annotations

import re
from typing import Final

_CONTROL: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def printable(text: str) -> str:
    """``text`` with every control character but the tab escaped (newlines too: one line stays one)."""
    return _CONTROL.sub(_escape, text)


__all__ = ["printable"]
