"""The CNCF SHOULD checks end to end (``--cncf-should``): gpu-sharing, driver-runtime-management,
workload-sandboxing, high-performance-networking through pytester on both backends.

Each scenario runs the conformance phase as the least-privilege user (on the control plane: bound to
``deploy/rbac.yaml`` only). On the fake the sandbox player (:mod:`aicr_pytest.testing.players.sandbox`)
plays the isolation probe pod's findings; on the control plane
:class:`tests.harness.controlplane_players.SandboxProbe` does, for the pod the real scheduler bound to a
kwok node. Scenarios that rewrite nodes (kwok's are the harness's) or inject HTTP faults are
``fake_only`` with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from _facade_helpers import fake_of

import aicr_pytest.conformance
import aicr_pytest.core.inputs
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.conformance import driver_runtime, gpu_sharing, hp_networking, workload_sandboxing
from aicr_pytest.core import yamlio
from aicr_pytest.core.artifacts import EXTRA_KEY
from aicr_pytest.kube.client import RUN_ID_LABEL
from tests.cluster.check_runner import PhaseRun, run_on_backend
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
TRAINING = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
SHOULD = ("gpu-sharing", "driver-runtime-management", "workload-sandboxing", "high-performance-networking")
GVISOR = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "gvisor"},
    "handler": "runsc",
}


def recipe(*checks: str) -> dict[str, Any]:
    doc: dict[str, Any] = yamlio.load(TRAINING.read_text())
    doc["validation"] = {"conformance": {"checks": list(checks)}}
    return doc


def run(pytester: pytest.Pytester, backend: K8sBackend, doc: dict[str, Any], *extra: str) -> PhaseRun:
    drive = fake_of(backend).auto_advancing() if backend.virtual_time else None
    result = run_on_backend(
        pytester, backend, phase="conformance", recipe=doc, snapshot=SNAPSHOT, extra=extra, drive=drive
    )
    assert backend.controller_errors() == []
    return result


def artifacts(test: dict[str, Any]) -> dict[str, str]:
    return {a["label"]: a["data"] for a in (test.get("extra") or {}).get(EXTRA_KEY) or []}


def outcome(test: dict[str, Any]) -> tuple[str, str | None]:
    return test["status"], test.get("message")


SANDBOX_SUBTESTS = (
    "SchedulingAndExecution",
    "ProcessIsolation",
    "KernelAndMemoryIsolation",
    "FilesystemIsolation",
    "NetworkIsolation",
)


def subtest_results(test: dict[str, Any]) -> dict[str, str]:
    """The ``RESULT: TestWorkloadSandboxing/<Subtest>: WORD - ...`` lines of the check's CTRF stdout."""
    found: dict[str, str] = {}
    for line in test.get("stdout") or []:
        hit = re.match(r"^RESULT: TestWorkloadSandboxing/(\w+): (PASS|FAIL|OTHER) - \S", line)
        if hit:
            found[hit[1]] = hit[2]
    return found


def gpu_node_names(backend: K8sBackend) -> list[str]:
    return sorted(
        n["metadata"]["name"]
        for n in backend.list("v1", "Node", None, label_selector="nvidia.com/gpu.present=true")
    )


