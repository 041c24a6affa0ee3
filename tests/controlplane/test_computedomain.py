"""The ComputeDomain test controller (:mod:`tests.harness.controlplane_computedomain`); the NVreg probe.

Pure helpers first (no control plane), then one round trip on the real apiserver: a ComputeDomain
becomes its IMEX claim template and ``status: Ready``, the channel devices are published for the GB200
kwok nodes only, and deleting the ComputeDomain removes the template.
"""

from __future__ import annotations

import urllib.error
import uuid
from typing import Any

from aicr_pytest.testing.players.nccl import (
    COMPUTE_DOMAIN_LABEL,
    IMEX_CHANNEL_CLASS,
    imex_claim_template,
)
from tests.controlplane.waiting import wait_for
from tests.harness.backends import ControlPlaneSession
from tests.harness.controlplane import GB200_NODES
from tests.harness.controlplane_computedomain import (
    COMPUTE_DOMAIN_API,
    COMPUTE_DOMAIN_DRIVER,
    ComputeDomainController,
    channel_device_class,
    channel_resource_slice,
    clique_nodes,
)
from tests.harness.controlplane_players import (
    NVREG_OVERRIDE_ANNOTATION,
    NvregProbe,
    nvreg_params,
    nvreg_probe_output,
)

RESOURCE = "/apis/resource.k8s.io/v1"


