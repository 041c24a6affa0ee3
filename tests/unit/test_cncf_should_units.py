"""The CNCF SHOULD checks' domain functions (pure): what counts as GPU sharing, driver/runtime
consistency, a sandboxed runtime and an RDMA NIC; and their opt-in wiring (catalog group, features,
requirement rows)."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.conformance import driver_runtime as dr
from aicr_pytest.conformance import gpu_sharing as gs
from aicr_pytest.conformance import hp_networking as hpn
from aicr_pytest.conformance import inventory as inv
from aicr_pytest.conformance import sandbox_probe as sp
from aicr_pytest.conformance import testns
from aicr_pytest.conformance import workload_sandboxing as ws
from aicr_pytest.conformance.common import ConformanceFailure
from aicr_pytest.conformance.testns import CleanupStatus
from aicr_pytest.core import catalog
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.core.inputs import with_group
from aicr_pytest.evidence.cncf import features, requirements
from aicr_pytest.plugin.collection import markexpr_asks_for

SHOULD = ("gpu-sharing", "driver-runtime-management", "workload-sandboxing", "high-performance-networking")


def node(
    name: str,
    labels: dict[str, str] | None = None,
    alloc: dict[str, str] | None = None,
    runtime: str = "containerd://1.7.27",
    kernel: str = "6.8.0-1021-aws",
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "status": {
            "allocatable": alloc or {},
            "nodeInfo": {"containerRuntimeVersion": runtime, "kernelVersion": kernel},
        },
    }


def gpu_node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    base = {"nvidia.com/gpu.present": "true", "nvidia.com/cuda.driver-version.full": "580.95.05"}
    return node(name, {**base, **(labels or {})}, {"nvidia.com/gpu": "8"})


def rslice(driver: str, node_name: str, *devices: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"driver": driver, "nodeName": node_name, "devices": list(devices)}}


# -- inventory ----------------------------------------------------------------------------------------


def test_slice_devices_read_v1_and_v1beta1_shapes_and_attribute_kinds() -> None:
    v1 = rslice(
        "gpu.nvidia.com",
        "n0",
        {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}, "index": {"int": 0}}},
    )
    beta = rslice(
        "gpu.nvidia.com",
        "n1",
        {
            "name": "mig-0",
            "basic": {"attributes": {"driverVersion": {"version": "580.95.5"}}, "consumesCounters": [{}]},
        },
    )
    devices = inv.slice_devices([v1, beta, {"spec": {"devices": ["junk"]}}])
    assert [(d.ref, dict(d.attributes), d.partition) for d in devices] == [
        ("gpu.nvidia.com/n0/gpu-0", {"type": "gpu", "index": "0"}, False),
        ("gpu.nvidia.com/n1/mig-0", {"driverVersion": "580.95.5"}, True),
    ]
    assert inv.attribute_text({"bool": True}) == "true"
    assert inv.attribute_text({"string": "a", "int": 1}) is None  # ambiguous: unreadable
    assert inv.attribute_text({"quantity": "1"}) is None


def test_gpu_nodes_by_gfd_label_allocatable_gpus_or_a_dra_gpu_slice() -> None:
    nodes = [
        node("labelled", {"nvidia.com/gpu.present": "true"}),
        node("allocatable", alloc={"nvidia.com/gpu": "4"}),
        node("dra-only"),
        node("cpu", alloc={"nvidia.com/gpu": "0"}),
    ]
    devices = inv.slice_devices([rslice("gpu.nvidia.com", "dra-only", {"name": "gpu-0"})])
    assert [inv.node_name(n) for n in inv.gpu_nodes(nodes, devices)] == [
        "labelled",
        "allocatable",
        "dra-only",
    ]


# -- gpu-sharing --------------------------------------------------------------------------------------


def test_gfd_defaults_are_no_evidence_of_sharing() -> None:
    defaults = gpu_node(
        "n0",
        {
            gs.STRATEGY_LABEL: "single",
            gs.PRODUCT_LABEL: "NVIDIA-H100-80GB-HBM3",
            gs.SHARING_LABEL: "none",
            gs.REPLICAS_LABEL: "1",
        },
    )
    assert gs.sharing_evidence([defaults], []) == []
    # the same node once its GPUs are MIG-partitioned (GFD renames the product)
    defaults["metadata"]["labels"][gs.PRODUCT_LABEL] = "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"
    assert gs.sharing_evidence([defaults], []) != []


def test_each_sharing_strategy_is_recognised_and_dra_partitions_come_first() -> None:
    mixed = node("mixed", {}, {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-2g.20gb": "0"})
    single = node(
        "single",
        {gs.STRATEGY_LABEL: "single", gs.PRODUCT_LABEL: "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"},
        {"nvidia.com/gpu": "56"},
    )
    sliced = node(
        "sliced", {gs.SHARING_LABEL: "time-slicing", gs.REPLICAS_LABEL: "4"}, {"nvidia.com/gpu": "32"}
    )
    renamed = node("renamed", {gs.REPLICAS_LABEL: "2"}, {"nvidia.com/gpu.shared": "16"})
    devices = inv.slice_devices(
        [
            rslice(
                "gpu.nvidia.com",
                "n9",
                {
                    "name": "gpu-0-mig-1g",
                    "attributes": {"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}},
                },
                {"name": "gpu-1", "attributes": {"type": {"string": "gpu"}}},
                {"name": "part-0", "consumesCounters": [{"counterSet": "gpu-1"}]},
            )
        ]
    )
    assert gs.sharing_evidence([mixed, single, sliced, renamed], devices) == [
        "DRA gpu.nvidia.com/n9/gpu-0-mig-1g: type=mig, profile=1g.10gb",
        "DRA gpu.nvidia.com/n9/part-0: consumes shared counters",
        "mixed: MIG (mixed) nvidia.com/mig-1g.10gb=7",
        "single: MIG (single) nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-MIG-1g.10gb, nvidia.com/gpu=56",
        "sliced: time-slicing nvidia.com/gpu.replicas=4, nvidia.com/gpu=32",
        "renamed: time-slicing nvidia.com/gpu.replicas=2, nvidia.com/gpu.shared=16",
    ]


def test_a_sharing_label_without_a_schedulable_resource_does_not_count() -> None:
    unschedulable = node("n0", {gs.SHARING_LABEL: "mps", gs.REPLICAS_LABEL: "x"}, {"nvidia.com/gpu": "0"})
    assert gs.sharing_evidence([unschedulable], []) == []


# -- driver-runtime-management --------------------------------------------------------------------------


def test_the_dra_driver_version_is_preferred_over_the_gfd_label() -> None:
    n = gpu_node("n0")
    devices = inv.slice_devices(
        [
            rslice(
                "gpu.nvidia.com",
                "n0",
                {"name": "gpu-0", "attributes": {"driverVersion": {"version": "580.95.5"}}},
            )
        ]
    )
    assert dr.node_versions(n, devices) == dr.NodeVersions(
        "n0", "containerd://1.7.27", "580.95.5", dr.SOURCE_DRA, ("580.95.5",)
    )
    assert dr.node_versions(n, []).driver_source == dr.SOURCE_GFD


def test_the_driver_version_from_gfd_parts_when_full_is_absent() -> None:
    parts = node(
        "n0",
        {
            "nvidia.com/cuda.driver-version.major": "580",
            "nvidia.com/cuda.driver-version.minor": "95",
            "nvidia.com/cuda.driver-version.revision": "05",
        },
    )
    assert dr.node_versions(parts, []).driver == "580.95.05"
    deprecated = {"nvidia.com/cuda.driver.major": "570", "nvidia.com/cuda.driver.minor": "133"}
    assert dr.node_versions(node("n2", {**deprecated, "nvidia.com/cuda.driver.rev": "20"}), []).driver == (
        "570.133.20"
    )
    half = node("n1", {"nvidia.com/cuda.driver-version.major": "580"})
    assert dr.node_versions(half, []).driver == ""


def test_consistent_versions_pass_and_compare_numerically() -> None:
    versions = [
        dr.NodeVersions("a", "containerd://1.7.27", "580.95.05", dr.SOURCE_GFD),
        dr.NodeVersions("b", "containerd://1.7.27", "580.95.5", dr.SOURCE_DRA),
    ]
    dr.verdict(versions)  # no exception: one driver, one runtime


def test_skew_fails_naming_the_odd_nodes_first() -> None:
    versions = [
        dr.NodeVersions("a", "containerd://1.7.27", "580.95.05", dr.SOURCE_GFD),
        dr.NodeVersions("b", "containerd://1.7.27", "580.95.05", dr.SOURCE_GFD),
        dr.NodeVersions("c", "containerd://1.6.36", "570.172.08", dr.SOURCE_GFD),
    ]
    with pytest.raises(ConformanceFailure) as info:
        dr.verdict(versions)
    assert str(info.value) == (
        "[CONFLICT] GPU driver versions differ across GPU nodes: 570.172.08 on c; 580.95.05 on a, b; "
        "container runtime versions differ across GPU nodes: containerd://1.6.36 on c; "
        "containerd://1.7.27 on a, b"
    )


def test_missing_or_ambiguous_versions_are_other() -> None:
    with pytest.raises(Inconclusive) as info:
        dr.verdict(
            [
                dr.NodeVersions("a", "", "580.95.05", dr.SOURCE_GFD),
                dr.NodeVersions("b", "", "1", dr.SOURCE_GFD),
            ]
        )
    assert str(info.value) == "[NOT_FOUND] cannot read the container runtime of GPU node(s): a, b"
    with pytest.raises(Inconclusive) as info:
        dr.verdict([dr.NodeVersions("a", "containerd://2.1.0", "", dr.SOURCE_GFD)])
    assert str(info.value) == "[NOT_FOUND] cannot read the GPU driver version of GPU node(s): a"
    with pytest.raises(Inconclusive) as info:
        dr.verdict([dr.NodeVersions("a", "containerd://2.1.0", "", dr.SOURCE_DRA, ("570.1", "580.2"))])
    assert (
        str(info.value) == "[INTERNAL] GPU node a publishes more than one driver version in DRA: 570.1, 580.2"
    )


# -- workload-sandboxing ----------------------------------------------------------------------------------


def test_sandbox_handlers_are_gvisor_and_kata_only() -> None:
    classes = [
        {"metadata": {"name": "runc"}, "handler": "runc"},
        {"metadata": {"name": "nvidia"}, "handler": "nvidia"},
        {"metadata": {"name": "kata-qemu"}, "handler": "kata-qemu"},
        {"metadata": {"name": "gvisor"}, "handler": "runsc"},
        {"metadata": {"name": "gke-sandbox"}, "handler": "gvisor"},
    ]
    assert ws.sandbox_classes(classes) == [
        ("gke-sandbox", "gvisor"),
        ("gvisor", "runsc"),
        ("kata-qemu", "kata-qemu"),
    ]


def test_the_kernel_is_the_release_line_the_probe_printed() -> None:
    assert ws.kernel_of("kernel-release=4.4.0\n") == "4.4.0"
    assert ws.kernel_of("warning: x\n kernel-release= 6.1.62 \n\n") == "6.1.62"
    assert ws.kernel_of("4.4.0\n") == ""  # a bare line is no finding
    assert ws.kernel_of("") == ""
    assert ws.kernel_of("failed to read logs: kernel-release=1") == ""


HEALTHY_PROBE = (
    "kernel-release=4.4.0\npid-count=2\npid=pass\nmemory=pass\nfilesystem=pass\n"
    "interfaces=lo eth0 \nnetwork=pass\nprobe=done\n"
)


def _subtests(log: str, node_kernel: str = "6.8.0-1021-aws") -> list[sp.Subtest]:
    out = sp.parse_probe(log)
    kernel = ws.kernel_subtest("gvisor", "runsc", "n0", out.kernel, node_kernel)
    return sp.subtests("gvisor", out, "tail", kernel)


def test_a_healthy_probe_passes_the_five_subtests_in_the_suites_order() -> None:
    results = _subtests(HEALTHY_PROBE)
    assert [r.full_name for r in results] == [
        "TestWorkloadSandboxing/SchedulingAndExecution",
        "TestWorkloadSandboxing/ProcessIsolation",
        "TestWorkloadSandboxing/KernelAndMemoryIsolation",
        "TestWorkloadSandboxing/FilesystemIsolation",
        "TestWorkloadSandboxing/NetworkIsolation",
    ]
    assert {r.status for r in results} == {"passed"}
    assert results[2].result_line() == (
        "RESULT: TestWorkloadSandboxing/KernelAndMemoryIsolation: PASS - "
        "sandboxed: pod kernel 4.4.0 differs from node n0's kernel 6.8.0-1021-aws"
    )
    ws.subtest_outcome(results)  # no raise


def test_a_shared_kernel_fails_the_kernel_subtest_alone() -> None:
    results = _subtests(HEALTHY_PROBE.replace("4.4.0", "6.8.0-1021-aws"))
    assert [r.status for r in results] == ["passed", "passed", "failed", "passed", "passed"]
    with pytest.raises(ConformanceFailure) as failed:
        ws.subtest_outcome(results)
    assert str(failed.value) == (
        "[CONFLICT] RuntimeClass gvisor (handler runsc) ran the probe pod on its node's kernel "
        "6.8.0-1021-aws (node n0): not sandboxed"
    )


@pytest.mark.parametrize(
    ("finding", "name", "message"),
    [
        ("pid=fail kubelet", "ProcessIsolation", "sees the node's processes (kubelet): no PID isolation"),
        ("memory=fail /dev/mem", "KernelAndMemoryIsolation", "can read /dev/mem: no kernel memory isolation"),
        ("filesystem=fail /var/lib/kubelet", "FilesystemIsolation", "sees the node's path /var/lib/kubelet"),
        ("network=fail cni0", "NetworkIsolation", "sees the node's interface cni0: no network isolation"),
    ],
)
def test_each_isolation_finding_fails_its_own_subtest(finding: str, name: str, message: str) -> None:
    key = finding.partition("=")[0]
    results = _subtests(HEALTHY_PROBE.replace(f"{key}=pass", finding))
    assert [r.name for r in results if r.status == "failed"] == [name]
    with pytest.raises(
        ConformanceFailure, match=rf"^\[CONFLICT\] {name}: the probe under RuntimeClass gvisor "
    ):
        ws.subtest_outcome(results)
    assert message in next(r.line for r in results if r.name == name)


def test_an_unfinished_or_silent_probe_fails_and_an_unknown_kernel_is_other() -> None:
    results = _subtests("kernel-release=4.4.0\n")
    assert [r.status for r in results] == ["failed"] * 5  # a finding never printed is no pass
    assert results[0].line == "the probe under RuntimeClass gvisor did not finish its isolation probe: tail"
    assert results[1].line == "the probe under RuntimeClass gvisor reported no pid finding"
    assert results[2].line == "the probe under RuntimeClass gvisor reported no memory finding"
    with pytest.raises(ConformanceFailure, match=r"^\[CONFLICT\] SchedulingAndExecution: "):
        ws.subtest_outcome(results)
    unknown = _subtests(HEALTHY_PROBE, node_kernel="")
    assert [r.status for r in unknown] == ["passed", "passed", "other", "passed", "passed"]
    assert (
        unknown[2]
        .result_line()
        .startswith("RESULT: TestWorkloadSandboxing/KernelAndMemoryIsolation: OTHER - ")
    )
    with pytest.raises(
        Inconclusive, match=r"^\[NOT_FOUND\] node n0 reports no status.nodeInfo.kernelVersion$"
    ):
        ws.subtest_outcome(unknown)


def test_kernel_verdicts() -> None:
    line = ws.kernel_verdict("gvisor", "runsc", "n0", "4.4.0", "6.8.0-1021-aws")
    assert line == "sandboxed: pod kernel 4.4.0 differs from node n0's kernel 6.8.0-1021-aws"
    with pytest.raises(ConformanceFailure) as failed:
        ws.kernel_verdict("gvisor", "runsc", "n0", "6.8.0-1021-aws", "6.8.0-1021-aws")
    assert str(failed.value) == (
        "[CONFLICT] RuntimeClass gvisor (handler runsc) ran the probe pod on its node's kernel "
        "6.8.0-1021-aws (node n0): not sandboxed"
    )
    with pytest.raises(
        Inconclusive, match=r"^\[NOT_FOUND\] node n0 reports no status.nodeInfo.kernelVersion$"
    ):
        ws.kernel_verdict("gvisor", "runsc", "n0", "4.4.0", "")
    with pytest.raises(Inconclusive, match=r"printed no kernel release"):
        ws.kernel_verdict("gvisor", "runsc", "n0", "", "6.8.0")


def test_the_probe_pod_runs_uname_under_the_runtime_class_without_a_gpu() -> None:
    pod = ws.build_probe("p", "ns", "gvisor", {"aicr.run/run-id": "r1"}, [{"operator": "Exists"}])
    assert pod["spec"]["runtimeClassName"] == "gvisor"
    assert pod["spec"]["containers"][0]["command"] == ["sh", "-c", sp.PROBE_SCRIPT]
    assert "uname -r" in sp.PROBE_SCRIPT and sp.PROBE_SCRIPT.rstrip().endswith('echo "probe=done"')
    assert "resources" not in pod["spec"]["containers"][0]
    assert pod["metadata"]["labels"] == {
        "aicr.run/run-id": "r1",
        "app.kubernetes.io/component": "sandbox-probe",
    }


# -- high-performance-networking ----------------------------------------------------------------------------


def test_nic_resources_and_dra_nic_devices() -> None:
    nodes = [
        node("a", alloc={"vpc.amazonaws.com/efa": "32", "nvidia.com/gpu": "8"}),
        node("b", alloc={"rdma/rdma_shared_device_a": "63", "nvidia.com/hostdev": "0"}),
        node("c", alloc={"cpu": "8"}),
    ]
    devices = inv.slice_devices(
        [
            rslice("roce.networking.k8s.aws", "a", {"name": "nic-0"}, {"name": "nic-1"}),
            rslice("example.com", "b", {"name": "x", "attributes": {"rdma": {"bool": True}}}),
            rslice("gpu.nvidia.com", "a", {"name": "gpu-0"}),
        ]
    )
    assert hpn.nic_evidence(nodes, devices) == [
        "DRA roce.networking.k8s.aws on a: 2 device(s)",
        "DRA example.com on b: 1 device(s)",
        "a: vpc.amazonaws.com/efa=32",
        "b: rdma/rdma_shared_device_a=63",
    ]
    assert (
        hpn.nic_evidence([nodes[2]], inv.slice_devices([rslice("gpu.nvidia.com", "a", {"name": "g"})])) == []
    )


# -- the opt-in wiring -------------------------------------------------------------------------------------


def test_the_group_is_four_conformance_checks_in_one_bundled_test() -> None:
    assert catalog.names_in_group(catalog.CNCF_SHOULD) == list(SHOULD)
    for name in SHOULD:
        spec = catalog.BY_NAME[name]
        assert (spec.phase, spec.test) == (
            "conformance",
            "conformance/test_conformance.py::test_conformance",
        )
    asked = with_group({"deployment": ["operator-health"]}, catalog.CNCF_SHOULD)
    assert asked == {"deployment": ["operator-health"], "conformance": list(SHOULD)}
    assert with_group({"conformance": ["gpu-sharing"]}, catalog.CNCF_SHOULD)["conformance"] == list(SHOULD)


def test_should_features_are_opt_in_and_map_their_requirements() -> None:
    assert features.resolve_features(None) == features.FEATURES
    assert features.resolve_features(None, should=True) == features.ALL_FEATURES
    assert features.resolve_features(["all"], should=True)[-4:] == features.SHOULD_FEATURES
    assert [f.name for f in features.resolve_features(["sandboxing", "gpu_sharing"])] == [
        "workload-sandboxing",
        "gpu-sharing",
    ]
    table = {f.requirement: (f.check, f.file) for f in features.SHOULD_FEATURES}
    assert table == {
        "gpu_sharing": ("gpu-sharing", "gpu-sharing.md"),
        "driver_runtime_management": ("driver-runtime-management", "driver-runtime-management.md"),
        "workload_sandboxing": ("workload-sandboxing", "workload-sandboxing.md"),
        "high_performance_networking": ("high-performance-networking", "high-performance-networking.md"),
    }
    for rid, (check, _) in table.items():
        assert requirements.BY_ID[rid].checks == (check,)


@pytest.mark.parametrize(
    ("expr", "asks"),
    [
        ("cncf-should", True),
        ("cncf-should and conformance", True),
        ("health or cncf-should", True),
        ("conformance", False),
        ("not cncf-should", False),
        ("health", False),
    ],
)
def test_markexpr_asks_for_the_should_group(expr: str, asks: bool) -> None:
    assert markexpr_asks_for(expr, catalog.CNCF_SHOULD) is asks


@pytest.mark.parametrize(
    ("driver", "nic"),
    [
        ("roce.networking.k8s.aws", True),
        ("dra.net", True),
        ("dranet.gke.io", True),
        ("sriovnetwork.openshift.io", True),
        ("rdma.example.com", True),
        ("gpu.nvidia.com", False),
        ("compute-domain.nvidia.com", False),
        ("gpu.resource.kubernetes.io", False),  # "kubernetes" has "net" inside, not as a part
    ],
)
def test_nic_drivers_by_name(driver: str, nic: bool) -> None:
    assert hpn.is_nic_device(inv.DraDevice(driver, "n0", "d0")) is nic


class _Ns:
    def __init__(self, failed: bool) -> None:
        self.status = CleanupStatus("CLEANUP FAILED: x" if failed else "namespace x deleted", failed)

    def cleanup(self) -> CleanupStatus:
        return self.status


def test_cleaned_up_records_the_cleanup_and_fails_only_a_body_that_passed() -> None:
    records: list[tuple[str, str]] = []

    def record(label: str, text: str) -> None:
        records.append((label, text))

    with testns.cleaned_up(_Ns(False), record):  # type: ignore[arg-type]
        pass
    failing = testns.cleaned_up(_Ns(True), record)  # type: ignore[arg-type]
    with pytest.raises(ConformanceFailure, match=r"^\[INTERNAL\] CLEANUP FAILED: x$"), failing:
        pass
    interrupted = testns.cleaned_up(_Ns(True), record)  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt), interrupted:  # the primary error is never replaced
        raise KeyboardInterrupt
    assert records == [
        ("Cleanup test namespace", "namespace x deleted"),
        ("Cleanup test namespace", "CLEANUP FAILED: x"),
        ("Cleanup test namespace", "CLEANUP FAILED: x"),
    ]
