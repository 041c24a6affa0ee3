"""`--html PATH` through the plugin (plain pytest, also under -n 2) and `aicr-pytest validate --html`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aicr_pytest.plugin import options
from tests.html_dom import Dom, read_page, table_rows
from tests.plugin.helpers import make_recipe, read_ctrf
from tests.plugin.test_cli import cli, write
from tests.plugin.test_plugin import USER_CHECKS

Inputs = Callable[..., tuple[Path, Path]]

FIGURE_CHECKS = """
import pytest
from aicr_pytest.core.records import Measurement

SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20">'
       '<rect x="1" y="1" width="30" height="10" fill="#1f77b4"/><text x="2" y="18">FIGURE-TEXT</text></svg>')

@pytest.mark.check("operator-health")
def test_operator_health(aicr_check):
    aicr_check.emit("RESULT: operator pods running: 1/1")
    aicr_check.measure(Measurement(name="pods", value=1, unit="pods", constraint=">= 1", passed=True))
    aicr_check.fact("node", "gpu-node-7")
    aicr_check.figure("a small figure", SVG)

@pytest.mark.check("dra-support")
def test_dra(aicr_check):
    aicr_check.fail("no DeviceClass gpu.nvidia.com")
"""

INTERRUPTING_CHECKS = """
import pytest

@pytest.mark.check("operator-health")
def test_operator_health(aicr_check):
    aicr_check.emit("before the interrupt")

@pytest.mark.check("expected-resources")
def test_expected_resources(aicr_check):
    raise KeyboardInterrupt

@pytest.mark.check("dra-support")
def test_dra(aicr_check):
    aicr_check.emit("never runs")
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--aicr-no-bundled-checks", *args)


def articles(dom: Dom) -> list[tuple[str, str]]:
    return [(a["data-check"], a["data-status"]) for a, _ in dom.find("article")]


