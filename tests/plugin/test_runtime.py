"""The runtime of a run: interrupts and the deadline, output streams, readiness lines (both entry points)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest

from aicr_pytest.plugin import interrupt, options
from tests.plugin.helpers import make_recipe
from tests.plugin.test_cli import EXAMPLE, EXAMPLE_SNAPSHOT, cli, write

CHECKS = """
import pathlib, time, pytest

@pytest.mark.check("operator-health")
def test_quick(aicr_check):
    aicr_check.emit("quick done")

@pytest.mark.check("expected-resources")
def test_slow(aicr_check):
    aicr_check.emit("slow started")
    pathlib.Path("started").write_text("1")
    time.sleep(60)

@pytest.mark.check("gpu-operator-version")
def test_never(aicr_check):
    pass
"""

#: the run deadline: validate keeps aicr's ``--timeout``; plain pytest spells it ``--aicr-timeout``
TIMEOUT_FLAGS = {"validate": ["--timeout", "2s"], "pytest": ["--aicr-timeout=2s"]}

NO_DEADLINE_CHECK = """
import signal
import pytest

@pytest.mark.check("operator-health")
def test_no_alarm(aicr_check):
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0, "a whole-run deadline was armed"
"""


def _entry(
    kind: str, rp: str, sp: str, out: Path, junit: Path, tests: Path, flags: Sequence[str] = ()
) -> list[str]:
    extra = ["-p", "no:cacheprovider", "--aicr-no-bundled-checks", f"--junitxml={junit}", str(tests)]
    if kind == "validate":
        return [
            sys.executable,
            "-m",
            "aicr_pytest.cli",
            "validate",
            "-r",
            rp,
            "-s",
            sp,
            "-o",
            str(out),
            *flags,
            "--",
            *extra,
        ]
    entry = [sys.executable, "-m", "pytest", "--recipe", rp, "--snapshot", sp, f"--aicr-ctrf-report={out}"]
    return [*entry, *flags, *extra]


def _run_until_started(cmd: list[str], cwd: Path, sig: int | None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while not (cwd / "started").exists():
        assert time.monotonic() < deadline, "the slow check never started"
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    if sig is not None:
        time.sleep(0.3)
        proc.send_signal(sig)
    out, err = proc.communicate(timeout=90)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _setup(tmp_path: Path, conftest: str | None = None) -> tuple[str, str, Path, Path, Path]:
    tests = tmp_path / "test_checks.py"
    tests.write_text(CHECKS)
    if conftest is not None:
        (tmp_path / "conftest.py").write_text(conftest)
    rp, sp = write(
        tmp_path, make_recipe(deployment=["operator-health", "expected-resources", "gpu-operator-version"])
    )
    return rp, sp, tmp_path / "ctrf.json", tmp_path / "junit.xml", tests


def _assert_interrupted(proc: subprocess.CompletedProcess[str], out: Path, junit: Path, reason: str) -> None:
    report = json.loads(out.read_text())
    tests = {t["name"]: t for t in report["results"]["tests"]}
    assert tests["operator-health"]["status"] == "passed"
    assert tests["operator-health"]["stdout"] == ["quick done"]
    for name in ("expected-resources", "gpu-operator-version"):
        assert tests[name]["status"] == "other", tests[name]
        assert tests[name]["message"] == reason
        assert tests[name]["extra"]["aicr.interrupted"] is True
    assert report["extra"]["aicr.interrupted"] == reason
    assert report["results"]["summary"]["other"] == 2
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {
        "test_quick[operator-health]",
        "test_slow[expected-resources]",
        "test_never[gpu-operator-version]",
    }
    failure = cases["test_never[gpu-operator-version]"].find("failure")
    assert failure is not None and failure.get("message") == reason
    table = [
        line for line in proc.stderr.splitlines() + proc.stdout.splitlines() if line.startswith("deployment ")
    ]
    assert table and table[0].split()[1] == "interrupted", table


@pytest.mark.usefixtures("sigint_raises")  # the child inherits SIGINT's default action
@pytest.mark.parametrize(
    ("kind", "sig", "reason", "code"),
    [
        ("validate", signal.SIGINT, interrupt.SIGINT_REASON, 5),
        ("validate", signal.SIGTERM, interrupt.SIGTERM_REASON, 5),
        ("pytest", signal.SIGINT, interrupt.SIGINT_REASON, 2),
        ("pytest", signal.SIGTERM, interrupt.SIGTERM_REASON, 2),
    ],
)
def test_interrupt_writes_reports_and_marks_unfinished_other(
    tmp_path: Path, kind: str, sig: int, reason: str, code: int
) -> None:
    rp, sp, out, junit, tests = _setup(tmp_path)
    proc = _run_until_started(_entry(kind, rp, sp, out, junit, tests), tmp_path, sig)
    assert proc.returncode == code, proc.stderr
    _assert_interrupted(proc, out, junit, reason)


@pytest.mark.parametrize(("kind", "code"), [("validate", 5), ("pytest", 2)])
def test_whole_run_deadline_ends_the_run_like_an_interrupt(tmp_path: Path, kind: str, code: int) -> None:
    rp, sp, out, junit, tests = _setup(tmp_path)
    cmd = _entry(kind, rp, sp, out, junit, tests, TIMEOUT_FLAGS[kind])
    proc = _run_until_started(cmd, tmp_path, None)
    assert proc.returncode == code, proc.stderr
    _assert_interrupted(proc, out, junit, "timed out after 2s")


@pytest.mark.parametrize("kind", ["validate", "pytest"])
def test_the_default_timeout_bounds_no_run(tmp_path: Path, kind: str) -> None:
    """``--timeout``'s 5m default is the snapshot agent's wait: it never arms a whole-run deadline."""
    tests = tmp_path / "test_checks.py"
    tests.write_text(NO_DEADLINE_CHECK)
    rp, sp = write(tmp_path, make_recipe(deployment=["operator-health"]))
    out, junit = tmp_path / "ctrf.json", tmp_path / "junit.xml"
    proc = subprocess.run(
        _entry(kind, rp, sp, out, junit, tests), capture_output=True, text=True, cwd=tmp_path, timeout=180
    )
    report = json.loads(out.read_text())
    assert [t["status"] for t in report["results"]["tests"]] == ["passed"], (report, proc.stderr)


def test_arm_deadline_raises_in_the_main_thread_and_disarms() -> None:
    disarm = interrupt.arm_deadline(0.2)
    with pytest.raises(interrupt.RunInterrupted) as info:
        time.sleep(5)
    assert info.value.reason == "timed out after 200ms"
    disarm()
    disarm = interrupt.arm_deadline(0.2)
    disarm()
    time.sleep(0.4)  # disarmed: nothing is raised


@pytest.mark.parametrize(
    ("value", "seconds"), [(None, None), ("", None), ("0", None), ("5m", 300.0), (90, 90.0), ("1m30s", 90.0)]
)
def test_timeout_seconds(value: object, seconds: float | None) -> None:
    assert interrupt.timeout_seconds(value) == seconds


@pytest.mark.parametrize("value", ["5 minutes", "-1s", True])
def test_timeout_seconds_rejects(value: object) -> None:
    with pytest.raises(ValueError):
        interrupt.timeout_seconds(value)


# --- output streams and readiness lines ------------------------------------------------------------


def test_output_file_leaves_stdout_empty(tmp_path: Path) -> None:
    out = tmp_path / "ctrf.json"
    proc = cli("validate", "-r", str(EXAMPLE), "-s", str(EXAMPLE_SNAPSHOT), "--no-cluster", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "aicr phase summary" in proc.stderr and "readiness constraint passed: " in proc.stderr
    assert json.loads(out.read_text())["results"]["tests"]


def test_stdout_is_only_the_ctrf_without_output() -> None:
    proc = cli("validate", "-r", str(EXAMPLE), "-s", str(EXAMPLE_SNAPSHOT), "--no-cluster")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["reportFormat"] == "CTRF"  # nothing else on stdout


READINESS = [
    {"name": "K8s.server.version", "value": ">= 1.32"},
    {"name": "OS.release.ID", "value": "ubuntu"},
]


@pytest.mark.parametrize("kind", ["validate", "pytest"])
def test_readiness_logs_each_passing_constraint(tmp_path: Path, kind: str) -> None:
    rp, sp = write(tmp_path, make_recipe(constraints=READINESS, deployment=["operator-health"]))
    if kind == "validate":
        proc = cli("validate", "-r", rp, "-s", sp, "--no-cluster", "-o", str(tmp_path / "c.json"))
        text = proc.stderr
    else:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "--recipe",
                rp,
                "--snapshot",
                sp,
                "--aicr-no-cluster",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=dict(os.environ),
            timeout=120,
            check=False,
        )
        text = proc.stdout
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in text.splitlines() if line.startswith("readiness constraint")]
    assert lines == [
        'readiness constraint passed: name=K8s.server.version expected=">= 1.32" actual=v1.33.5-eks-abc',
        'readiness constraint passed: name=OS.release.ID expected="ubuntu" actual=ubuntu',
    ]


# --- progress lines ---------------------------------------------------------------------------------

PROGRESS_CHECK = """
import time, pytest
from aicr_pytest.core import progress
from aicr_pytest.core.clock import SYSTEM_CLOCK

