"""The suite cannot hang: self-signalling tests pass with SIGINT inherited as ignored, and every test
has a time limit that fails a hang with every thread's stack (pytest-timeout, tests/harness/limits.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from subprocess import PIPE, STDOUT

import pytest

from tests.harness.limits import DEFAULT_LIMIT_S, STAGE_LIMITS_S, TESTS_DIR, stage_of

REPO = TESTS_DIR.parent

#: the tests that send themselves (or their child) SIGINT and wait for the KeyboardInterrupt
SELF_SIGNALLING = (
    "tests/cluster/test_snapshot_capture.py::test_signal_mid_capture_leaves_nothing_behind"
    "[fake-2-KeyboardInterrupt]",
    "tests/cluster/test_facade_scenario.py::test_keyboard_interrupt_mid_wait_still_cleans_up[fake]",
    "tests/plugin/test_runtime.py::test_interrupt_writes_reports_and_marks_unfinished_other"
    "[validate-2-interrupted by SIGINT-5]",
)

#: ``cmd`` as a background job of a non-interactive shell, which starts it with SIGINT ignored (POSIX)
BACKGROUND_JOB = ("bash", "-c", '"$@" & wait $!', "bash")


def run_bounded(cmd: Sequence[str], bound_s: float, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Exit status and stdout + stderr; past ``bound_s`` the test fails and the whole group is killed."""
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=PIPE, stderr=STDOUT, text=True, process_group=0)
    try:
        out, _ = proc.communicate(timeout=bound_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} still running after {bound_s:.0f}s:\n{out}")
    return proc.returncode, out


def nested_pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]


def test_a_background_job_starts_with_sigint_ignored() -> None:
    """The premise of the next test: what such a job inherits (Python then installs no handler)."""
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
    code, out = run_bounded([*BACKGROUND_JOB, sys.executable, "-c", probe], 60)
    assert (code, out.strip()) == (0, "True")


def test_the_self_signalling_tests_pass_in_a_background_job(tmp_path: Path) -> None:
    """Before they installed their SIGINT handler, these waited out their ten-minute watch here."""
    code, out = run_bounded(
        [*BACKGROUND_JOB, *nested_pytest("-n", "0", f"--basetemp={tmp_path / 'run'}", *SELF_SIGNALLING)], 240
    )
    assert code == 0, out
    assert f"{len(SELF_SIGNALLING)} passed" in out, out


@pytest.mark.parametrize("workers", ["0", "1"])
def test_a_hanging_test_fails_with_every_threads_stack(tmp_path: Path, workers: str) -> None:
    """Under the suite's configuration (its ini, its hooks), also on an xdist worker as in CI."""
    hang = tmp_path / "test_hang.py"
    hang.write_text("import time\n\n\ndef test_hangs():\n    time.sleep(120)\n")
    cmd = nested_pytest(
        *("-c", str(REPO / "pyproject.toml"), "--rootdir", str(REPO), "-p", "tests.harness.limits"),
        *("-n", workers, "-o", "timeout=2", f"--basetemp={tmp_path / 'run'}", str(hang)),
    )
    code, out = run_bounded(cmd, 90)
    assert code == 1, out
    assert "+ Timeout +" in out and "~ Stack of " in out, out
    assert f'{hang}", line 5, in test_hangs\n    time.sleep(120)' in out, out
    if workers != "0":
        assert "worker 'gw0' crashed while running" in out, out


def test_every_stage_gives_each_test_its_limit(tmp_path: Path) -> None:
    """One test file of each stage, collected as the suite collects them: the limit pytest-timeout uses."""
    (tmp_path / "limits_probe.py").write_text(
        "from pytest_timeout import _get_item_settings\n\n\n"
        "def pytest_collection_finish(session):\n"
        "    for item in session.items:\n"
        "        s = _get_item_settings(item)\n"
        "        print('LIMIT', s.timeout, s.method, item.nodeid)\n"
    )
    stages = sorted({p.parent for p in TESTS_DIR.glob("*/test_*.py")})
    files = [str(min(d.glob("test_*.py"))) for d in stages]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    code, out = run_bounded(nested_pytest("--co", "-n", "0", "-p", "limits_probe", *files), 180, env)
    assert code == 0, out
    ini = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "timeout" not in ini  # the bundled checks read this file too: no limit there
    default = float(DEFAULT_LIMIT_S)
    seen: set[str] = set()
    for line in out.splitlines():
        if line.startswith("LIMIT "):
            _, limit, method, nodeid = line.split(" ", 3)
            stage = stage_of(REPO / nodeid.split("::")[0]) or ""
            seen.add(stage)
            assert (float(limit), method) == (STAGE_LIMITS_S.get(stage, default), "thread"), line
    assert seen == {d.name for d in stages}
    assert set(STAGE_LIMITS_S) <= seen and all(limit > default for limit in STAGE_LIMITS_S.values())


def test_the_bundled_checks_run_from_this_checkout_have_no_time_limit(tmp_path: Path) -> None:
    """``aicr-pytest validate`` in the repository finds its pyproject.toml: a check (inference-perf
    runs for up to 65 minutes) must not inherit the test suite's per-test limit."""
    (tmp_path / "limits_probe.py").write_text(
        "from pytest_timeout import _get_item_settings\n\n\n"
        "def pytest_collection_finish(session):\n"
        "    for item in session.items:\n"
        "        print('LIMIT', _get_item_settings(item).timeout, item.nodeid)\n"
    )
    example = REPO / "recipes" / "examples"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    cmd = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "limits_probe", "--co", "-q",
        "--recipe", str(example / "h100-eks-training.yaml"),
        "--snapshot", str(example / "h100-eks-training-snapshot.yaml"), "--aicr-no-cluster",
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False)
    limits = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("LIMIT ")]
    assert limits and set(limits) == {"None"}, proc.stdout + proc.stderr
