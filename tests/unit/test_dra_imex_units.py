"""dra-support's IMEX channel subtest: the pure parts (applicability, occupancy, the probe's output,
the verdict, the objects) and the imex player's output."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.conformance import dra_imex
from aicr_pytest.conformance.failures import ConformanceFailure
from aicr_pytest.testing.players import imex
from aicr_pytest.testing.profiles.descriptions import FAULTS as FAULT_TEXTS
from aicr_pytest.testing.profiles.faults import FAULTS

CH0 = "/dev/nvidia-caps-imex-channels/channel0"
POD = "aicr-gpu-test-x/imex-alloc-test-x"


def node(
    name: str, *, clique: str | None = "u.1", ready: bool = True, cordoned: bool = False
) -> dict[str, Any]:
    labels = {dra_imex.CLIQUE_LABEL: clique} if clique is not None else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


# --- applicability --------------------------------------------------------------------------------


def test_only_ready_uncordoned_clique_nodes_are_candidates() -> None:
    nodes = [
        node("gb-b"),
        node("gb-a"),
        node("h100", clique=None),
        node("empty", clique=""),
        node("notready", ready=False),
        node("cordoned", cordoned=True),
    ]
    found = dra_imex.imex_candidates(nodes, {"gb-a": 1, "h100": 1, "notready": 1})
    assert found == dra_imex.Candidates(clique=("gb-a", "gb-b"), usable=("gb-a",))


def test_no_clique_node_means_no_candidates_even_with_compute_domain_slices() -> None:
    found = dra_imex.imex_candidates([node("h100-0", clique=None)], {"h100-0": 1})
    assert found == dra_imex.Candidates((), ())


def claim(name: str, *results: dict[str, str]) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": name, "namespace": "work"}}
    if results:
        body["status"] = {"allocation": {"devices": {"results": list(results)}}}
    return body


def cd_slice(node_name: str, pool: str, driver: str = dra_imex.COMPUTE_DOMAIN_DRIVER) -> dict[str, Any]:
    return {"spec": {"driver": driver, "nodeName": node_name, "pool": {"name": pool}}}


def test_pools_resolve_to_nodes_through_node_local_compute_domain_slices() -> None:
    slices = [
        cd_slice("gb-0", "pool-a"),
        cd_slice("gb-1", "pool-b", driver="gpu.nvidia.com"),
        {"spec": {"driver": dra_imex.COMPUTE_DOMAIN_DRIVER, "allNodes": True, "pool": {"name": "x"}}},
    ]
    assert dra_imex.pool_nodes(slices) == {"pool-a": "gb-0"}


def test_occupancy_counts_allocated_compute_domain_devices_only() -> None:
    cd = dra_imex.COMPUTE_DOMAIN_DRIVER
    claims = [
        claim("held", {"driver": cd, "pool": "pool-a", "device": "channel-0"}),
        claim("by-pool-name", {"driver": cd, "pool": "gb-9", "device": "channel-0"}),
        claim("gpu", {"driver": "gpu.nvidia.com", "pool": "gb-1", "device": "gpu-0"}),
        claim("pending"),
    ]
    assert dra_imex.occupied_nodes(claims, {"pool-a": "gb-0"}) == {
        "gb-0": ["work/held"],
        "gb-9": ["work/by-pool-name"],  # an unknown pool is taken as the node's name
    }


# --- the probe's output ---------------------------------------------------------------------------


def test_the_healthy_probe_output_parses_to_one_channel() -> None:
    text, code = imex.probe_output(1)
    assert code == 0
    assert dra_imex.parse_probe(text) == dra_imex.ProbeOutput(1, (CH0,))


def test_no_channel_and_two_channels_parse_as_printed() -> None:
    text, code = imex.probe_output(0)
    assert code == 1 and dra_imex.parse_probe(text) == dra_imex.ProbeOutput(0, ())
    two, _ = imex.probe_output(2)
    assert dra_imex.parse_probe(two).count == 2 and len(dra_imex.parse_probe(two).channels) == 2


@pytest.mark.parametrize(
    "log",
    ["", "failed to read logs: 403 forbidden", "IMEX_CHANNEL_COUNT=one\n", "hello\nPASS: fine\n"],
)
def test_output_without_a_count_reports_none(log: str) -> None:
    assert dra_imex.parse_probe(log).count is None


def test_the_last_count_wins() -> None:
    first = "IMEX_CHANNEL_COUNT=2\nIMEX_CHANNEL_CANDIDATES:\na\nb\n"
    log = f"{first}IMEX_CHANNEL_COUNT=1\nIMEX_CHANNEL_CANDIDATES:\n{CH0}\n"
    assert dra_imex.parse_probe(log) == dra_imex.ProbeOutput(1, (CH0,))


# --- the verdict ------------------------------------------------------------------------------------


def test_a_succeeded_probe_with_one_channel_passes_naming_pod_node_and_channel() -> None:
    out = dra_imex.parse_probe(imex.probe_output(1)[0])
    assert dra_imex.probe_verdict("Succeeded", out, POD, "gb-0") == (
        f"pod {POD} on node gb-0 saw exactly one IMEX channel device: {CH0}"
    )


def test_a_failed_probe_fails_with_the_upstream_message_and_what_it_saw() -> None:
    out = dra_imex.parse_probe(imex.probe_output(0)[0])
    with pytest.raises(ConformanceFailure) as err:
        dra_imex.probe_verdict("Failed", out, POD, "gb-0")
    assert str(err.value) == (
        "[INTERNAL] IMEX channel test pod phase=Failed (want Succeeded) — ComputeDomain IMEX channel "
        f"allocation failed or the pod did not observe exactly one channel device: pod {POD} on node gb-0 "
        "saw 0 IMEX channel devices"
    )


def test_a_failed_probe_with_an_unreadable_log_still_fails() -> None:
    with pytest.raises(ConformanceFailure, match=r"pod \S+ on node unknown saw no IMEX_CHANNEL_COUNT line$"):
        dra_imex.probe_verdict("Failed", dra_imex.parse_probe("failed to read logs: gone"), POD, "")


@pytest.mark.parametrize(
    ("log", "seen"),
    [
        (imex.probe_output(2)[0], "2 IMEX channel devices (listed: "),
        ("IMEX_CHANNEL_COUNT=1\nIMEX_CHANNEL_CANDIDATES:\n", "1 IMEX channel device (listed: none)"),
        ("IMEX_CHANNEL_COUNT=1\nIMEX_CHANNEL_CANDIDATES:\n/tmp/channel0\n", "(listed: /tmp/channel0)"),
        ("IMEX_CHANNEL_COUNT=0\nIMEX_CHANNEL_CANDIDATES:\n" + CH0 + "\n", "0 IMEX channel devices"),
    ],
)
def test_a_success_that_did_not_see_exactly_one_valid_channel_fails_closed(log: str, seen: str) -> None:
    with pytest.raises(ConformanceFailure) as err:
        dra_imex.probe_verdict("Succeeded", dra_imex.parse_probe(log), POD, "gb-0")
    text = str(err.value)
    assert text.startswith(f"[INTERNAL] IMEX channel test pod {POD} on node gb-0 succeeded but saw ")
    assert seen in text and text.endswith("want exactly one /dev/nvidia-caps-imex-channels/channel* device")


def test_a_success_without_a_count_fails_closed() -> None:
    with pytest.raises(ConformanceFailure) as err:
        dra_imex.probe_verdict(
            "Succeeded", dra_imex.parse_probe("PASS: IMEX channel allocated\n"), POD, "gb-0"
        )
    assert str(err.value) == (
        f"[INTERNAL] IMEX channel test pod {POD} on node gb-0 succeeded but printed no "
        "IMEX_CHANNEL_COUNT line"
    )


def test_the_result_line_names_the_subtest() -> None:
    assert dra_imex.result_line("SKIP", "n/a") == "RESULT: dra-support/IMEXChannelAllocation: SKIP - n/a"


# --- the objects ------------------------------------------------------------------------------------


def test_the_compute_domain_asks_for_single_channel_allocation_from_the_named_template() -> None:
    cd = dra_imex.build_compute_domain("imex-cd-t", "ns", "imex-rct-t", {"aicr.run/run-id": "r"})
    assert cd["apiVersion"] == "resource.nvidia.com/v1beta1" and cd["kind"] == "ComputeDomain"
    assert cd["metadata"] == {"name": "imex-cd-t", "namespace": "ns", "labels": {"aicr.run/run-id": "r"}}
    assert cd["spec"] == {
        "numNodes": 0,
        "channel": {"allocationMode": "Single", "resourceClaimTemplate": {"name": "imex-rct-t"}},
    }


def test_the_probe_pod_claims_one_channel_and_is_pinned_to_the_candidates() -> None:
    pod = dra_imex.build_probe_pod(
        "p", "ns", "imex-rct-t", ["gb-0", "gb-1"], {"a": "b"}, [{"operator": "Exists"}]
    )
    spec = pod["spec"]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert [t["matchFields"][0]["values"] for t in terms] == [["gb-0"], ["gb-1"]]  # one value per field term
    assert spec["resourceClaims"] == [{"name": "imex-channel", "resourceClaimTemplateName": "imex-rct-t"}]
    (container,) = spec["containers"]
    assert container["resources"] == {"claims": [{"name": "imex-channel"}]}
    assert "nvidia.com/gpu" not in str(container)  # the subtest needs no GPU
    assert container["command"][:2] == ["sh", "-c"] and "IMEX_CHANNEL_COUNT=" in container["command"][2]
    assert pod["metadata"]["labels"] == {"a": "b", "app.kubernetes.io/component": "imex-channel-probe"}
    assert spec["restartPolicy"] == "Never" and spec["tolerations"] == [{"operator": "Exists"}]


# --- the player ---------------------------------------------------------------------------------------


def test_the_player_injects_a_channel_only_for_a_driver_made_template() -> None:
    pod = {"spec": {"resourceClaims": [{"name": "c", "resourceClaimTemplateName": "t"}]}}
    made = {"metadata": {"labels": {"resource.nvidia.com/computeDomain": "uid"}}}
    assert imex.claims_channel(pod, {"t": made})
    assert not imex.claims_channel(pod, {"t": {"metadata": {}}})  # a user's own template
    assert not imex.claims_channel(pod, {"t": None})
    assert not imex.claims_channel({"spec": {}}, {})


def test_the_fault_is_known_and_described_for_simulate_list() -> None:
    assert "imex-channel-missing" in FAULTS
    assert "no IMEX channel device" in FAULT_TEXTS["imex-channel-missing"]
