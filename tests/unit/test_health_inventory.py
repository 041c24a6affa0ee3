"""health.inventory: allocatable vs advertised vs driver GPUs, and node-set homogeneity."""

from __future__ import annotations

from typing import Any

import pytest
from _gpu_objects import gpu_slice, node

from aicr_pytest.core.errors import Inconclusive, UsageError
from aicr_pytest.health import exporter as ex
from aicr_pytest.health import inventory as inv
from aicr_pytest.health.common import HealthCheckFailed, HealthInconclusive

H100 = "NVIDIA-H100-80GB-HBM3"


def gpu_node(
    name: str,
    alloc: int | str | None = 8,
    *,
    count: str | None = "8",
    product: str | None = H100,
    efa: int | str | None = 32,
    **extra_alloc: Any,
) -> dict[str, Any]:
    labels = {}
    if count is not None:
        labels[inv.LABEL_COUNT] = count
    if product is not None:
        labels[inv.LABEL_PRODUCT] = product
    n = node(name, alloc, labels=labels)
    if efa is not None:
        n["status"]["allocatable"]["vpc.amazonaws.com/efa"] = str(efa)
    n["status"]["allocatable"].update(extra_alloc)
    return n


def smi(count: int) -> str:
    return "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:04d})\n" for i in range(count))


def run(
    nodes: list[dict[str, Any]], policy: str | None = "device-plugin-extended-resource", **kw: Any
) -> str:
    reports = kw.pop("driver_reports", None)
    if reports is None:
        reports = {n["metadata"]["name"]: smi(8) for n in nodes}
    return inv.check_inventory(inv.inventory(nodes, policy=policy, driver_reports=reports, **kw))


def test_consistent_cluster_passes() -> None:
    nodes = [gpu_node(f"ip-10-0-1-{i}") for i in range(4)]
    assert (
        run(nodes) == f"GPU inventory consistent on 4 nodes: 8 x {H100} each, fabric vpc.amazonaws.com/efa=32"
    )


def test_one_gpu_short_is_named_exactly() -> None:
    nodes = [gpu_node(f"ip-10-0-1-{i}") for i in range(1, 7)] + [gpu_node("ip-10-0-1-7", 7)]
    with pytest.raises(HealthCheckFailed) as err:
        run(nodes)
    assert str(err.value) == "node ip-10-0-1-7: 7 of 8 GPUs allocatable"


def test_more_allocatable_than_advertised_and_driver_mismatches() -> None:
    nodes = [gpu_node("a", 9), gpu_node("b"), gpu_node("c")]
    with pytest.raises(HealthCheckFailed) as err:
        run(nodes, driver_reports={"a": smi(8), "b": smi(6), "c": 9})
    assert err.value.lines == (
        "node a: 9 GPUs allocatable but the node advertises 8",
        "node b: the driver reports 6 GPUs but 8 are allocatable and the node advertises 8",
        "node c: the driver reports 9 GPUs but 8 are allocatable and the node advertises 8",
    )


def test_every_odd_node_is_named_with_what_differs() -> None:
    nodes = [
        gpu_node("n1"),
        gpu_node("n2"),
        gpu_node("n3", 4, count="4", efa=None),
        gpu_node("n4", product="NVIDIA-A100-SXM4-80GB"),
    ]
    with pytest.raises(HealthCheckFailed) as err:
        run(nodes, driver_reports={"n1": smi(8), "n2": smi(8), "n3": smi(4), "n4": smi(8)})
    assert err.value.lines == (
        f"node n4: product NVIDIA-A100-SXM4-80GB, 3 other nodes have {H100}",
        "node n3: GPU count 4 GPUs, 3 other nodes have 8 GPUs",
        "node n3: fabric none, 3 other nodes have vpc.amazonaws.com/efa=32",
    )