def test_html_lists_every_check_failing_first(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    rp, sp = write_inputs(
        make_recipe(
            deployment=["operator-health", "expected-resources", "gpu-operator-version", "check-nvidia-smi"],
            conformance=["dra-support"],
        )
    )
    page, ctrf = pytester.path / "out" / "report.html", pytester.path / "ctrf.json"
    result = run(
        pytester,
        "test_user.py",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-html",
        str(page),
        "--aicr-ctrf-report",
        str(ctrf),
    )
    assert result.ret != 0
    dom = read_page(page)
    assert articles(dom) == [
        ("expected-resources", "failed"),
        ("check-nvidia-smi", "other"),
        ("operator-health", "passed"),
        ("gpu-operator-version", "skipped"),
        ("dra-support", "passed"),
    ]
    # the page's phase table is the terminal's
    rows = {r[0]: r for r in table_rows(dom) if r and r[0] in ("deployment", "conformance", "performance")}
    assert rows["deployment"] == ["deployment", "FAILED", "1", "1", "1", "1"]
    assert rows["conformance"] == ["conformance", "PASSED", "1", "0", "0", "0"]
    assert "performance" not in rows  # the recipe has no performance check: not validated, no row
    result.stdout.fnmatch_lines(["deployment*failed*1*1*1*1"])
    run_id = read_ctrf(ctrf)["extra"]["aicr.runId"]
    assert dom.find("dd", id="run-id")[0][1] == run_id
    assert "Kubernetes server" in page.read_text() and "v1.33.5-eks-abc" in page.read_text()
    assert "operator pods running: 1/1" in [t for _, t in dom.find("li")]


def test_xdist_figures_reach_the_controller_and_stay_out_of_ctrf(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    pytester.makepyfile(test_user=FIGURE_CHECKS)
    rp, sp = write_inputs(make_recipe(deployment=["operator-health"], conformance=["dra-support"]))
    page, ctrf = pytester.path / "report.html", pytester.path / "ctrf.json"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--aicr-no-bundled-checks",
        "test_user.py",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-html",
        str(page),
        "--aicr-ctrf-report",
        str(ctrf),
    )
    assert result.ret != 0
    dom = read_page(page)
    assert articles(dom) == [("dra-support", "failed"), ("operator-health", "passed")]
    (svg,) = dom.find("svg")
    assert "FIGURE-TEXT" in svg[1] and dom.find("figcaption")[0][1] == "a small figure"
    assert [a["data-verdict"] for a, _ in dom.find("tr") if "data-verdict" in a] == ["passed"]
    assert "gpu-node-7" in [t for _, t in dom.find("dd")]
    text = ctrf.read_text()
    assert "FIGURE-TEXT" not in text and "<svg" not in text
    extra = {t["name"]: t.get("extra", {}) for t in read_ctrf(ctrf)["results"]["tests"]}
    assert extra["operator-health"]["aicr.measurements"][0]["value"] == 1.0
    assert extra["operator-health"]["aicr.facts"] == {"node": "gpu-node-7"}


def test_interrupted_run_still_writes_the_page(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    pytester.makepyfile(test_user=INTERRUPTING_CHECKS)
    rp, sp = write_inputs(
        make_recipe(deployment=["operator-health", "expected-resources"], conformance=["dra-support"])
    )
    page = pytester.path / "report.html"
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--aicr-no-bundled-checks",
        "test_user.py",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-html",
        str(page),
        no_reraise_ctrlc=True,
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    dom = read_page(page)
    assert dom.find("p", id="verdict")[0][0]["data-status"] == "interrupted"
    (alert,) = dom.find("p", id="interrupted")
    assert "Not finished: expected-resources (deployment), dra-support (conformance)." in alert[1]
    # the unfinished checks are on the page as `other`, "interrupted by SIGINT" (plugin.interrupt)
    assert sorted(articles(dom)) == [
        ("dra-support", "other"),
        ("expected-resources", "other"),
        ("operator-health", "passed"),
    ]


def test_html_to_a_directory_is_a_usage_error(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    rp, sp = write_inputs()
    result = run(pytester, "--recipe", str(rp), "--snapshot", str(sp), "--aicr-html", str(pytester.path))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --html {pytester.path}: is a directory"])


def test_readiness_block_page(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    rp, sp = write_inputs(
        make_recipe(
            constraints=[{"name": "K8s.server.version", "value": ">= 1.34"}], deployment=["operator-health"]
        )
    )
    page = pytester.path / "report.html"
    result = run(
        pytester, "test_user.py", "--recipe", str(rp), "--snapshot", str(sp), "--aicr-html", str(page)
    )
    assert result.ret != 0
    dom = read_page(page)
    assert dom.find("p", id="verdict")[0][0]["data-status"] == "failed"
    assert [
        (a["data-constraint"], a["data-status"]) for a, _ in dom.find("tr") if "data-constraint" in a
    ] == [("K8s.server.version", "failed")]
    assert articles(dom) == [("operator-health", "skipped")]


def test_html_spelling_leaves_pytest_html_alone(pytester: pytest.Pytester) -> None:
    opt = options.by_name()["html"]
    # plain pytest: the namespaced spelling only, so pytest-html's --html never clashes with ours
    assert opt.flags_for(options.PYTEST) == ("--aicr-html",)
    assert opt.flags_for(options.VALIDATE) == ("--html",)
    assert opt.to_args(options.PYTEST, "r.html") == ["--aicr-html=r.html"]
    assert pytester.parseconfig("--aicr-html", "b.html").option.aicr_html == "b.html"
    with pytest.raises(pytest.UsageError):  # --html is not ours under plain pytest
        pytester.parseconfig("--html", "c.html")


# ------------------------------------------------------------------------------ aicr-pytest validate --
def test_validate_html(tmp_path: Path) -> None:
    rp, sp = write(tmp_path, make_recipe(deployment=["operator-health"], performance=["inference-perf"]))
    page = tmp_path / "report.html"
    proc = cli("validate", "-r", rp, "-s", sp, "--no-cluster", "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)  # CTRF still goes to stdout, the page to its file
    dom = read_page(page)
    assert articles(dom) == [("operator-health", "skipped"), ("inference-perf", "skipped")]
    assert "--no-cluster (offline: snapshot only)" in [t for _, t in dom.find("dd")]


SLOW_CHECK = """
import time, pathlib, pytest

@pytest.mark.check("operator-health")
def test_slow(aicr_check):
    aicr_check.emit("started")
    pathlib.Path("started").write_text("1")
    time.sleep(60)
"""


def test_validate_sigterm_writes_an_interrupted_page(tmp_path: Path) -> None:
    (tmp_path / "test_slow.py").write_text(SLOW_CHECK)
    rp, sp = write(tmp_path, make_recipe(deployment=["operator-health"]))
    page = tmp_path / "report.html"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aicr_pytest.cli",
            "validate",
            "-r",
            rp,
            "-s",
            sp,
            "--html",
            str(page),
            "--",
            "-p",
            "no:cacheprovider",
            "--aicr-no-bundled-checks",
            str(tmp_path / "test_slow.py"),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the check never started"
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 5, err
    dom = read_page(page)
    assert dom.find("p", id="verdict")[0][0]["data-status"] == "interrupted"
    assert "Not finished: operator-health (deployment)." in dom.find("p", id="interrupted")[0][1]
