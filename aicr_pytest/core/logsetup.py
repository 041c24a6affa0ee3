"""``--debug`` and ``--log-json``: how the ``aicr_pytest`` logger writes (one place, both entry points).

* default: nothing is installed (the logger behaves as before: pytest's log capture shows it);
* ``--debug`` (``AICR_DEBUG``): DEBUG and above, with level and logger name;
* ``--log-json`` (``AICR_LOG_JSON``): one JSON object per line on stderr (``time``, ``level``,
  ``logger``, ``msg``); it wins over ``--debug``'s text format, as in AICR, and keeps its level.

:func:`configure_logging` installs one handler on the ``aicr_pytest`` logger (replacing the one it
installed before, so calling it again is harmless); other libraries' loggers are left alone.  The
handler writes to the ``sys.stderr`` of the moment each record is emitted.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Final

LOGGER: Final = "aicr_pytest"
_HANDLER_NAME: Final = "aicr-pytest-stderr"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``{"time", "level", "logger", "msg"}`` (+ ``error`` with a traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, str] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler bound to whatever ``sys.stderr`` is when a record is written."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def formatter_for(*, debug: bool, log_json: bool) -> logging.Formatter:
    if log_json:
        return JsonFormatter()
    if debug:
        return logging.Formatter("%(levelname)s %(name)s: %(message)s")
    return logging.Formatter("%(message)s")


def configure_logging(*, debug: bool = False, log_json: bool = False) -> logging.Logger:
    """Set up the ``aicr_pytest`` logger for this run (no change without either flag); returns it."""
    logger = logging.getLogger(LOGGER)
    for old in [h for h in logger.handlers if h.get_name() == _HANDLER_NAME]:
        logger.removeHandler(old)
    if not (debug or log_json):
        return logger
    handler = _StderrHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(formatter_for(debug=debug, log_json=log_json))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.INFO)
    return logger


def traceback_style(debug: bool) -> str | None:
    """pytest's ``--tb`` for ``aicr-pytest validate``: ``long`` with ``--debug``, else pytest's default."""
    return "long" if debug else None


__all__ = ["LOGGER", "JsonFormatter", "configure_logging", "formatter_for", "traceback_style"]
