"""Go's ``strconv.ParseBool`` as AICR's checks read their environment knobs.

Only Go's true spellings are true; anything else (an error in Go, which AICR reads as false) is
false.  Flags and ``AICR_*`` run options are read by :func:`aicr_pytest.core.settings.parse_bool`.
"""

from __future__ import annotations

from typing import Final

#: the spellings ``strconv.ParseBool`` reads as true
GO_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def parse_go_bool(text: str | None, *, trim: bool = False) -> bool:
    """Whether ``text`` is a Go true value; ``trim``: after ``strings.TrimSpace``, as some knobs are."""
    value = text or ""
    return (value.strip() if trim else value) in GO_TRUE


__all__ = ["GO_TRUE", "parse_go_bool"]
