"""Test controller for the NCCL ``-nvls`` check on the control plane: the DRA driver's ComputeDomains.

The NVIDIA DRA driver (``k8s-dra-driver-gpu``) makes a multi-node NVLink (IMEX) domain out of a
``ComputeDomain`` (``resource.nvidia.com/v1beta1``): its controller creates the ``ResourceClaimTemplate``
named in ``spec.channel.resourceClaimTemplate.name``, whose claims ask for one IMEX channel device of
the ``compute-domain-default-channel.nvidia.com`` DeviceClass, and its kubelet plugin publishes those
channel devices in a ``ResourceSlice`` per node of an NVLink clique. :class:`ComputeDomainController`
plays both on the real apiserver, as the admin, polling like every
:class:`~tests.harness.controlplane_players.Poller`:

* for each new ComputeDomain, first: the DeviceClass (:func:`channel_device_class`) and, for every
  kwok node carrying ``nvidia.com/gpu.clique`` (the GB200 pool), a ResourceSlice of driver
  ``compute-domain.nvidia.com`` with the devices ``channel-0`` and ``daemon-0``
  (:func:`channel_resource_slice`), so the real kube-scheduler's DRA plugin can allocate the workers'
  claims (the kube-controller-manager's resource-claim controller makes one claim per pod from the
  template; the scheduler allocates it on the node it binds the pod to); existing ones are kept;
* per ComputeDomain: the ResourceClaimTemplate of the fake's player
  (:func:`aicr_pytest.testing.players.nccl.imex_claim_template`: the ComputeDomain's labels, the
  ``resource.nvidia.com/computeDomain: <uid>`` label, owned by the ComputeDomain with
  ``blockOwnerDeletion``) and ``status: Ready`` through the status subresource;
* when a ComputeDomain goes away (deleted or terminating): its template, if the real garbage collector
  has not removed it already (it does: the check's foreground delete returns once it is gone);
* when no ComputeDomain is left, and on :meth:`stop`: the DeviceClass and ResourceSlices it published,
  so the session's other tests (which share the control plane and may list every ResourceSlice) see
  the cluster as the profile seeded it; the next ComputeDomain publishes them again.

dra-support's IMEX channel probe pods (label ``app.kubernetes.io/component=imex-channel-probe``) are
played by :class:`ImexProbe` (with a ``PodPlayer``): the real scheduler bound the pod only once its
channel claim was allocated, so it prints one channel (:func:`aicr_pytest.testing.players.imex.probe_output`),
none under ``imex-channel-missing``.
"""

from __future__ import annotations

import contextlib
import urllib.error
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tests.harness.controlplane_players import Poller, http_detail

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

__all__ = [
    "CLIQUE_LABEL",
    "COMPUTE_DOMAIN_API",
    "COMPUTE_DOMAIN_DRIVER",
    "IMEX_PROBE_SELECTOR",
    "ComputeDomainController",
    "ImexProbe",
    "channel_device_class",
    "channel_resource_slice",
    "clique_nodes",
    "profile_clique",
    "sync_clique_labels",
]

Obj = dict[str, Any]

COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
#: The DRA driver name of the IMEX channel (and daemon) devices.
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
#: GFD's NVLink clique label: nodes that carry it are in an IMEX domain (the GB200 kwok pool).
CLIQUE_LABEL = "nvidia.com/gpu.clique"
RESOURCE_API = "resource.k8s.io/v1"
IMEX_PROBE_SELECTOR = "app.kubernetes.io/component=imex-channel-probe"


def channel_device_class() -> Obj:
    """The DeviceClass of a ComputeDomain's default IMEX channel (as the driver's Helm chart installs it)."""
    from aicr_pytest.testing.players.nccl import IMEX_CHANNEL_CLASS

    attrs = f"device.attributes['{COMPUTE_DOMAIN_DRIVER}']"
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": IMEX_CHANNEL_CLASS},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": (
                            f"device.driver == '{COMPUTE_DOMAIN_DRIVER}' && {attrs}.type == 'channel' "
                            f"&& {attrs}.id == 0"
                        )
                    }
                }
            ]
        },
    }


