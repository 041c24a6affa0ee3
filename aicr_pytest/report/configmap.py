"""``aicr-pytest validate -o cm://namespace/name``: the CTRF report stored in a ConfigMap.

As in AICR (``--output`` in ``docs/user/cli-reference.md``; its ConfigMap writer in
``pkg/serializer``), the report is server-side applied (created, or replaced when it exists) with the
document under the key ``snapshot.json`` (AICR's writer names the key ``snapshot.<format>`` whatever
it stores, and ``validate`` writes JSON) plus ``format: json`` and ``timestamp``; labels
``app.kubernetes.io/name: aicr-pytest``, ``app.kubernetes.io/component: ValidationReport`` and
``app.kubernetes.io/version``.  It is the result the user asked for, so it carries no run id and no
cleanup deletes it.

The URI is checked before any work (:func:`parse_output_uri`): ``cm://namespace/name`` with a
DNS-1123 label as namespace and a DNS-1123 subdomain as name, else one line, exit 2.  A ConfigMap
holds at most 1 MiB: a report larger than that is refused with a clear error
(:func:`configmap_object` raises :class:`ReportTooLarge`), never truncated.
"""

from __future__ import annotations

import re
from typing import Any, Final

from aicr_pytest.core.configmaps import result_configmap
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.sources import CM_PREFIX

#: what the API server accepts for a ConfigMap's data (its 1 MiB object limit)
MAX_CONFIGMAP_BYTES: Final = 1 << 20
DATA_KEY: Final = "snapshot.json"

MSG_BAD_URI: Final = 'invalid --output "{uri}": expected cm://namespace/name'
MSG_BAD_NAMESPACE: Final = 'invalid --output "{uri}": namespace "{value}" must be a DNS-1123 label'
MSG_BAD_NAME: Final = 'invalid --output "{uri}": ConfigMap name "{value}" must be a DNS-1123 subdomain'
MSG_TOO_LARGE: Final = (
    "cannot write the CTRF report to {uri}: it is {size} bytes and a ConfigMap holds at most "
    "{limit} bytes; write it to a file with -o PATH instead"
)
MSG_WRITE_FAILED: Final = "cannot write the CTRF report to {uri}: {error}"
MSG_PROBE_FAILED: Final = "--output {uri}: cannot write the report there: {error}"

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class ReportTooLarge(Exception):
    """The report does not fit a ConfigMap (its message is the one line to print)."""


def is_configmap_uri(value: str | None) -> bool:
    return (value or "").strip().startswith(CM_PREFIX)


def parse_output_uri(uri: str) -> tuple[str, str]:
    """``cm://ns/name`` → ``(ns, name)``, each a valid Kubernetes name, else :class:`UsageError`."""
    text = uri.strip()
    namespace, sep, name = text[len(CM_PREFIX) :].partition("/")
    if not sep or not namespace or not name:
        raise UsageError(MSG_BAD_URI.format(uri=uri))
    if len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace):
        raise UsageError(MSG_BAD_NAMESPACE.format(uri=uri, value=namespace))
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        raise UsageError(MSG_BAD_NAME.format(uri=uri, value=name))
    return namespace, name


def configmap_object(namespace: str, name: str, text: str, timestamp: str) -> dict[str, Any]:
    """The ConfigMap carrying the report ``text``; :class:`ReportTooLarge` when it cannot hold it."""
    obj = result_configmap(
        namespace, name, component="ValidationReport", fmt="json", text=text, timestamp=timestamp
    )
    size = sum(len(k.encode()) + len(v.encode()) for k, v in obj["data"].items())
    if size > MAX_CONFIGMAP_BYTES:
        uri = f"{CM_PREFIX}{namespace}/{name}"
        raise ReportTooLarge(MSG_TOO_LARGE.format(uri=uri, size=size, limit=MAX_CONFIGMAP_BYTES))
    return obj


__all__ = [
    "DATA_KEY",
    "MAX_CONFIGMAP_BYTES",
    "MSG_BAD_NAME",
    "MSG_BAD_NAMESPACE",
    "MSG_BAD_URI",
    "MSG_TOO_LARGE",
    "MSG_WRITE_FAILED",
    "ReportTooLarge",
    "configmap_object",
    "is_configmap_uri",
    "parse_output_uri",
]
