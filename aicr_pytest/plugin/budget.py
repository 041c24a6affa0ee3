"""A check's time budget, enforced while its test function runs: past it the check ends ``other``.

:func:`enforced` arms a timer thread for the budget (wall-clock seconds: the budget bounds the real
run, whatever clock a check's waits use).  When it runs out, :class:`CheckTimeout` is raised in the
check's thread: in the main thread through a signal of its own (:data:`BUDGET_SIGNAL`, sent to that
thread only), so a blocking wait or API call is cut short too; in any other thread as an
asynchronous exception.  ``SIGALRM`` stays the whole-run deadline's (``--timeout``), and nothing
here needs pytest-timeout, so budgets hold in xdist workers as in a single process.

:class:`CheckTimeout` derives from ``BaseException``, so a check's ``except Exception`` cannot
swallow it; pytest reports it like any error of the call, the plugin maps it to ``other`` with its
one line (:func:`aicr_pytest.core.budgets.exceeded_message`), and the teardown that follows cleans
up the check's run-scoped objects as after any other error.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Final

#: the signal that stops the check's main thread (SIGUSR2; SIGALRM is the whole-run deadline's)
BUDGET_SIGNAL: Final = getattr(signal, "SIGUSR2", None)


class CheckTimeout(BaseException):
    """The check ran past its budget; ``str()`` is the one line it reports."""

    message: str = "timeout"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message)


def _raise_in(thread_id: int, kind: type[CheckTimeout]) -> None:
    """An asynchronous :class:`CheckTimeout` in another thread (raised at its next bytecode)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(kind))


@contextlib.contextmanager
def enforced(seconds: float | None, message: str) -> Iterator[None]:
    """Within the block, :class:`CheckTimeout` (``message``) once ``seconds`` have passed."""
    if seconds is None or seconds <= 0:
        yield
        return
    thread_id = threading.get_ident()
    main = threading.current_thread() is threading.main_thread()
    use_signal = main and BUDGET_SIGNAL is not None and hasattr(signal, "pthread_kill")
    state = {"fired": False, "done": False}

    def handler(signum: int, frame: FrameType | None) -> None:
        if state["fired"] and not state["done"]:
            state["done"] = True
            raise CheckTimeout(message)

    def fire() -> None:
        if state["done"]:
            return
        state["fired"] = True
        if use_signal:
            assert BUDGET_SIGNAL is not None
            signal.pthread_kill(thread_id, BUDGET_SIGNAL)
        else:
            state["done"] = True
            _raise_in(thread_id, type("CheckTimeout", (CheckTimeout,), {"message": message}))

    previous = signal.signal(BUDGET_SIGNAL, handler) if use_signal and BUDGET_SIGNAL is not None else None
    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        state["done"] = True
        timer.cancel()
        timer.join()
        if use_signal and BUDGET_SIGNAL is not None:
            signal.signal(BUDGET_SIGNAL, previous if previous is not None else signal.SIG_DFL)


__all__ = ["BUDGET_SIGNAL", "CheckTimeout", "enforced"]
