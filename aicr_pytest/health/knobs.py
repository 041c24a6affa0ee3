"""The node-health knobs, read from the run's settings and validated with one line each (exit 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.settings import Settings
from aicr_pytest.health import dcgm

MSG_EMPTY_IMAGE: Final = "--dcgm-image is empty (give the DCGM image gpu-diagnostics runs)"


def diag_level(settings: Settings) -> dcgm.DiagLevel:
    """``--dcgm-diag-level`` as a level (one-line :class:`UsageError` naming the flag otherwise)."""
    try:
        return dcgm.diag_level(settings.dcgm_diag_level)
    except UsageError as err:
        raise UsageError(f"--dcgm-diag-level: {err}") from None


def dcgm_image(settings: Settings) -> str:
    image = settings.dcgm_image.strip()
    if not image:
        raise UsageError(MSG_EMPTY_IMAGE)
    return image


def validate_knobs(checks: Sequence[str], settings: Settings) -> None:
    """Every knob of the selected node-health ``checks``, before the run starts."""
    if "gpu-diagnostics" in checks:
        diag_level(settings)
        dcgm_image(settings)


__all__ = ["MSG_EMPTY_IMAGE", "dcgm_image", "diag_level", "validate_knobs"]
