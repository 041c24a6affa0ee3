"""dra-support's IMEX channel subtest: a ComputeDomain hands a pod exactly one IMEX channel.

On multi-node NVLink (MNNVL) clusters (GB200/GB300 NVL72) the NVIDIA DRA driver runs ComputeDomains
only, so the full-GPU claim test does not apply; this subtest exercises ComputeDomain allocation
instead (AICR #1649, #2770): a run-scoped ``ComputeDomain`` (``resource.nvidia.com/v1beta1``,
``numNodes: 0``, ``channel.allocationMode: Single``), the ``ResourceClaimTemplate`` the driver makes
of it, and a busybox pod claiming one channel from that template that must see **exactly one**
``/dev/nvidia-caps-imex-channels/channel*`` character device.

Applicability, as upstream decides it (:func:`imex_candidates`, pure): the Ready, uncordoned nodes
labelled ``nvidia.com/gpu.clique`` (GPU Feature Discovery sets it only on MNNVL nodes; H100 nodes
publish ``compute-domain.nvidia.com`` slices too, so slices alone cannot gate it):

* no such node -- not applicable (recorded and reported ``SKIP``; the check goes on);
* such nodes but none with a usable ``compute-domain.nvidia.com`` ResourceSlice device -- fails;
* every candidate's channel already allocated to a ResourceClaim (a running MNNVL workload,
  :func:`occupied_nodes`) -- not applicable right now, naming the claims;
* else the probe runs on the free candidates (required node affinity).

The verdict (:func:`probe_verdict`, pure) rests on the pod's phase (upstream's) and, fail closed, on
what the probe printed (:func:`parse_probe`): a pod that succeeded without reporting exactly one
channel is not a pass. Everything lives in a :class:`~aicr_pytest.conformance.testns.GpuTestNamespace`
deleted afterwards (ComputeDomain and pod first). The subtest prints one ``RESULT:
dra-support/IMEXChannelAllocation: PASS|FAIL|SKIP|OTHER - ...`` line to the check's stdout.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.conformance.common import (
    JSON,
    create_pod_when_sa_ready,
    failure,
    inconclusive,
    meta,
    pod_log,
    prove_ran,
    read_error,
    spec,
    status,
    wait_pod_terminal,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.defaults import DRA_TEST_POD_TIMEOUT
from aicr_pytest.conformance.failures import ConformanceFailure
from aicr_pytest.conformance.gpu_workload import BUSYBOX_IMAGE, on_nodes, run_once_pod
from aicr_pytest.conformance.testns import GpuTestNamespace, cleaned_up
from aicr_pytest.core import allocmode
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.core.goduration import format_go_duration
from aicr_pytest.kube.errors import ApiError, ObjectVanished, WaitTimeout
from aicr_pytest.kube.wait import wait_for

COMPUTE_DOMAIN_API: Final = "resource.nvidia.com/v1beta1"
COMPUTE_DOMAIN_DRIVER: Final = "compute-domain.nvidia.com"
CLIQUE_LABEL: Final = "nvidia.com/gpu.clique"
CHANNEL_DIR: Final = "/dev/nvidia-caps-imex-channels"
CD_PREFIX: Final = "imex-cd-"
TEMPLATE_PREFIX: Final = "imex-rct-"
POD_PREFIX: Final = "imex-alloc-test-"
POD_CLAIM: Final = "imex-channel"
CONTAINER: Final = "imex-test"
#: the label the simulator's and the harness's players know the probe pod by
COMPONENT_LABEL: Final = ("app.kubernetes.io/component", "imex-channel-probe")
#: upstream's bound on the driver reconciling the ComputeDomain (its diagnostic timeout)
TEMPLATE_TIMEOUT: Final = 120.0
SUBTEST: Final = "dra-support/IMEXChannelAllocation"
ARTIFACT: Final = "Behavioral IMEX channel allocation"

#: the probe: count the channel character devices, print them, exit 1 unless exactly one
PROBE_SCRIPT: Final = f"""dir={CHANNEL_DIR}
channels=$(find "$dir" -maxdepth 1 -type c -name 'channel*' 2>/dev/null || true)
count=$(printf '%s\\n' "$channels" | grep -c . || true)
echo "IMEX_CHANNEL_COUNT=$count"
echo "IMEX_CHANNEL_CANDIDATES:"
echo "$channels"
if [ "$count" -ne 1 ]; then
  echo "FAIL: expected exactly one IMEX channel device under {CHANNEL_DIR}"
  exit 1