def test_no_majority_names_every_node() -> None:
    with pytest.raises(HealthCheckFailed) as err:
        run([gpu_node("a", efa=2), gpu_node("b", efa=32)])
    assert err.value.lines == (
        "node a: fabric vpc.amazonaws.com/efa=2 (the nodes differ and no value is the majority)",
        "node b: fabric vpc.amazonaws.com/efa=32 (the nodes differ and no value is the majority)",
    )


def test_rdma_and_nvidia_nic_resources_are_fabric_but_gpus_are_not() -> None:
    assert inv.is_fabric_resource("rdma/ib") and inv.is_fabric_resource("nvidia.com/rdma_shared_device_a")
    assert inv.is_fabric_resource("vpc.amazonaws.com/efa")
    assert not inv.is_fabric_resource("nvidia.com/gpu") and not inv.is_fabric_resource(
        "nvidia.com/mig-1g.10gb"
    )
    nodes = [gpu_node("a", efa=None, **{"rdma/ib": "8"}), gpu_node("b", efa=None, **{"rdma/ib": "8"})]
    assert run(nodes).endswith("fabric rdma/ib=8")


@pytest.mark.parametrize(
    ("kwargs", "line"),
    [
        ({"count": None}, "node a: label nvidia.com/gpu.count missing"),
        ({"count": "eight"}, "node a: label nvidia.com/gpu.count='eight' is not a GPU count"),
        ({"product": None}, "node a: label nvidia.com/gpu.product missing"),
        ({"alloc": "7.5"}, "node a: allocatable nvidia.com/gpu='7.5' is not a whole quantity"),
        ({"efa": "lots"}, "node a: allocatable vpc.amazonaws.com/efa='lots' is not a whole quantity"),
    ],
)
def test_missing_or_unparsable_facts_are_inconclusive(kwargs: dict[str, Any], line: str) -> None:
    with pytest.raises(HealthInconclusive) as err:
        run([gpu_node("a", **kwargs)])
    assert str(err.value) == line
    assert isinstance(err.value, Inconclusive)


@pytest.mark.parametrize(
    ("report", "line"),
    [
        (
            None,
            "node a: no driver report (neither a DCGM exporter on the node "
            "nor GFD's nvidia.com/gpu.count label)",
        ),
        ("", "node a: driver report unreadable: empty nvidia-smi output"),
        (
            "NVIDIA-SMI has failed",
            "node a: driver report unreadable: unexpected nvidia-smi line 'NVIDIA-SMI has failed'",
        ),
    ],
)
def test_missing_or_unreadable_driver_reports_are_inconclusive(report: str | None, line: str) -> None:
    reports = {} if report is None else {"a": report}
    with pytest.raises(HealthInconclusive) as err:
        run([gpu_node("a")], driver_reports=reports)
    assert str(err.value) == line


def test_a_driver_report_names_its_source_and_a_lost_gpu_names_all_three_counts() -> None:
    reports = {
        "a": inv.DriverReport("DCGM exporter gpu-operator/e-a", count=8),
        "b": inv.DriverReport("DCGM exporter gpu-operator/e-b", count=7),
    }
    report = inv.inventory([gpu_node("a"), gpu_node("b")], policy=None, driver_reports=reports)
    assert [(f.node, f.driver, f.driver_source) for f in report.nodes] == [
        ("a", 8, "DCGM exporter gpu-operator/e-a"),
        ("b", 7, "DCGM exporter gpu-operator/e-b"),
    ]
    assert report.extra["nodes"][1]["driver_source"] == "DCGM exporter gpu-operator/e-b"
    with pytest.raises(HealthCheckFailed) as err:
        inv.check_inventory(report)
    assert err.value.lines == (
        "node b: the driver reports 7 GPUs but 8 are allocatable and the node advertises 8",
    )


def test_a_driver_report_with_a_problem_is_inconclusive() -> None:
    bad = inv.DriverReport(
        "DCGM exporter gpu-operator/e", problem="DCGM exporter pod gpu-operator/e answered HTTP 500: boom"
    )
    with pytest.raises(HealthInconclusive) as err:
        run([gpu_node("a")], driver_reports={"a": bad})
    assert str(err.value) == (
        "node a: driver report unreadable: DCGM exporter pod gpu-operator/e answered HTTP 500: boom"
    )


