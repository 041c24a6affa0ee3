"""Our CTRF passes the ``ctrf`` reference implementation's strict validation (npm, ctrf-io/ctrf-js).

``scripts/ctrf.sh install`` (a stage of the test command) puts the npm package into a cache
directory; this test runs ``node`` on it.  Outside CI a missing package or ``node`` skips with a
reason; ``AICR_REQUIRE_CTRF_JS=1`` (``.ci/run``) makes that a failure.  The report validated is a
real one: a rerun and flaky check, a failure with its trace, a simulated run's markings.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.plugin.helpers import ctrf_js_dir, make_recipe, read_ctrf

Inputs = Callable[..., tuple[Path, Path]]

VALIDATE_JS = """
const { validateStrict } = require(process.argv[1]);
const fs = require("fs");
try {
  validateStrict(JSON.parse(fs.readFileSync(process.argv[2], "utf8")));
  console.log("valid");
} catch (err) {
  console.log(err.message);
  process.exit(1);
}
"""

CHECKS = """
import pathlib
import pytest

COUNTER = pathlib.Path(__file__).with_name("attempts.txt")

@pytest.mark.check("operator-health")
def test_operator_health(aicr_check):
    aicr_check.emit("ok")

@pytest.mark.check("expected-resources")
def test_expected_resources(aicr_check):
    assert False, "DaemonSet nvidia-device-plugin 3/4 ready"

@pytest.mark.check("gpu-operator-version")
def test_gpu_operator_version(aicr_check):
    n = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(n + 1))
    assert n >= 1, "first attempt fails"
"""


@pytest.fixture(scope="module")
def ctrf_js() -> Path:
    """The installed ``ctrf`` npm package (``node_modules/ctrf``)."""
    package = ctrf_js_dir() / "node_modules" / "ctrf"
    missing = None
    if shutil.which("node") is None:
        missing = "node not found on PATH"
    elif not (package / "package.json").is_file():
        where = package.parent.parent
        missing = f"the ctrf npm package is not installed in {where} (bash scripts/ctrf.sh install)"
    if missing:
        if os.environ.get("AICR_REQUIRE_CTRF_JS") == "1":
            pytest.fail(missing + "; AICR_REQUIRE_CTRF_JS=1 makes this a failure")
        pytest.skip(missing)
    return package


def validate(package: Path, report: Path) -> tuple[int, str]:
    proc = subprocess.run(
        ["node", "-e", VALIDATE_JS, str(package), str(report)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc.returncode, (proc.stdout + proc.stderr).strip()


@pytest.mark.parametrize("extra_args", [(), ("--reruns", "1", "--aicr-simulated=h100-healthy")])
def test_our_ctrf_passes_strict_validation(
    pytester: pytest.Pytester, write_inputs: Inputs, ctrf_js: Path, extra_args: tuple[str, ...]
) -> None:
    checks = ["operator-health", "expected-resources", "gpu-operator-version"]
    rp, sp = write_inputs(make_recipe(deployment=checks))
    out = pytester.path / "ctrf.json"
    pytester.makepyfile(test_user=CHECKS)
    pytester.runpytest(
        "-p", "no:cacheprovider", "test_user.py", "--aicr-no-bundled-checks",
        f"--recipe={rp}", f"--snapshot={sp}", f"--aicr-ctrf-report={out}", *extra_args,
    )  # fmt: skip
    report = read_ctrf(out)
    assert report["results"]["summary"]["tests"] == 3
    assert validate(ctrf_js, out) == (0, "valid")


def test_the_validator_can_fail(tmp_path: Path, ctrf_js: Path) -> None:
    """A report the reference implementation must reject: the test above can fail."""
    bad = tmp_path / "bad.json"
    doc = {"reportFormat": "CTRF", "specVersion": "1.0.0", "reportId": "run-1", "results": {}}
    bad.write_text(json.dumps(doc))
    code, text = validate(ctrf_js, bad)
    assert code == 1 and text.startswith("CTRF validation failed:"), text
