"""``gke-gpu-nic-topology``: has a gVNIC additional network displaced a GPU NIC on a GKE a3 node?

Upstream AICR main (``validators/deployment/gke_gpu_nic_topology.go`` with
``validators/internal/gkenet``, repository NVIDIA/aicr; AICR #2265 case 1; not in the catalog yet):
a GPU node pool provisioned with a gVNIC additional network loses a GPU NIC PCI slot, leaving 7 of 8
GPUs usable for GPUDirect TCPXO while every ``Network`` object exists (``gke-gpu-nic-networks``
passes). Each a3-megagpu-8g node (``cloud.google.com/gke-accelerator=nvidia-h100-mega-80gb``) carries
its NIC→PCI map in the ``networking.gke.io/nic-info`` annotation (a JSON list of
``{birthName, pciAddress, …}``). The rules, in order:

1. a recipe that does not declare ``gke-nccl-tcpxo`` skips;
2. the node list cannot be read: ``other`` (the sibling check's classification of read errors);
3. no a3-megagpu-8g node fails (``NOT_FOUND``);
4. per node: an absent annotation leaves the node unverified; a present but unparsable one (not JSON,
   an empty list, no interface/PCI entries, a duplicate interface name) is a problem; so is an
   interface that is not a canonical ``eth0``..``eth8`` (``gve1``, ``eth9``, ``eth08``: the gVNIC
   displacement signature) and fewer than 8 of ``eth1``..``eth8``;
5. any problem fails (``CONFLICT``) naming every node; no verified node skips; else passes.

Not implemented: upstream's ``networking.gke.io/north-interfaces`` join (a GPU NIC sitting on a
non-GPU network), whose parser we could not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.core.components import enabled_ref
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.deployment.common import CheckFailed, Emit, log
from aicr_pytest.deployment.gke_gpu_nics import SKIP_NOT_DECLARED, TCPXO_COMPONENT, read_error
from aicr_pytest.deployment.healthcheck import Fetch

A3_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
A3_ACCELERATOR = "nvidia-h100-mega-80gb"
NIC_INFO_ANNOTATION = "networking.gke.io/nic-info"
NODES_SUBJECT = "a3 GPU nodes (nodes)"
REQUIRED_GPU_NIC_INTERFACES = 8
GPU_NIC_INTERFACES = tuple(f"eth{i}" for i in range(1, REQUIRED_GPU_NIC_INTERFACES + 1))

REMEDIATION_DISPLACEMENT = (
    "Re-provision the GPU node pool WITHOUT a gVNIC additional network (it takes a GPU NIC PCI slot)."
)
REMEDIATION_NO_NODES = (
    "No a3-megagpu-8g nodes were found — check the GPU pool exists, is not scaled to zero, and carries "
    "cloud.google.com/gke-accelerator=nvidia-h100-mega-80gb."
)
PROBLEM_UNPARSABLE = 'node "{node}" has an unparseable networking.gke.io/nic-info annotation: {err}'
PROBLEM_EXTRA = (
    'node "{node}" has unexpected interface(s) beyond eth0..eth8: {names} (gVNIC displacement signature)'
)
PROBLEM_MISSING = 'node "{node}" maps {count} of 8 GPU NIC interfaces (missing: {names})'
CAUSE_NOT_JSON = "cannot parse networking.gke.io/nic-info annotation: {err}"
CAUSE_EMPTY = "networking.gke.io/nic-info annotation is an empty list"
CAUSE_NO_ENTRIES = "networking.gke.io/nic-info annotation has no interface/PCI entries"
CAUSE_DUPLICATE = 'networking.gke.io/nic-info annotation has a duplicate interface name "{name}"'
SKIP_NONE_VERIFIED = (
    "could not verify NIC topology on any of the {total} a3 GPU node(s) ({unverified} without a nic-info "
    "annotation)"
)
LINE_PARTIAL = (
    "Verified NIC topology on {verified} a3 GPU node(s); {unverified} node(s) have no nic-info annotation "
    "(unverified)"
)
MSG_PASSED = "Verified NIC topology on {verified} a3 GPU node(s): all map 8 GPU NIC interfaces (eth1..eth8)"

_CANONICAL = re.compile(r"eth(0|[1-9][0-9]*)")


def topology_message(code: str, detail: str, remediation: str) -> str:
    return (
        f"[{code}] recipe declares {TCPXO_COMPONENT} but {detail} — GPUDirect TCPXO needs all 8 GPU NIC "
        f"PCI slots mapped to eth1..eth8. {remediation} Verify with: kubectl get node <gpu-node> -o "
        "jsonpath='{.metadata.annotations.networking\\.gke\\.io/nic-info}' "
        "(see docs/integrator/gke-tcpxo-networking.md)"
    )


@dataclass(frozen=True)
class NodeNics:
    """One node's parsed ``nic-info``: interface name → PCI address, and what that reveals."""

    interfaces: Mapping[str, str]
    extra: tuple[str, ...] = field(default=())
    missing: tuple[str, ...] = field(default=())


