"""The aicr-pytest version, re-exported as ``aicr_pytest.__version__``.

It lives in ``core`` so every layer reads it without importing the package's public API (which
names the plugin's check context and the cluster client).
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