@pytest.mark.check("operator-health")
def test_waits(aicr_check):
    end = SYSTEM_CLOCK.time() + 30
    waiting = progress.Waiting("the operator", clock=SYSTEM_CLOCK, deadline=end, every=0.2)
    for _ in range(8):
        time.sleep(0.1)
        waiting.tick("2/3 ready")
"""


@pytest.mark.parametrize("kind", ["validate", "validate-xdist", "pytest-xdist"])
def test_progress_lines_reach_stderr_while_the_check_runs(tmp_path: Path, kind: str) -> None:
    (tmp_path / "test_waits.py").write_text(PROGRESS_CHECK)
    rp, sp = write(tmp_path, make_recipe(deployment=["operator-health"]))
    extra = ["-p", "no:cacheprovider", "--aicr-no-bundled-checks", str(tmp_path / "test_waits.py")]
    if kind.endswith("xdist"):
        extra += ["-n", "2"]
    if kind.startswith("validate"):
        cmd = [
            sys.executable,
            "-m",
            "aicr_pytest.cli",
            "validate",
            "-r",
            rp,
            "-s",
            sp,
            "-o",
            "c.json",
            "--",
            *extra,
        ]
    else:
        cmd = [sys.executable, "-m", "pytest", "--recipe", rp, "--snapshot", sp, *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if "waiting for the operator" in line]
    assert len(lines) >= 2, proc.stderr
    assert all(line.startswith("operator-health: waiting for the operator: 2/3 ready; ") for line in lines), (
        lines
    )
    assert all(line.endswith("s left") for line in lines)
    assert "waiting for" not in proc.stdout


# --- concise failures, phase table, measurements ---------------------------------------------------

FAILING_CHECKS = """
import pytest
from aicr_pytest.core import records

