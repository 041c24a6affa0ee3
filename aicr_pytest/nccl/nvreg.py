"""The Grace-Blackwell NET preflight, decided without a cluster (pure).

Before ``nccl-all-reduce-bw-net`` spends TrainJob time on a Grace-Blackwell node (GB200 on EKS or
OKE, GB300 on EKS: a PCIe-attached NIC must attach dma-buf handles to GPU memory), one probe pod
per target node prints ``/proc/driver/nvidia/version`` and ``/proc/driver/nvidia/params``
(:data:`PROBE_SCRIPT`; AICR #2459).  :func:`evaluate_node` decides each node from those two files,
the driver version first:

* the NVRM banner unreadable or unparsable → **undetermined** (never a pass);
* a driver of R595 or later → R595 removed ``NVreg_GrdmaPciTopoCheckOverride`` and put a PCIe
  topology requirement this preflight cannot check → **fails**;
* an older driver whose params file was unreadable → the override's state is **undetermined**;
* an older driver with ``GrdmaPciTopoCheckOverride: 1`` → ok, without it → the flag is **missing**.

:func:`outcome` reports every failing category at once (a mid-rollout cluster holds R595 and R580
nodes together), most fundamental first, naming each node with the driver it runs.  The messages
are upstream's; where they point to AICR's documentation ours names this project's page.

Deliberate difference: where nothing but undetermined nodes remains, the preflight is ``other``
(:class:`~aicr_pytest.core.errors.Inconclusive`), not a failure: nothing about the nodes was
measured.  AICR fails that case too; neither passes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final

#: the first NVIDIA driver major version without ``NVreg_GrdmaPciTopoCheckOverride``
R595_MAJOR: Final = 595
SEPARATOR: Final = "===AICR-NVREG-SPLIT==="
VERSION_OK_MARKER: Final = "===AICR-NVREG-VERSION-OK==="
PARAMS_OK_MARKER: Final = "===AICR-NVREG-PARAMS-OK==="
#: where the probe mounts the host's ``/proc/driver/nvidia`` (read-only)
MOUNT: Final = "/host-proc-nvidia"
#: each file's marker only after a clean read; always exit 0 (an exit status cannot tell "the flag
#: is absent" from "the flag cannot exist on this driver")
PROBE_SCRIPT: Final = (
    f"cat {MOUNT}/version 2>/dev/null && echo '{VERSION_OK_MARKER}'; "
    f"echo '{SEPARATOR}'; "
    f"cat {MOUNT}/params 2>/dev/null && echo '{PARAMS_OK_MARKER}'; "
    "exit 0"
)

_OVERRIDE_RE: Final = re.compile(r"^GrdmaPciTopoCheckOverride: 1$", re.MULTILINE)
#: anchored on ``NVRM version:`` so the banner's GCC version is never read as the driver's
_NVRM_RE: Final = re.compile(r"^NVRM version:[^\n]*?\s((\d+)\.\d+(?:\.\d+)?)\b", re.MULTILINE | re.ASCII)

HINT_FLAG_MISSING: Final = (
    "NVreg_GrdmaPciTopoCheckOverride=1 is required on GB200 nodes; without it NCCL silently falls back "
    "to the Socket transport. Deleting the nvidia-driver DaemonSet pods does NOT apply it — "
    "k8s-driver-manager keys on a digest of the ClusterPolicy spec, not the ConfigMap. Procedure: "
    "docs/checks/nccl-all-reduce-bw-net.md."
)
HINT_OVERRIDE_REMOVED: Final = (
    "NVIDIA driver R595 removed NVreg_GrdmaPciTopoCheckOverride, replacing it with a PCIe topology "
    "requirement this preflight does not check — so RDMA cannot be verified here. Measured to fail on "
    "EKS p6e; unmeasured on OKE. Remedy is a driver at R580 (AICR ships 580.173.02) — pinned via the "
    "ClusterPolicy, or via the node image where the GPU Operator does not own the driver. See "
    "docs/checks/nccl-all-reduce-bw-net.md."
)
HINT_UNDETERMINED: Final = (
    "/proc/driver/nvidia/version could not be read or its NVRM banner could not be parsed, so neither "
    "the driver version nor the override could be established and the preflight will not assume "
    "either. Inspect /proc/driver/nvidia/version on a target node to tell which: whether the file is "
    "unreadable, or holds a banner this check does not recognise. See "
    "docs/checks/nccl-all-reduce-bw-net.md."
)
HINT_PARAMS_UNREADABLE: Final = (
    "/proc/driver/nvidia/params could not be read, so whether the override is set could not be "
    "established and the preflight will not assume it. The version file was readable, so the "
    "module is loaded — check that the probe can read /proc/driver/nvidia on these nodes. See "
    "docs/checks/nccl-all-reduce-bw-net.md."
)
MSG_OVERRIDE_REMOVED: Final = (
    "GPUDirect RDMA cannot be verified on GPU nodes running driver R{major} or later: {nodes}. {hint}"
)
MSG_UNDETERMINED: Final = "NVIDIA driver version could not be determined on GPU nodes: {nodes}. {hint}"
MSG_PARAMS_UNREADABLE: Final = (
    "NVreg_GrdmaPciTopoCheckOverride state could not be determined on GPU nodes: {nodes}. {hint}"
)
MSG_FLAG_MISSING: Final = "NVreg_GrdmaPciTopoCheckOverride=1 missing on GPU nodes: {nodes}. {hint}"
#: a node list names at most this many nodes, and at most this many bytes of them (the rest counted)
MAX_LISTED_NODES: Final = 10
MAX_LISTED_NODE_BYTES: Final = 512


class Verdict(Enum):
    """One node's preflight outcome."""

    UNDETERMINED = "undetermined"
    OK = "ok"
    FLAG_MISSING = "flag-missing"
    OVERRIDE_REMOVED = "override-removed"
    PARAMS_UNREADABLE = "params-unreadable"