def test_the_training_profile_runs_no_sandbox_and_shares_no_gpu(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE)
    ev = pytester.path / "evidence"
    tests = run(pytester, k8s_backend, recipe(), "--aicr-cncf-should", "--aicr-evidence-dir", str(ev)).tests
    assert sorted(tests) == sorted(SHOULD)  # the recipe names none: --cncf-should adds all four
    nodes = gpu_node_names(k8s_backend)
    assert outcome(tests["gpu-sharing"]) == (
        "failed",
        "[NOT_FOUND] "
        + gpu_sharing.MSG_NOTHING_SHARED.format(count=len(nodes), looked=gpu_sharing.LOOKED_FOR),
    )
    assert artifacts(tests["gpu-sharing"])["GPU nodes"].splitlines() == nodes
    assert outcome(tests["driver-runtime-management"]) == ("passed", None)
    per_node = artifacts(tests["driver-runtime-management"])["GPU driver and container runtime per node"]
    assert [line.split(":")[0] for line in per_node.splitlines()] == nodes
    assert "(GFD label), runtime containerd://" in per_node
    assert outcome(tests["workload-sandboxing"]) == (
        "skipped",
        workload_sandboxing.SKIP_NO_SANDBOX.format(handlers=workload_sandboxing.HANDLERS_TEXT, found="none"),
    )
    assert outcome(tests["high-performance-networking"]) == ("passed", None)
    nics = artifacts(tests["high-performance-networking"])["High-performance NICs exposed"].splitlines()
    efa = {
        n["metadata"]["name"]: n["status"]["allocatable"]["vpc.amazonaws.com/efa"]
        for n in k8s_backend.list("v1", "Node", None, label_selector="nvidia.com/gpu.present=true")
    }
    assert nics == [f"{n}: vpc.amazonaws.com/efa={efa[n]}" for n in nodes]
    # the evidence files say what each check saw (the skipped one writes none)
    sharing = (ev / "gpu-sharing.md").read_text(encoding="utf-8")
    assert "no GPU sharing exposed" in sharing and f"(none; looked for: {gpu_sharing.LOOKED_FOR})" in sharing
    assert (
        f"{nodes[0]}: vpc.amazonaws.com/efa={efa[nodes[0]]}"
        in (ev / "high-performance-networking.md").read_text()
    )
    assert "containerd://" in (ev / "driver-runtime-management.md").read_text(encoding="utf-8")
    assert not (ev / "workload-sandboxing.md").exists()


def test_a_gvisor_runtime_class_runs_the_probe_on_its_own_kernel(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE)
    k8s_backend.seed([GVISOR])
    result = run(pytester, k8s_backend, recipe("workload-sandboxing"))
    test = result.tests["workload-sandboxing"]
    assert outcome(test) == ("passed", None)
    seen = artifacts(test)
    assert seen["RuntimeClasses"] == "gvisor: handler runsc"
    assert seen["Sandbox probe pod log"].startswith("kernel-release=4.4.0\n")
    isolation = seen["Sandbox subtests"]
    assert (
        isolation.startswith("RuntimeClass: gvisor (handler runsc)\n") and "Pod kernel: 4.4.0\n" in isolation
    )
    assert re.search(
        r"^TestWorkloadSandboxing/KernelAndMemoryIsolation: passed - sandboxed: pod kernel 4\.4\.0 differs "
        r"from node \S+'s kernel 6\.8\.0-\d+-aws$",
        isolation,
        re.M,
    )
    assert subtest_results(test) == {name: "PASS" for name in SANDBOX_SUBTESTS}
    assert "deleted — confirmed absent" in seen["Cleanup test namespace"]
    if k8s_backend.virtual_time:  # the control plane's namespace controller finishes the delete later
        assert k8s_backend.list("v1", "Pod", None, label_selector=f"{RUN_ID_LABEL}={result.run_id}") == []


@pytest.mark.fake_only("the fake's kubelet is told to report a status a real kubelet would not")
def test_a_probe_without_proof_of_execution_is_other(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE)
    k8s_backend.seed([GVISOR])

    def empty_image_id(cs: dict[str, Any]) -> None:
        cs["imageID"] = ""

    fake_of(k8s_backend).sim.tamper_container_statuses(lambda pod: True, empty_image_id)
    test = run(pytester, k8s_backend, recipe("workload-sandboxing")).tests["workload-sandboxing"]
    assert test["status"] == "other", test.get("message")
    assert re.fullmatch(
        r"no proof of execution for pod [a-z0-9-]+/[a-z0-9-]+ on node [a-z0-9-]+: "
        r"container probe has an empty imageID",
        test["message"],
    ), test["message"]