fi
echo "PASS: IMEX channel allocated: $channels"
"""

MSG_NA_NO_CLIQUE: Final = (
    "skipped (not applicable): no Ready, schedulable node carries the nvidia.com/gpu.clique label — no "
    "multi-node NVLink (MNNVL) fabric, so ComputeDomain IMEX channel allocation does not apply; DRA "
    "validated via driver health and validated ResourceSlices"
)
MSG_NO_CD_SLICE: Final = (
    "MNNVL node(s) [{nodes}] carry the nvidia.com/gpu.clique label but none advertises a usable "
    "compute-domain.nvidia.com ResourceSlice device — the ComputeDomain DRA driver is not serving the "
    "fabric nodes"
)
MSG_NA_OCCUPIED: Final = (
    "skipped (not applicable): every MNNVL candidate node already holds a compute-domain.nvidia.com "
    "channel claim ({held}) — the driver serves one ComputeDomain channel claim per node, so a probe "
    "claim could not be allocated while those workloads run; ComputeDomain DRA validated via driver "
    "health and validated ResourceSlices"
)
#: what upstream's classified read error names (``failed to read …``, ``timed out reading …``)
CLAIMS_SUBJECT: Final = "ResourceClaims for IMEX channel occupancy"
MSG_CD_CREATE: Final = "failed to create ComputeDomain"
MSG_TEMPLATE_TIMEOUT: Final = (
    "DRA driver did not reconcile ComputeDomain {cd} into ResourceClaimTemplate {rct} {window}"
)
MSG_TEMPLATE_WATCH: Final = "failed to watch IMEX ResourceClaimTemplate"
MSG_POD_CREATE: Final = "failed to create IMEX channel test pod"
POD_WHAT: Final = "IMEX channel test pod"
MSG_PHASE: Final = (
    "IMEX channel test pod phase={phase} (want Succeeded) — ComputeDomain IMEX channel allocation failed "
    "or the pod did not observe exactly one channel device"
)
MSG_NO_COUNT: Final = (
    "IMEX channel test pod {pod} on node {node} succeeded but printed no IMEX_CHANNEL_COUNT line"
)
MSG_NOT_ONE: Final = (
    "IMEX channel test pod {pod} on node {node} succeeded but saw {seen} — want exactly one "
    "{dir}/channel* device"
)


# --- pure: applicability ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidates:
    """The eligible clique-labelled nodes and those of them with a usable ComputeDomain device."""

    clique: tuple[str, ...]
    usable: tuple[str, ...]


def imex_candidates(nodes: Sequence[Mapping[str, Any]], usable: Mapping[str, Any]) -> Candidates:
    """Eligible (Ready, uncordoned) nodes with a non-empty clique label, and the subset in
    ``usable`` (the nodes with a validated ``compute-domain.nvidia.com`` device)."""
    clique = sorted(
        allocmode.node_name(n)
        for n in nodes
        if allocmode.node_eligible(n) and str((meta(n).get("labels") or {}).get(CLIQUE_LABEL) or "")
    )
    return Candidates(tuple(clique), tuple(n for n in clique if n in usable))


def pool_nodes(slices: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Pool name -> node of the node-local ``compute-domain.nvidia.com`` slices."""
    out: dict[str, str] = {}
    for s in slices:
        sp = spec(s)
        pool = str((sp.get("pool") or {}).get("name") or "")
        if sp.get("driver") == COMPUTE_DOMAIN_DRIVER and sp.get("nodeName") and pool:
            out[pool] = str(sp["nodeName"])
    return out


