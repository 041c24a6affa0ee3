"""The two calls an entry point makes: :func:`configure` before the run, :func:`finish` after it.

Both take plain values (the resolved :class:`EvidenceSettings`, the CTRF report as a dict), so the
pytest plugin wires evidence in with a few lines and the rest stays testable without pytest.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any

from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.recipe import Recipe
from aicr_pytest.core.snapshot import Snapshot
from aicr_pytest.evidence.emit import EvidenceError, Plan, emit, prepare
from aicr_pytest.evidence.settings import EvidenceSettings

__all__ = ["EvidenceError", "Plan", "configure", "finish"]


def tool_version() -> str:
    try:
        return metadata.version("aicr-pytest")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def configure(
    settings: EvidenceSettings,
    *,
    env: Mapping[str, str] | None = None,
    write: Callable[[str], None] = _stderr,
    read_line: Callable[[], str] | None = None,
    stdin_is_tty: bool | None = None,
) -> Plan | None:
    """Validate the evidence settings; ``None`` when ``--emit-attestation`` is not given.

    Raises ``UsageError`` for a bad value (exit 2 / 4) and :class:`EvidenceError` when the user
    declines the identity-disclosure prompt.
    """
    environ = os.environ if env is None else env
    stdin = sys.__stdin__
    tty = stdin_is_tty if stdin_is_tty is not None else bool(stdin is not None and stdin.isatty())
    reader = read_line or (lambda: stdin.readline() if stdin is not None else "")
    return prepare(settings, environ, write=write, read_line=reader, stdin_is_tty=tty)


def finish(
    plan: Plan | None,
    *,
    report: Mapping[str, Any] | None,
    recipe: Recipe,
    snapshot: Snapshot | None,
    data: DataTree,
    skip_reason: str | None = None,
    env: Mapping[str, str] | None = None,
    write: Callable[[str], None] = _stderr,
) -> str | None:
    """Emit the bundle for a finished run; the error line when emission failed, else ``None``."""
    if plan is None:
        return None
    if skip_reason is not None or report is None:
        write(f"evidence: no bundle written — {skip_reason or 'the run produced no report'}")
        return None
    try:
        emit(
            plan,
            report=report,
            recipe=recipe,
            snapshot=snapshot,
            registry_entries=data.registry(),
            tool_version=tool_version(),
            env=os.environ if env is None else env,
            write=write,
        )
    except EvidenceError as err:
        return f"evidence: {err}"
    return None
