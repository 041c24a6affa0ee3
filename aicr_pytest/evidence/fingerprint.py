"""The cluster fingerprint of the predicate, derived from the *raw* snapshot, and criteriaMatch.

The fingerprint is advisory (it is what the snapshot says, not something re-measured), but it is
computed before minimization, so e.g. the region (from the node labels, which a minimal bundle
drops) still appears in the predicate.  Each dimension is ``{value, source?, version?, note?}``;
``value`` is always present (``""``/``0`` when the snapshot does not say).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from aicr_pytest.core.recipe import Criteria
from aicr_pytest.core.snapshot import Snapshot

#: GPU SKUs recognised in a product string, matched as whole tokens
KNOWN_SKUS: Final = frozenset(
    {
        "gb300", "gb200", "gh200", "b300", "b200", "h200", "h100", "h20", "h800",
        "a100", "a800", "a10g", "a10", "a30", "a40", "l40s", "l40", "l4", "t4", "v100",
    }
)  # fmt: skip
GPU_PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
REGION_LABEL: Final = "topology.kubernetes.io/region"
_MORE = re.compile(r"\s*\(\+(\d+) more\)\s*$")


def _dim(value: Any, source: str = "", *, version: str = "", note: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"value": value}
    if source:
        out["source"] = source
    if version:
        out["version"] = version
    if note:
        out["note"] = note
    return out


def _data(snapshot: Snapshot | None, mtype: str, subtype: str) -> Mapping[str, Any]:
    if snapshot is None:
        return {}
    sub = snapshot.subtype(mtype, subtype)
    return sub.data if sub is not None else {}


def sku_of(product: str) -> str:
    """``NVIDIA-H100-80GB-HBM3`` -> ``h100``; ``""`` when no known SKU is named."""
    for token in re.split(r"[\s_\-/]+", product.lower()):
        if token in KNOWN_SKUS:
            return token
    return ""


def label_values(labels: Mapping[str, Any], key: str) -> list[tuple[str, int]]:
    """(value, node count) for a label, from ``key: "value|n1,n2"`` or ``key.<value>: "value|nodes"``."""
    out: list[tuple[str, int]] = []
    for name in sorted(labels):
        if name != key and not name.startswith(key + "."):
            continue
        raw = str(labels[name])
        value, _, nodes = raw.partition("|")
        more = 0
        if (m := _MORE.search(nodes)) is not None:
            more = int(m.group(1))
            nodes = nodes[: m.start()]
        count = len([n for n in nodes.split(",") if n.strip()]) + more
        out.append((value.strip(), count))
    return out


def _k8s_version(raw: str) -> str:
    text = raw.strip().removeprefix("v")
    return re.split(r"[-+]", text, maxsplit=1)[0]


def compute(snapshot: Snapshot | None) -> dict[str, Any]:
    """The predicate's ``fingerprint`` object."""
    node = _data(snapshot, "K8s", "node")
    server = _data(snapshot, "K8s", "server")
    hardware = _data(snapshot, "GPU", "hardware")
    release = _data(snapshot, "OS", "release")
    summary = _data(snapshot, "NodeTopology", "summary")
    labels = _data(snapshot, "NodeTopology", "label")

    fp: dict[str, Any] = {}
    provider = str(node.get("provider", "")).strip().lower()
    fp["service"] = _dim(provider, "k8s.node.provider" if provider else "")

    products = label_values(labels, GPU_PRODUCT_LABEL)
    model = str(hardware.get("model", "")).strip()
    skus = sorted({s for s in (sku_of(p) for p, _ in products) if s})
    if products:
        source = f"nodeTopology.label.{GPU_PRODUCT_LABEL}"
        if not skus:
            fp["accelerator"] = _dim("", source, note="unknown-sku")
        else:
            fp["accelerator"] = _dim(skus[0], source, note="multi-gpu" if len(skus) > 1 else "")
    elif model:
        sku = sku_of(model)
        fp["accelerator"] = _dim(sku, "gpu.hardware.model", note="" if sku else "unknown-sku")
    else:
        fp["accelerator"] = _dim("")
    if model:
        fp["gpuModel"] = _dim(sku_of(model) or model.lower(), "gpu.hardware.model")

    os_id = str(release.get("ID", "")).strip().lower()
    fp["os"] = _dim(os_id, "os.release" if os_id else "", version=str(release.get("VERSION_ID", "")).strip())

    version = str(server.get("version", "")).strip()
    fp["k8sVersion"] = _dim(_k8s_version(version), "k8s.server.version" if version else "")

    regions = sorted({v for v, _ in label_values(labels, REGION_LABEL) if v})
    if regions:
        fp["region"] = _dim(
            regions[0], f"nodeTopology.label.{REGION_LABEL}", note="multi-region" if len(regions) > 1 else ""
        )

    count = summary.get("node-count")
    if isinstance(count, int | float) and not isinstance(count, bool) and int(count) == count:
        fp["nodeCount"] = _dim(int(count), "nodeTopology.summary.node-count")
    else:
        fp["nodeCount"] = _dim(0)
    gpu_nodes = sum(n for _, n in products)
    fp["gpuNodeCount"] = _dim(gpu_nodes, f"nodeTopology.label.{GPU_PRODUCT_LABEL}" if products else "")
    return fp


def _match(required: str, provided: str) -> str:
    if not required or required == "any":
        return "matched"
    if not provided:
        return "unknown"
    return "matched" if required.lower() == provided.lower() else "mismatched"


def criteria_match(criteria: Criteria, fp: Mapping[str, Any]) -> dict[str, Any]:
    """``{matched, perDimension[]}``: recipe criteria against the fingerprint (advisory)."""
    rows: list[dict[str, Any]] = []
    for dimension in ("service", "accelerator", "os", "intent", "platform"):
        required = str(getattr(criteria, dimension) or "")
        provided = str(fp.get(dimension, {}).get("value", "")) if dimension in fp else ""
        row: dict[str, Any] = {"dimension": dimension}
        if required:
            row["recipeRequires"] = required
        if provided:
            row["fingerprintProvides"] = provided
        row["match"] = _match(required, provided)
        rows.append(row)
    nodes = int(fp.get("nodeCount", {}).get("value", 0) or 0)
    row = {"dimension": "nodes"}
    if criteria.nodes:
        row["recipeRequires"] = str(criteria.nodes)
    if nodes:
        row["fingerprintProvides"] = str(nodes)
    row["match"] = _match(str(criteria.nodes) if criteria.nodes else "", str(nodes) if nodes else "")
    rows.append(row)
    return {"matched": all(r["match"] != "mismatched" for r in rows), "perDimension": rows}
