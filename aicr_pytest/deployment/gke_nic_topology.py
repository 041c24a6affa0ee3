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
4. the GPU NIC Networks (``networks.networking.gke.io`` whose name contains ``gpu-nic``, the
   sibling ``gke-gpu-nic-networks``' discovery) are listed; a list error is ``other``;
5. per node: an absent ``nic-info`` leaves the node unverified; a present but unparsable one (blank,
   not JSON, an empty list, no interface/PCI entries, a duplicate interface name) is a problem; so is
   an interface that is not a canonical ``eth0``..``eth8`` (``gve1``, ``eth9``, ``eth08``: the gVNIC
   displacement signature) and fewer than 8 of ``eth1``..``eth8``;
6. the north-interfaces join, per verified node: the ``networking.gke.io/north-interfaces``
   annotation (a JSON list of ``{network, ipAddress}``) maps each underlay IP to its Network; each of
   ``eth1``..``eth8``'s ``nic-info`` birth IP must join to a GPU NIC Network, else the interface is
   displaced (a gVNIC in a GPU NIC's name and slot: every node identically misprovisioned, which
   names and PCI slots alone cannot show). An absent annotation, or no GPU NIC Network to join
   against, leaves the node's displacement unverified; a present but unparsable one is a problem;
7. any problem fails (``CONFLICT``) naming every node; no verified node skips; a pass with an
   unverified node says how many.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.core.components import enabled_ref
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.deployment.common import CheckFailed, Emit, log
from aicr_pytest.deployment.gke_gpu_nics import (
    GPU_NIC_SUBSTRING,
    NETWORK_API,
    NETWORK_KIND,
    SKIP_NOT_DECLARED,
    TCPXO_COMPONENT,
    read_error,
)
from aicr_pytest.deployment.healthcheck import Fetch

A3_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
A3_ACCELERATOR = "nvidia-h100-mega-80gb"
NIC_INFO_ANNOTATION = "networking.gke.io/nic-info"
NORTH_INTERFACES_ANNOTATION = "networking.gke.io/north-interfaces"
NODES_SUBJECT = "a3 GPU nodes (nodes)"
NETWORKS_SUBJECT = "GPU NIC networks (networks)"
REQUIRED_GPU_NIC_INTERFACES = 8
GPU_NIC_INTERFACES = tuple(f"eth{i}" for i in range(1, REQUIRED_GPU_NIC_INTERFACES + 1))

REMEDIATION_DISPLACEMENT = (
    "Re-provision the GPU node pool WITHOUT a gVNIC additional network (it takes a GPU NIC PCI slot)."
)
REMEDIATION_NO_NODES = (
    "No a3-megagpu-8g nodes were found — check the GPU pool exists, is not scaled to zero, and carries "
    "cloud.google.com/gke-accelerator=nvidia-h100-mega-80gb."
)
PROBLEM_UNPARSABLE = 'node "{node}" has an unparseable {annotation} annotation: {err}'
PROBLEM_EXTRA = (
    'node "{node}" has unexpected interface(s) beyond eth0..eth8: {names} (gVNIC displacement signature)'
)
PROBLEM_MISSING = 'node "{node}" maps {count} of 8 GPU NIC interfaces (missing: {names})'
PROBLEM_DISPLACED = (
    'node "{node}" has GPU NIC interface(s) mapped to a non-GPU network (gVNIC displacement): {names}'
)
CAUSE_ABSENT = "node has no {annotation} annotation"
CAUSE_NOT_JSON = "cannot parse networking.gke.io/nic-info annotation: {err}"
CAUSE_NORTH_NOT_JSON = "cannot parse networking.gke.io/north-interfaces annotation: {err}"
CAUSE_EMPTY = "networking.gke.io/nic-info annotation is an empty list"
CAUSE_NO_ENTRIES = "networking.gke.io/nic-info annotation has no interface/PCI entries"
CAUSE_DUPLICATE = 'networking.gke.io/nic-info annotation has a duplicate interface name "{name}"'
SKIP_NONE_VERIFIED = (
    "could not verify NIC topology on any of the {total} a3 GPU node(s) ({unverified} without a nic-info "
    "annotation)"
)
LINE_PARTIAL = (
    "Verified NIC topology on {verified} a3 GPU node(s); {unverified} node(s) have no nic-info annotation "
    "(unverified); {undisplaced} node(s) displacement unverified (no north-interfaces annotation, or no GPU "
    "NIC Networks discovered to join against)"
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
    #: interface name → its birth IP (``""`` when the entry has none): the north-interfaces join key
    ips: Mapping[str, str] = field(default_factory=dict)


def parse_nic_info(annotation: str) -> NodeNics:
    """Parse the ``nic-info`` annotation; raises :class:`ValueError` (upstream's cause text) where
    upstream's typed decoder fails: not a JSON list, a non-object entry, a non-string field."""
    if not annotation.strip():
        raise ValueError(CAUSE_ABSENT.format(annotation=NIC_INFO_ANNOTATION))
    try:
        entries = json.loads(annotation.strip())
    except json.JSONDecodeError as err:
        raise ValueError(CAUSE_NOT_JSON.format(err=err)) from err
    if entries is None:
        entries = []  # Go decodes null into an empty slice
    if not isinstance(entries, list):
        raise ValueError(CAUSE_NOT_JSON.format(err="not a JSON list"))
    if not entries:
        raise ValueError(CAUSE_EMPTY)
    interfaces: dict[str, str] = {}
    ips: dict[str, str] = {}
    for i, entry in enumerate(entries):
        if entry is None:
            continue  # Go decodes null into a zero entry, which has no name
        if not isinstance(entry, Mapping):
            raise ValueError(CAUSE_NOT_JSON.format(err=f"entry {i} is not an object"))
        fields = [entry.get(k) for k in ("birthName", "birthIP", "birthIPv6", "pciAddress")]
        if not all(v is None or isinstance(v, str) for v in fields):
            raise ValueError(CAUSE_NOT_JSON.format(err=f"entry {i} has a non-string field"))
        name, pci = str(entry.get("birthName") or ""), str(entry.get("pciAddress") or "")
        if not name or not pci:
            continue
        if name in interfaces:
            raise ValueError(CAUSE_DUPLICATE.format(name=name))
        interfaces[name] = pci
        ips[name] = str(entry.get("birthIP") or "")
    if not interfaces:
        raise ValueError(CAUSE_NO_ENTRIES)
    extra = sorted(
        n for n in interfaces if not _CANONICAL.fullmatch(n) or int(n[3:]) > REQUIRED_GPU_NIC_INTERFACES
    )
    missing = sorted(n for n in GPU_NIC_INTERFACES if n not in interfaces)
    return NodeNics(interfaces, tuple(extra), tuple(missing), ips)


def parse_north_interfaces(annotation: str) -> dict[str, str]:
    """Parse the ``north-interfaces`` annotation into underlay IP → Network name; raises
    :class:`ValueError` (upstream's cause text) when it is blank or not a JSON list of objects with
    string fields. ``null`` is an empty map (as upstream's decoder reads it); entries lacking an IP
    or a Network are left out."""
    if not annotation.strip():
        raise ValueError(CAUSE_ABSENT.format(annotation=NORTH_INTERFACES_ANNOTATION))
    try:
        entries = json.loads(annotation.strip())
    except json.JSONDecodeError as err:
        raise ValueError(CAUSE_NORTH_NOT_JSON.format(err=err)) from err
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise ValueError(CAUSE_NORTH_NOT_JSON.format(err="not a JSON list"))
    by_ip: dict[str, str] = {}
    for i, entry in enumerate(entries):
        if entry is None:
            continue
        if not isinstance(entry, Mapping):
            raise ValueError(CAUSE_NORTH_NOT_JSON.format(err=f"entry {i} is not an object"))
        network, ip = entry.get("network"), entry.get("ipAddress")
        if not all(v is None or isinstance(v, str) for v in (network, ip, entry.get("ipv6Address"))):
            raise ValueError(CAUSE_NORTH_NOT_JSON.format(err=f"entry {i} has a non-string field"))
        if ip and network:
            by_ip[ip] = network
    return by_ip


def displaced_gpu_nic_interfaces(
    nics: NodeNics, north_by_ip: Mapping[str, str], gpu_networks: Collection[str]
) -> list[str]:
    """``eth1``..``eth8`` whose birth IP joins to no GPU NIC Network, in interface order, each as
    ``eth1(ip 10.0.16.3 -> network "default")`` (an IP absent from north-interfaces: network ``""``).
    Interfaces that are missing or have no IP are not judged here."""
    displaced: list[str] = []
    for name in GPU_NIC_INTERFACES:
        ip = nics.ips.get(name, "")
        if not ip:
            continue
        network = north_by_ip.get(ip)
        if network is None or network not in gpu_networks:
            displaced.append(f"{name}(ip {ip} -> network {json.dumps(network or '')})")
    return displaced


def gpu_nic_network_names(networks: Iterable[Mapping[str, Any]]) -> list[str]:
    """The GPU NIC Networks' names (a name containing ``gpu-nic``), sorted: the join's targets."""
    names = (str((n.get("metadata") or {}).get("name") or "") for n in networks)
    return sorted(n for n in names if GPU_NIC_SUBSTRING in n)


def _north_problem(name: str, nics: NodeNics, annotation: str, gpu_networks: Collection[str]) -> str | None:
    """Rule 6 for one verified node: the problem, ``""`` when the join holds, ``None`` when the
    displacement cannot be verified (no annotation, or no GPU NIC Network to join against)."""
    if annotation == "":
        log.warning("GPU node %s has no north-interfaces annotation; NIC displacement unverified", name)
        return None
    try:
        north_by_ip = parse_north_interfaces(annotation)
    except ValueError as err:
        return PROBLEM_UNPARSABLE.format(node=name, annotation=NORTH_INTERFACES_ANNOTATION, err=err)
    if not gpu_networks:
        log.warning("GPU NIC network set is empty; NIC displacement unverified (node %s)", name)
        return None
    displaced = displaced_gpu_nic_interfaces(nics, north_by_ip, gpu_networks)
    return PROBLEM_DISPLACED.format(node=name, names=",".join(displaced)) if displaced else ""


def evaluate_nic_topology(
    nodes: Sequence[Mapping[str, Any]], gpu_networks: Collection[str] = (), *, emit: Emit
) -> str:
    """Rules 5 to 7 over the a3-megagpu-8g nodes (module docstring), joining to ``gpu_networks``."""
    problems: list[str] = []
    unverified: list[str] = []
    undisplaced: list[str] = []
    verified = 0
    for node in sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name") or "")):
        meta = node.get("metadata") or {}
        name = str(meta.get("name") or "")
        annotations = meta.get("annotations") or {}
        annotation = str(annotations.get(NIC_INFO_ANNOTATION) or "")
        if annotation == "":
            log.warning("GPU node %s has no nic-info annotation; NIC topology unverified", name)
            unverified.append(name)
            continue
        try:
            nics = parse_nic_info(annotation)
        except ValueError as err:
            problems.append(PROBLEM_UNPARSABLE.format(node=name, annotation=NIC_INFO_ANNOTATION, err=err))
            continue
        verified += 1
        if nics.extra:
            problems.append(PROBLEM_EXTRA.format(node=name, names=",".join(nics.extra)))
        if nics.missing:
            count = REQUIRED_GPU_NIC_INTERFACES - len(nics.missing)
            problems.append(PROBLEM_MISSING.format(node=name, count=count, names=",".join(nics.missing)))
        north = str(annotations.get(NORTH_INTERFACES_ANNOTATION) or "")
        problem = _north_problem(name, nics, north, gpu_networks)
        if problem is None:
            undisplaced.append(name)
        elif problem:
            problems.append(problem)
    emit(f"nodesValidated: {verified}/{len(nodes)}")
    if problems:
        raise CheckFailed(topology_message("CONFLICT", "; ".join(problems), REMEDIATION_DISPLACEMENT))
    if verified == 0:
        raise CheckSkip(SKIP_NONE_VERIFIED.format(total=len(nodes), unverified=len(unverified)))
    if unverified or undisplaced:
        line = LINE_PARTIAL.format(
            verified=verified, unverified=len(unverified), undisplaced=len(undisplaced)
        )
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
    if not nodes:
        raise CheckFailed(
            topology_message("NOT_FOUND", "the cluster has no a3-megagpu-8g GPU nodes", REMEDIATION_NO_NODES)
        )
    try:
        networks = fetch(NETWORK_API, NETWORK_KIND, None, None, None)
    except Exception as err:
        raise Inconclusive(read_error(err, NETWORKS_SUBJECT)) from err
    return evaluate_nic_topology(nodes, gpu_nic_network_names(networks), emit=emit)


__all__ = [
    "NIC_INFO_ANNOTATION",
    "NORTH_INTERFACES_ANNOTATION",
    "NodeNics",
    "check_gke_gpu_nic_topology",
    "displaced_gpu_nic_interfaces",
    "evaluate_nic_topology",
    "gpu_nic_network_names",
    "parse_nic_info",
    "parse_north_interfaces",
]