@dataclass(frozen=True)
class NodeResult:
    verdict: Verdict
    version: str = ""  #: the driver version read, empty when the banner did not parse


def applies(variant: str, accelerator: str, service: str) -> bool:
    """The NET preflight's targets (AICR ``graceBlackwellNetPreflightApplies``): ``-net`` on GB200
    over EKS or OKE, or GB300 over EKS."""
    if variant != "net":
        return False
    return (accelerator, service) in {("gb200", "eks"), ("gb200", "oke"), ("gb300", "eks")}


def parse_nvrm_version(text: str) -> tuple[str, int] | None:
    """``(full version, major)`` from ``/proc/driver/nvidia/version``; ``None``: cannot tell."""
    match = _NVRM_RE.search(text)
    if match is None:
        return None
    return match.group(1), int(match.group(2))


def split_probe_output(out: str) -> tuple[str, str, bool]:
    """``(version file, params file, params read)`` from a probe's output; a file whose marker is
    missing is discarded (a failed or truncated read is not the file)."""
    before, found, after = out.partition(SEPARATOR)
    if not found:
        return "", "", False
    version, version_ok, _ = before.partition(VERSION_OK_MARKER)
    params, params_ok, _ = after.partition(PARAMS_OK_MARKER)
    return (version if version_ok else ""), (params if params_ok else ""), bool(params_ok)


def nvreg_override_set(params_text: str) -> bool:
    """``/proc/driver/nvidia/params`` has exactly ``GrdmaPciTopoCheckOverride: 1`` on a line."""
    return _OVERRIDE_RE.search(params_text) is not None


