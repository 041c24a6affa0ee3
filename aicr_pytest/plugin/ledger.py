"""What the processes of one run tell each other about phases: the plan, and the failed phases.

Without xdist everything happens in one process and the ledger is memory.  Under xdist the phases
are kept in order by the scheduler (:mod:`~aicr_pytest.plugin.phasesched`), which needs the phase
of every collected item, and ``--fail-fast`` needs, in a worker, the phases that failed on any
worker.  Both travel through a run-scoped directory, each file written whole (atomically) *before*
the xdist message that makes it needed, and read once; nothing waits on a file:

* ``plan-<worker>.json`` — a worker's collection as phases, written before the worker reports its
  collection; the controller's scheduler reads it when that report arrives;
* ``failed.json`` — the phases with a ``failed``/``other`` item, written by the controller when
  such a result arrives; the scheduler lets an item of a later phase start only once every item
  of the earlier phases has finished (their results recorded), so the worker reads it complete.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from aicr_pytest.report.outcome import is_failing

FAILED_FILE = "failed.json"


def _write(path: Path, value: object) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)


class PhaseLedger:
    def __init__(self, directory: Path | None) -> None:
        self._dir = directory
        self._failed: set[str] = set()
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    def record(self, phase: str, status: str) -> None:
        """One item's result (the controller, or the only process)."""
        if not is_failing(status) or phase in self._failed:
            return
        self._failed.add(phase)
        if self._dir is not None:
            _write(self._dir / FAILED_FILE, sorted(self._failed))

    def failed_phases(self) -> set[str]:
        """The phases with a failing item so far (in a worker: as the controller recorded them)."""
        if self._dir is None:
            return set(self._failed)
        try:
            shared = json.loads((self._dir / FAILED_FILE).read_text())
        except FileNotFoundError:
            shared = []
        return self._failed | {str(p) for p in shared}

    def write_plan(self, worker: str, phases: Sequence[str | None]) -> None:
        """A worker's collection, in order: each item's phase (``None``: not a check of the run)."""
        if self._dir is not None:
            _write(self._dir / f"plan-{worker}.json", list(phases))

    def read_plan(self, worker: str) -> list[str | None] | None:
        """What :meth:`write_plan` wrote for ``worker`` (``None``: nothing, or not readable)."""
        if self._dir is None:
            return None
        try:
            value = json.loads((self._dir / f"plan-{worker}.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(value, list):
            return None
        return [None if p is None else str(p) for p in value]
