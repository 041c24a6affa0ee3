"""Report destinations checked before any check runs, and a fallback when a late write still fails.

``-o``/``--ctrf-report`` (and ``--html``) name a file the run writes at its very end; a directory, a
path under ``/proc`` or a read-only location used to be found out only then, with the report lost.
:func:`check_writable` probes the destination up front (one :class:`UsageError` line, exit 2) by
creating a temporary file in the directory the report would go to (its nearest existing ancestor
when the directories are still to be created), never by touching the file itself.
:func:`fallback_path` is where a report goes when the write at the end fails anyway.
"""

from __future__ import annotations

import contextlib
import errno as errno_mod
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from aicr_pytest.core.errors import UsageError

MSG_NOT_WRITABLE: Final = "{flag} {path}: cannot write the report there: {why}"
MSG_FALLBACK: Final = (
    "{flag} {path}: the output could not be written: {why}; it was written to {fallback} instead"
)


def _why(err: OSError) -> str:
    return err.strerror or type(err).__name__


def errno_text(err: OSError) -> str:
    """``ENOSPC (No space left on device)``: the symbolic errno and its text (the text alone when
    the error carries no errno)."""
    name = errno_mod.errorcode.get(err.errno or 0)
    return f"{name} ({_why(err)})" if name else _why(err)


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
    try:  # one byte written and flushed: a full filesystem refuses it (an empty file it may not)
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".aicr-pytest-probe-") as probe:
            probe.write(b"\n")
            probe.flush()
    except OSError as err:
        raise UsageError(MSG_NOT_WRITABLE.format(flag=flag, path=path, why=errno_text(err))) from None


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
        raise UsageError(MSG_DIR_NOT_WRITABLE.format(flag=flag, path=path, why=errno_text(err))) from None
    try:  # one byte written and flushed inside it: a full filesystem refuses it
        with open(os.path.join(probe, "probe"), "wb") as fh:
            fh.write(b"\n")
            fh.flush()
    except OSError as err:
        raise UsageError(MSG_DIR_NOT_WRITABLE.format(flag=flag, path=path, why=errno_text(err))) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(probe, "probe"))
        os.rmdir(probe)


def fallback_path(path: str, directory: str | None = None) -> Path:
    """A fresh file in the temporary directory named after ``path`` (``ctrf.json`` → ``ctrf-XXXX.json``)."""
    name = Path(path).name or "report"
    stem, dot, suffix = name.rpartition(".")
    prefix, ext = (stem, f".{suffix}") if dot and stem else (name, "")
    fd, out = tempfile.mkstemp(prefix=f"{prefix}-", suffix=ext, dir=directory)
    os.close(fd)
    return Path(out)


MSG_WRITE_FAILED: Final = "{flag} {path}: the output could not be written: {why}"


class OutputError(Exception):
    """An output that could not be written fully: ``str()`` is the one line to print (it names
    the path and the errno); the run must end non-zero.  ``fallback`` is where the bytes went
    instead (:func:`write_output`), when they went anywhere."""

    def __init__(self, line: str, fallback: Path | None = None) -> None:
        super().__init__(line)
        self.fallback = fallback


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: read once at import: a report file gets the mode a plain ``open(..., "w")`` would give it
_UMASK: Final = _current_umask()


