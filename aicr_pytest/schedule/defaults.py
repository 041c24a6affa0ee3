"""``aicr-pytest schedule``'s defaults, light enough for the option table to import at start-up."""

from __future__ import annotations

from typing import Final

from aicr_pytest.core.version import __version__

DEFAULT_NAMESPACE: Final = "aicr-validation"
DEFAULT_CRON: Final = "0 */6 * * *"
#: the image ``deploy/Containerfile`` builds, tagged with this version (push it where the cluster pulls)
DEFAULT_IMAGE: Final = f"ghcr.io/nvidia/aicr-pytest:{__version__}"

__all__ = ["DEFAULT_CRON", "DEFAULT_IMAGE", "DEFAULT_NAMESPACE"]
