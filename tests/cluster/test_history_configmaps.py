"""``--history cm://NAMESPACE/NAME`` on both backends: a bounded ring of ConfigMaps that
``aicr-pytest history cm://…`` reads back, and ``--baseline auto`` finds the last passing run in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import cli
from aicr_pytest.core import yamlio
from aicr_pytest.kube.client import connect
from aicr_pytest.report import cmhistory as cmh
from tests.cluster.check_runner import PhaseRun, run_on_backend
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
NAME = "aicr-history-test"
TARGET = f"cm://default/{NAME}"


def _run(pytester: pytest.Pytester, backend: K8sBackend, *extra: str) -> PhaseRun:
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["validation"] = {"deployment": {"checks": ["operator-health"]}}
    drive = None
    if backend.virtual_time:
        from _facade_helpers import fake_of

        drive = fake_of(backend).auto_advancing()
    return run_on_backend(
        pytester, backend, phase="deployment", recipe=doc, snapshot=SNAPSHOT, extra=extra, drive=drive
    )


def _ring(backend: K8sBackend) -> list[dict[str, Any]]:
    return list(backend.list("v1", "ConfigMap", "default", label_selector=f"{cmh.HISTORY_LABEL}={NAME}"))


def _clear(backend: K8sBackend) -> None:
    admin = connect(str(backend.kubeconfig_path))
    for obj in _ring(backend):
        admin.delete("v1", "ConfigMap", obj["metadata"]["name"], "default", missing_ok=True)


def test_the_ring_keeps_the_newest_runs_and_history_reads_them(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    k8s_backend.seed_profile(PROFILE)
    _clear(k8s_backend)
    try:
        _scenario(pytester, k8s_backend, capsys)
    finally:
        _clear(k8s_backend)


def _scenario(pytester: pytest.Pytester, k8s_backend: K8sBackend, capsys: pytest.CaptureFixture[str]) -> None:
    ids = []
    for _ in range(3):
        run = _run(pytester, k8s_backend, "--aicr-history", TARGET, "--aicr-history-keep", "2")
        assert run.tests["operator-health"]["status"] == "passed"
        ids.append(run.run_id)
    ring = _ring(k8s_backend)
    assert sorted(o["metadata"]["labels"][cmh.RUN_LABEL] for o in ring) == sorted(ids[1:])
    assert [r.run_id for r in cmh.records_of(ring)] == ids[1:]

    auto = _run(pytester, k8s_backend, "--aicr-history", TARGET, "--aicr-baseline", "auto")
    assert auto.report["baseline"]["extra"] == {"aicr.runId": ids[2]}

    capsys.readouterr()
    kubeconfig = str(k8s_backend.restricted_kubeconfig_path)
    assert cli.main(["history", TARGET, "--kubeconfig", kubeconfig, "--last", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[1] for line in lines[:2]] == [ids[2], auto.run_id]
