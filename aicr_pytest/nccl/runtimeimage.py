"""``AICR_NCCL_RUNTIME_IMAGE``: the NCCL workload image instead of the embedded runtime's (pure).

As upstream (AICR #1751, PR #2386): read from the environment of the process running the checks
(never from the catalog), for the three NCCL checks, and only when the benchmark runs one of our
embedded runtimes — a recipe-supplied runtime owns its image, so the variable is neither read nor
validated for it.  Unset or empty keeps each runtime's own image; a value that is blank after
trimming, or not an image reference, is a usage error before anything touches the cluster (exit 2).
:func:`apply_runtime_image` renders the one image into every workload container of the rendered
``TrainingRuntime`` (the launcher's ``fix-ssh-perms`` init container and the ``node`` containers of
both replicated jobs), never into a sidecar such as GKE's ``tcpxo-daemon``; a runtime with none of
them is template drift and fails the check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from aicr_pytest.core.errors import CheckFailed, UsageError
from aicr_pytest.core.gofmt import go_quote
from aicr_pytest.core.imageref import is_image_reference

RUNTIME_IMAGE_ENV: Final = "AICR_NCCL_RUNTIME_IMAGE"
#: the containers that carry the NCCL workload image, in either replicated job
WORKLOAD_CONTAINERS: Final = ("fix-ssh-perms", "node")

MSG_BLANK: Final = f"{RUNTIME_IMAGE_ENV} is set but blank after trimming whitespace"
MSG_INVALID: Final = (
    f"invalid {RUNTIME_IMAGE_ENV}={{value}}: not a well-formed image reference "
    "([registry/]repository[:tag][@digest])"
)
MSG_DRIFT: Final = (
    f"{RUNTIME_IMAGE_ENV} set but no [{' '.join(WORKLOAD_CONTAINERS)}] containers found in TrainingRuntime — "
    "template/override drift"
)
MSG_NO_REPLICATED_JOBS: Final = "replicatedJobs not found in TrainingRuntime"
#: the stdout line of a run that used the override
MSG_RUNTIME_IMAGE_LINE: Final = "NCCL runtime image: {image} (" + RUNTIME_IMAGE_ENV + ")"


class RuntimeImageDrift(CheckFailed):
    """The rendered runtime has no container the override applies to (the check fails)."""


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def resolve_runtime_image(env: Mapping[str, str]) -> str | None:
    """The override, trimmed; ``None`` when unset or empty.  :class:`UsageError` when blank or not
    an image reference."""
    raw = env.get(RUNTIME_IMAGE_ENV)
    if not raw:
        return None
    value = raw.strip()
    if not value:
        raise UsageError(MSG_BLANK)
    if not is_image_reference(value):
        raise UsageError(MSG_INVALID.format(value=go_quote(value)))
    return value


def apply_runtime_image(runtime: dict[str, Any], image: str) -> int:
    """Set ``image`` on every workload container of ``runtime``; returns how many were set."""
    jobs = _dig(runtime, "spec", "template", "spec", "replicatedJobs")
    if not isinstance(jobs, list):
        raise RuntimeImageDrift(MSG_NO_REPLICATED_JOBS)
    touched = 0
    for job in jobs:
        pod = _dig(job, "template", "spec", "template", "spec") if isinstance(job, dict) else None
        if not isinstance(pod, dict):
            continue
        for key in ("initContainers", "containers"):
            for container in pod.get(key) or []:
                if isinstance(container, dict) and container.get("name") in WORKLOAD_CONTAINERS:
                    container["image"] = image
                    touched += 1
    if touched == 0:
        raise RuntimeImageDrift(MSG_DRIFT)
    return touched


__all__ = [
    "MSG_BLANK",
    "MSG_DRIFT",
    "MSG_INVALID",
    "MSG_RUNTIME_IMAGE_LINE",
    "RUNTIME_IMAGE_ENV",
    "WORKLOAD_CONTAINERS",
    "RuntimeImageDrift",
    "apply_runtime_image",
    "resolve_runtime_image",
]