def channel_resource_slice(node: str) -> Obj:
    """The ResourceSlice the driver's kubelet plugin publishes on ``node``: IMEX channel 0 and its daemon."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{COMPUTE_DOMAIN_DRIVER}"},
        "spec": {
            "driver": COMPUTE_DOMAIN_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"{kind}-0", "attributes": {"type": {"string": kind}, "id": {"int": 0}}}
                for kind in ("channel", "daemon")
            ],
        },
    }


def clique_nodes(nodes: Iterable[Mapping[str, Any]], managed: Iterable[str]) -> list[str]:
    """Names of the ``managed`` (kwok) nodes in an NVLink clique (label :data:`CLIQUE_LABEL`), sorted."""
    names = set(managed)
    return sorted(
        str(n["metadata"]["name"])
        for n in nodes
        if n["metadata"]["name"] in names and ((n["metadata"].get("labels") or {}).get(CLIQUE_LABEL))
    )


def _owner(obj: Obj) -> Obj:
    meta = obj["metadata"]
    return {
        "apiVersion": COMPUTE_DOMAIN_API,
        "kind": "ComputeDomain",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


class ComputeDomainController(Poller):
    """The NVIDIA DRA driver's ComputeDomain controller and kubelet plugin (module docstring)."""

    name = "computedomain-controller"

    def __init__(self, cp: ControlPlane, *, interval: float = 0.2) -> None:
        super().__init__(cp, interval=interval)
        #: ComputeDomain uid -> (namespace, ResourceClaimTemplate name or "")
        self.reconciled: dict[str, tuple[str, str]] = {}
        #: API paths of the DeviceClass and ResourceSlices this controller created
        self.published: list[str] = []

    def tick(self) -> None:
        try:
            domains = self.cp.get(f"/apis/{COMPUTE_DOMAIN_API}/computedomains")["items"]
        except urllib.error.HTTPError as e:
            if e.code == 404:  # no ComputeDomain CRD on this cluster: nothing to play
                return
            raise
        live: set[str] = set()
        for cd in domains:
            meta = cd["metadata"]
            uid = str(meta.get("uid"))
            if meta.get("deletionTimestamp"):
                continue
            live.add(uid)
            if uid in self.reconciled:
                continue
            try:
                self.reconcile(cd)
            except urllib.error.HTTPError as e:
                if e.code not in (404, 410):  # gone while we worked on it: no error
                    self.errors.append(
                        f"ComputeDomain {meta.get('namespace')}/{meta['name']}: {http_detail(e)}"
                    )
                self.reconciled[uid] = (str(meta.get("namespace")), "")  # once, as for the Trainer
        for uid in [u for u in self.reconciled if u not in live]:
            ns, template = self.reconciled.pop(uid)
            if template:
                self._delete_template(ns, template, uid)
        if not domains and self.published:
            self.unpublish_channels()

    def reconcile(self, cd: Obj) -> None:
        """The channel devices, the ComputeDomain's claim template, then ``status: Ready``."""
        from aicr_pytest.testing.players.nccl import COMPUTE_DOMAIN_READY, imex_claim_template

        meta = cd["metadata"]
        ns, name, uid = str(meta["namespace"]), str(meta["name"]), str(meta["uid"])
        self.publish_channels()
        template = imex_claim_template(cd, _owner(cd))
        if template is not None:
            self._create(f"/apis/{RESOURCE_API}/namespaces/{ns}/resourceclaimtemplates", template)
        self.cp.request(
            "PATCH",
            f"/apis/{COMPUTE_DOMAIN_API}/namespaces/{ns}/computedomains/{name}/status",
            {"status": COMPUTE_DOMAIN_READY},
            content_type="application/merge-patch+json",
        )
        self.reconciled[uid] = (ns, str(template["metadata"]["name"]) if template else "")

    def publish_channels(self) -> None:
        """The IMEX channel DeviceClass and one ResourceSlice per clique node (existing ones stay)."""
        nodes = self.cp.get("/api/v1/nodes")["items"]
        slices = [channel_resource_slice(n) for n in clique_nodes(nodes, self.cp.node_names)]
        for obj in [channel_device_class(), *slices]:
            plural = "deviceclasses" if obj["kind"] == "DeviceClass" else "resourceslices"
            collection = f"/apis/{RESOURCE_API}/{plural}"
            if self._create(collection, obj):
                self.published.append(f"{collection}/{obj['metadata']['name']}")

    def unpublish_channels(self) -> None:
        """Delete the DeviceClass and ResourceSlices this controller published (gone already: fine)."""
        for path in reversed(self.published):
            with contextlib.suppress(urllib.error.HTTPError, OSError):
                self.cp.request("DELETE", path)
        self.published.clear()

    def stop(self) -> None:
        super().stop()
        self.unpublish_channels()

    # -- helpers ---------------------------------------------------------------------------------------
    def _create(self, collection: str, body: Obj) -> bool:
        """POST ``body``; an existing object of that name is kept. Returns whether this call created it."""
        try:
            self.cp.request("POST", collection, body)
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise
            return False
        return True

    def _delete_template(self, ns: str, name: str, uid: str) -> None:
        """Delete ComputeDomain ``uid``'s claim template ``ns/name`` if it is still there (and its own)."""
        from aicr_pytest.testing.players.nccl import COMPUTE_DOMAIN_LABEL

        path = f"/apis/{RESOURCE_API}/namespaces/{ns}/resourceclaimtemplates/{name}"
        try:
            template = self.cp.get(path)
            if (template["metadata"].get("labels") or {}).get(COMPUTE_DOMAIN_LABEL) == uid:
                self.cp.request("DELETE", path)
        except urllib.error.HTTPError as e:
            if e.code not in (404, 409, 410):
                self.errors.append(f"ResourceClaimTemplate {ns}/{name}: {http_detail(e)}")


