"""Where ``aicr-pytest validate`` puts its report besides a file: ``-o cm://NS/NAME`` (probed before
any work, applied at the end), the report of a run that ended before its first check, and the
``--junitxml`` path among the arguments forwarded to pytest (so two outputs never share a file)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.writable import OutputError
from aicr_pytest.plugin.options.request import ValidateRequest


def junitxml_of(pytest_args: Sequence[str] | None) -> str | None:
    """The ``--junitxml`` (``--junit-xml``) path among the pytest arguments after ``--``, if any."""
    args = list(pytest_args or ())
    found: str | None = None
    for i, arg in enumerate(args):
        for flag in ("--junitxml", "--junit-xml"):
            if arg == flag and i + 1 < len(args):
                found = args[i + 1]
            elif arg.startswith(flag + "="):
                found = arg.split("=", 1)[1]
    return found


def probe_report_configmap(target: tuple[str, str], request: ValidateRequest) -> None:
    """``-o cm://ns/name``: a server-side dry-run create of the report's ConfigMap, so a missing
    namespace or a refused write is one line (exit 2) before any work, not after the whole run.
    A ConfigMap that already exists (409) is fine: the report replaces it."""
    from aicr_pytest.kube import connect
    from aicr_pytest.kube.errors import Conflict
    from aicr_pytest.report.configmap import MSG_PROBE_FAILED, configmap_object

    namespace, name = target
    try:
        cluster = connect(request.kubeconfig, request.kube_context, reach_timeout=request.reach_s)
        cluster.create(configmap_object(namespace, name, "{}", ""), dry_run=True)
    except Conflict:
        return
    except UsageError:
        raise
    except Exception as err:  # the API or the kubeconfig: one line, never a traceback
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise UsageError(MSG_PROBE_FAILED.format(uri=f"cm://{namespace}/{name}", error=first)) from None


def write_report_configmap(target: tuple[str, str], report: dict[str, Any], request: ValidateRequest) -> bool:
    """Apply the report's ConfigMap; on failure one ``aicr-pytest: error:`` line and ``False``."""
    from aicr_pytest.kube import connect
    from aicr_pytest.report.configmap import MSG_WRITE_FAILED, ReportTooLarge, configmap_object
    from aicr_pytest.report.ctrf import dumps

    namespace, name = target
    uri = f"cm://{namespace}/{name}"
    try:
        obj = configmap_object(namespace, name, dumps(report), str(report.get("timestamp") or ""))
        connect(request.kubeconfig, request.kube_context, reach_timeout=request.reach_s).apply(obj)
    except ReportTooLarge as err:
        print(f"aicr-pytest: error: {err}", file=sys.stderr)
        return False
    except Exception as err:  # the API or the kubeconfig: one line, never a traceback
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        print(f"aicr-pytest: error: {MSG_WRITE_FAILED.format(uri=uri, error=first)}", file=sys.stderr)
        return False
    print(f"CTRF report written to {uri} (key snapshot.json)", file=sys.stderr)
    return True


def not_run_report(
    request: ValidateRequest,
    configmap: tuple[str, str] | None,
    reason: str,
    start_ms: int,
    interrupted: str | None = None,
) -> None:
    """The CTRF report of a run that ended before its first check, written where ``-o`` says."""
    from aicr_pytest.report.ctrf import write
    from aicr_pytest.report.unrun import not_run_report as build

    report = build(reason, start_ms=start_ms, interrupted=interrupted)
    if configmap is not None:
        write_report_configmap(configmap, report, request)
        return
    try:
        write(report, str(request.output or "-"), sys.stdout)
    except OutputError as err:
        print(f"aicr-pytest: error: {err}", file=sys.stderr)


__all__ = ["junitxml_of", "not_run_report", "probe_report_configmap", "write_report_configmap"]
