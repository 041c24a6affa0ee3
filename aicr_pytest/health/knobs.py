"""The node-health knobs, read from the run's settings and validated with one line each (exit 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.imageref import is_image_reference
from aicr_pytest.core.settings import Settings
from aicr_pytest.health import dcgm, exporter

MSG_EMPTY_IMAGE: Final = "--dcgm-image is empty (give the DCGM image gpu-diagnostics runs)"
MSG_BAD_SMOKE_IMAGE: Final = (
    "--cuda-smoke-image {image!r} is not an image reference ([registry/]repository[:tag][@digest])"
)
MSG_BAD_THRESHOLD: Final = "--gpu-health-threshold {item!r}: expected KEY=VALUE (keys: {keys})"
MSG_WINDOW_TWICE: Final = "give the gpu-health window with --gpu-health-window, not --gpu-health-threshold"


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


def cuda_smoke_image(settings: Settings) -> str:
    """``--cuda-smoke-image``, trimmed; a one-line :class:`UsageError` when it names no image."""
    image = settings.cuda_smoke_image.strip()
    if not is_image_reference(image):
        raise UsageError(MSG_BAD_SMOKE_IMAGE.format(image=settings.cuda_smoke_image))
    return image


def health_thresholds(settings: Settings) -> exporter.HealthThresholds:
    """``--gpu-health-window`` and every ``--gpu-health-threshold KEY=VALUE`` as the thresholds."""
    keys = ", ".join(k for k in exporter.HealthThresholds.model_fields if k != "window")
    raw: dict[str, str] = {}
    for item in settings.gpu_health_thresholds:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(MSG_BAD_THRESHOLD.format(item=item, keys=keys))
        if key.strip() == "window":
            raise UsageError(MSG_WINDOW_TWICE)
        raw[key.strip()] = value.strip()
    if settings.gpu_health_window is not None:
        raw["window"] = settings.gpu_health_window
    return exporter.health_thresholds(raw)


def validate_knobs(checks: Sequence[str], settings: Settings) -> None:
    """Every knob of the selected node-health ``checks``, before the run starts."""
    if "gpu-diagnostics" in checks:
        diag_level(settings)
        dcgm_image(settings)
    if "gpu-health" in checks:
        health_thresholds(settings)
    if "gpu-cuda-smoke" in checks:
        cuda_smoke_image(settings)


__all__ = [
    "MSG_BAD_SMOKE_IMAGE",
    "MSG_BAD_THRESHOLD",
    "MSG_EMPTY_IMAGE",
    "MSG_WINDOW_TWICE",
    "cuda_smoke_image",
    "dcgm_image",
    "diag_level",
    "health_thresholds",
    "validate_knobs",
]