def evaluate_node(version_file: str, params_file: str, params_ok: bool) -> NodeResult:
    """One node's verdict from its two files (the version first: on R595+ the flag cannot exist)."""
    parsed = parse_nvrm_version(version_file)
    if parsed is None:
        return NodeResult(Verdict.UNDETERMINED)
    full, major = parsed
    if major >= R595_MAJOR:
        return NodeResult(Verdict.OVERRIDE_REMOVED, full)
    if not params_ok:
        return NodeResult(Verdict.PARAMS_UNREADABLE, full)
    if nvreg_override_set(params_file):
        return NodeResult(Verdict.OK, full)
    return NodeResult(Verdict.FLAG_MISSING, full)


def evaluate_probe(output: str) -> NodeResult:
    """A node's verdict from its probe pod's output."""
    return evaluate_node(*split_probe_output(output))


def describe_nodes(results: Mapping[str, NodeResult], names: Sequence[str]) -> str:
    """``node (driver X), …`` bounded by :data:`MAX_LISTED_NODES` and :data:`MAX_LISTED_NODE_BYTES`
    (always the first node; the omitted ones counted, ``(+N more)``)."""
    parts: list[str] = []
    used = 0
    for i, name in enumerate(names):
        version = results[name].version
        entry = f"{name} (driver {version})" if version else name
        if i > 0 and (i >= MAX_LISTED_NODES or used + len(entry) > MAX_LISTED_NODE_BYTES):
            break
        parts.append(entry)
        used += len(entry) + 2
    text = ", ".join(parts)
    if len(names) > len(parts):
        text += f" (+{len(names) - len(parts)} more)"
    return text


@dataclass(frozen=True)
class Outcome:
    """What the preflight reports: ``measured`` is False when only undetermined nodes remain."""

    message: str
    measured: bool


def outcome(results: Mapping[str, NodeResult]) -> Outcome | None:
    """Every failing category in one message (``None``: every node is ok)."""

    def having(verdict: Verdict) -> list[str]:
        return sorted(name for name, r in results.items() if r.verdict is verdict)

    sections: list[str] = []
    if removed := having(Verdict.OVERRIDE_REMOVED):
        sections.append(
            MSG_OVERRIDE_REMOVED.format(
                major=R595_MAJOR, nodes=describe_nodes(results, removed), hint=HINT_OVERRIDE_REMOVED
            )
        )
    if unknown := having(Verdict.UNDETERMINED):
        sections.append(
            MSG_UNDETERMINED.format(nodes=describe_nodes(results, unknown), hint=HINT_UNDETERMINED)
        )
    if unreadable := having(Verdict.PARAMS_UNREADABLE):
        sections.append(
            MSG_PARAMS_UNREADABLE.format(
                nodes=describe_nodes(results, unreadable), hint=HINT_PARAMS_UNREADABLE
            )
        )
    if missing := having(Verdict.FLAG_MISSING):
        sections.append(
            MSG_FLAG_MISSING.format(nodes=describe_nodes(results, missing), hint=HINT_FLAG_MISSING)
        )
    if not sections:
        return None
    return Outcome(" ".join(sections), measured=bool(removed or missing))


__all__ = [
    "HINT_FLAG_MISSING",
    "HINT_OVERRIDE_REMOVED",
    "HINT_PARAMS_UNREADABLE",
    "HINT_UNDETERMINED",
    "MAX_LISTED_NODES",
    "MAX_LISTED_NODE_BYTES",
    "MOUNT",
    "MSG_FLAG_MISSING",
    "MSG_OVERRIDE_REMOVED",
    "MSG_PARAMS_UNREADABLE",
    "MSG_UNDETERMINED",
    "PARAMS_OK_MARKER",
    "PROBE_SCRIPT",
    "R595_MAJOR",
    "SEPARATOR",
    "VERSION_OK_MARKER",
    "NodeResult",
    "Outcome",
    "Verdict",
    "applies",
    "describe_nodes",
    "evaluate_node",
    "evaluate_probe",
    "nvreg_override_set",
    "outcome",
    "parse_nvrm_version",
    "split_probe_output",
]
