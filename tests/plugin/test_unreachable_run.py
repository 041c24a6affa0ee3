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