def occupied_nodes(claims: Sequence[Mapping[str, Any]], pools: Mapping[str, str]) -> dict[str, list[str]]:
    """Node -> ``namespace/name`` of the claims holding its ComputeDomain device (an allocation
    result's pool resolves through ``pools``; an unknown pool is taken as the node's name)."""
    held: dict[str, list[str]] = {}
    for claim in claims:
        allocation = status(claim).get("allocation") or {}
        holder = f"{meta(claim).get('namespace')}/{meta(claim).get('name')}"
        for result in (allocation.get("devices") or {}).get("results") or []:
            if not isinstance(result, Mapping) or result.get("driver") != COMPUTE_DOMAIN_DRIVER:
                continue
            pool = str(result.get("pool") or "")
            node = pools.get(pool, pool)
            if node:
                held.setdefault(node, []).append(holder)
    return held


# --- pure: the probe's output and the verdict -------------------------------------------------------

_COUNT_RE = re.compile(r"^IMEX_CHANNEL_COUNT=(\d+)\s*$")
_CHANNEL_RE = re.compile(rf"^{re.escape(CHANNEL_DIR)}/channel[^/\s]+$")


@dataclass(frozen=True)
class ProbeOutput:
    """What the probe printed: its count (``None``: no count line) and the channel paths it listed."""

    count: int | None
    channels: tuple[str, ...]


def parse_probe(log: str) -> ProbeOutput:
    """The probe's ``IMEX_CHANNEL_COUNT=`` (the last one) and the channel paths after
    ``IMEX_CHANNEL_CANDIDATES:``; a log that could not be read reports nothing."""
    if log.startswith("failed to read logs"):
        return ProbeOutput(None, ())
    count: int | None = None
    channels: list[str] = []
    listing = False
    for raw in log.splitlines():
        line = raw.strip()
        hit = _COUNT_RE.match(line)
        if hit:
            count, listing, channels = int(hit[1]), False, []
        elif line == "IMEX_CHANNEL_CANDIDATES:":
            listing = True
        elif listing and line.startswith(("PASS:", "FAIL:")):
            listing = False
        elif listing and line:
            channels.append(line)
    return ProbeOutput(count, tuple(channels))


def describe_seen(out: ProbeOutput) -> str:
    if out.count is None:
        return "no IMEX_CHANNEL_COUNT line"
    return f"{out.count} IMEX channel device{'' if out.count == 1 else 's'}"


def probe_verdict(phase: str, out: ProbeOutput, pod: str, node: str) -> str:
    """The passing line, or a :class:`ConformanceFailure`: upstream's phase verdict first (the cause
    names pod, node and what it saw), then -- fail closed -- a success must have printed exactly one
    valid channel path and a count of one."""
    where = f"pod {pod} on node {node or 'unknown'}"
    if phase != "Succeeded":
        raise failure(
            "INTERNAL", MSG_PHASE.format(phase=phase or "Pending"), f"{where} saw {describe_seen(out)}"
        )
    if out.count is None:
        raise failure("INTERNAL", MSG_NO_COUNT.format(pod=pod, node=node or "unknown"))
    valid = [c for c in out.channels if _CHANNEL_RE.match(c)]
    if out.count != 1 or len(out.channels) != 1 or len(valid) != 1:
        seen = f"{describe_seen(out)} (listed: {', '.join(out.channels) or 'none'})"
        raise failure(
            "INTERNAL", MSG_NOT_ONE.format(pod=pod, node=node or "unknown", seen=seen, dir=CHANNEL_DIR)
        )
    return f"{where} saw exactly one IMEX channel device: {valid[0]}"


def result_line(word: str, line: str) -> str:
    """The subtest's CTRF stdout line (``word``: PASS, FAIL, SKIP or OTHER)."""
    return f"RESULT: {SUBTEST}: {word} - {line}"


# --- objects ------------------------------------------------------------------------------------------


