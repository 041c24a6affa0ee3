"""aicr-pytest: a pytest-native validator for GPU Kubernetes clusters."""

from __future__ import annotations

from aicr_pytest.core.errors import Inconclusive, UsageError

__version__ = "0.1.0"

__all__ = ["Inconclusive", "UsageError", "__version__"]
