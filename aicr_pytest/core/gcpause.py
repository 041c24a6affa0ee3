"""The cyclic garbage collector, paused while the console script starts.

Start-up builds only long-lived state: several hundred modules, their classes and compiled
patterns, pydantic's validators, pytest's plugin manager and collected items. The cyclic
collector walks all of it again and again while it is built (gen-2 passes over a growing heap:
about a quarter of ``aicr-pytest validate --no-cluster``, measured by ``benchmarks/bench_startup.py``)
and frees next to nothing. The console script (:mod:`aicr_pytest.entry`) calls :func:`pause` first;
:func:`resume` runs once that state exists (the plugin, after collection; the CLI, before any
other long-running command): it moves every live object into the permanent generation
(``gc.freeze``, so later passes skip them) and turns collection back on for the run itself.

A process that never paused (``pytest`` itself, the test suite calling :func:`aicr_pytest.cli.main`)
is left alone: :func:`resume` only undoes :func:`pause`.
"""

from __future__ import annotations

import gc

__all__ = ["pause", "paused", "resume"]

_paused = False


def pause() -> None:
    """Stop cyclic collection until :func:`resume` (no-op when the collector is already off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Undo :func:`pause`: freeze what start-up built, collect again. No-op if not paused here."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def paused() -> bool:
    """Whether :func:`pause` is in effect."""
    return _paused
