"""``aicr-pytest schedule`` on the real control plane, and a run as the ServiceAccount it creates.

1. ``schedule`` applies the Namespace, ServiceAccount, RBAC (with the opt-in node-marks role),
   recipe/snapshot ConfigMaps and CronJob; a second ``schedule`` changes nothing (every object
   ``unchanged``, every ``resourceVersion`` the same).
2. In-cluster mode: with ``KUBERNETES_SERVICE_HOST``/``_PORT`` and the ServiceAccount's token and the
   CA as the pod's files (a TokenRequest token for the rendered ServiceAccount) and no kubeconfig at
   all, a deployment-phase node-health run with ``--label-bad-nodes`` says so in its header line, gets
   no RBAC denial from the rendered role and labels the nodes; a request outside the role (listing
   Secrets) is refused by the real authorizer.
3. ``schedule --delete`` removes exactly what it created, and leaves an object of the same name that
   it did not create.

The apply time is printed (``schedule: applied N objects in S s``), the figure
``benchmarks/bench_schedule.py`` reports.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import urllib.error
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.cli import main
from aicr_pytest.kube import kubeconfig as kube_kubeconfig
from aicr_pytest.kube.errors import AccessDenied
from tests.cluster.test_node_health_backends import HEALTH, RECIPE, SNAPSHOT, gpu_nodes, run_health
from tests.cluster.test_node_marks import restore_nodes
from tests.harness.backends import ControlPlaneBackend, K8sBackend

pytestmark = pytest.mark.parametrize("k8s_backend", ["controlplane"], indirect=True)
DIGEST = "sha256:" + "b" * 64
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def _paths(ns: str) -> list[str]:
    return [
        f"/api/v1/namespaces/{ns}",
        f"/api/v1/namespaces/{ns}/serviceaccounts/aicr-pytest",
        f"{RBAC}/clusterroles/aicr-pytest-{ns}",
        f"{RBAC}/clusterrolebindings/aicr-pytest-{ns}",
        f"{RBAC}/clusterroles/aicr-pytest-node-marks-{ns}",
        f"{RBAC}/clusterrolebindings/aicr-pytest-node-marks-{ns}",
        f"/api/v1/namespaces/{ns}/configmaps/aicr-pytest-recipe",
        f"/api/v1/namespaces/{ns}/configmaps/aicr-pytest-snapshot",
        f"/apis/batch/v1/namespaces/{ns}/cronjobs/aicr-pytest",
    ]


def _versions(cp: Any, ns: str) -> dict[str, str]:
    return {path: cp.request("GET", path)["metadata"]["resourceVersion"] for path in _paths(ns)}


def _gone_or_going(cp: Any, path: str) -> bool:
    try:
        obj = cp.request("GET", path)
    except urllib.error.HTTPError as err:
        return err.code == 404
    return bool(obj["metadata"].get("deletionTimestamp"))


def _schedule(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    capsys.readouterr()
    assert main(["schedule", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_schedule_applies_idempotently_runs_in_cluster_and_deletes_exactly_its_objects(
    pytester: pytest.Pytester,
    k8s_backend: K8sBackend,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    assert isinstance(k8s_backend, ControlPlaneBackend)
    cp = k8s_backend.cp
    ns = f"aicr-sched-{secrets.token_hex(3)}"
    admin = ("-k", str(cp.admin_kubeconfig), "-n", ns)
    args = (
        *admin,
        "-r", str(RECIPE), "-s", str(SNAPSHOT), "--phase", "deployment", "--node-health",
        "--label-bad-nodes", "--image", f"registry.local/aicr-pytest@{DIGEST}",
    )  # fmt: skip
    try:
        first = _schedule(capsys, *args)
        assert [line.rsplit(" ", 1)[-1] for line in first[:-1]] == ["created"] * 9, first
        assert re.fullmatch(r"schedule: applied 9 objects in \d+\.\d\ds", first[-1]), first[-1]
        before = _versions(cp, ns)
        second = _schedule(capsys, *args)
        assert [line.rsplit(" ", 1)[-1] for line in second[:-1]] == ["unchanged"] * 9, second
        assert _versions(cp, ns) == before
        with capsys.disabled():  # the figure the benchmarks page reports
            print(f"\nfirst {first[-1]}; second {second[-1]}")
        cronjob = cp.request("GET", f"/apis/batch/v1/namespaces/{ns}/cronjobs/aicr-pytest")
        assert (cronjob["spec"]["concurrencyPolicy"], cronjob["spec"]["schedule"]) == (
            "Forbid",
            "0 */6 * * *",
        )

        # --- in-cluster mode, as the rendered ServiceAccount with the rendered RBAC ----------------
        token = cp.request(
            "POST",
            f"/api/v1/namespaces/{ns}/serviceaccounts/aicr-pytest/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600},
            },
        )["status"]["token"]
        (tmp_path / "token").write_text(token)
        monkeypatch.setattr(kube_kubeconfig, "_IN_CLUSTER_TOKEN", str(tmp_path / "token"))
        monkeypatch.setattr(kube_kubeconfig, "_IN_CLUSTER_CA", str(cp.ca_cert))
        host, port = re.fullmatch(r"https://([^:/]+):(\d+)/?", cp.server).groups()  # type: ignore[union-attr]
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
        monkeypatch.delenv("KUBECONFIG", raising=False)
        run = run_health(pytester, k8s_backend, *HEALTH, extra=("--aicr-label-bad-nodes",), in_cluster=True)
        out = run.result.stdout.str()
        assert "| live cluster (in-cluster service account) |" in out
        assert {n: run.tests[n]["status"] for n in HEALTH} == dict.fromkeys(HEALTH, "passed")
        marks = run.report["extra"]["aicr.nodeMarks"]
        assert [(m["node"], m["verdict"], m.get("error")) for m in marks] == [
            (n, "passed", None) for n in gpu_nodes(k8s_backend)
        ]
        from aicr_pytest.kube.client import connect

        cluster = connect(None, None)
        assert cluster.source == "in-cluster service account"
        with pytest.raises(AccessDenied):
            list(cluster.list("v1", "secrets", namespace=ns))
    finally:
        restore_nodes(cp)
        # an object of one of the names that the schedule did not create is left alone
        foreign = f"aicr-pytest-node-marks-{ns}"
        with contextlib.suppress(urllib.error.HTTPError):
            cp.request("DELETE", f"{RBAC}/clusterrolebindings/{foreign}")
        cp.request("POST", f"{RBAC}/clusterrolebindings", {
            "metadata": {"name": foreign},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "nobody"}],
        })  # fmt: skip
        monkeypatch.setenv("KUBECONFIG", str(cp.admin_kubeconfig))
        deleted = _schedule(capsys, "--delete", *admin)
        cp.request("DELETE", f"{RBAC}/clusterrolebindings/{foreign}")
    assert (
        f"schedule: ClusterRoleBinding {foreign} left alone (not created by aicr-pytest schedule)" in deleted
    )
    assert sum(line.endswith(" deleted") for line in deleted) == 8, deleted
    for path in _paths(ns):
        if foreign not in path or "clusterroles/" in path:
            assert _gone_or_going(cp, path), path
