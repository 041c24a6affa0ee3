"""How a conformance check reports: :class:`ConformanceFailure`, AICR's error text, classified reads.

A check function raises

* :class:`ConformanceFailure` (an ``AssertionError``: CTRF ``failed``) when the cluster fails the
  check; ``str()`` is AICR's ``[CODE] message: cause`` text;
* :class:`~aicr_pytest.core.errors.Inconclusive` (CTRF ``other``) when it could not reach a verdict:
  an API error other than the NotFound a check expects (RBAC denial, transport, throttling past the
  retry budget), a timeout waiting for a workload, a pod deleted under it;
* :class:`~aicr_pytest.core.errors.CheckSkip` when the check does not apply.

AICR fails the check on every error; aicr-pytest keeps AICR's text but reports an unanswered
question as ``other``, never as a verdict on the cluster (fail closed: ``other`` is failing).
"""

from __future__ import annotations

import json
from typing import Any

from aicr_pytest.core.errors import CheckFailed, Inconclusive
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError, ApiUnreachable, NotFound, WaitTimeout

__all__ = [
    "JSON",
    "ConformanceFailure",
    "aicr_error",
    "describe_cause",
    "failure",
    "inconclusive",
    "is_structured",
    "is_timeout",
    "list_objects",
    "one_line",
    "read_error",
    "read_object",
    "status_of",
]

JSON = dict[str, Any]


class ConformanceFailure(CheckFailed):
    """The cluster failed the check; ``str()`` is AICR's ``[CODE] …`` message (CTRF ``failed``)."""


def one_line(text: str) -> str:
    """Whitespace (newlines included) collapsed to single spaces."""
    return " ".join(str(text).split())


def describe_cause(cause: BaseException | str) -> str:
    """The ``cause`` part of ``[CODE] msg: cause``: the error's one-line text (its type when empty)."""
    if isinstance(cause, BaseException):
        return one_line(str(cause)) or type(cause).__name__
    return one_line(cause)


def aicr_error(code: str, message: str, cause: BaseException | str | None = None) -> str:
    """AICR's structured error text: ``[CODE] message`` or ``[CODE] message: cause``."""
    text = f"[{code}] {message}"
    if cause is not None and (not isinstance(cause, str) or cause):
        text += f": {describe_cause(cause)}"
    return text


def is_structured(text: str) -> bool:
    """Whether ``text`` already reads ``[CODE] …`` (AICR's ``PropagateOrWrap`` keeps such errors)."""
    head, sep, _ = text.partition("] ")
    return bool(sep) and head.startswith("[") and head[1:].replace("_", "").isalpha() and head[1:].isupper()


def failure(code: str, message: str, cause: BaseException | str | None = None) -> ConformanceFailure:
    return ConformanceFailure(aicr_error(code, message, cause))


def inconclusive(code: str, message: str, cause: BaseException | str | None = None) -> Inconclusive:
    return Inconclusive(aicr_error(code, message, cause))


def is_timeout(err: BaseException) -> bool:
    """A transport timeout, a 504, or a wait that ran out (AICR's "timeout forms")."""
    if isinstance(err, WaitTimeout | TimeoutError):
        return True
    if isinstance(err, ApiError) and err.status == 504:
        return True
    return isinstance(err, ApiUnreachable) and "timed out" in str(err).lower()


def status_of(err: ApiError) -> tuple[int, str, str]:
    """(HTTP code, ``Status`` reason, ``Status`` message) of an API error, from the response body."""
    reason, message = err.reason, ""
    try:
        body = json.loads(err.body) if err.body else {}
    except ValueError:
        body = {}
    if isinstance(body, dict):
        reason = str(body.get("reason") or reason)
        message = str(body.get("message") or "")
    code = err.status
    if isinstance(body, dict) and isinstance(body.get("code"), int):
        code = int(body["code"])
    return code, reason, message or one_line(str(err))


def read_error(err: BaseException, subject: str) -> BaseException:
    """AICR's classified GET error for ``subject`` (``deployment <ns>/<name>``…): NotFound is a
    failure (``[NOT_FOUND] <subject> not found: …``); a timeout or any other error is ``other``."""
    if isinstance(err, NotFound):
        return failure("NOT_FOUND", f"{subject} not found", err)
    if is_timeout(err):
        return inconclusive("TIMEOUT", f"timed out reading {subject}", err)
    return inconclusive("INTERNAL", f"failed to read {subject}", err)


def read_object(
    cluster: Cluster, api_version: str, kind: str, name: str, namespace: str | None, subject: str
) -> JSON:
    """GET one object; errors classified by :func:`read_error`."""
    try:
        return cluster.get(api_version, kind, name, namespace)
    except ApiError as err:
        raise read_error(err, subject) from err


def list_objects(
    cluster: Cluster,
    api_version: str,
    kind: str,
    namespace: str | None,
    message: str,
    *,
    label_selector: str | None = None,
    not_found_empty: bool = False,
) -> list[JSON]:
    """Every matching object; an API error is ``other`` with ``[INTERNAL] <message>: <cause>``
    (``not_found_empty``: a 404 — namespace or resource not served — reads as no objects)."""
    try:
        return list(cluster.list(api_version, kind, namespace, label_selector=label_selector))
    except NotFound as err:
        if not_found_empty:
            return []
        raise inconclusive("INTERNAL", message, err) from err
    except ApiError as err:
        raise inconclusive("INTERNAL", message, err) from err
