"""inference-perf GPU node choice: candidates, occupancy ledgers, selection, evidence."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _gpu_objects import claim, gpu_class, gpu_slice, node, pod

from aicr_pytest import inference as inf
from aicr_pytest.core import allocmode as am
from aicr_pytest.core.recipe import Constraint


def choose(
    nodes: list[dict[str, Any]],
    pods: Any = (),
    claims: Any = None,
    *,
    slices: list[dict[str, Any]] | None = None,
    policy: str | None = None,
    selector: dict[str, str] | None = None,
    api: str | None = None,
) -> inf.NodeChoice:
    mode = am.detect(nodes, api or ("v1" if slices else None), [gpu_class()] if slices else [], slices or [])
    am.reject_unsupported_gpu_topology(mode)
    am.verify_policy(policy, mode)
    candidates = inf.discover_candidate_nodes(nodes, mode, policy, selector)
    occupancy = inf.count_used_gpus_by_node(
        list(pods) if not isinstance(pods, BaseException) else pods, claims, mode
    )
    return inf.select_worker_node(candidates, occupancy, mode, policy)


# --- effective GPU request -----------------------------------------------------------------------


def test_effective_request_regular_and_overhead() -> None:
    assert inf.pod_effective_gpu_request(pod("p", "n", 2, overhead=1)) == 3
    assert inf.pod_effective_gpu_request(pod("p", "n", 2, limits_only=True)) == 2


def test_effective_request_requests_preferred_over_limits() -> None:
    p = pod("p", "n", 0)
    p["spec"]["containers"] = [
        {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "4"}}}
    ]
    assert inf.pod_effective_gpu_request(p) == 1


def test_effective_request_init_and_sidecars() -> None:
    def c(g: int, always: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"name": "i", "resources": {"requests": {"nvidia.com/gpu": str(g)}}}
        if always:
            out["restartPolicy"] = "Always"
        return out

    # one-shot init of 4 dominates 1 regular
    assert inf.pod_effective_gpu_request(pod("p", "n", 1, init=[c(4)])) == 4
    # sidecar (1) started before a one-shot init (2): init phase needs 3; steady state 1 + 1 = 2
    assert inf.pod_effective_gpu_request(pod("p", "n", 1, init=[c(1, True), c(2)])) == 3
    # sidecar after the one-shot init does not add to it
    assert inf.pod_effective_gpu_request(pod("p", "n", 1, init=[c(2), c(1, True)])) == 2
    assert inf.pod_effective_gpu_request(pod("p", "n", 3, init=[c(1, True)])) == 4


# --- device plugin -------------------------------------------------------------------------------


def test_device_plugin_most_free_wins() -> None:
    nodes = [node("a"), node("b"), node("c")]
    pods = [pod("x", "a", 2), pod("y", "b", 1), pod("z", "c", 1), pod("w", "c", 1)]
    choice = choose(nodes, pods)
    assert (choice.name, choice.free_gpus, choice.node_gpus, choice.dra_wiring) == ("b", 7, 8, False)
    assert choice.wiring == "device plugin (resources.limits nvidia.com/gpu)"


def test_terminal_and_unbound_pods_do_not_count() -> None:
    pods = [pod("s", "a", 8, phase="Succeeded"), pod("f", "a", 8, phase="Failed"), pod("u", None, 8)]
    assert choose([node("a")], pods).free_gpus == 8


def test_ties_break_on_name() -> None:
    assert choose([node("b"), node("a")]).name == "a"


def test_not_ready_and_cordoned_are_excluded() -> None:
    nodes = [node("a", ready=False), node("b", 4), node("c", unschedulable=True)]
    assert choose(nodes).name == "b"


def test_node_selector_narrows() -> None:
    nodes = [node("a"), node("b", labels={"pool": "x"})]
    assert choose(nodes, selector={"pool": "x"}).name == "b"
    assert choose(nodes, selector={}).name == "a"  # given but empty: no narrowing
    with pytest.raises(inf.InferenceFailure) as exc:
        choose(nodes, selector={"pool": "y", "a": "b"})
    assert str(exc.value) == "no schedulable GPU nodes match --node-selector map[a:b pool:y]"


def test_no_gpu_nodes() -> None:
    with pytest.raises(inf.InferenceFailure) as exc:
        choose([node("a", None)])
    assert str(exc.value) == "no schedulable GPU nodes found"


def test_half_occupied_node_scales_gate() -> None:
    choice = choose([node("a")], [pod("x", "a", 4)])
    assert (choice.free_gpus, choice.node_gpus) == (4, 8)
    knobs = inf.resolve_knobs([Constraint(name="inference-throughput", value=">= 50000")])
    assert inf.scaled_throughput_threshold(50000, choice.free_gpus, choice.node_gpus) == 25000
    passing = inf.evaluate(22500.0, 100.0, knobs, choice.free_gpus, choice.node_gpus)
    assert passing.passed
    assert (
        passing.lines[2] == "Throughput gate scaled to 4 of 8 node GPUs benchmarked: 50000 → 25000 tokens/sec"
    )
    failing = inf.evaluate(22499.0, 100.0, knobs, choice.free_gpus, choice.node_gpus)
    assert failing.failures == (
        'inference throughput 22499.00 tokens/sec does not satisfy constraint ">= 50000" (with 10% tolerance)'
        " — gate scaled to 25000 for 4 of 8 node GPUs benchmarked",
    )


def test_saturated_message() -> None:
    with pytest.raises(inf.InferenceFailure) as exc:
        choose([node("a", 2), node("b", 2)], [pod("x", "a", 2), pod("y", "b", 3)])
    assert str(exc.value) == (
        "no eligible candidate GPU node has free GPUs (2 matched; eligible candidates are saturated by "
        "existing workloads in the selected mechanism's ledger — nodes excluded as NotReady, "
        "probe-ineligible, kai-blocked, or DRA-wired-but-scalar-occupied are not counted); free GPUs or pass "
        "--node-selector kubernetes.io/hostname=<empty-node>"
    )


def test_all_not_ready_is_no_eligible_not_saturated() -> None:
    with pytest.raises(inf.InferenceFailure) as exc:
        choose([node("a", ready=False)])
    assert str(exc.value).startswith("no eligible candidate GPU node (1 matched;")


# --- DRA -----------------------------------------------------------------------------------------


def test_dra_node_claims_subtract_from_dra_capacity() -> None:
    nodes = [node("a", None), node("b", None)]
    slices = [gpu_slice("sa", "a", 8), gpu_slice("sb", "b", 8)]
    claims = [
        claim("c1", "a", 3),
        claim("c2", "b", 1),
        claim("admin", "b", 4, admin=True),
        claim("pending", "b", 4, allocated=False),
    ]
    choice = choose(nodes, [], claims, slices=slices, policy="dra-resource-claim")
    assert (choice.name, choice.free_gpus, choice.node_gpus, choice.dra_wiring) == ("b", 7, 8, True)
    assert choice.wiring == "DRA (gpu.nvidia.com ResourceClaimTemplate)"


def test_dra_pool_attributed_via_slice_node_not_pool_name() -> None:
    nodes = [node("a", None), node("b", None)]
    slices = [gpu_slice("sa", "a", 2, pool="pool-x"), gpu_slice("sb", "b", 2, pool="pool-y")]
    choice = choose(nodes, [], [claim("c", "pool-x", 2)], slices=slices, policy="dra-resource-claim")
    assert (choice.name, choice.free_gpus) == ("b", 2)


def test_dra_unmapped_pool_fails() -> None:
    nodes = [node("a", None)]
    with pytest.raises(am.UnsupportedGPUTopology) as exc:
        choose(
            nodes, [], [claim("c", "ghost", 1)], slices=[gpu_slice("sa", "a")], policy="dra-resource-claim"
        )
    assert 'pool "ghost", which no node-local ResourceSlice publishes' in str(exc.value)


@pytest.mark.parametrize("first_available", [False, True])
def test_foreign_gpu_claim_class_fails(first_available: bool) -> None:
    with pytest.raises(am.UnsupportedGPUTopology) as exc:
        choose(
            [node("a", None)],
            [],
            [claim("c", "a", device_class="gpu.amd.com", first_available=first_available)],
            slices=[gpu_slice("sa", "a")],
            policy="dra-resource-claim",
        )
    assert 'requests DeviceClass "gpu.amd.com"' in str(exc.value)


def test_kep5004_claims_deduplicated_against_scalar_requests() -> None:
    nodes = [node("a", 8)]
    pods = [pod("p", "a", 2, ext_claim=("p-gpu", "gpu"))]
    claims = [claim("p-gpu", "a", 2)]
    # the scalar request is the ledger entry; the backing claim is not counted again
    occ = inf.count_used_gpus_by_node(pods, claims, am.detect(nodes, "v1", [], [gpu_slice("sa", "a")]))
    assert occ.scalar_used == {"a": 2} and occ.dra_used == {}


def test_dra_node_with_scalar_workload_is_skipped() -> None:
    # without a policy candidates are scalar nodes; dual-advertised ones get DRA wiring
    nodes = [node("a", 8), node("b", 2), node("c", None)]
    slices = [gpu_slice("sa", "a", 8), gpu_slice("sb", "b", 2), gpu_slice("sc", "c", 8)]
    choice = choose(nodes, [pod("x", "a", 1)], [], slices=slices)
    assert (choice.name, choice.free_gpus, choice.dra_wiring) == ("b", 2, True)


def test_dra_scalar_offender_reported_when_nothing_eligible() -> None:
    nodes = [node("a", 8)]
    with pytest.raises(inf.InferenceFailure) as exc:
        choose(nodes, [pod("x", "a", 1)], [], slices=[gpu_slice("sa", "a", 8)])
    assert "DRA-capable node(s) a (1 scalar GPU(s) in use) hold GPUs through device-plugin" in str(exc.value)


def test_kai_blocked_node_excluded_and_reported() -> None:
    # node a publishes an incomplete pool (raw devices, not usable) but also advertises scalar GPUs
    nodes = [node("a", 8)]
    with pytest.raises(inf.InferenceFailure) as exc:
        choose(nodes, slices=[gpu_slice("sa", "a", 8, count=2)])
    assert "Node(s) a (8 raw device(s)) carry gpu.nvidia.com ResourceSlices that kai-scheduler counts" in str(
        exc.value
    )


def test_mixed_cluster_prefers_dra_on_tie_then_name() -> None:
    nodes = [node("a", 4), node("z", 4)]
    slices = [gpu_slice("sz", "z", 4)]
    choice = choose(nodes, slices=slices)
    assert (choice.name, choice.dra_wiring) == ("z", True)


def test_mixed_cluster_more_free_wins_over_dra() -> None:
    nodes = [node("a", 8), node("z", 4)]
    choice = choose(nodes, slices=[gpu_slice("sz", "z", 4)])
    assert (choice.name, choice.dra_wiring, choice.free_gpus) == ("a", False, 8)


def test_device_plugin_policy_never_picks_dra_nodes() -> None:
    nodes = [node("a", 2), node("z", None)]
    choice = choose(nodes, slices=[gpu_slice("sz", "z", 8)], policy="device-plugin-extended-resource")
    assert (choice.name, choice.dra_wiring) == ("a", False)


def test_dra_policy_candidates_from_probe() -> None:
    nodes = [node("a", 8), node("z", None)]
    choice = choose(nodes, slices=[gpu_slice("sz", "z", 2)], policy="dra-resource-claim")
    assert (choice.name, choice.dra_wiring) == ("z", True)


def test_dra_policy_no_candidates() -> None:
    mode = am.detect([node("a")], None)
    with pytest.raises(inf.InferenceFailure) as exc:
        inf.discover_candidate_nodes([node("a")], mode, "dra-resource-claim")
    assert str(exc.value) == inf.MSG_NO_DRA_CANDIDATES


def test_dra_only_cluster_without_policy() -> None:
    nodes = [node("a", None), node("b", None)]
    mode = am.detect(nodes, "v1", [gpu_class()], [gpu_slice("sa", "a"), gpu_slice("sb", "b")])
    with pytest.raises(inf.InferenceFailure) as exc:
        inf.discover_candidate_nodes(nodes, mode, None)
    assert str(exc.value) == (
        "no schedulable GPU node advertises scalar nvidia.com/gpu, but 2 node(s) carry usable full-GPU DRA "
        "devices (a, b) — a DRA-only cluster is not supported by AICR validation without a recipe-configured "
        "dra-resource-claim policy (experimental; see issue #1327)"
    )


def test_dra_saturated_message_variant() -> None:
    nodes = [node("a", None)]
    with pytest.raises(inf.InferenceFailure) as exc:
        choose(nodes, [], [claim("c", "a", 2)], slices=[gpu_slice("sa", "a", 2)], policy="dra-resource-claim")
    assert str(exc.value).startswith(
        'configured GPU allocation policy "dra-resource-claim": no eligible DRA-capable candidate node '
        "has free GPUs"
    )


def test_each_node_uses_its_own_ledger() -> None:
    nodes = [node("a", 8), node("z", 4)]
    choice = choose(nodes, [pod("x", "a", 6)], [claim("c", "z", 1)], slices=[gpu_slice("sz", "z", 4)])
    assert (choice.name, choice.free_gpus) == ("z", 3)


# --- fail closed ---------------------------------------------------------------------------------


def test_pod_list_error_fails() -> None:
    with pytest.raises(inf.InferenceFailure) as exc:
        inf.count_used_gpus_by_node(PermissionError("pods is forbidden"), None, None)
    assert str(exc.value) == "failed to list pods for GPU occupancy accounting: pods is forbidden"


def test_pod_list_error_mid_pagination_fails() -> None:
    def pages() -> Iterator[dict[str, Any]]:
        yield pod("x", "a", 1)
        raise TimeoutError("continue token expired")

    with pytest.raises(inf.InferenceFailure, match="failed to list pods for GPU occupancy accounting"):
        inf.count_used_gpus_by_node(pages(), None, None)


def test_claim_list_error_fails_but_not_served_is_zero() -> None:
    with pytest.raises(inf.InferenceFailure) as exc:
        inf.count_used_gpus_by_node([], PermissionError("resourceclaims is forbidden"), None)
    assert str(exc.value) == (
        "failed to list DRA ResourceClaims for GPU occupancy accounting: resourceclaims is forbidden"
    )

    def broken() -> Iterator[dict[str, Any]]:
        raise TimeoutError("timeout")
        yield {}

    with pytest.raises(inf.InferenceFailure, match="failed to list DRA ResourceClaims"):
        inf.count_used_gpus_by_node([], broken(), None)
    assert inf.count_used_gpus_by_node([pod("x", "a", 1)], None, None).dra_used == {}


# --- evidence and tolerations --------------------------------------------------------------------


def test_wiring_evidence() -> None:
    nodes = [node("a")]
    mode = am.detect(nodes, None)
    choice = choose(nodes)
    lines = inf.wiring_evidence(mode, choice).splitlines()
    assert lines[0] == "--- GPU allocation mode (worker GPU wiring) ---"
    assert (
        lines[-1]
        == "worker GPU wiring: device plugin (resources.limits nvidia.com/gpu) (node-local decision for a)"
    )
    assert lines[1:-1] == mode.summary().splitlines()


def test_worker_tolerations() -> None:
    n = node(
        "a",
        taints=[
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
            {"key": "dedicated", "value": "a:b {c}", "effect": "NoExecute"},
        ],
    )
    assert inf.worker_tolerations(n, None) == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "a:b {c}", "effect": "NoExecute"},
    ]
    assert inf.worker_tolerations(n, [{"operator": "Exists"}]) == [{"operator": "Exists"}]
    assert inf.worker_tolerations(n, []) == []
