"""No report is lost silently: an output that cannot be written at the end of a run ends it
non-zero with one last line naming the path and the errno (the bytes go to a temporary file), on
both entry points; ``-o cm://namespace/name`` is probed before any work."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.badinput.validate_cases import FILES

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")

ENOSPC = "the output could not be written: ENOSPC (No space left on device); it was written to "


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("output-loss")
    for name in ("ok.yaml", "snap.yaml"):
        (tmp / name).write_text(FILES[name])
    return tmp


def _run(scratch: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AICR_")}
    env["KUBECONFIG"] = str(scratch / "no-kubeconfig")
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, env=env, cwd=scratch, timeout=120
    )


def _last_line_fallback(stderr: str, head: str) -> Path:
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    match = re.fullmatch(re.escape(head) + r"(\S+) instead", last)
    assert match, last
    return Path(match.group(1))


OFF = ["-r", "ok.yaml", "-s", "snap.yaml", "--no-cluster"]


@pytest.mark.parametrize(
    ("argv", "head"),
    [
        (["-o", "/dev/full"], "CTRF report /dev/full: "),
        (["-o", "ctrf.json", "--html", "/dev/full"], "--html /dev/full: "),
        (["-o", "ctrf.json", "--", "--junitxml=/dev/full"], "--junitxml /dev/full: "),
    ],
    ids=["ctrf", "html", "junit"],
)
def test_validate_into_a_full_device_exits_8_and_names_path_and_errno(
    scratch: Path, argv: list[str], head: str
) -> None:
    proc = _run(scratch, "-m", "aicr_pytest.cli", "validate", *OFF, *argv)
    assert proc.returncode == 8, proc.stderr
    fallback = _last_line_fallback(proc.stderr, "aicr-pytest: error: " + head + ENOSPC)
    assert fallback.stat().st_size > 0  # the report itself is kept
    fallback.unlink()


def test_plain_pytest_junit_and_ctrf_into_a_full_device_exit_1_without_traceback(scratch: Path) -> None:
    proc = _run(
        scratch,
        *("-m", "pytest", "-p", "no:cacheprovider", "--recipe", "ok.yaml", "--snapshot", "snap.yaml"),
        *("--aicr-no-cluster", "--junitxml", "/dev/full", "--aicr-ctrf-report", "/dev/full"),
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()[-2:]
    junit = _last_line_fallback(lines[0], "aicr-pytest: error: --junitxml /dev/full: " + ENOSPC)
    ctrf = _last_line_fallback(lines[1], "aicr-pytest: error: CTRF report /dev/full: " + ENOSPC)
    assert junit.read_text().startswith("<?xml") and '"results"' in ctrf.read_text()
    assert f"generated xml file: {junit}" in proc.stdout  # where it is, not where it is not
    junit.unlink()
    ctrf.unlink()


def test_junit_is_written_whole_and_the_summary_names_it(scratch: Path) -> None:
    proc = _run(
        scratch,
        *("-m", "pytest", "-p", "no:cacheprovider", "--recipe", "ok.yaml", "--snapshot", "snap.yaml"),
        *("--aicr-no-cluster", "--junitxml", "out/j.xml"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (scratch / "out" / "j.xml").read_text().startswith("<?xml")
    assert f"generated xml file: {scratch / 'out' / 'j.xml'}" in proc.stdout
    assert [p.name for p in (scratch / "out").iterdir()] == ["j.xml"]  # no temporary file left


def test_a_configmap_output_in_a_missing_namespace_is_refused_before_any_work(scratch: Path) -> None:
    proc = _run(
        scratch,
        *("-m", "aicr_pytest.cli", "validate", "-r", "ok.yaml", "-s", "snap.yaml"),
        *("--simulate", "h100-eks-training", "-o", "cm://missing-ns/report"),
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "aicr-pytest: error: --output cm://missing-ns/report: cannot write the report there: "
        'create configmaps "report" in namespace missing-ns: 404 Not Found: namespaces "missing-ns" not found'
    )
    assert "test session starts" not in proc.stderr  # nothing ran


def _failing_capture(monkeypatch: pytest.MonkeyPatch, outcome: BaseException | None) -> None:
    from aicr_pytest.snapshot import capture

    def fake(**kwargs: object) -> tuple[None, int]:
        if outcome is not None:
            raise outcome
        emit = kwargs["emit"]
        assert callable(emit)
        emit("aicr-pytest: error: failed to capture snapshot: [TIMEOUT] the agent did not finish within 5m0s")
        return None, 5

    monkeypatch.setattr(capture, "capture_for_validate", fake)


@pytest.mark.parametrize(
    ("outcome", "code", "reason", "interrupted"),
    [
        (None, 5, "failed to capture snapshot: [TIMEOUT] the agent did not finish within 5m0s", None),
        (KeyboardInterrupt(), 5, "the snapshot capture was interrupted", "SIGINT"),
    ],
    ids=["failed", "interrupted"],
)
def test_a_capture_that_ends_the_run_still_writes_the_report(
    scratch: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    outcome: BaseException | None,
    code: int,
    reason: str,
    interrupted: str | None,
) -> None:
    import json

    from aicr_pytest.cli import main

    _failing_capture(monkeypatch, outcome)
    out = tmp_path / "ctrf.json"
    assert main(["validate", "-r", str(scratch / "ok.yaml"), "-o", str(out)]) == code
    report = json.loads(out.read_text())
    assert report["results"]["tests"] == [] and report["results"]["summary"]["tests"] == 0
    assert report["extra"]["aicr.notRun"] == reason
    assert report["extra"].get("aicr.interrupted") == interrupted
    assert capsys.readouterr().out == ""


def test_a_snapshot_configmap_in_a_missing_namespace_is_refused_before_the_capture(scratch: Path) -> None:
    from aicr_pytest.testing.clock import RealClock
    from aicr_pytest.testing.cluster import FakeCluster

    with FakeCluster("h100-eks-training", clock=RealClock()) as fc:
        proc = _run(
            scratch,
            *("-m", "aicr_pytest.cli", "snapshot", "--kubeconfig", str(fc.kubeconfig_path)),
            *("-o", "cm://missing-ns/snap"),
        )
        pods = fc.store.resource("", "v1", "pods")
        assert pods is not None
        agents = [p for p in fc.store.list(pods, None)["items"] if "snapshot" in p["metadata"]["name"]]
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        'aicr-pytest: error: cannot write snapshot to cm://missing-ns/snap: create configmaps "snap" in '
        'namespace missing-ns: 404 Not Found: namespaces "missing-ns" not found'
    ]
    assert agents == []  # no agent was started