def node(name: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Any:
    return {"metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}}}


def compute_domain(name: str = "cd", template: str | None = "cd-imex") -> dict[str, Any]:
    spec: dict[str, Any] = {"numNodes": 0, "channel": {"allocationMode": "Single"}}
    if template:
        spec["channel"]["resourceClaimTemplate"] = {"name": template}
    return {
        "apiVersion": COMPUTE_DOMAIN_API,
        "kind": "ComputeDomain",
        "metadata": {"name": name, "namespace": "ns", "uid": "u-1", "labels": {"aicr.run/run-id": "r1"}},
        "spec": spec,
    }


# ------------------------------------------------------------------------------------- pure helpers --
def test_imex_claim_template_asks_for_one_channel_of_the_default_class() -> None:
    owner = {"apiVersion": COMPUTE_DOMAIN_API, "kind": "ComputeDomain", "name": "cd", "uid": "u-1"}
    rct = imex_claim_template(compute_domain(), owner)
    assert rct is not None
    assert rct["metadata"] == {
        "name": "cd-imex",
        "namespace": "ns",
        "labels": {"aicr.run/run-id": "r1", COMPUTE_DOMAIN_LABEL: "u-1"},
        "ownerReferences": [owner],
    }
    (request,) = rct["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {
        "deviceClassName": IMEX_CHANNEL_CLASS,
        "allocationMode": "ExactCount",
        "count": 1,
    }
    assert imex_claim_template(compute_domain(template=None), owner) is None


def test_channel_device_class_selects_channel_zero_of_the_compute_domain_driver() -> None:
    dc = channel_device_class()
    assert dc["metadata"]["name"] == IMEX_CHANNEL_CLASS == "compute-domain-default-channel.nvidia.com"
    (selector,) = dc["spec"]["selectors"]
    expression = selector["cel"]["expression"]
    assert f"device.driver == '{COMPUTE_DOMAIN_DRIVER}'" in expression
    assert ".type == 'channel'" in expression and ".id == 0" in expression


def test_channel_resource_slice_is_node_local() -> None:
    s = channel_resource_slice("gpu-gb200-0")
    assert s["metadata"]["name"] == "gpu-gb200-0-compute-domain.nvidia.com"
    spec = s["spec"]
    assert spec["driver"] == COMPUTE_DOMAIN_DRIVER and spec["nodeName"] == "gpu-gb200-0"
    assert spec["pool"] == {"name": "gpu-gb200-0", "generation": 1, "resourceSliceCount": 1}
    assert [(d["name"], d["attributes"]["type"]["string"]) for d in spec["devices"]] == [
        ("channel-0", "channel"),
        ("daemon-0", "daemon"),
    ]


def test_clique_nodes_are_managed_nodes_with_a_clique_label() -> None:
    nodes = [
        node("gpu-gb200-1", {"nvidia.com/gpu.clique": "c.1"}),
        node("gpu-gb200-0", {"nvidia.com/gpu.clique": "c.1"}),
        node("gpu-h100-0"),
        node("elsewhere", {"nvidia.com/gpu.clique": "c.1"}),
    ]
    assert clique_nodes(nodes, ["gpu-gb200-0", "gpu-gb200-1", "gpu-h100-0"]) == ["gpu-gb200-0", "gpu-gb200-1"]


def test_nvreg_probe_output_follows_the_node_driver_and_its_parameter() -> None:
    from aicr_pytest.nccl import nvreg

    pod = {"spec": {"containers": [{"name": "probe"}]}}
    assert "GrdmaPciTopoCheckOverride: 1\n" in nvreg_params(node("n"))
    [(out, code)] = nvreg_probe_output(pod, node("n")).values()
    assert code == 0 and nvreg.evaluate_probe(out) == nvreg.NodeResult(nvreg.Verdict.OK, "580.95.05")
    unset = node("n", annotations={NVREG_OVERRIDE_ANNOTATION: "0"})
    assert "GrdmaPciTopoCheckOverride: 0\n" in nvreg_params(unset)
    [(out, _)] = nvreg_probe_output(pod, unset).values()
    assert nvreg.evaluate_probe(out).verdict is nvreg.Verdict.FLAG_MISSING
    # driver-r595 on the target node only
    probe = NvregProbe(lambda: ("driver-r595",), lambda: "n")
    [(out, _)] = probe(pod, node("n")).values()
    assert nvreg.evaluate_probe(out) == nvreg.NodeResult(nvreg.Verdict.OVERRIDE_REMOVED, "595.58.03")
    [(out, _)] = probe(pod, node("other")).values()
    assert nvreg.evaluate_probe(out).verdict is nvreg.Verdict.OK


# --------------------------------------------------------------------------------- on the apiserver --
def _get(session: ControlPlaneSession, path: str) -> Any:
    try:
        return session.cp.get(path)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def test_compute_domain_round_trip_on_the_apiserver(controlplane_session: ControlPlaneSession) -> None:
    controlplane_session.seed_profile("gb200-eks-training")  # the clique labels follow the seeded profile
    cp = controlplane_session.cp
    ns = f"cd-{uuid.uuid4().hex[:6]}"
    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    # its own controller (the session's players may not be running): same behaviour, errors of its own
    controller = ComputeDomainController(cp, interval=0.1).start()
    assert isinstance(controller, ComputeDomainController)
    slices_path = f"{RESOURCE}/resourceslices?fieldSelector=spec.driver%3D{COMPUTE_DOMAIN_DRIVER}"
    class_path = f"{RESOURCE}/deviceclasses/{IMEX_CHANNEL_CLASS}"

    def channels() -> tuple[list[str], bool]:
        """The channel slices and whether the DeviceClass exists (a GB200 profile seeds both)."""
        names = sorted(str(s["metadata"]["name"]) for s in cp.get(slices_path)["items"])
        return names, _get(controlplane_session, class_path) is not None

    before = channels()
    try:
        cd = compute_domain(template="cd-imex")
        cd["metadata"] = {"name": "cd", "namespace": ns}
        created = cp.request("POST", f"/apis/{COMPUTE_DOMAIN_API}/namespaces/{ns}/computedomains", cd)
        rct_path = f"{RESOURCE}/namespaces/{ns}/resourceclaimtemplates/cd-imex"
        rct = wait_for("the IMEX claim template", lambda: _get(controlplane_session, rct_path), 20, 0.1)
        assert rct["metadata"]["labels"][COMPUTE_DOMAIN_LABEL] == created["metadata"]["uid"]
        assert rct["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        cd_path = f"/apis/{COMPUTE_DOMAIN_API}/namespaces/{ns}/computedomains/cd"
        wait_for("status Ready", lambda: (cp.get(cd_path).get("status") or {}).get("status") == "Ready")
        slices = cp.get(f"{RESOURCE}/resourceslices?fieldSelector=spec.driver%3D{COMPUTE_DOMAIN_DRIVER}")
        assert sorted(s["spec"]["nodeName"] for s in slices["items"]) == GB200_NODES.node_names()
        assert _get(controlplane_session, f"{RESOURCE}/deviceclasses/{IMEX_CHANNEL_CLASS}") is not None

        cp.request("DELETE", cd_path)
        wait_for("the template to go", lambda: _get(controlplane_session, rct_path) is None)
        # no ComputeDomain left: the channel devices it published are withdrawn (by whichever controller
        # published them); the seeded profile's own stay
        wait_for("the channel devices to go", lambda: channels() == before)
        assert controller.errors == []
    finally:
        controller.stop()
        cp.request("DELETE", f"/api/v1/namespaces/{ns}")
    assert controller.published == []  # stop() removed what it published (the next one publishes again)


def test_controller_tolerates_a_cluster_without_compute_domains() -> None:
    class NoCrd:
        node_names = ()

        def get(self, path: str) -> Any:
            raise urllib.error.HTTPError(path, 404, "Not Found", {}, None)  # type: ignore[arg-type]

    controller = ComputeDomainController(NoCrd())  # type: ignore[arg-type]
    controller.tick()
    assert controller.errors == [] and controller.reconciled == {}
