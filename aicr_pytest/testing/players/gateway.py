"""The inference gateway as cluster components a profile opts into (routing mode ``gateway-epp``).

:func:`install_gateway_api` (``agentgateway-crds``: Gateway API + Inference Extension CRDs) and
:func:`install_gateway` (``agentgateway``: GatewayClass, Gateway, proxy Deployment and Service).
The routing itself (HTTPRoute status, the gateway Service's proxy) is played by
:mod:`aicr_pytest.testing.players.inference`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from aicr_pytest.testing.builders import add_namespace, crd, crd_established, deployment, system_node
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, Component, SimulatedCluster

__all__ = [
    "GATEWAY_CONTROLLER",
    "GATEWAY_GROUP",
    "GATEWAY_NAME",
    "GATEWAY_NAMESPACE",
    "INFERENCE_GROUP",
    "install_gateway",
    "install_gateway_api",
]

GATEWAY_GROUP: Final = "gateway.networking.k8s.io"
INFERENCE_GROUP: Final = "inference.networking.k8s.io"
GATEWAY_NAMESPACE: Final = "agentgateway-system"
GATEWAY_NAME: Final = "inference-gateway"
GATEWAY_CLASS: Final = "agentgateway"
GATEWAY_CONTROLLER: Final = "agentgateway.dev/agentgateway"
GATEWAY_PORT: Final = 80
GATEWAY_IMAGE: Final = "cr.agentgateway.dev/agentgateway:v0.7.5"
#: ``api-approved.kubernetes.io`` of the upstream CRDs (required for ``*.k8s.io`` groups)
API_APPROVALS: Final = {
    GATEWAY_GROUP: "https://github.com/kubernetes-sigs/gateway-api/pull/2466",
    INFERENCE_GROUP: "https://github.com/kubernetes-sigs/gateway-api-inference-extension/pull/1173",
}


def install_gateway_api(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    """``agentgateway-crds``: Gateway API (GatewayClass, Gateway, HTTPRoute) + InferencePool CRDs."""
    for obj in (
        crd(GATEWAY_GROUP, "gatewayclasses", "GatewayClass", ["v1"], namespaced=False),
        crd(GATEWAY_GROUP, "gateways", "Gateway", ["v1"]),
        crd(GATEWAY_GROUP, "httproutes", "HTTPRoute", ["v1"]),
        crd(INFERENCE_GROUP, "inferencepools", "InferencePool", ["v1"]),
        # the Inference Extension's alpha group, which AICR's inference-gateway check requires
        crd("inference.networking.x-k8s.io", "inferencepools", "InferencePool", ["v1alpha2"]),
    ):
        group = str(obj["spec"]["group"])
        if group.endswith(".k8s.io"):  # a protected group: the API server wants the approval annotation
            obj["metadata"]["annotations"] = {"api-approved.kubernetes.io": API_APPROVALS[group]}
        crd_established(fc, obj)


def install_gateway(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    """``agentgateway``: the controller, GatewayClass ``agentgateway``, Gateway
    ``agentgateway-system/inference-gateway`` (Accepted, Programmed), its proxy Deployment and the
    Service ``inference-gateway`` (port 80, ``http``) the check probes through.  Needs
    :func:`install_gateway_api` first."""
    node = system_node(profile)
    now = fc.clock.timestamp()

    def cond(kind: str) -> Obj:
        return {"type": kind, "status": "True", "reason": kind, "lastTransitionTime": now}

    add_namespace(fc, GATEWAY_NAMESPACE)
    deployment(fc, GATEWAY_NAMESPACE, "agentgateway", GATEWAY_IMAGE, node, container="controller")
    fc.add(
        {
            "apiVersion": f"{GATEWAY_GROUP}/v1",
            "kind": "GatewayClass",
            "metadata": {"name": GATEWAY_CLASS},
            "spec": {"controllerName": GATEWAY_CONTROLLER},
            "status": {"conditions": [cond("Accepted")]},
        }
    )
    fc.add(
        {
            "apiVersion": f"{GATEWAY_GROUP}/v1",
            "kind": "Gateway",
            "metadata": {"name": GATEWAY_NAME, "namespace": GATEWAY_NAMESPACE},
            "spec": {
                "gatewayClassName": GATEWAY_CLASS,
                "listeners": [
                    {
                        "name": "http",
                        "protocol": "HTTP",
                        "port": GATEWAY_PORT,
                        "allowedRoutes": {"namespaces": {"from": "All"}},
                    }
                ],
            },
            "status": {
                "conditions": [cond("Accepted"), cond("Programmed")],
                "listeners": [
                    {
                        "name": "http",
                        "attachedRoutes": 0,
                        "conditions": [cond("Accepted"), cond("Programmed")],
                    }
                ],
            },
        }
    )
    proxy_labels = {"gateway.networking.k8s.io/gateway-name": GATEWAY_NAME}
    deployment(
        fc,
        GATEWAY_NAMESPACE,
        GATEWAY_NAME,
        GATEWAY_IMAGE,
        node,
        labels=proxy_labels,
        container="agentgateway",
    )
    for name, ports in (
        (GATEWAY_NAME, [{"name": "http", "port": GATEWAY_PORT, "targetPort": 8080, "protocol": "TCP"}]),
        (f"{GATEWAY_NAME}-metrics", [{"name": "metrics", "port": 15020, "protocol": "TCP"}]),
    ):
        fc.add(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": GATEWAY_NAMESPACE, "labels": dict(proxy_labels)},
                "spec": {"type": "ClusterIP", "selector": {"app": GATEWAY_NAME}, "ports": ports},
            }
        )
    if comp.options.get("load_balancer"):
        # the public LoadBalancer (``agentgateway.allowedSourceRanges`` → loadBalancerSourceRanges)
        rt = fc.store.resolve("v1", "Service")

        def expose(obj: Obj) -> None:
            obj["spec"]["type"] = "LoadBalancer"
            ranges = list(comp.options.get("source_ranges") or [])
            if ranges:
                obj["spec"]["loadBalancerSourceRanges"] = ranges

        fc.store.mutate(rt, GATEWAY_NAMESPACE, GATEWAY_NAME, expose)
    proxies = fc.list("v1", "Pod", GATEWAY_NAMESPACE, label_selector=f"app={GATEWAY_NAME}")
    fc.add(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{GATEWAY_NAME}-x7k2p",
                "namespace": GATEWAY_NAMESPACE,
                "labels": {
                    "kubernetes.io/service-name": GATEWAY_NAME,
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                },
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [
                {
                    "addresses": [f"192.168.1.{10 + i}"],
                    "conditions": {"ready": True, "serving": True, "terminating": False},
                    "nodeName": (pod.get("spec") or {}).get("nodeName"),
                    "targetRef": {
                        "kind": "Pod",
                        "name": pod["metadata"]["name"],
                        "namespace": GATEWAY_NAMESPACE,
                    },
                }
                for i, pod in enumerate(proxies)
            ],
        }
    )
