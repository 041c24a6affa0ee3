"""``platform-health`` (a diagnostic, excluded from CNCF evidence).

For every *enabled* componentRef (``overrides.enabled: false`` refs are never deployed, #1681): its
namespace exists and is ``Active``, and each of its ``expectedResources`` is healthy -- Deployment
(available ≥ replicas), DaemonSet (ready ≥ desired; a DaemonSet on no node is not healthy, unlike
AICR's 0/0 pass), StatefulSet (ready ≥ replicas), Service/ConfigMap/Secret (exists). All problems are
collected, then reported at once; a read error other than NotFound is ``other`` when nothing failed.
No skip.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from aicr_pytest.conformance.common import (
    as_int,
    describe_cause,
    failure,
    inconclusive,
    spec,
    status,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.errors import ApiError, NotFound

#: kind -> apiVersion of the expectedResources kinds AICR supports
SUPPORTED_KINDS: Final[Mapping[str, str]] = {
    "Deployment": "apps/v1",
    "DaemonSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "Service": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
}
MSG_FAILED: Final = "platform health check failed ({n} issues):\n  {lines}"
MSG_UNREADABLE: Final = "platform health check could not read {n} object(s):\n  {lines}"


def resource_problem(kind: str, obj: Mapping[str, Any]) -> str | None:
    """Why a found expected resource is unhealthy (pure), or ``None``."""
    st = status(obj)
    if kind == "Deployment":
        replicas = spec(obj).get("replicas")
        want = 1 if replicas is None else as_int(replicas)
        have = as_int(st.get("availableReplicas"))
        return None if have >= want else f"not healthy: {have}/{want} replicas available"
    if kind == "DaemonSet":
        desired, ready = as_int(st.get("desiredNumberScheduled")), as_int(st.get("numberReady"))
        if desired == 0:
            return "not healthy: 0/0 pods ready (desiredNumberScheduled is 0: the DaemonSet runs on no node)"
        return None if ready >= desired else f"not healthy: {ready}/{desired} pods ready"
    if kind == "StatefulSet":
        replicas = spec(obj).get("replicas")
        want = 1 if replicas is None else as_int(replicas)
        have = as_int(st.get("readyReplicas"))
        return None if have >= want else f"not healthy: {have}/{want} replicas ready"
    return None


@dataclass
class _Findings:
    issues: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    healthy: list[str] = field(default_factory=list)


def run_platform_health(ctx: ConformanceContext) -> None:
    """Run the check (see the module docstring); raises to report anything but a pass."""
    cluster = ctx.cluster
    found = _Findings()
    refs = ctx.enabled_refs()
    seen: set[str] = set()
    for ref in refs:
        ns = str(ref.get("namespace") or "").strip()
        if not ns or ns in seen:
            continue
        seen.add(ns)
        try:
            obj = cluster.get("v1", "Namespace", ns)
        except NotFound:
            found.issues.append(f"namespace {ns}: not found")
            continue
        except (ApiError, Inconclusive) as err:
            found.unreadable.append(f"namespace {ns}: {describe_cause(err)}")
            continue
        phase = status(obj).get("phase") or ""
        if phase != "Active":
            found.issues.append(f"namespace {ns}: phase={phase} (want Active)")
        else:
            found.healthy.append(f"namespace {ns}: Active")
    for ref in refs:
        component = str(ref.get("name"))
        for res in ref.get("expectedResources") or []:
            kind = str(res.get("kind") or "")
            name = str(res.get("name") or "")
            ns = str(res.get("namespace") or ref.get("namespace") or "").strip()
            where = f"{kind} {ns}/{name} ({component})"
            api_version = SUPPORTED_KINDS.get(kind)
            if api_version is None:
                found.issues.append(f'{where}: unsupported resource kind "{kind}"')
                continue
            try:
                obj = cluster.get(api_version, kind, name, ns or None)
            except NotFound:
                found.issues.append(f"{where}: not found")
                continue
            except (ApiError, Inconclusive) as err:
                found.unreadable.append(f"{where}: {describe_cause(err)}")
                continue
            problem = resource_problem(kind, obj)
            if problem is not None:
                found.issues.append(f"{where}: {problem}")
            else:
                found.healthy.append(f"{where}: healthy")
    ctx.record(
        "Platform components",
        [*found.healthy, *found.issues, *(f"{u} (unreadable)" for u in found.unreadable)]
        or ["(no namespaces)"],
    )
    if found.issues:
        raise failure("NOT_FOUND", MSG_FAILED.format(n=len(found.issues), lines="\n  ".join(found.issues)))
    if found.unreadable:
        raise inconclusive(
            "INTERNAL", MSG_UNREADABLE.format(n=len(found.unreadable), lines="\n  ".join(found.unreadable))
        )


__all__ = ["SUPPORTED_KINDS", "resource_problem", "run_platform_health"]