def build_compute_domain(name: str, namespace: str, template: str, labels: Mapping[str, str]) -> JSON:
    return {
        "apiVersion": COMPUTE_DOMAIN_API,
        "kind": "ComputeDomain",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "numNodes": 0,
            "channel": {"allocationMode": "Single", "resourceClaimTemplate": {"name": template}},
        },
    }


def build_probe_pod(
    name: str,
    namespace: str,
    template: str,
    nodes: Sequence[str],
    labels: Mapping[str, str],
    tolerations: list[dict[str, str]],
) -> JSON:
    """The busybox probe (no GPU request) claiming one channel, required onto ``nodes``."""
    return run_once_pod(
        name,
        namespace,
        {**labels, COMPONENT_LABEL[0]: COMPONENT_LABEL[1]},
        {
            "affinity": on_nodes(nodes),
            "tolerations": tolerations,
            "resourceClaims": [{"name": POD_CLAIM, "resourceClaimTemplateName": template}],
            "containers": [
                {
                    "name": CONTAINER,
                    "image": BUSYBOX_IMAGE,
                    "command": ["sh", "-c", PROBE_SCRIPT],
                    "resources": {"claims": [{"name": POD_CLAIM}]},
                }
            ],
        },
    )


# --- the subtest ------------------------------------------------------------------------------------


def run_imex_subtest(
    ctx: ConformanceContext,
    version: str,
    nodes: Sequence[Mapping[str, Any]],
    slices: Sequence[Mapping[str, Any]],
    usable: Mapping[str, Any],
) -> None:
    """Run the subtest (module docstring); returns when it passed or does not apply, raises otherwise.
    ``usable``: the nodes with a validated ``compute-domain.nvidia.com`` device."""
    found = imex_candidates(nodes, usable)
    if not found.clique:
        ctx.record(ARTIFACT, MSG_NA_NO_CLIQUE)
        ctx.emit(result_line("SKIP", MSG_NA_NO_CLIQUE))
        return
    try:
        word, line = _run(ctx, version, found, slices)
    except ConformanceFailure as err:
        ctx.emit(result_line("FAIL", str(err)))
        raise
    except Inconclusive as err:
        ctx.emit(result_line("OTHER", str(err)))
        raise
    ctx.emit(result_line(word, line))  # after the cleanup: a failed cleanup fails the subtest


