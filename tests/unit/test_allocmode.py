"""GPU allocation-mode probe and policy verification."""

from __future__ import annotations

from decimal import Decimal

import pytest
from _gpu_objects import gpu_class, gpu_slice, node

from aicr_pytest.core import allocmode as am
from aicr_pytest.core.errors import UsageError


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8", 8), ("100Gi", 100 * 2**30), ("500m", Decimal("0.5")), ("1e3", 1000), ("1.5k", 1500), (4, 4)],
)
def test_parse_quantity(text: object, expected: object) -> None:
    assert am.parse_quantity(text) == Decimal(str(expected))


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "10 Gi", "Gi", True, None])
def test_parse_quantity_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        am.parse_quantity(bad)


def test_device_plugin_only_cluster() -> None:
    mode = am.detect(
        [node("a"), node("b", ready=False), node("c", unschedulable=True), node("d", None)], None
    )
    assert mode.device_plugin_usable and mode.device_plugin_nodes == ("a",)
    assert not mode.dra_usable and mode.dra_nodes == ()
    assert mode.dra_detail == am.MSG_DRA_NO_API
    assert (
        mode.device_plugin_detail
        == "device plugin usable: 1 Ready, schedulable node(s) with allocatable nvidia.com/gpu"
    )
    summary = mode.summary().splitlines()
    assert summary[0] == "DRA (gpu.nvidia.com): usable=false nodes=[]"
    assert summary[1] == "Device plugin (nvidia.com/gpu): usable=true nodes=[a]"
    assert am.MSG_TAINT_NOTE in summary


def test_dra_usable_node_local_slices() -> None:
    nodes = [node("a", None), node("b", None)]
    slices = [gpu_slice("s-a", "a", 8), gpu_slice("s-b", "b", 4, tainted=1)]
    mode = am.detect(nodes, "v1", [gpu_class()], slices)
    assert mode.dra_usable
    assert dict(mode.dra_node_devices) == {"a": 8, "b": 3}  # the tainted device is not usable
    assert dict(mode.node_local_gpu_slice_devices) == {"a": 8, "b": 4}  # kai's raw view counts it
    assert dict(mode.gpu_pool_nodes) == {"a": "a", "b": "b"}
    assert mode.dra_detail.startswith(
        "full-GPU DRA usable: DeviceClass gpu.nvidia.com exists (resource.k8s.io/v1)"
    )
    assert not mode.device_plugin_usable
    assert mode.device_plugin_detail == am.MSG_DP_NOT_USABLE


def test_dra_class_missing_is_half_installed() -> None:
    mode = am.detect([node("a", None)], "v1", [], [gpu_slice("s", "a")])
    assert not mode.dra_usable and mode.dra_nodes == ()
    assert mode.dra_detail.startswith(am.MSG_DRA_NO_CLASS + " — but 1 ")
    assert "HALF-INSTALLED" in mode.dra_detail


def test_dra_class_without_slices() -> None:
    mode = am.detect([node("a")], "v1beta2", [gpu_class()], [])
    assert mode.dra_detail == am.MSG_DRA_NO_SLICES


def test_incomplete_pool_is_not_usable_but_kai_blocked() -> None:
    # resourceSliceCount says 2 but only one slice of the current generation exists
    mode = am.detect([node("a", None)], "v1", [gpu_class()], [gpu_slice("s", "a", count=2)])
    assert not mode.dra_usable
    assert mode.dra_detail == am.MSG_DRA_NO_USABLE_POOL
    assert mode.kai_blocked_nodes == ("a",)
    assert any("raw gpu.nvidia.com ResourceSlice devices" in w for w in mode.warnings())


def test_only_newest_generation_counts() -> None:
    slices = [gpu_slice("old", "a", 8, generation=1), gpu_slice("new", "a", 2, generation=2)]
    mode = am.detect([node("a", None)], "v1", [gpu_class()], slices)
    assert dict(mode.dra_node_devices) == {"a": 2}