class ImexProbe:
    """Plays dra-support's IMEX probe pod (``faults``: the session's; module docstring)."""

    def __init__(self, faults: Callable[[], tuple[str, ...]]) -> None:
        self.faults = faults

    def __call__(self, pod: Obj, node: Obj) -> dict[str, tuple[str, int]]:
        from aicr_pytest.testing.players import imex

        claims = [
            r
            for r in (pod.get("spec") or {}).get("resourceClaims") or []
            if r.get("resourceClaimTemplateName")
        ]
        channels = 1 if claims and imex.FAULT_CHANNEL_MISSING not in self.faults() else 0
        out = imex.probe_output(channels)
        return {str(c.get("name")): out for c in (pod.get("spec") or {}).get("containers") or []}


def profile_clique(profile: str) -> str | None:
    """The ``nvidia.com/gpu.clique`` label of ``profile``'s first GPU pool (``None``: not MNNVL)."""
    from aicr_pytest.testing.profiles import resolve_profile

    pools = resolve_profile(profile).gpu_pools()
    return (pools[0].labels.get(CLIQUE_LABEL) or None) if pools else None


def sync_clique_labels(cp: ControlPlane, gpu_nodes: Iterable[str], clique: str | None) -> None:
    """The clique label follows the seeded profile: on its GPU nodes when its pool is in an NVLink
    clique, on no other kwok node (the control plane keeps GB200 nodes for every profile; an H100
    cluster has no MNNVL fabric, which is what dra-support's IMEX subtest reads)."""
    wanted = set(gpu_nodes) if clique else set()
    for node in cp.get("/api/v1/nodes")["items"]:
        name = str(node["metadata"]["name"])
        if name not in cp.node_names:
            continue
        want = clique if name in wanted else None
        if (node["metadata"].get("labels") or {}).get(CLIQUE_LABEL) != want:
            cp.request(
                "PATCH",
                f"/api/v1/nodes/{name}",
                {"metadata": {"labels": {CLIQUE_LABEL: want}}},
                content_type="application/merge-patch+json",
            )
