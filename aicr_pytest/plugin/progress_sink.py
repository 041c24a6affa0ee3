"""Where a run's progress lines (:mod:`aicr_pytest.core.progress`) go: stderr, one line each.

A feature module (:mod:`~aicr_pytest.plugin.features`): installed for an active run in every
process (controller, or each xdist worker) from ``pytest_aicr_configure_run``.  A line is
prefixed with the check that waits (``check-nvidia-smi: waiting for ...``) and written with
pytest's capture suspended, so it shows while the check runs: in an xdist worker straight to its
stderr, which is the controller's; in the controller after ending pytest's half-written progress
line.  Plain lines, also on a TTY (a CI log reads the same as a terminal).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Generator
from typing import Any

import pytest

from aicr_pytest.core import progress
from aicr_pytest.plugin.state import ITEM_KEY, OutcomeNotes, is_worker

NAME = "aicr-progress-sink"


class ProgressSink:
    """The process's progress sink, and the hook that knows which check is running."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.check: str | None = None
        self._lock = threading.Lock()
        self._previous = progress.install(self)

    def __call__(self, line: str) -> None:
        text = f"{self.check}: {line}" if self.check else line
        manager = self.config.pluginmanager
        capture = manager.get_plugin("capturemanager")
        reporter = None if is_worker(self.config) else manager.get_plugin("terminalreporter")
        with self._lock:
            ctx = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
            with ctx:
                if reporter is not None:
                    reporter.ensure_newline()  # pytest may be half-way through a line of letters
                    reporter.flush()
                sys.stderr.write(text + "\n")
                sys.stderr.flush()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, Any, Any]:
        info = item.stash.get(ITEM_KEY, None)
        self.check = info.name if info is not None else None
        try:
            return (yield)
        finally:
            self.check = None

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        progress.install(self._previous)


def pytest_aicr_configure_run(config: pytest.Config, notes: OutcomeNotes) -> None:
    config.pluginmanager.register(ProgressSink(config), NAME)


def pytest_unconfigure(config: pytest.Config) -> None:
    config.pluginmanager.unregister(name=NAME)


__all__ = ["NAME", "ProgressSink", "pytest_aicr_configure_run", "pytest_unconfigure"]
