"""The agent flags of ``aicr-pytest snapshot`` that shape its pod, parsed as ``aicr snapshot`` parses them.

* ``--requests``/``--limits``: a comma-separated ``name=quantity`` list (``cpu=500m,memory=1Gi``),
  as ``kubectl run`` takes it; empty entries are skipped; each quantity is checked with the
  grammar of Kubernetes' ``resource.ParseQuantity`` (its error words); an empty list means no
  override.
* ``--runtime-class`` and ``--require-gpu`` are mutually exclusive (AICR's message).
* ``--runtime-class``, ``--service-account-name`` and ``--image-pull-secret`` must be DNS-1123
  subdomains, ``--job-name`` (the Job's name prefix) a DNS-1123 label: AICR leaves that to the
  API server; here a bad name is a usage error before the cluster is touched.

Every failure is a :class:`~aicr_pytest.core.errors.UsageError` (one line, exit 2).
"""

from __future__ import annotations

import re
from typing import Final

from aicr_pytest.core.errors import UsageError

MSG_RESOURCES: Final = "invalid --{flag}: {reason}"
WHY_NOT_PAIR: Final = 'entry "{entry}" is not in name=quantity form'
WHY_EMPTY_SIDE: Final = 'entry "{entry}" has empty name or quantity'
WHY_QUANTITY: Final = 'entry "{entry}": {reason}'
#: ``resource.ParseQuantity``'s errors (k8s.io/apimachinery)
QTY_FORMAT: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
QTY_NUMERIC: Final = "unable to parse numeric part of quantity"
QTY_SUFFIX: Final = "unable to parse quantity's suffix"
MSG_GPU_AND_RUNTIME_CLASS: Final = (
    "--require-gpu and --runtime-class are mutually exclusive; prefer --runtime-class, which provides "
    "nvidia-smi access via the container runtime without consuming a GPU allocation"
)
MSG_BAD_SUBDOMAIN: Final = 'invalid --{flag} "{value}": must be a DNS-1123 subdomain'
MSG_BAD_LABEL: Final = 'invalid --{flag} "{value}": must be a DNS-1123 label'
#: a DNS-1123 label's length (a long prefix is shortened to leave room for the run id)
JOB_PREFIX_LIMIT: Final = 63

_QUANTITY = re.compile(r"([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_SUFFIX = re.compile(r"|[numkMGTPE]|[KMGTPE]i|[eE][-+]?[0-9]+")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def quantity_error(text: str) -> str | None:
    """Why ``text`` is not a Kubernetes quantity (``resource.ParseQuantity``'s words), else ``None``."""
    m = _QUANTITY.fullmatch(text)
    if m is None:
        return QTY_FORMAT
    if _NUMBER.fullmatch(m.group(1)) is None:
        return QTY_NUMERIC
    if _SUFFIX.fullmatch(m.group(2)) is None:
        return QTY_SUFFIX
    return None


def parse_resource_list(flag: str, spec: str | None) -> dict[str, str] | None:
    """``--requests``/``--limits`` (``flag``) as ``{name: quantity}``; ``None`` when nothing is given."""
    text = (spec or "").strip()
    if not text:
        return None
    out: dict[str, str] = {}
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        key, sep, value = entry.partition("=")
        if not sep:
            raise UsageError(MSG_RESOURCES.format(flag=flag, reason=WHY_NOT_PAIR.format(entry=entry)))
        key, value = key.strip(), value.strip()
        if not key or not value:
            raise UsageError(MSG_RESOURCES.format(flag=flag, reason=WHY_EMPTY_SIDE.format(entry=entry)))
        why = quantity_error(value)
        if why is not None:
            reason = WHY_QUANTITY.format(entry=entry, reason=why)
            raise UsageError(MSG_RESOURCES.format(flag=flag, reason=reason))
        out[key] = value
    return out or None


def check_subdomain(flag: str, value: str | None) -> str | None:
    """``value`` stripped when it is a DNS-1123 subdomain; ``None`` when empty; else ``UsageError``."""
    text = (value or "").strip()
    if not text:
        return None
    if len(text) > 253 or _SUBDOMAIN.fullmatch(text) is None:
        raise UsageError(MSG_BAD_SUBDOMAIN.format(flag=flag, value=text))
    return text


def check_job_prefix(value: str | None, default: str) -> str:
    """``--job-name``: a DNS-1123 label short enough for the run id to follow; empty: ``default``."""
    text = (value or "").strip()
    if not text:
        return default
    if len(text) > JOB_PREFIX_LIMIT or _LABEL.fullmatch(text) is None:
        raise UsageError(MSG_BAD_LABEL.format(flag="job-name", value=text))
    return text


def check_runtime_class(runtime_class: str | None, *, require_gpu: bool) -> str | None:
    """``--runtime-class``: a DNS-1123 subdomain, never together with ``--require-gpu``."""
    name = check_subdomain("runtime-class", runtime_class)
    if name is not None and require_gpu:
        raise UsageError(MSG_GPU_AND_RUNTIME_CLASS)
    return name


__all__ = [
    "JOB_PREFIX_LIMIT",
    "MSG_BAD_LABEL",
    "MSG_BAD_SUBDOMAIN",
    "MSG_GPU_AND_RUNTIME_CLASS",
    "check_job_prefix",
    "check_runtime_class",
    "check_subdomain",
    "parse_resource_list",
    "quantity_error",
]
