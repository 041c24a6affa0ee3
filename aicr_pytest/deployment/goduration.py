"""Go ``time.Duration`` text: the code lives in :mod:`aicr_pytest.core.goduration` (shared by families)."""

from __future__ import annotations

from aicr_pytest.core.goduration import format_go_duration, parse_go_duration

__all__ = ["format_go_duration", "parse_go_duration"]
