"""Report destinations checked before any check runs, and a fallback when a late write still fails.

``-o``/``--ctrf-report`` (and ``--html``) name a file the run writes at its very end; a directory, a
path under ``/proc`` or a read-only location used to be found out only then, with the report lost.
:func:`check_writable` probes the destination up front (one :class:`UsageError` line, exit 2) by
creating a temporary file in the directory the report would go to (its nearest existing ancestor
when the directories are still to be created), never by touching the file itself.
:func:`fallback_path` is where a report goes when the write at the end fails anyway.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Final

from aicr_pytest.core.errors import UsageError

MSG_NOT_WRITABLE: Final = "{flag} {path}: cannot write the report there: {why}"
MSG_FALLBACK: Final = "could not write the report to {path} ({why}); wrote it to {fallback} instead"


def _why(err: OSError) -> str:
    return err.strerror or type(err).__name__


def check_writable(path: str, flag: str) -> None:
    """Raise a one-line :class:`UsageError` when a report cannot be written to ``path`` (``-`` is stdout)."""
    if path == "-":
        return
    target = Path(path).expanduser()
    if target.is_dir():
        raise UsageError(MSG_NOT_WRITABLE.format(flag=flag, path=path, why="it is a directory"))
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(MSG_NOT_WRITABLE.format(flag=flag, path=path, why="permission denied"))
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(MSG_NOT_WRITABLE.format(flag=flag, path=path, why=f"{parent} is not a directory"))
    try:
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".aicr-pytest-probe-"):
            pass
    except OSError as err:
        raise UsageError(MSG_NOT_WRITABLE.format(flag=flag, path=path, why=_why(err))) from None


MSG_DIR_NOT_WRITABLE: Final = "{flag} {path}: cannot write there: {why}"


def check_writable_dir(path: str, flag: str) -> None:
    """Raise a one-line :class:`UsageError` when files cannot be created in the directory ``path``.

    For destinations that are folders (``--emit-attestation``, ``--evidence-dir``): the folder, or
    its nearest existing ancestor when it is still to be created, must be a writable directory.
    Probed with a temporary directory that is removed again; nothing else is created.
    """
    if not path:
        raise UsageError(MSG_DIR_NOT_WRITABLE.format(flag=flag, path=path, why="no directory given"))
    target = Path(path).expanduser()
    if target.exists() and not target.is_dir():
        raise UsageError(MSG_DIR_NOT_WRITABLE.format(flag=flag, path=path, why="it is not a directory"))
    probe_in = target
    while not probe_in.exists() and probe_in != probe_in.parent:
        probe_in = probe_in.parent
    if not probe_in.is_dir():
        why = f"{probe_in} is not a directory"
        raise UsageError(MSG_DIR_NOT_WRITABLE.format(flag=flag, path=path, why=why))
    try:
        probe = tempfile.mkdtemp(dir=probe_in, prefix=".aicr-pytest-probe-")
    except OSError as err:
        raise UsageError(MSG_DIR_NOT_WRITABLE.format(flag=flag, path=path, why=_why(err))) from None
    os.rmdir(probe)


def fallback_path(path: str, directory: str | None = None) -> Path:
    """A fresh file in the temporary directory named after ``path`` (``ctrf.json`` → ``ctrf-XXXX.json``)."""
    name = Path(path).name or "report"
    stem, dot, suffix = name.rpartition(".")
    prefix, ext = (stem, f".{suffix}") if dot and stem else (name, "")
    fd, out = tempfile.mkstemp(prefix=f"{prefix}-", suffix=ext, dir=directory)
    os.close(fd)
    return Path(out)


__all__ = [
    "MSG_DIR_NOT_WRITABLE",
    "MSG_FALLBACK",
    "MSG_NOT_WRITABLE",
    "check_writable",
    "check_writable_dir",
    "fallback_path",
]
