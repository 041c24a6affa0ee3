"""The control-plane harness's components die with the test process, however it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.harness.controlplane import pid_exists

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")

PARENT = """
import subprocess, sys
from tests.harness.controlplane import _die_with_parent
child = subprocess.Popen(["sleep", "120"], start_new_session=True, preexec_fn=_die_with_parent)
print(child.pid, flush=True)
sys.stdin.read()
"""


def _reap_check(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_exists(pid) or _is_zombie(pid):
            return True
        time.sleep(0.05)
    return False


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def test_a_component_is_terminated_when_the_test_process_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert pid_exists(child) and not _is_zombie(child)
        parent.send_signal(signal.SIGKILL)  # no atexit, no fixture teardown
        parent.wait(timeout=10)
        assert _reap_check(child), "the component outlived the killed test process"
    finally:
        if pid_exists(child) and not _is_zombie(child):
            os.kill(child, signal.SIGKILL)
