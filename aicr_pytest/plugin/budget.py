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
from collections.abc import Callable, Iterator
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


#: ``cut(message)``: end the check now, as its budget would, with ``message`` (any thread may call it)
Cut = Callable[[str], None]


@contextlib.contextmanager
def enforced(seconds: float | None, message: str) -> Iterator[Cut]:
    """Within the block, :class:`CheckTimeout` (``message``) once ``seconds`` have passed; the
    block gets a :data:`Cut` that ends the check at once with another line (the cluster was found
    unreachable: :mod:`aicr_pytest.kube.reach`)."""
    thread_id = threading.get_ident()
    main = threading.current_thread() is threading.main_thread()
    use_signal = main and BUDGET_SIGNAL is not None and hasattr(signal, "pthread_kill")
    state: dict[str, object] = {"fired": False, "done": False, "message": message}

    def handler(signum: int, frame: FrameType | None) -> None:
        if state["fired"] and not state["done"]:
            state["done"] = True
            raise CheckTimeout(str(state["message"]))

    def fire() -> None:
        if state["done"] or state["fired"]:
            return
        state["fired"] = True
        if use_signal:
            assert BUDGET_SIGNAL is not None
            signal.pthread_kill(thread_id, BUDGET_SIGNAL)
        else:
            state["done"] = True
            _raise_in(thread_id, type("CheckTimeout", (CheckTimeout,), {"message": str(state["message"])}))

    def cut(line: str) -> None:
        if not state["fired"]:
            state["message"] = line
        fire()

    previous = signal.signal(BUDGET_SIGNAL, handler) if use_signal and BUDGET_SIGNAL is not None else None
    timer = None
    if seconds is not None and seconds > 0:
        timer = threading.Timer(seconds, fire)
        timer.daemon = True
        timer.start()
    try:
        yield cut
    finally:
        state["done"] = True
        if timer is not None:
            timer.cancel()
            timer.join()
        if use_signal and BUDGET_SIGNAL is not None:
            signal.signal(BUDGET_SIGNAL, previous if previous is not None else signal.SIG_DFL)


__all__ = ["BUDGET_SIGNAL", "CheckTimeout", "Cut", "enforced"]
