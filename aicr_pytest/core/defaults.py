"""The defaults every entry point states and the one boolean parser: constants only, no models.

The option rows (:mod:`aicr_pytest.plugin.options`) read these at pytest start-up, which must stay
cheap; :mod:`aicr_pytest.core.settings` (pydantic) re-exports them.
"""

from __future__ import annotations

import argparse

DEFAULT_NVIDIA_SMI_IMAGE = "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04"  # same default as deployment.py
#: ``--dcgm-image``: the image of gpu-diagnostics' ``dcgmi diag`` pods (health.diagnostics says the same)
DEFAULT_DCGM_IMAGE = "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04"
#: ``--cuda-smoke-image``: the CUDA sample gpu-cuda-smoke's pods run (health.cudasmoke says the same)
DEFAULT_CUDA_SMOKE_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
#: AICR's ``--namespace`` default (kube.run.DEFAULT_NAMESPACE is the same value)
DEFAULT_NAMESPACE = "aicr-validation"
#: AICR's ``--timeout`` default (``defaults.CLISnapshotTimeout``)
DEFAULT_TIMEOUT = "5m"
DEFAULT_TIMEOUT_S = 300.0


def parse_bool(value: str) -> bool:
    """``true|1|yes|t`` / ``false|0|no|f`` (any case), as Go's flag package reads a bool.

    The one bool parser of every flag and environment variable (an argparse ``type``)."""
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "t"):
        return True
    if lowered in ("false", "0", "no", "f"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r} (use true or false)")


__all__ = [
    "DEFAULT_CUDA_SMOKE_IMAGE",
    "DEFAULT_DCGM_IMAGE",
    "DEFAULT_NAMESPACE",
    "DEFAULT_NVIDIA_SMI_IMAGE",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TIMEOUT_S",
    "parse_bool",
]
