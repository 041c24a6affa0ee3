"""dra-support's IMEX channel subtest end to end, through pytester on both backends (``k8s_backend``).

On the fake the nccl player plays the DRA driver's ComputeDomain controller and the imex player
(:mod:`aicr_pytest.testing.players.imex`) the probe pod's output; on the control plane
:class:`tests.harness.controlplane_computedomain.ComputeDomainController` reconciles the ComputeDomain,
the real resource-claim controller and scheduler allocate the channel from the profile's
``compute-domain.nvidia.com`` slices, and :func:`tests.harness.controlplane_computedomain.imex_probe_output`
plays the pod the scheduler bound to a kwok node. Scenarios that rewrite the seeded cluster or
inject HTTP faults are ``fake_only`` with the reason.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from _facade_helpers import fake_of

from aicr_pytest.conformance import dra_imex
from aicr_pytest.kube.client import RUN_ID_LABEL
from tests.cluster.test_conformance_checks import TRAINING, artifact, labels, leftovers, recipe, run
from tests.harness.backends import K8sBackend

GB200 = "gb200-eks-training"
GB200_NODES = "gb200-0,gb200-1,gb200-2,gb200-3"


def subtest(test: dict[str, Any]) -> tuple[str, str]:
    """The subtest's ``RESULT: dra-support/IMEXChannelAllocation: WORD - line`` (exactly one)."""
    found = [
        hit.groups()
        for line in test.get("stdout") or []
        for hit in [
            re.match(r"^RESULT: dra-support/IMEXChannelAllocation: (PASS|FAIL|SKIP|OTHER) - (.+)$", line)
        ]
        if hit
    ]
    assert len(found) == 1, test.get("stdout")
    return found[0][0], found[0][1]


def gb200_nodes(backend: K8sBackend) -> str:
    return ",".join(
        sorted(
            n["metadata"]["name"]
            for n in backend.list("v1", "Node", None)
            if (n["metadata"].get("labels") or {}).get(dra_imex.CLIQUE_LABEL)
        )
    )


def test_a_compute_domain_hands_the_probe_exactly_one_channel(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(GB200)
    result = run(pytester, k8s_backend, recipe(TRAINING, "dra-support"))
    test = result.tests["dra-support"]
    assert (test["status"], test.get("message")) == ("passed", None)
    word, line = subtest(test)
    assert word == "PASS"
    assert re.fullmatch(
        r"pod aicr-gpu-test-\S+/imex-alloc-test-\S+ on node \S+ saw exactly one IMEX channel device: "
        r"/dev/nvidia-caps-imex-channels/channel0",
        line,
    ), line
    assert artifact(test, dra_imex.ARTIFACT) == f"passed: {line}"
    nodes = gb200_nodes(k8s_backend)
    candidates = artifact(test, "IMEX candidate nodes")
    assert candidates.splitlines() == [
        f"Clique-labeled nodes: {nodes}",
        f"With usable compute-domain: {nodes}",
        "Channel already allocated: none",
        f"Probe candidates: {nodes}",
    ]
    created = artifact(test, "Created IMEX test resources")
    assert re.search(r"^ComputeDomain: imex-cd-[0-9a-f]{32}-", created, re.M) and result.run_id in created
    assert "Phase: Succeeded" in artifact(test, "IMEX pod status")
    assert artifact(test, "IMEX pod logs").startswith("IMEX_CHANNEL_COUNT=1\nIMEX_CHANNEL_CANDIDATES:\n")
    cleanup = artifact(test, "Delete IMEX test namespace")
    assert cleanup.endswith("confirmed absent (all test resources removed with it)") or cleanup.startswith(
        "WARNING: namespace"
    )
    # the full-GPU subtest still runs after it (the GB200 profile serves gpu.nvidia.com too)
    assert labels(test).index(dra_imex.ARTIFACT) < labels(test).index("Behavioral GPU allocation")
    assert leftovers(k8s_backend, result.run_id) == []
    assert (
        k8s_backend.list(
            dra_imex.COMPUTE_DOMAIN_API,
            "ComputeDomain",
            None,
            label_selector=f"{RUN_ID_LABEL}={result.run_id}",
        )
        == []
        or not k8s_backend.virtual_time
    )


def test_a_pod_that_sees_no_imex_channel_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(GB200, ["imex-channel-missing"])
    result = run(pytester, k8s_backend, recipe(TRAINING, "dra-support"))
    test = result.tests["dra-support"]
    assert test["status"] == "failed"
    message = test["message"]
    assert re.fullmatch(
        r"\[INTERNAL\] IMEX channel test pod phase=Failed \(want Succeeded\) — ComputeDomain IMEX channel "
        r"allocation failed or the pod did not observe exactly one channel device: pod "
        r"aicr-gpu-test-\S+/imex-alloc-test-\S+ on node (?:gpu-)?gb200-\d saw 0 IMEX channel devices",
        message,
    ), message
    assert subtest(test) == ("FAIL", message)
    assert artifact(test, "IMEX pod logs").startswith("IMEX_CHANNEL_COUNT=0\n")
    assert "Behavioral GPU allocation" not in labels(test)  # the first failed subtest ends the check
    assert leftovers(k8s_backend, result.run_id) == []


def test_without_an_nvlink_clique_the_subtest_does_not_apply(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["dra-gpu-slices-missing"])  # H100s publish CD slices too
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support")).tests["dra-support"]
    assert (test["status"], test.get("message")) == ("passed", None)
    assert subtest(test) == ("SKIP", dra_imex.MSG_NA_NO_CLIQUE)
    assert artifact(test, dra_imex.ARTIFACT) == dra_imex.MSG_NA_NO_CLIQUE
    assert "IMEX candidate nodes" not in labels(test)


@pytest.mark.fake_only("removes the profile's compute-domain.nvidia.com ResourceSlices")
def test_clique_nodes_without_a_compute_domain_device_fail(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(GB200)
    fc = fake_of(k8s_backend)
    for s in fc.list("resource.k8s.io/v1", "ResourceSlice", None):
        if s["spec"]["driver"] == "compute-domain.nvidia.com":
            fc.delete("resource.k8s.io/v1", "ResourceSlice", s["metadata"]["name"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support")).tests["dra-support"]
    expected = "[INTERNAL] " + dra_imex.MSG_NO_CD_SLICE.format(nodes=GB200_NODES)
    assert (test["status"], test["message"]) == ("failed", expected)
    assert subtest(test) == ("FAIL", expected)


@pytest.mark.fake_only("seeds allocated ResourceClaims holding every node's channel")
def test_every_channel_already_claimed_does_not_apply(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(GB200)
    fc = fake_of(k8s_backend)
    fc.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mnnvl"}})
    for i in range(4):
        fc.add(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"job-{i}", "namespace": "mnnvl"},
                "spec": {"devices": {"requests": []}},
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": "channel",
                                    "driver": "compute-domain.nvidia.com",
                                    "pool": f"gb200-{i}",
                                    "device": "channel-0",
                                }
                            ]
                        }
                    }
                },
            }
        )
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support")).tests["dra-support"]
    assert (test["status"], test.get("message")) == ("passed", None)
    held = "; ".join(f"gb200-{i} held by mnnvl/job-{i}" for i in range(4))
    assert subtest(test) == ("SKIP", dra_imex.MSG_NA_OCCUPIED.format(held=held))
    assert "Created IMEX test resources" not in labels(test)