def helper():
    raise RuntimeError("API server unreachable: connection refused")

@pytest.mark.check("operator-health")
def test_other(aicr_check):
    helper()

@pytest.mark.check("expected-resources")
def test_failed(aicr_check):
    assert 1 == 2, "gpu-operator Deployment not ready\\nsecond line"

@pytest.mark.check("nccl-all-reduce-bw")
def test_bw(aicr_check):
    aicr_check.measure(records.Measurement(name="bus bandwidth", value=452.64, unit="GB/s",
                                           constraint=">= 300", tolerance=0.1, effective_threshold=270.0,
                                           passed=True))

@pytest.mark.check("inference-perf")
def test_perf(aicr_check):
    aicr_check.measure(records.Measurement(name="inference TTFT p99", value=2500.0, unit="ms",
                                           constraint="<= 2000", tolerance=0.1, effective_threshold=2200.0,
                                           passed=False))
    aicr_check.fail("TTFT p99 2500.00 ms does not satisfy <= 2000")
"""


def _failing_run(
    tmp_path: Path, kind: str, *extra: str, columns: int = 200, ci: bool = False
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_failing.py").write_text(FAILING_CHECKS)
    recipe = make_recipe(
        deployment=["operator-health", "expected-resources"],
        performance=["nccl-all-reduce-bw", "inference-perf"],
    )
    rp, sp = write(tmp_path, recipe)
    args = ["-p", "no:cacheprovider", "--aicr-no-bundled-checks", str(tmp_path / "test_failing.py"), *extra]
    if kind == "validate":
        cmd = [
            sys.executable,
            "-m",
            "aicr_pytest.cli",
            "validate",
            "-r",
            rp,
            "-s",
            sp,
            "-o",
            "c.json",
            "--",
            *args,
        ]
    else:
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "--recipe",
            rp,
            "--snapshot",
            sp,
            "--aicr-ctrf-report=c.json",
            *args,
        ]
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")}
    env["COLUMNS"] = str(columns)
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        cmd, capture_output=True, text=True, cwd=tmp_path, timeout=180, check=False, env=env
    )


def test_failure_lines_are_cut_at_the_terminal_width_except_on_ci(tmp_path: Path) -> None:
    proc = _failing_run(tmp_path, "pytest", columns=60)
    first = _section(proc.stdout, "aicr failures")[0]
    assert first == "OTHER operator-health (deployment): RuntimeError: API serve…"  # 60 columns
    on_ci = _failing_run(tmp_path, "pytest", columns=60, ci=True)  # as pytest's own summary: uncut
    first = _section(on_ci.stdout, "aicr failures")[0]
    assert first == (
        "OTHER operator-health (deployment): RuntimeError: API server unreachable: connection refused"
    )


def _section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if f" {title} " in line and line.startswith("-"))
    body = []
    for line in lines[start + 1 :]:
        if line.startswith(("---", "===")):
            break
        if line:
            body.append(line)
    return body


@pytest.mark.parametrize("kind", ["validate", "pytest"])
def test_failures_are_one_line_each_with_where_to_look(tmp_path: Path, kind: str) -> None:
    proc = _failing_run(tmp_path, kind)
    text = proc.stderr if kind == "validate" else proc.stdout
    assert proc.returncode == (8 if kind == "validate" else 1), text
    assert _section(text, "aicr failures") == [
        "OTHER operator-health (deployment): RuntimeError: API server unreachable: connection refused",
        "FAILED expected-resources (deployment): gpu-operator Deployment not ready second line",
        "FAILED inference-perf (performance): TTFT p99 2500.00 ms does not satisfy <= 2000",
        "details: CTRF report c.json" + ("; full tracebacks with --debug" if kind == "validate" else ""),
    ]
    if kind == "validate":  # no traceback unless asked for
        assert "def helper" not in text and "Traceback" not in text and "FAILURES" not in text
        assert proc.stdout == ""


def test_pytest_tb_after_double_dash_shows_the_traceback(tmp_path: Path) -> None:
    proc = _failing_run(tmp_path, "validate", "--tb=long")
    assert "def helper():" in proc.stderr and 'raise RuntimeError("API server unreachable' in proc.stderr


@pytest.mark.parametrize("kind", ["validate", "pytest"])
def test_measurements_shown_against_their_constraints(tmp_path: Path, kind: str) -> None:
    proc = _failing_run(tmp_path, kind)
    text = proc.stderr if kind == "validate" else proc.stdout
    assert _section(text, "aicr measurements") == [
        "nccl-all-reduce-bw: bus bandwidth 452.64 GB/s against >= 300 (bound 270 after tolerance): passed",
        "inference-perf: inference TTFT p99 2500 ms against <= 2000 (bound 2200 after tolerance): failed",
    ]


@pytest.mark.parametrize("kind", ["validate", "pytest"])
def test_unselected_phases_are_not_in_the_phase_table(tmp_path: Path, kind: str) -> None:
    proc = _failing_run(tmp_path, kind, "-m", "performance")
    text = proc.stderr if kind == "validate" else proc.stdout
    assert [line.split()[0] for line in _section(text, "aicr phase summary")] == ["phase", "performance"]


@pytest.mark.parametrize(
    ("extra", "loaded"),
    [
        ([], False),
        (["-k", "nccl"], False),
        (["-n", "2"], True),
        (["-n2"], True),
        (["-nauto"], True),
        (["--numprocesses=4"], True),
        (["--dist", "loadgroup"], True),
        (["-p", "xdist"], True),
    ],
)
def test_validate_loads_xdist_only_when_asked(extra: list[str], loaded: bool) -> None:
    from aicr_pytest import cli as cli_module

    args = cli_module._pytest_args(options.RunSettings({}), extra=["--", *extra])
    assert ("no:xdist" in args) is not loaded
    if extra:
        assert args[-len(extra) :] == extra
