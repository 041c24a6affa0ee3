"""Per-item outcomes shared between the process that records them and the ones that run checks.

Without xdist everything happens in one process and the ledger is a dict.  Under xdist the
controller receives every report (also for crashed workers), so only the controller writes; each
worker reads the files before running an item of a later phase.  That gives two things:

* phases stay sequential (a worker waits until every item of earlier phases has a result), as
  AICR runs them: inference-perf saturating GPUs must not overlap conformance checks;
* ``--fail-fast`` sees failures recorded by other workers.

Workers receive items in collection order, so a wait only ever depends on items that are
running or queued earlier elsewhere: no deadlock.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path


class PhaseLedger:
    def __init__(self, directory: Path | None, sleep: Callable[[float], None] = time.sleep) -> None:
        self._dir = directory
        self._memory: dict[int, tuple[str, str]] = {}
        self._sleep = sleep
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    def record(self, order: int, phase: str, status: str) -> None:
        self._memory[order] = (phase, status)
        if self._dir is not None:
            tmp = self._dir / f".{order}.tmp"
            tmp.write_text(json.dumps({"phase": phase, "status": status}))
            os.replace(tmp, self._dir / f"{order}.json")

    def _read(self, order: int) -> tuple[str, str] | None:
        if order in self._memory:
            return self._memory[order]
        if self._dir is None:
            return None
        path = self._dir / f"{order}.json"
        try:
            data = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        value = (str(data["phase"]), str(data["status"]))
        self._memory[order] = value
        return value

    def wait_for(self, orders: Iterable[int], poll_s: float = 0.2) -> None:
        """Block until every order has a recorded status (only meaningful with a directory)."""
        pending = [o for o in orders if self._read(o) is None]
        if self._dir is None:
            return
        while pending:
            self._sleep(poll_s)
            pending = [o for o in pending if self._read(o) is None]

    def failed_phases(self, orders: Iterable[int]) -> set[str]:
        failing = set()
        for order in orders:
            value = self._read(order)
            if value is not None and value[1] in ("failed", "other"):
                failing.add(value[0])
        return failing
