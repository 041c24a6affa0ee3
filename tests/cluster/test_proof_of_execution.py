"""Proof of execution end to end: every check that passes on what a pod printed first proves the pod ran.

Each family's check runs through pytester against a FakeCluster profile whose kubelet is made to
report what a real one would not (:meth:`~aicr_pytest.testing.simulator.Simulator.tamper_container_statuses`:
an empty ``imageID``, a container that never started), or whose nodes carry KWOK's fake-node
annotation.  Without proof the check is ``other`` with the one line saying why, whatever its pods
printed; ``--allow-fake-nodes`` (or ``execution.allowFakeNodes``) accepts the fake nodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.kube import proof
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.store import Obj
from tests.cluster._facade_helpers import clock_driver
from tests.cluster.check_runner import PhaseRun, run_on_fake

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "recipes" / "examples"
TRAINING = EXAMPLES / "h100-eks-training.yaml"
TRAINING_SNAPSHOT = EXAMPLES / "h100-eks-training-snapshot.yaml"
DRA = EXAMPLES / "h100-eks-training-dra.yaml"
INFERENCE = EXAMPLES / "h100-eks-inference.yaml"
INFERENCE_SNAPSHOT = EXAMPLES / "h100-eks-inference-snapshot.yaml"
PROFILE = "h100-eks-training"
LAST_NODE = "h100-3"


def recipe(base: Path, phase: str, *checks: str) -> dict[str, Any]:
    doc: dict[str, Any] = yamlio.load(base.read_text())
    doc["validation"] = {phase: {"checks": list(checks)}}
    return doc


def run_check(
    pytester: pytest.Pytester, fc: FakeCluster, phase: str, check: str, *extra: str, base: Path = TRAINING
) -> dict[str, Any]:
    snapshot = INFERENCE_SNAPSHOT if base == INFERENCE else TRAINING_SNAPSHOT
    # a performance check keeps the recipe's constraints; NCCL's watches need a driven clock
    doc = yamlio.load(base.read_text()) if phase == "performance" else recipe(base, phase, check)
    drive = clock_driver(fc, step=0.25) if check.startswith("nccl-") else None
    run: PhaseRun = run_on_fake(
        pytester, fc, phase=phase, recipe=doc, snapshot=snapshot, extra=extra, drive=drive
    )
    test: dict[str, Any] = run.tests[check]
    return test


# -- what a real kubelet would not report -------------------------------------------------------
def empty_image_id(cs: Obj) -> None:
    cs["imageID"] = ""


def never_started(cs: Obj) -> None:
    """A terminated state without ``startedAt`` (kwok-style: nothing ran)."""
    for key in ("state", "lastState"):
        term = (cs.get(key) or {}).get("terminated")
        if term:
            term.pop("startedAt", None)


def on_node(node: str) -> Callable[[Obj], bool]:
    return lambda pod: (pod.get("spec") or {}).get("nodeName") == node


def with_label(key: str, value: str | None = None) -> Callable[[Obj], bool]:
    def accepts(pod: Obj) -> bool:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return key in labels and (value is None or labels[key] == value)

    return accepts


def fake_nodes(fc: FakeCluster) -> None:
    """KWOK's fake-node annotation on every node of the cluster."""
    rt = fc.store.resolve("v1", "Node")
    for node in fc.list("v1", "Node"):

        def mark(n: Obj) -> None:
            n["metadata"].setdefault("annotations", {})[proof.KWOK_NODE_KEY] = proof.KWOK_FAKE

        fc.store.mutate(rt, None, node["metadata"]["name"], mark)


def refused_then_allowed(
    pytester: pytest.Pytester, factory: Any, profile: str, phase: str, check: str, base: Path = TRAINING
) -> str:
    """Run ``check`` on a cluster whose nodes are all KWOK's fakes twice: without
    ``--allow-fake-nodes`` it is ``other`` (its message is returned), with it it passes."""
    outcomes = []
    for extra in ((), ("--aicr-allow-fake-nodes",)):
        fc = factory(profile)
        fake_nodes(fc)
        outcomes.append(run_check(pytester, fc, phase, check, *extra, base=base))
    refused, allowed = outcomes
    assert refused["status"] == "other", refused.get("message")
    assert allowed["status"] == "passed", allowed.get("message")
    return str(refused["message"])


def no_proof(why: str, node: str = r"[a-z0-9-]+") -> str:
    """The one line of a pod without proof, as a regex (the pod's name is run-scoped)."""
    return rf"no proof of execution for pod [a-z0-9-]+/[a-z0-9-]+ on node {node}: {re.escape(why)}"


FAKE = proof.WHY_FAKE_NODE


