"""``aicr-pytest snapshot`` on the real control plane as an identity bound to ``deploy/rbac-snapshot.yaml``.

The test applies the manifest's two ClusterRoles and their bindings (renamed per test; the agent role
bound with RoleBindings in the agent namespace and in the ``cm://`` output's namespace) to a fresh
ServiceAccount, mints its token with the TokenRequest API, and runs the command in-process with a
kubeconfig holding that token. The real apiserver's RBAC judges every request, the real scheduler
places the agent on a kwok H100 node, the real Job controller and garbage collector run it and clean
up, and :class:`~tests.harness.controlplane_players.SnapshotAgent` plays the pod's log (the real
``collect.sh`` from its ConfigMap).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_pytest.cli import main
from aicr_pytest.core import yamlio
from aicr_pytest.core.inputs import evaluate_readiness
from aicr_pytest.core.recipe import parse_recipe
from aicr_pytest.core.snapshot import load_snapshot_text
from aicr_pytest.core.sources import load_source
from tests.harness.backends import K8sBackend
from tests.harness.controlplane import write_kubeconfig

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy" / "rbac-snapshot.yaml"
H100_RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SA = "aicr-pytest-snapshot"
AGENT_SELECTOR = "app.kubernetes.io/name=aicr-pytest-snapshot-agent"

pytestmark = pytest.mark.parametrize("k8s_backend", ["controlplane"], indirect=True)


def bound_identity(backend: K8sBackend, agent_ns: str, out_ns: str, tmp: Path) -> Path:
    """The manifest applied for a fresh ServiceAccount in ``agent_ns``; returns its kubeconfig."""
    from tests.harness.backends import ControlPlaneBackend

    assert isinstance(backend, ControlPlaneBackend)
    cp = backend.cp
    suffix = agent_ns.rsplit("-", 1)[-1]
    objects: list[dict[str, Any]] = []
    for doc in (d for d in yaml.safe_load_all(MANIFEST.read_text()) if d):
        doc = copy.deepcopy(doc)
        kind, meta = doc["kind"], doc["metadata"]
        if kind == "ClusterRole":
            meta["name"] = f"{meta['name']}-{suffix}"
        elif kind == "ServiceAccount":
            meta["namespace"] = agent_ns
        else:
            doc["roleRef"]["name"] = f"{doc['roleRef']['name']}-{suffix}"
            doc["subjects"] = [{"kind": "ServiceAccount", "name": SA, "namespace": agent_ns}]
            meta["name"] = f"{meta['name']}-{suffix}"
            if kind == "RoleBinding":
                meta["namespace"] = agent_ns
                objects.append({**copy.deepcopy(doc), "metadata": {**meta, "namespace": out_ns}})
        objects.append(doc)
    backend.seed(sorted(objects, key=lambda d: d["kind"] != "ClusterRole"))
    answer = cp.request(
        "POST",
        f"/api/v1/namespaces/{agent_ns}/serviceaccounts/{SA}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    return write_kubeconfig(
        tmp / "snapshot.kubeconfig",
        server=cp.server,
        ca_cert=cp.ca_cert,
        user="aicr-pytest-snapshot",
        token=answer["status"]["token"],
    )


@pytest.fixture
def identity(k8s_backend: K8sBackend, tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    k8s_backend.seed_profile("h100-eks-training")
    agent_ns, out_ns = k8s_backend.namespace("default"), k8s_backend.namespace("kube-public")
    yield bound_identity(k8s_backend, agent_ns, out_ns, tmp_path), agent_ns, out_ns


def test_capture_as_the_snapshot_identity_writes_a_configmap_that_passes_readiness(
    k8s_backend: K8sBackend, identity: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, agent_ns, out_ns = identity
    code = main(
        [
            "snapshot",
            "-k",
            str(kubeconfig),
            "-n",
            agent_ns,
            "-o",
            f"cm://{out_ns}/captured",
            "--timeout",
            "2m",
            # the control plane always has H100 and GB200 GPU nodes; the scheduler may pick either,
            # and this test reads an H100's facts against the H100 recipe
            "--node-selector",
            "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    assert not [line for line in err.splitlines() if line.startswith(("WARNING", "aicr-pytest: error"))], err
    assert k8s_backend.controller_errors() == []

    def read(namespace: str, name: str) -> dict[str, str]:
        found = k8s_backend.find("v1", "ConfigMap", name, namespace)
        assert found is not None
        return dict(found.get("data") or {})

    body, label = load_source(f"cm://{out_ns}/captured", kind="snapshot", configmap_reader=read)
    assert label == f"cm://{out_ns}/captured (key snapshot.yaml)"
    snap = load_snapshot_text(body, label)
    assert snap.lookup("K8s.node.source-node").startswith("gpu-h100-")
    assert snap.lookup("K8s.policy.driver.version") and snap.lookup("GPU.hardware.model") == "h100"
    recipe, _ = parse_recipe(yamlio.load(H100_RECIPE.read_text()), str(H100_RECIPE))
    readiness = evaluate_readiness(recipe, snap)
    assert readiness.results and all(r.passed for r in readiness.results), readiness.results
    for api_version, kind in (("batch/v1", "Job"), ("v1", "Pod"), ("v1", "ConfigMap")):
        assert k8s_backend.list(api_version, kind, agent_ns, label_selector=AGENT_SELECTOR) == []


def test_the_snapshot_identity_cannot_create_a_namespace(
    k8s_backend: K8sBackend, identity: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, agent_ns, _ = identity
    missing = f"{agent_ns}-absent"
    assert main(["snapshot", "-k", str(kubeconfig), "-n", missing, "-o", "-"]) == 8
    captured = capsys.readouterr()
    assert captured.out == ""
    errors = [line for line in captured.err.splitlines() if line.startswith("aicr-pytest: error")]
    assert errors == [
        f"aicr-pytest: error: [INTERNAL] the agent namespace {missing} does not exist and cannot be created "
        f'(RBAC denied: cannot create namespaces "{missing}" (403 Forbidden)); pass an existing one with '
        "--namespace"
    ], captured.err
    assert k8s_backend.find("v1", "Namespace", missing) is None