def _run(
    ctx: ConformanceContext, version: str, found: Candidates, slices: Sequence[Mapping[str, Any]]
) -> tuple[str, str]:
    """``(word, line)`` of a subtest that passed or does not apply right now; raises otherwise."""
    if not found.usable:
        raise failure("INTERNAL", MSG_NO_CD_SLICE.format(nodes=",".join(found.clique)))
    try:
        claims = list(ctx.cluster.list(f"resource.k8s.io/{version}", "ResourceClaim", None))
    except ApiError as err:
        raise read_error(err, CLAIMS_SUBJECT) from err
    held = occupied_nodes(claims, pool_nodes(slices))
    free = [n for n in found.usable if n not in held]
    busy = [f"{n} held by {','.join(held[n])}" for n in found.usable if n in held]
    ctx.record(
        "IMEX candidate nodes",
        f"Clique-labeled nodes: {','.join(found.clique)}\n"
        f"With usable compute-domain: {','.join(found.usable)}\n"
        f"Channel already allocated: {'; '.join(busy) or 'none'}\n"
        f"Probe candidates: {','.join(free) or 'none'}",
        f"kubectl get nodes -l {CLIQUE_LABEL}; kubectl get resourceclaims -A",
    )
    if not free:
        text = MSG_NA_OCCUPIED.format(held="; ".join(busy))
        ctx.record(ARTIFACT, text)
        return "SKIP", text

    def record_cleanup(_label: str, text: str) -> None:
        ctx.record("Delete IMEX test namespace", text)

    with cleaned_up(GpuTestNamespace(ctx.run, ctx.clock), record_cleanup) as ns:
        cd, template, pod_name = (
            ctx.run.name(p + ns.token) for p in (CD_PREFIX, TEMPLATE_PREFIX, POD_PREFIX)
        )
        ns.create()
        labels = ns.labels()
        ns.track(COMPUTE_DOMAIN_API, "ComputeDomain", cd)
        try:
            ctx.run.create(build_compute_domain(cd, ns.name, template, labels))
        except ApiError as err:
            raise inconclusive("INTERNAL", MSG_CD_CREATE, err) from err
        _wait_template(ctx, ns.name, cd, template, version)
        ns.track("v1", "Pod", pod_name)
        pod = build_probe_pod(pod_name, ns.name, template, free, labels, ctx.inner_tolerations())
        try:
            create_pod_when_sa_ready(ctx.run, pod, ctx.clock)
        except ApiError as err:
            raise inconclusive("INTERNAL", MSG_POD_CREATE, err) from err
        ctx.record(
            "Created IMEX test resources",
            f"Namespace: {ns.name}\nComputeDomain: {cd}\nResourceClaimTemplate: {template} (generated by the "
            f"DRA driver)\nPod: {pod_name} (node affinity: {','.join(free)})",
            f"kubectl get computedomains,resourceclaimtemplates,resourceclaims,pods -n {ns.name}",
        )
        bound = ctx.bounded(DRA_TEST_POD_TIMEOUT)
        done = wait_pod_terminal(ctx.cluster, ns.name, pod_name, POD_WHAT, bound, ctx.clock)
        phase, node = str(status(done).get("phase") or ""), str(spec(done).get("nodeName") or "")
        ctx.record(
            "IMEX pod status",
            f"Name: {ns.name}/{pod_name}\nPhase: {phase}\nNode: {node or 'unknown'}",
            f"kubectl get pod {pod_name} -n {ns.name} -o wide",
        )
        log = pod_log(ctx.cluster, ns.name, pod_name, CONTAINER)
        ctx.record("IMEX pod logs", log, f"kubectl logs {pod_name} -n {ns.name}")
        line = probe_verdict(phase, parse_probe(log), f"{ns.name}/{pod_name}", node)
        prove_ran(ctx.run, done)  # a pass rests on what the probe printed: it must really have run
        ctx.record(ARTIFACT, f"passed: {line}")
    return "PASS", line


def _wait_template(ctx: ConformanceContext, namespace: str, cd: str, template: str, version: str) -> None:
    """Wait (bounded by upstream's 2 min and the check's deadline) for the driver's template."""
    window = TEMPLATE_TIMEOUT
    bound = ctx.bounded(window)
    try:
        wait_for(
            ctx.cluster,
            f"resource.k8s.io/{version}",
            "resourceclaimtemplates",
            template,
            namespace,
            lambda _obj: True,
            bound,
            ctx.clock,
        )
    except WaitTimeout as err:
        text = f"within {format_go_duration(window)}"
        if bound < window:
            text = (
                "before the check's work budget ran out (less than the "
                f"{format_go_duration(window)} reconcile window remained)"
            )
        raise inconclusive(
            "TIMEOUT", MSG_TEMPLATE_TIMEOUT.format(cd=cd, rct=template, window=text), err
        ) from err
    except (ApiError, ObjectVanished) as err:
        raise inconclusive("INTERNAL", MSG_TEMPLATE_WATCH, err) from err


__all__ = [
    "ARTIFACT",
    "CLIQUE_LABEL",
    "COMPONENT_LABEL",
    "COMPUTE_DOMAIN_API",
    "MSG_NA_NO_CLIQUE",
    "MSG_NA_OCCUPIED",
    "MSG_NO_CD_SLICE",
    "MSG_PHASE",
    "PROBE_SCRIPT",
    "SUBTEST",
    "Candidates",
    "ProbeOutput",
    "build_compute_domain",
    "build_probe_pod",
    "imex_candidates",
    "occupied_nodes",
    "parse_probe",
    "pool_nodes",
    "probe_verdict",
    "result_line",
    "run_imex_subtest",
]