@pytest.mark.fake_only("HTTP fault injection: every ComputeDomain create answers 500")
def test_a_compute_domain_that_cannot_be_created_is_other(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(GB200)
    fake_of(k8s_backend).faults.server_error("POST", r"/computedomains$", times=None)
    result = run(pytester, k8s_backend, recipe(TRAINING, "dra-support"))
    test = result.tests["dra-support"]
    assert test["status"] == "other"
    assert test["message"].startswith("[INTERNAL] failed to create ComputeDomain: ")
    assert subtest(test) == ("OTHER", test["message"])
    assert "confirmed absent" in artifact(test, "Delete IMEX test namespace")
    assert leftovers(k8s_backend, result.run_id) == []


@pytest.mark.fake_only(
    "no DRA driver controller plays the ComputeDomain (virtual time runs out the 2 min bound)"
)
def test_a_compute_domain_never_reconciled_is_other(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(GB200)
    fc = fake_of(k8s_backend)
    fc.sim._hooks.pop(("ADDED", "resource.nvidia.com", "computedomains"), None)  # no driver controller
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support")).tests["dra-support"]
    assert test["status"] == "other"
    assert re.fullmatch(
        r"\[TIMEOUT\] DRA driver did not reconcile ComputeDomain imex-cd-\S+ into ResourceClaimTemplate "
        r"imex-rct-\S+ within 2m0s: .+",
        test["message"],
    ), test["message"]
    assert subtest(test) == ("OTHER", test["message"])


@pytest.mark.fake_only("HTTP fault injection: every cluster-wide ResourceClaim list answers 500")
def test_claims_that_cannot_be_read_are_other_with_upstreams_read_error(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(GB200)
    fake_of(k8s_backend).faults.server_error(
        "GET", r"/apis/resource\.k8s\.io/[^/]+/resourceclaims$", times=None
    )
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support")).tests["dra-support"]
    assert test["status"] == "other"
    # upstream's ClassifyK8sReadError("ResourceClaims for IMEX channel occupancy"): "failed to read …"
    assert test["message"].startswith(
        "[INTERNAL] failed to read ResourceClaims for IMEX channel occupancy: "
    ), test["message"]
    assert subtest(test) == ("OTHER", test["message"])