def test_duplicate_device_names_invalidate_pool() -> None:
    slices = [gpu_slice("s1", "a", 2, pool="p", count=2), gpu_slice("s2", "a", 2, pool="p", count=2)]
    mode = am.detect([node("a", None)], "v1", [gpu_class()], slices)
    assert not mode.dra_usable


def test_ineligible_node_devices_are_not_usable() -> None:
    mode = am.detect([node("a", None, ready=False)], "v1", [gpu_class()], [gpu_slice("s", "a")])
    assert not mode.dra_usable


def test_v1beta1_basic_taints() -> None:
    s = gpu_slice("s", "a", 2)
    s["spec"]["devices"] = [
        {"name": "g0", "basic": {"taints": [{"effect": "NoExecute"}]}},
        {"name": "g1", "basic": {}},
    ]
    mode = am.detect([node("a", None)], "v1beta1", [gpu_class()], [s])
    assert dict(mode.dra_node_devices) == {"a": 1}


def test_non_node_local_topologies_attribute_to_eligible_nodes() -> None:
    nodes = [node("a", None, labels={"pool": "x"}), node("b", None, labels={"pool": "y"})]
    selector = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["x"]}]}]
    }
    all_nodes = am.detect(nodes, "v1", [gpu_class()], [gpu_slice("s", None, 2, pool="p", allNodes=True)])
    assert dict(all_nodes.dra_node_devices) == {"a": 2, "b": 2}
    by_selector = am.detect(
        nodes, "v1", [gpu_class()], [gpu_slice("s", None, 2, pool="p", nodeSelector=selector)]
    )
    assert dict(by_selector.dra_node_devices) == {"a": 2}
    assert by_selector.non_node_local_gpu_slices == ("s",)


def test_per_device_node_selection() -> None:
    s = gpu_slice("s", None, 0, pool="p", perDeviceNodeSelection=True)
    s["spec"]["devices"] = [{"name": "g0", "nodeName": "a"}, {"name": "g1", "nodeName": "b"}]
    mode = am.detect([node("a", None), node("b", None)], "v1", [gpu_class()], [s])
    assert dict(mode.dra_node_devices) == {"a": 1, "b": 1}


@pytest.mark.parametrize(
    ("op", "labels", "expected"),
    [
        ("NotIn", {}, True),
        ("Exists", {"k": "v"}, True),
        ("DoesNotExist", {"k": "v"}, False),
        ("Gt", {"k": "5"}, False),
    ],
)
def test_node_selector_operators(op: str, labels: dict[str, str], expected: bool) -> None:
    sel = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": op, "values": ["1"]}]}]}
    assert am.node_selector_matches(sel, node("n", labels=labels)) is expected


def test_match_fields_metadata_name() -> None:
    sel = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]
    }
    assert am.node_selector_matches(sel, node("n"))
    assert not am.node_selector_matches(sel, node("m"))


def test_dual_advertisement_and_extended_resource() -> None:
    mode = am.detect(
        [node("a", 8)],
        "v1",
        [gpu_class(), gpu_class("ext", extendedResourceName="nvidia.com/gpu")],
        [gpu_slice("s", "a")],
    )
    assert mode.dual_advertised_nodes == ("a",)
    assert mode.extended_resource_classes == ("ext",)
    assert "dual advertisement" in mode.summary()
    assert "[ext]" in mode.extended_resource_detail


def test_cel_selector_note() -> None:
    cls = gpu_class(selectors=[{"cel": {"expression": "true"}}])
    mode = am.detect([node("a", None)], "v1", [cls], [gpu_slice("s", "a")])
    assert mode.dra_detail.endswith(am.MSG_DRA_CEL_NOTE.format(k=1))


