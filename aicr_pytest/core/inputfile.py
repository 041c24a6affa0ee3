"""File inputs are regular files: a FIFO, a socket or a device is refused before it is opened.

Opening a FIFO for reading blocks until something writes to it, and reading a device such as
``/dev/zero`` or ``/dev/urandom`` never ends (or ends in garbage), so a run given one as ``--bom``,
``--config``, a ``--data`` file, a recipe or a snapshot would hang.  :func:`check_regular` looks at
the path with ``stat`` (which never opens it) and refuses anything but a regular file in one line.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from aicr_pytest.core.errors import UsageError

MSG_NOT_REGULAR: Final = "{flag} {path}: not a regular file ({what}); it is not read"


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a file"


def check_regular(path: str | os.PathLike[str], flag: str) -> None:
    """Raise a one-line :class:`UsageError` when ``path`` exists and is not a regular file (a symbolic
    link is followed).  A path that does not exist, or cannot be examined, is left to the caller,
    whose own message names it."""
    try:
        mode = os.stat(Path(path).expanduser()).st_mode
    except (OSError, ValueError):
        return
    if not stat.S_ISREG(mode):
        raise UsageError(MSG_NOT_REGULAR.format(flag=flag, path=path, what=kind_of(mode)))


__all__ = ["MSG_NOT_REGULAR", "check_regular", "kind_of"]
