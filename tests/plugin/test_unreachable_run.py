"""``aicr-pytest validate`` against a cluster it cannot reach: one line naming the server, the class
and the fix, before any check; every selected check ``other`` with that line; the CTRF written;
exit 8 (a phase ended other); all within the reach bound.  Real processes, a loopback proxy
(tests/harness/brokenapi.py) for the broken server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.harness.brokenapi import BrokenApi
from tests.plugin.helpers import make_recipe
from tests.plugin.test_cli import write

CHECKS = ["operator-health", "expected-resources"]


def _kubeconfig(tmp_path: Path, server: str) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "prod", "cluster": {"server": server}}],
        "users": [{"name": "alice", "user": {"token": "abc"}}],
        "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "alice"}}],
        "current-context": "prod",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    ("mode", "what"),
    [
        ("refuse", "connection refused"),
        ("stall", "no answer within 1s"),
        (503, "503 from the API server"),
        (401, "401 Unauthorized (the credential was refused)"),
    ],
)
def test_an_unreachable_cluster_is_one_line_and_every_check_other(
    tmp_path: Path, mode: str | int, what: str
) -> None:
    rp, sp = write(tmp_path, make_recipe(deployment=CHECKS))
    with BrokenApi(mode=mode) as proxy:
        server = proxy.url("http")
        kubeconfig = _kubeconfig(tmp_path, server)
        ctrf = tmp_path / "ctrf.json"
        start = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "aicr_pytest.cli", "validate", "-r", rp, "-s", sp,
             "--kubeconfig", str(kubeconfig), "--reach-timeout", "1s", "-o", str(ctrf)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        took = time.monotonic() - start
    assert proc.returncode == 8, proc.stderr
    line = f"cannot reach the cluster at {server} (context prod, user alice): {what}; "
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("aicr-pytest: error:")]
    assert len(errors) == 1 and errors[0].startswith("aicr-pytest: error: " + line), proc.stderr
    tests = json.loads(ctrf.read_text())["results"]["tests"]
    assert {t["name"]: t["status"] for t in tests} == dict.fromkeys(CHECKS, "other")
    assert all(t["message"].startswith(line) for t in tests)
    assert took < 30.0


#: a check that creates a ConfigMap, then polls the cluster the way a readiness wait does
#: (catching every API error), until the cluster goes away under it
POLLING = """
import pathlib, time, pytest

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held"}, "data": {"k": "v"}}

@pytest.mark.check("operator-health")
def test_polls(aicr_check, aicr_run, aicr_cluster):
    aicr_run.ensure_namespace()
    aicr_run.create(CM)
    pathlib.Path("started").write_text(aicr_run.run_id)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            list(aicr_cluster.list("v1", "namespaces"))
        except Exception:
            pass
        time.sleep(0.2)

@pytest.mark.check("expected-resources")
def test_after(aicr_check, aicr_cluster):
    list(aicr_cluster.list("v1", "namespaces"))
"""


def test_a_cluster_lost_mid_run_ends_the_running_check_and_names_what_is_left(tmp_path: Path) -> None:
    from aicr_pytest.testing.clock import RealClock
    from aicr_pytest.testing.cluster import FakeCluster

    (tmp_path / "test_checks.py").write_text(POLLING)
    rp, sp = write(tmp_path, make_recipe(deployment=CHECKS))
    with FakeCluster("h100-eks-training", clock=RealClock()) as fc, BrokenApi(fc.url, mode="pass") as proxy:
        kubeconfig = proxy.kubeconfig(fc.kubeconfig_path, tmp_path / "kubeconfig", scheme="http")
        proc = subprocess.Popen(
            [sys.executable, "-m", "aicr_pytest.cli", "validate", "-r", rp, "-s", sp,
             "--kubeconfig", str(kubeconfig), "--reach-timeout", "1s", "--phase", "deployment",
             "-o", str(tmp_path / "ctrf.json"),
             "--", "-p", "no:cacheprovider", "--aicr-no-bundled-checks", str(tmp_path / "test_checks.py")],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 90
        while not (tmp_path / "started").exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        time.sleep(0.5)
        proxy.set_mode("stall")
        lost = time.monotonic()
        _, err = proc.communicate(timeout=90)
        took = time.monotonic() - lost
    assert proc.returncode == 8, err
    server = proxy.url("http")
    line = f"cannot reach the cluster at {server} (context aicr-fake, user aicr-fake-user): "
    line += "no answer within 1s"
    errors = [ln for ln in err.splitlines() if ln.startswith("aicr-pytest: error:")]
    assert len(errors) == 1 and errors[0].startswith("aicr-pytest: error: " + line), err  # once
    tests = {t["name"]: t for t in json.loads((tmp_path / "ctrf.json").read_text())["results"]["tests"]}
    assert {n: t["status"] for n, t in tests.items()} == dict.fromkeys(CHECKS, "other")
    assert all(t["message"].startswith(line) for t in tests.values())
    run_id = (tmp_path / "started").read_text()
    assert f"held-{run_id}" in err  # cleanup was attempted, and what it could not delete is named
    assert took < 30.0


def test_a_cm_recipe_from_a_silent_cluster_is_one_line_within_the_bound(tmp_path: Path) -> None:
    _, sp = write(tmp_path, make_recipe(deployment=CHECKS))
    with BrokenApi(mode="stall") as proxy:
        kubeconfig = _kubeconfig(tmp_path, proxy.url("http"))
        start = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "aicr_pytest.cli", "validate", "-r", "cm://gpu-operator/recipe", "-s", sp,
             "--kubeconfig", str(kubeconfig), "--reach-timeout", "1s"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        took = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == [
        f"ERROR: cannot read recipe from cm://gpu-operator/recipe: cannot reach the cluster at "
        f"{proxy.url('http')} (context prod, user alice): no answer within 1s; something between here and "
        f"{proxy.url('http')} holds the connection (a proxy, a firewall, a stopped control plane): check the "
        "network path, or raise --reach-timeout"
    ]
    assert proc.stdout == ""
    assert took < 30.0


def test_snapshot_against_an_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    with BrokenApi(mode="refuse") as proxy:
        kubeconfig = _kubeconfig(tmp_path, proxy.url("http"))
        proc = subprocess.run(
            [sys.executable, "-m", "aicr_pytest.cli", "snapshot", "--kubeconfig", str(kubeconfig)],
            capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 8, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln]
    assert errors == [
        f"aicr-pytest: error: [INTERNAL] cannot reach the cluster at {proxy.url('http')} (context prod, "
        "user alice): connection refused; check that context prod is the cluster you mean (kubectl config "
        f"get-contexts) and that its server address {proxy.url('http')} is up and reachable from here"
    ]
