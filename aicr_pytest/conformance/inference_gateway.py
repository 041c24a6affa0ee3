"""``inference-gateway`` (CNCF ``ai_inference``): Gateway API + the Inference
Extension are installed, the agentgateway data plane is up, and the gateway's LoadBalancer exposure
is recorded.

Skips when the recipe has no enabled ``agentgateway``. Namespace ``agentgateway-system`` is
AICR's, hard-coded. Steps: best-effort artifacts of the deployments and pods; GatewayClass
``agentgateway`` Accepted; Gateway ``inference-gateway`` Programmed; the three CRDs; ready
endpoints behind the gateway proxy; the exposure assessment of every in-scope LoadBalancer Service
(open = no ``loadBalancerSourceRanges`` or one with a ``/0`` CIDR). An open gateway fails only when
``AICR_REQUIRE_SCOPED_INFERENCE_GATEWAY`` is truthy (Go ``strconv.ParseBool``) in the process
environment; otherwise it is a WARNING artifact and the check passes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from aicr_pytest.conformance.common import (
    failure,
    find_condition,
    first_image,
    inconclusive,
    list_objects,
    meta,
    spec,
    status,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core.errors import CheckSkip
from aicr_pytest.core.gofmt import parse_go_bool
from aicr_pytest.kube.errors import ApiError, NotFound

__all__ = [
    "GATEWAY_CLASS",
    "GATEWAY_NAME",
    "GATEWAY_NAMESPACE",
    "REQUIRED_CRDS",
    "SCOPED_ENV",
    "SKIP_NO_AGENTGATEWAY",
    "Exposure",
    "assess_exposure",
    "exposure_message",
    "is_open",
    "is_proxy_name",
    "ready_endpoints",
    "run_inference_gateway",
]

GATEWAY_NAMESPACE = "agentgateway-system"
GATEWAY_CLASS = "agentgateway"
GATEWAY_NAME = "inference-gateway"
COMPONENT = "agentgateway"
SCOPED_ENV = "AICR_REQUIRE_SCOPED_INFERENCE_GATEWAY"
REQUIRED_CRDS: tuple[str, ...] = (
    "gateways.gateway.networking.k8s.io",
    "httproutes.gateway.networking.k8s.io",
    "inferencepools.inference.networking.x-k8s.io",
)
SKIP_NO_AGENTGATEWAY = (
    "agentgateway not in recipe — inference gateway check applies to inference clusters only"
)
_CONTROL_PLANE_PARTS = ("controller-manager", "webhook", "metrics")
_GW = "gateway.networking.k8s.io/v1"


def go_parse_bool(value: str | None) -> bool:
    """``strings.TrimSpace`` then ``strconv.ParseBool``, as AICR reads the switch (unparsable: false)."""
    return parse_go_bool((value or "").strip())


def is_proxy_name(name: str) -> bool:
    """The gateway-proxy predicate shared by Services and EndpointSlices (AICR #1163)."""
    return GATEWAY_NAME in name and not any(part in name for part in _CONTROL_PLANE_PARTS)


def is_open(ranges: Sequence[Any] | None) -> tuple[bool, str]:
    """(open, why): no source ranges at all, or any entry that parses as a /0 CIDR."""
    entries = [str(r) for r in ranges or []]
    if not entries:
        return True, "sourceRanges=<empty> (OPEN to 0.0.0.0/0)"
    for entry in entries:
        try:
            net = ipaddress.ip_network(entry.strip(), strict=False)
        except ValueError:
            continue  # unparsable entries are not "open"
        if net.prefixlen == 0:
            return True, f"sourceRanges={entries} (OPEN: includes an any-source CIDR)"
    return False, f"sourceRanges={entries}"


@dataclass(frozen=True)
class Exposure:
    """The in-scope LoadBalancer Services and which of them are open."""

    lines: list[str]
    open_services: list[str]
    in_scope: int


def assess_exposure(services: Iterable[Mapping[str, Any]]) -> Exposure:
    lines: list[str] = []
    opened: list[str] = []
    count = 0
    for svc in services:
        name = str(meta(svc).get("name") or "")
        if spec(svc).get("type") != "LoadBalancer" or not is_proxy_name(name):
            continue
        count += 1
        open_, why = is_open(spec(svc).get("loadBalancerSourceRanges"))
        lines.append(f"{GATEWAY_NAMESPACE}/{name}: type=LoadBalancer {why}")
        if open_:
            opened.append(name)
    return Exposure(lines, opened, count)


def exposure_message(names: Sequence[str]) -> str:
    """AICR's text for open gateway Services (the backticks are literal)."""
    return (
        f"inference-gateway LoadBalancer Service(s) [{', '.join(names)}] are open to the entire internet "
        "(0.0.0.0/0): spec.loadBalancerSourceRanges is empty or includes an any-source CIDR. Scope to "
        "trusted CIDRs via agentgateway.allowedSourceRanges — a recipe componentRef override or "
        "`--set-json agentgateway:allowedSourceRanges='[\"<cidr>\"]'`."
    )


def ready_endpoints(slices: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(matching slices, ready endpoints) of the gateway proxy's EndpointSlices."""
    matching = ready = 0
    for sl in slices:
        service = str((meta(sl).get("labels") or {}).get("kubernetes.io/service-name") or "")
        if not is_proxy_name(service):
            continue
        matching += 1
        for ep in sl.get("endpoints") or []:
            if isinstance(ep, Mapping) and (ep.get("conditions") or {}).get("ready") is True:
                ready += 1
    return matching, ready


def _read_failure(exc: ApiError, message: str) -> BaseException:
    """AICR's ``[NOT_FOUND] <message>: …`` -- a failure when the object is absent, ``other`` when the
    read itself failed (RBAC, transport): then nothing is known about the object."""
    if isinstance(exc, NotFound):
        return failure("NOT_FOUND", message, exc)
    return inconclusive("NOT_FOUND", message, exc)


def _best_effort_inventory(ctx: ConformanceContext) -> None:
    try:
        deps = list(ctx.cluster.list("apps/v1", "deployments", GATEWAY_NAMESPACE))
        lines = []
        for d in deps:
            desired = spec(d).get("replicas", 1)
            lines.append(
                f"{meta(d).get('name')}: {status(d).get('availableReplicas') or 0}/{desired} available, "
                f"image={first_image(d)}"
            )
        ctx.record("agentgateway deployments", "\n".join(lines) or "(none)")
    except ApiError as exc:
        ctx.record("agentgateway deployments", f"failed to list deployments: {exc}")
    try:
        pods = list(ctx.cluster.list("v1", "pods", GATEWAY_NAMESPACE))
        text = "\n".join(
            f"{meta(p).get('name')}: phase={status(p).get('phase') or 'Pending'} "
            f"node={spec(p).get('nodeName') or ''}"
            for p in pods
        )
        ctx.record("agentgateway pods", text or "(none)")
    except ApiError as exc:
        ctx.record("agentgateway pods", f"failed to list pods: {exc}")


def _gateway_class(ctx: ConformanceContext) -> None:
    try:
        gc = ctx.cluster.get(_GW, "gatewayclasses", GATEWAY_CLASS)
    except ApiError as exc:
        raise _read_failure(exc, f"GatewayClass '{GATEWAY_CLASS}' not found") from exc
    try:
        cond = find_condition(gc, "Accepted")
    except AssertionError as exc:
        raise failure("INTERNAL", "GatewayClass not accepted", str(exc)) from exc
    ctx.record(
        "GatewayClass",
        f"Name: {GATEWAY_CLASS}\nController: {spec(gc).get('controllerName') or ''}\n"
        f"Accepted: {cond.status} (reason={cond.reason})",
    )
    if cond.status != "True":
        raise failure(
            "INTERNAL",
            f"GatewayClass not accepted: status={cond.status} reason={cond.reason} message={cond.message}",
        )


def _gateway(ctx: ConformanceContext) -> dict[str, Any]:
    try:
        gw = ctx.cluster.get(_GW, "gateways", GATEWAY_NAME, GATEWAY_NAMESPACE)
    except ApiError as exc:
        raise _read_failure(exc, f"Gateway '{GATEWAY_NAME}' not found") from exc
    try:
        cond = find_condition(gw, "Programmed")
    except AssertionError as exc:
        raise failure("INTERNAL", "Gateway not programmed", str(exc)) from exc
    addresses = status(gw).get("addresses") or []
    ctx.record(
        "Gateways",
        f"{GATEWAY_NAMESPACE}/{GATEWAY_NAME}: class={spec(gw).get('gatewayClassName') or ''} "
        f"Programmed={cond.status} AddressCount={len(addresses)}",
    )
    ctx.record("Gateway details", yaml.safe_dump(gw, sort_keys=False).rstrip())
    if cond.status != "True":
        raise failure(
            "INTERNAL",
            f"Gateway not programmed: status={cond.status} reason={cond.reason} message={cond.message}",
        )
    return gw


def _crds(ctx: ConformanceContext) -> None:
    lines: list[str] = []
    for name in REQUIRED_CRDS:
        try:
            ctx.cluster.get("apiextensions.k8s.io/v1", "customresourcedefinitions", name)
        except ApiError as exc:
            ctx.record("Required CRDs", "\n".join([*lines, f"{name}: MISSING"]))
            raise _read_failure(exc, f"CRD {name} not found") from exc
        lines.append(f"{name}: present")
    ctx.record("Required CRDs", "\n".join(lines))


def _data_plane(ctx: ConformanceContext, gw: Mapping[str, Any]) -> None:
    listeners = status(gw).get("listeners") or []
    routes_total = 0
    attached = sum(
        int((lst or {}).get("attachedRoutes") or 0) for lst in listeners if isinstance(lst, Mapping)
    )
    try:
        routes = list(ctx.cluster.list(_GW, "httproutes"))
        routes_total = len(routes)
        attached = sum(
            1
            for r in routes
            if any((ref or {}).get("name") == GATEWAY_NAME for ref in spec(r).get("parentRefs") or [])
        )
    except ApiError as exc:
        ctx.emit(f"could not list HTTPRoutes (informational): {exc}")
    slices = list_objects(
        ctx.cluster,
        "discovery.k8s.io/v1",
        "endpointslices",
        GATEWAY_NAMESPACE,
        f"failed to list EndpointSlices in {GATEWAY_NAMESPACE}",
    )
    matching, ready = ready_endpoints(slices)
    ctx.record(
        "Gateway Data Plane",
        f"Listeners: {len(listeners)}\nAttached routes: {attached}\nHTTPRoutes total: {routes_total}\n"
        f"Matching EndpointSlices: {matching}\nReady endpoints: {ready}",
    )
    if ready == 0:
        raise failure("INTERNAL", f"no ready endpoints for inference-gateway proxy in {GATEWAY_NAMESPACE}")


def _exposure(ctx: ConformanceContext) -> None:
    enforce = go_parse_bool(ctx.env.get(SCOPED_ENV))
    try:
        services = list(ctx.cluster.list("v1", "services", GATEWAY_NAMESPACE))
    except ApiError as exc:
        if enforce:
            raise inconclusive(
                "INTERNAL",
                f"failed to list Services for gateway exposure assessment under {SCOPED_ENV}=true",
                exc,
            ) from exc
        ctx.record(
            "Inference Gateway Exposure",
            f"Could not list Services in {GATEWAY_NAMESPACE}: {exc}\n"
            "Advisory finding skipped (non-fatal); set "
            f"{SCOPED_ENV}=true to make this a failure.",
        )
        return
    exposure = assess_exposure(services)
    if exposure.in_scope == 0:
        ctx.record(
            "Inference Gateway Exposure",
            f"No LoadBalancer Service in {GATEWAY_NAMESPACE} (gateway is not internet-facing via a cloud "
            "load balancer).",
        )
        return
    ctx.record("Inference Gateway Exposure", "\n".join(exposure.lines))
    if not exposure.open_services:
        return
    message = exposure_message(exposure.open_services)
    if enforce:
        raise failure("INVALID_REQUEST", message)
    ctx.record(
        "Inference Gateway Exposure WARNING",
        f"WARNING: {message}\nNon-fatal finding (open-by-default is intentional). Set "
        f"{SCOPED_ENV}=true to make an open gateway fail this check.",
    )


def run_inference_gateway(ctx: ConformanceContext) -> None:
    """The check (module docstring)."""
    if not ctx.has_component(COMPONENT):
        raise CheckSkip(SKIP_NO_AGENTGATEWAY)
    _best_effort_inventory(ctx)
    _gateway_class(ctx)
    gw = _gateway(ctx)
    _crds(ctx)
    _data_plane(ctx, gw)
    _exposure(ctx)