# -- check-nvidia-smi -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("node", "change", "why"),
    [
        (LAST_NODE, empty_image_id, "container nvidia-smi-verify-container has an empty imageID"),
        ("h100-0", never_started, "container nvidia-smi-verify-container never started (no startedAt)"),
    ],
)
def test_nvidia_smi_pod_without_proof_is_other_naming_the_node(
    pytester: pytest.Pytester,
    aicr_fake_cluster_factory: Any,
    node: str,
    change: Callable[[Obj], None],
    why: str,
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fc.sim.tamper_container_statuses(on_node(node), change)
    test = run_check(pytester, fc, "deployment", "check-nvidia-smi")
    assert test["status"] == "other", test.get("message")
    assert re.fullmatch(
        rf"\[INTERNAL\] GPU verification failed on 1/4 nodes: \[{node} \({no_proof(why, node)}\)\]",
        test["message"],
    ), test["message"]


def test_nvidia_smi_on_kwok_fake_nodes_is_refused_unless_allowed(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    message = refused_then_allowed(
        pytester, aicr_fake_cluster_factory, PROFILE, "deployment", "check-nvidia-smi"
    )
    assert message.startswith("[INTERNAL] GPU verification failed on 4/4 nodes: [h100-0 (")
    for node in ("h100-0", "h100-1", "h100-2", "h100-3"):
        assert re.search(rf"{node} \({no_proof(FAKE, node)}\)", message), message


def test_the_config_key_allows_fake_nodes(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fake_nodes(fc)
    config = pytester.path / "aicr-config.yaml"
    config.write_text("kind: AICRConfig\nspec:\n  validate:\n    execution: {allowFakeNodes: true}\n")
    test = run_check(pytester, fc, "deployment", "check-nvidia-smi", "--aicr-config", str(config))
    assert test["status"] == "passed", test.get("message")


# -- gpu-diagnostics --------------------------------------------------------------------------------
DIAG = with_label("app.kubernetes.io/name", "aicr-dcgm-diag")


def test_diagnostics_pod_with_an_empty_image_id_is_other_naming_the_node(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fc.sim.tamper_container_statuses(lambda pod: DIAG(pod) and on_node("h100-2")(pod), empty_image_id)
    test = run_check(pytester, fc, "deployment", "gpu-diagnostics")
    assert test["status"] == "other"
    assert re.fullmatch(
        no_proof("container dcgm-diag has an empty imageID", "h100-2"), test["message"].splitlines()[0]
    ), test["message"]


def test_diagnostics_on_kwok_fake_nodes_is_refused_unless_allowed(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    message = refused_then_allowed(
        pytester, aicr_fake_cluster_factory, PROFILE, "deployment", "gpu-diagnostics"
    )
    assert re.fullmatch(no_proof(FAKE, "h100-0"), message.splitlines()[0]), message


def test_a_failing_diag_still_fails_on_its_document(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    """dcgmi diag exits non-zero when a test fails: the proof accepts the exit code, the document decides."""
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-diag-fail"])
    test = run_check(pytester, fc, "deployment", "gpu-diagnostics", "--aicr-dcgm-diag-level", "2")
    assert test["status"] == "failed"
    assert test["message"].startswith(f"node {LAST_NODE} GPU 7 (serial ")


# -- NCCL -----------------------------------------------------------------------------------------------
LAUNCHER = with_label("jobset.sigs.k8s.io/replicatedjob-name", "launcher")
NCCL = "nccl-all-reduce-bw"


def test_nccl_launcher_with_an_empty_image_id_is_other(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fc.sim.tamper_container_statuses(LAUNCHER, empty_image_id)
    test = run_check(pytester, fc, "performance", NCCL)
    assert test["status"] == "other", test.get("message")
    assert re.fullmatch(no_proof("container node has an empty imageID"), test["message"]), test["message"]


def test_nccl_on_kwok_fake_nodes_is_refused_unless_allowed(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    message = refused_then_allowed(pytester, aicr_fake_cluster_factory, PROFILE, "performance", NCCL)
    assert re.fullmatch(no_proof(FAKE), message), message


# -- inference ------------------------------------------------------------------------------------------
def test_aiperf_pod_that_never_started_is_other(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-inference")
    fc.sim.tamper_container_statuses(with_label("batch.kubernetes.io/job-name"), never_started)
    test = run_check(pytester, fc, "performance", "inference-perf", base=INFERENCE)
    assert test["status"] == "other", test.get("message")
    assert re.fullmatch(no_proof("container aiperf never started (no startedAt)"), test["message"])


# -- conformance probes -------------------------------------------------------------------------------
def test_secure_access_gpu_pod_with_an_empty_image_id_is_other(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fc.sim.tamper_container_statuses(lambda pod: True, empty_image_id)
    test = run_check(pytester, fc, "conformance", "secure-accelerator-access")
    assert test["status"] == "other", test.get("message")
    assert re.fullmatch(
        no_proof("container gpu-test has an empty imageID; container unauthorized has an empty imageID"),
        test["message"],
    ), test["message"]


def test_gang_workers_that_never_started_are_other(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fc.sim.tamper_container_statuses(lambda pod: True, never_started)
    test = run_check(pytester, fc, "conformance", "gang-scheduling")
    assert test["status"] == "other", test.get("message")
    assert re.fullmatch(no_proof("container worker never started (no startedAt)"), test["message"])


def test_dra_test_pod_on_kwok_fake_nodes_is_refused_unless_allowed(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    message = refused_then_allowed(
        pytester, aicr_fake_cluster_factory, "h100-eks-training-dra", "conformance", "dra-support", base=DRA
    )
    assert re.fullmatch(no_proof(FAKE), message), message
