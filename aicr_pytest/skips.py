"""A deliberate skip decided by pure domain logic (which must not import pytest).

Domain functions raise :class:`CheckSkip`; the check layer turns it into ``pytest.skip(reason)``
(CTRF ``skipped``, the reason verbatim as the message).
"""

from __future__ import annotations


class CheckSkip(Exception):
    """The check does not apply here; ``reason`` is the user-facing skip message."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