def write_atomic(
    path: str | os.PathLike[str], data: str | bytes, flag: str, *, make_parents: bool = True
) -> Path:
    """Write ``data`` to ``path`` whole or not at all; raise :class:`OutputError` otherwise.

    A regular file (or one still to be made; its parents are created) is written to a temporary
    file in the same directory, flushed to disk and renamed over the target, so a full disk or an
    interrupted write never leaves a truncated report (and never replaces a whole one).  A target
    that exists and is not a regular file (``/dev/stdout``, a FIFO, ``/dev/full``) is written in
    place, never replaced, and a short or failed write is reported the same way.  A symbolic link
    is followed: its target is replaced, the link kept.  ``flag`` names the option in the error line;
    ``make_parents=False`` leaves a missing directory an error (``ENOENT``) instead of creating it.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    target = Path(os.path.realpath(Path(path).expanduser()))
    try:
        mode = os.stat(target).st_mode if os.path.lexists(target) else None
        if mode is not None and not stat.S_ISREG(mode):
            with open(target, "wb") as fh:
                fh.write(payload)
            return target
        if make_parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_UMASK)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as err:
        raise OutputError(MSG_WRITE_FAILED.format(flag=flag, path=path, why=errno_text(err))) from err
    return target


def write_output(path: str | os.PathLike[str], data: str | bytes, flag: str) -> Path:
    """The one call for a report at the end of a run: :func:`write_atomic`, and when that fails
    the same bytes to a fresh file in the temporary directory (:func:`fallback_path`) before
    :class:`OutputError` is raised with one line naming the path, the errno and where the bytes
    went.  The caller prints the line and makes the run end non-zero; the report is never lost
    silently.  Returns the path written.
    """
    try:
        return write_atomic(path, data, flag)
    except OutputError as err:
        cause = err.__cause__
        why = errno_text(cause) if isinstance(cause, OSError) else str(err)
        try:
            fallback = fallback_path(str(path))
            fallback.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        except OSError:
            raise err from cause
        line = MSG_FALLBACK.format(flag=flag, path=path, why=why, fallback=fallback)
        raise OutputError(line, fallback) from cause


MSG_SAME_PATH: Final = "{flag} {path}: the same file as {other} {other_path}; give each output its own path"
MSG_OUTPUT_ON_INPUT: Final = (
    "{flag} {path}: the same file as the input {other} {other_path}; it would be overwritten"
)


def _identity(path: str) -> str:
    return os.path.realpath(Path(path).expanduser())


def check_distinct(
    outputs: Iterable[tuple[str, str | None]], inputs: Iterable[tuple[str, str | None]] = ()
) -> None:
    """Raise a one-line :class:`UsageError` when two outputs name one file, or an output names an
    input (``-o recipe.yaml``).

    ``outputs`` and ``inputs`` are ``(flag, path)`` pairs; an empty path, ``-`` (stdout), a URL and
    ``cm://`` references are not files and are left out.  Paths are compared after following
    symbolic links, so ``./x`` and ``sub/../x`` are the same file; a path that does not exist yet is
    compared by where it would be.  An output that is not a regular file (``/dev/null``) may be
    shared.
    """

    def files(pairs: Iterable[tuple[str, str | None]]) -> list[tuple[str, str, str]]:
        out = []
        for flag, path in pairs:
            if not path or path == "-" or "://" in path:
                continue
            ident = _identity(path)
            if os.path.exists(ident) and not os.path.isfile(ident):
                continue
            out.append((flag, path, ident))
        return out

    seen: dict[str, tuple[str, str]] = {}
    for flag, path, ident in files(outputs):
        if ident in seen:
            other, other_path = seen[ident]
            raise UsageError(MSG_SAME_PATH.format(flag=flag, path=path, other=other, other_path=other_path))
        seen[ident] = (flag, path)
    out_by_ident = dict(seen)
    for flag, path, ident in files(inputs):
        if ident in out_by_ident:
            out_flag, out_path = out_by_ident[ident]
            raise UsageError(
                MSG_OUTPUT_ON_INPUT.format(flag=out_flag, path=out_path, other=flag, other_path=path)
            )


#: the file inputs a run may read, by option-table name, with the flag that names them
INPUT_FLAGS: Final = {
    "recipe": "--recipe",
    "snapshot": "--snapshot",
    "data": "--data",
    "bom": "--bom",
    "config": "--config",
}


def inputs_of(values: dict[str, object]) -> list[tuple[str, str | None]]:
    """The ``(flag, path)`` of each file input in an option-table value mapping."""
    return [(flag, str(values[name])) for name, flag in INPUT_FLAGS.items() if values.get(name)]


__all__ = [
    "INPUT_FLAGS",
    "MSG_DIR_NOT_WRITABLE",
    "MSG_FALLBACK",
    "MSG_NOT_WRITABLE",
    "MSG_OUTPUT_ON_INPUT",
    "MSG_SAME_PATH",
    "MSG_WRITE_FAILED",
    "OutputError",
    "check_distinct",
    "check_writable",
    "check_writable_dir",
    "errno_text",
    "fallback_path",
    "inputs_of",
    "write_atomic",
    "write_output",
]