def test_a_sandbox_that_shares_the_node_kernel_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["sandbox-kernel-shared"])
    test = run(pytester, k8s_backend, recipe("workload-sandboxing")).tests["workload-sandboxing"]
    status, message = outcome(test)
    assert status == "failed"
    assert message is not None and re.fullmatch(
        r"\[CONFLICT\] RuntimeClass gvisor \(handler runsc\) ran the probe pod on its node's kernel "
        r"(6\.8\.0-\d+-aws) \(node (\S+)\): not sandboxed",
        message,
    )
    assert artifacts(test)["Sandbox probe pod log"].splitlines()[0].removeprefix("kernel-release=") in message
    # the kernel subtest fails; the PID, filesystem and network subtests are still reported
    assert subtest_results(test) == {
        "SchedulingAndExecution": "PASS",
        "ProcessIsolation": "PASS",
        "KernelAndMemoryIsolation": "FAIL",
        "FilesystemIsolation": "PASS",
        "NetworkIsolation": "PASS",
    }


def test_dra_mig_partitions_are_gpu_sharing(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    node = gpu_node_names(k8s_backend)[0]
    devices = [
        {
            "name": f"gpu-0-mig-{i}",
            "attributes": {"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}},
        }
        for i in range(2)
    ]
    k8s_backend.seed(
        [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-mig-test"},
                "spec": {
                    "driver": "gpu.nvidia.com",
                    "nodeName": node,
                    "pool": {"name": f"{node}-mig", "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        ]
    )
    test = run(pytester, k8s_backend, recipe("gpu-sharing")).tests["gpu-sharing"]
    assert outcome(test) == ("passed", None)
    assert artifacts(test)["GPU sharing exposed"].splitlines() == [
        f"DRA gpu.nvidia.com/{node}/gpu-0-mig-{i}: type=mig, profile=1g.10gb" for i in range(2)
    ]


@pytest.mark.fake_only("rewrites a GPU node's GFD driver labels (kwok's nodes are the harness's)")
def test_a_node_on_another_driver_fails_naming_it(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["driver-version-skew"])
    test = run(pytester, k8s_backend, recipe("driver-runtime-management")).tests["driver-runtime-management"]
    assert outcome(test) == (
        "failed",
        "[CONFLICT] GPU driver versions differ across GPU nodes: 570.172.08 on h100-3; "
        "580.95.05 on h100-0, h100-1, h100-2",
    )


@pytest.mark.fake_only("rewrites a GPU node's status.nodeInfo (kwok's nodes are the harness's)")
def test_a_node_on_another_runtime_fails_naming_it(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["runtime-version-skew"])
    test = run(pytester, k8s_backend, recipe("driver-runtime-management")).tests["driver-runtime-management"]
    assert outcome(test) == (
        "failed",
        "[CONFLICT] container runtime versions differ across GPU nodes: containerd://1.6.36 on h100-3; "
        "containerd://1.7.27 on h100-0, h100-1, h100-2",
    )


@pytest.mark.fake_only("removes the nodes' vpc.amazonaws.com/efa (kwok's nodes are the harness's)")
def test_no_rdma_resources_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["no-rdma-resources"])
    test = run(pytester, k8s_backend, recipe("high-performance-networking")).tests[
        "high-performance-networking"
    ]
    assert outcome(test) == (
        "failed",
        "[NOT_FOUND] " + hp_networking.MSG_NONE.format(count=4, looked=hp_networking.LOOKED_FOR),
    )


@pytest.mark.fake_only("deletes GPU nodes and ResourceSlices from the seeded profile")
def test_without_gpu_nodes_the_gpu_checks_skip(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["gpu-operator-missing"])
    fc = fake_of(k8s_backend)
    for s in fc.list("resource.k8s.io/v1", "ResourceSlice"):
        fc.delete("resource.k8s.io/v1", "ResourceSlice", s["metadata"]["name"])
    tests = run(pytester, k8s_backend, recipe(*SHOULD)).tests
    assert outcome(tests["gpu-sharing"]) == ("skipped", gpu_sharing.SKIP_NO_GPU_NODES)
    assert outcome(tests["driver-runtime-management"]) == ("skipped", driver_runtime.SKIP_NO_GPU_NODES)
    assert outcome(tests["high-performance-networking"]) == (
        "skipped",
        hp_networking.SKIP_SINGLE_NODE.format(count=0),
    )


@pytest.mark.fake_only("deletes three of the four GPU nodes from the seeded profile")
def test_a_single_gpu_node_needs_no_high_performance_networking(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE)
    fc = fake_of(k8s_backend)
    for name in ("h100-1", "h100-2", "h100-3"):
        fc.delete("v1", "Node", name)
    test = run(pytester, k8s_backend, recipe("high-performance-networking")).tests[
        "high-performance-networking"
    ]
    assert outcome(test) == ("skipped", hp_networking.SKIP_SINGLE_NODE.format(count=1))


@pytest.mark.fake_only(
    "HTTP fault injection: the node and RuntimeClass lists answer 500 past the retry budget"
)
def test_unreadable_inventory_is_other(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    faults = fake_of(k8s_backend).faults
    faults.server_error("GET", r"/api/v1/nodes$", times=None)
    faults.server_error("GET", r"/runtimeclasses$", times=None)
    tests = run(pytester, k8s_backend, recipe(), "--aicr-cncf-should").tests
    for name in ("gpu-sharing", "driver-runtime-management", "high-performance-networking"):
        assert tests[name]["status"] == "other", name
        assert tests[name]["message"].startswith("[INTERNAL] failed to list nodes: API unreachable: "), name
    assert tests["workload-sandboxing"]["status"] == "other"
    assert tests["workload-sandboxing"]["message"].startswith(
        "[INTERNAL] failed to list RuntimeClasses: API unreachable: "
    )


@pytest.mark.fake_only("selection only: the marker asks for the group as the flag does")
def test_the_marker_asks_for_the_group_and_nothing_else(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE)
    tests = run(pytester, k8s_backend, recipe("platform-health"), "-m", "cncf-should").tests
    assert sorted(tests) == sorted(SHOULD)


@pytest.mark.fake_only("selection only: the --config key asks for the group as the flag does")
def test_the_config_key_asks_for_the_group(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    config = pytester.path / "aicr.yaml"
    config.write_text("kind: AICRConfig\nspec:\n  validate:\n    execution: {cncfShould: true}\n")
    tests = run(pytester, k8s_backend, recipe("platform-health"), "--aicr-config", str(config)).tests
    assert sorted(tests) == sorted(("platform-health", *SHOULD))


@pytest.mark.fake_only("the probe pod is scripted to exit 1 (kwok's pods end as the harness's player says)")
def test_a_probe_the_sandbox_cannot_run_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    from aicr_pytest.testing.simulator import PodScript

    k8s_backend.seed_profile(PROFILE)
    k8s_backend.seed([GVISOR])
    label = dict([workload_sandboxing.COMPONENT_LABEL])
    fake_of(k8s_backend).sim.script(PodScript(labels=label, exit_code=1, logs="runsc: exec format error\n"))
    result = run(pytester, k8s_backend, recipe("workload-sandboxing"))
    assert outcome(result.tests["workload-sandboxing"]) == (
        "failed",
        "[INTERNAL] the probe pod under RuntimeClass gvisor ended Failed (exit code 1): "
        "runsc: exec format error",
    )
    assert subtest_results(result.tests["workload-sandboxing"]) == {"SchedulingAndExecution": "FAIL"}
    assert (
        fake_of(k8s_backend).list("v1", "Pod", None, label_selector=f"{RUN_ID_LABEL}={result.run_id}") == []
    )