def scrape(text: str) -> ex.ExporterScrape:
    return ex.parse_scrape(text, "n")


def test_the_exporter_gpu_count_is_distinct_gpus_of_the_device_series() -> None:
    text = (
        "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
        "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a"} 31\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b"} 32\n'
        'DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-b",GPU_I_ID="1"} 0\n'  # a MIG instance of GPU 1
        'DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-b",GPU_I_ID="2"} 0\n'
        'DCGM_FI_DEV_XID_ERRORS{UUID="GPU-c"} 0\n'  # no gpu label: counted by UUID
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="7"} 0\n'  # not a DCGM_FI_DEV_* series
        'DCGM_FI_DEV_POWER_USAGE{Hostname="n"} 40\n'  # names no GPU
        "go_goroutines 12\n"
    )
    assert inv.exporter_gpu_count(scrape(text)) == 3
    assert inv.exporter_gpu_count(scrape("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n")) == 0
    assert inv.exporter_gpu_count(scrape("")) == 0


def test_driver_count_reads_nvidia_smi_list_output() -> None:
    mig = smi(2) + "  MIG 1g.10gb     Device  0: (UUID: MIG-abc)\n"
    assert inv.driver_gpu_count(mig) == 2
    assert inv.driver_gpu_count("No devices were found\n") == 0
    assert inv.driver_gpu_count(8) == 8
    for bad in (-1, True):
        with pytest.raises(ValueError):
            inv.driver_gpu_count(bad)


def test_a_node_without_the_device_plugin_resource_has_zero_allocatable() -> None:
    with pytest.raises(HealthCheckFailed) as err:
        run([gpu_node("a"), gpu_node("b", None)])
    assert str(err.value) == "node b: 0 of 8 GPUs allocatable"


def test_dra_policy_counts_resource_slice_devices() -> None:
    nodes = [gpu_node("a", None), gpu_node("b", None)]
    slices = [gpu_slice("a-gpus", "a", 8), gpu_slice("b-gpus", "b", 8, tainted=1)]
    with pytest.raises(HealthCheckFailed) as err:
        run(nodes, policy="dra-resource-claim", resource_slices=slices)
    assert str(err.value) == "node b: 7 of 8 GPUs allocatable"
    report = inv.inventory(nodes, policy="dra-resource-claim", resource_slices=slices, driver_reports={})
    assert report.extra["nodes"][0]["allocatable_source"] == "gpu.nvidia.com ResourceSlices"


def test_unspecified_policy_uses_the_device_plugin_when_listed_else_slices() -> None:
    nodes = [gpu_node("a"), gpu_node("b", None)]
    slices = [gpu_slice("b-gpus", "b", 8)]
    report = inv.inventory(nodes, policy=None, resource_slices=slices, driver_reports={"a": 8, "b": 8})
    assert [(n.node, n.allocatable, n.source) for n in report.nodes] == [
        ("a", 8, "allocatable nvidia.com/gpu"),
        ("b", 8, "gpu.nvidia.com ResourceSlices"),
    ]
    assert inv.check_inventory(report).startswith("GPU inventory consistent on 2 nodes")


def test_policy_edges() -> None:
    with pytest.raises(UsageError) as err:
        run([gpu_node("a")], policy="magic")
    assert str(err.value).startswith('unknown GPU allocation policy "magic"')
    with pytest.raises(HealthInconclusive) as inc:
        run([gpu_node("a")], policy="dra-extended-resource")
    assert str(inc.value) == (
        'node a: GPU allocation policy "dra-extended-resource" is reserved and cannot be inventoried'
    )
    with pytest.raises(HealthInconclusive) as none:
        run([])
    assert str(none.value) == "no GPU node to inventory"
