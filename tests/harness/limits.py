"""Per-test time limits (pytest-timeout) by stage: the directory directly under ``tests/``.

Every test under ``tests/`` gets :data:`DEFAULT_LIMIT_S`; the stages that drive a real control plane,
a browser or registries get :data:`STAGE_LIMITS_S` instead (``tests/conftest.py`` imports the hooks).
The limits are markers, not the ``timeout`` ini value: the bundled checks, run from this checkout,
read the same ``pyproject.toml`` and must have no limit.  A ``timeout`` ini value given with ``-o``
replaces the default (not the stage limits).  Generous on purpose: a limit turns a hang into a
failure with every thread's stack, it does not time the suite.  A ``--timeout`` on the command line
applies to every test; a test's own ``timeout`` marker wins over its stage.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent.parent

#: seconds per test in the long stages
STAGE_LIMITS_S = {"cluster": 900, "controlplane": 900, "browser": 900, "evidence": 900}
#: seconds per test everywhere else under tests/
DEFAULT_LIMIT_S = 300


def stage_of(path: Path) -> str | None:
    """The directory directly under ``tests/`` that holds ``path`` (``None`` outside one)."""
    try:
        parts = path.resolve().relative_to(TESTS_DIR).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("timeout") or config.getoption("timeout") is not None:
        return
    ini_limit = bool(config.getini("timeout"))
    for item in items:
        stage = stage_of(item.path)
        if stage is None or item.get_closest_marker("timeout") is not None:
            continue
        limit = STAGE_LIMITS_S.get(stage, None if ini_limit else DEFAULT_LIMIT_S)
        if limit is not None:
            item.add_marker(pytest.mark.timeout(limit))


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """On an xdist worker, pytest-timeout's "thread" method with its report on stderr.

    A worker's stdout is ``/dev/null`` (execnet's channel owns the real one), so the stacks that
    pytest-timeout writes to the terminal would be lost and CI would only say the worker crashed;
    its stderr reaches the controller's. Elsewhere pytest-timeout sets its own timer.
    """
    if settings.method != "thread" or not hasattr(item.config, "workerinput"):
        return None
    timer = threading.Timer(settings.timeout, _expire_on_stderr, (item, settings))
    timer.name = f"timeout {item.nodeid}"

    def cancel() -> None:
        timer.cancel()
        timer.join()

    item.cancel_timeout = cancel  # type: ignore[attr-defined]  # pytest-timeout's cancel hook calls it
    timer.start()
    return True


def _expire_on_stderr(item: pytest.Item, settings: Any) -> None:
    from pytest_timeout import timeout_timer

    capman = item.config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.suspend_global_capture(in_=True)
    sys.stdout.flush()
    os.dup2(2, 1)
    timeout_timer(item, settings)  # writes the captured output and every thread's stack, then exits