def parse_nic_info(annotation: str) -> NodeNics:
    """Parse the ``nic-info`` annotation; raises :class:`ValueError` (upstream's cause text)."""
    try:
        entries = json.loads(annotation.strip())
    except json.JSONDecodeError as err:
        raise ValueError(CAUSE_NOT_JSON.format(err=err)) from err
    if not isinstance(entries, list):
        raise ValueError(CAUSE_NOT_JSON.format(err="not a JSON list"))
    if not entries:
        raise ValueError(CAUSE_EMPTY)
    interfaces: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        name, pci = str(entry.get("birthName") or ""), str(entry.get("pciAddress") or "")
        if not name or not pci:
            continue
        if name in interfaces:
            raise ValueError(CAUSE_DUPLICATE.format(name=name))
        interfaces[name] = pci
    if not interfaces:
        raise ValueError(CAUSE_NO_ENTRIES)
    extra = sorted(
        n for n in interfaces if not _CANONICAL.fullmatch(n) or int(n[3:]) > REQUIRED_GPU_NIC_INTERFACES
    )
    missing = sorted(n for n in GPU_NIC_INTERFACES if n not in interfaces)
    return NodeNics(interfaces, tuple(extra), tuple(missing))


def evaluate_nic_topology(nodes: Sequence[Mapping[str, Any]], *, emit: Emit) -> str:
    """Rules 3 to 5 over the a3-megagpu-8g nodes (module docstring)."""
    if not nodes:
        raise CheckFailed(
            topology_message("NOT_FOUND", "the cluster has no a3-megagpu-8g GPU nodes", REMEDIATION_NO_NODES)
        )
    problems: list[str] = []
    unverified: list[str] = []
    verified = 0
    for node in sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name") or "")):
        meta = node.get("metadata") or {}
        name = str(meta.get("name") or "")
        annotation = str((meta.get("annotations") or {}).get(NIC_INFO_ANNOTATION) or "")
        if not annotation.strip():
            log.warning("GPU node %s has no nic-info annotation; NIC topology unverified", name)
            unverified.append(name)
            continue
        try:
            nics = parse_nic_info(annotation)
        except ValueError as err:
            problems.append(PROBLEM_UNPARSABLE.format(node=name, err=err))
            continue
        verified += 1
        if nics.extra:
            problems.append(PROBLEM_EXTRA.format(node=name, names=",".join(nics.extra)))
        if nics.missing:
            count = REQUIRED_GPU_NIC_INTERFACES - len(nics.missing)
            problems.append(PROBLEM_MISSING.format(node=name, count=count, names=",".join(nics.missing)))
    emit(f"nodesValidated: {verified}/{len(nodes)}")
    if problems:
        raise CheckFailed(topology_message("CONFLICT", "; ".join(problems), REMEDIATION_DISPLACEMENT))
    if verified == 0:
        raise CheckSkip(SKIP_NONE_VERIFIED.format(total=len(nodes), unverified=len(unverified)))
    if unverified:
        line = LINE_PARTIAL.format(verified=verified, unverified=len(unverified))
        emit(line)
        return line
    message = MSG_PASSED.format(verified=verified)
    emit(message)
    return message


def check_gke_gpu_nic_topology(
    fetch: Fetch, refs: Iterable[Mapping[str, Any] | Any] = (), *, emit: Emit
) -> str:
    """The check (module docstring): the pass message, or raises :class:`CheckFailed` /
    :class:`CheckSkip` / :class:`Inconclusive`."""
    if enabled_ref(refs, TCPXO_COMPONENT) is None:
        raise CheckSkip(SKIP_NOT_DECLARED)
    try:
        nodes = fetch("v1", "Node", None, None, {A3_ACCELERATOR_LABEL: A3_ACCELERATOR})
    except Exception as err:
        raise Inconclusive(read_error(err, NODES_SUBJECT)) from err
    return evaluate_nic_topology(nodes, emit=emit)


__all__ = [
    "NIC_INFO_ANNOTATION",
    "NodeNics",
    "check_gke_gpu_nic_topology",
    "evaluate_nic_topology",
    "parse_nic_info",
]