def test_topology_rejections_exact_texts() -> None:
    nodes = [node("a", None), node("b", None)]
    foreign = am.detect(nodes, "v1", [gpu_class()], [gpu_slice("s", "a", driver="gpu.amd.com")])
    with pytest.raises(am.UnsupportedGPUTopology) as exc:
        am.reject_unsupported_gpu_topology(foreign)
    assert str(exc.value) == am.MSG_TOPO_FOREIGN_DRIVER.format(drivers="[gpu.amd.com]")
    assert str(exc.value).startswith("unsupported GPU DRA configuration: ")

    non_local = am.detect(nodes, "v1", [gpu_class()], [gpu_slice("s", None, pool="p", allNodes=True)])
    with pytest.raises(am.UnsupportedGPUTopology, match="non-node-local"):
        am.reject_unsupported_gpu_topology(non_local)

    shared = am.detect(
        nodes,
        "v1",
        [gpu_class()],
        [gpu_slice("s1", "a", pool="p", count=2), gpu_slice("s2", "b", pool="p", count=2)],
    )
    with pytest.raises(am.UnsupportedGPUTopology) as exc:
        am.reject_unsupported_gpu_topology(shared)
    assert "p (a, b)" in str(exc.value)


def test_compute_domain_slices_are_not_gpu_slices() -> None:
    mode = am.detect([node("a")], "v1", [], [gpu_slice("cd", "a", driver="compute-domain.nvidia.com")])
    am.reject_unsupported_gpu_topology(mode)
    assert mode.foreign_gpu_slice_drivers == ()
    assert not mode.gpu_slices_seen


@pytest.mark.parametrize("policy", [None, "", "unspecified"])
def test_verify_unspecified(policy: str | None) -> None:
    assert am.verify_policy(policy, am.detect([], None)) == "unspecified"


def test_verify_dra_claim() -> None:
    dra = am.detect([node("a", None)], "v1", [gpu_class()], [gpu_slice("s", "a")])
    assert am.verify_policy("dra-resource-claim", dra) == "dra-resource-claim"
    dp = am.detect([node("a")], None)
    with pytest.raises(am.AllocationPolicyMismatch) as exc:
        am.verify_policy("dra-resource-claim", dp)
    text = str(exc.value)
    assert text.startswith(
        'GPU allocation policy mismatch: the recipe configures "dra-resource-claim" but the cluster has no '
        "usable full-GPU DRA (gpu.nvidia.com DeviceClass + validated ResourceSlices).\nObserved state:\n"
    )
    assert dp.summary() in text and "\nLikely cause: " in text


def test_verify_device_plugin() -> None:
    dra_only = am.detect([node("a", None)], "v1", [gpu_class()], [gpu_slice("s", "a")])
    with pytest.raises(am.AllocationPolicyMismatch, match="device-plugin-extended-resource"):
        am.verify_policy("device-plugin-extended-resource", dra_only)
    assert am.verify_policy("device-plugin-extended-resource", am.detect([node("a")], None))


def test_verify_reserved_and_unknown() -> None:
    mode = am.detect([node("a")], None)
    with pytest.raises(am.AllocationPolicyMismatch) as exc:
        am.verify_policy("dra-extended-resource", mode)
    assert str(exc.value) == am.MSG_POLICY_RESERVED
    with pytest.raises(UsageError) as uexc:
        am.verify_policy("bogus", mode)
    assert str(uexc.value) == (
        'unknown GPU allocation policy "bogus" (valid: unspecified, device-plugin-extended-resource, '
        "dra-resource-claim)"
    )


def test_policy_evidence_block() -> None:
    mode = am.detect([node("a")], None)
    block = am.policy_evidence(None, mode).splitlines()
    assert block[:2] == ["--- GPU allocation policy ---", "configured policy: unspecified"]
    assert block[2:] == mode.summary().splitlines()


def test_newest_served_version() -> None:
    assert am.newest_served_version(["v1beta1", "v1beta2"]) == "v1beta2"
    assert am.newest_served_version(["v1", "v1beta1"]) == "v1"
    assert am.newest_served_version(["v1alpha3"]) is None
