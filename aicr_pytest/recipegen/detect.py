"""Snapshot-aware generation: criteria detected from a snapshot, and the constraint evaluator.

Detection follows AICR's fingerprint, computed from the measurements (the snapshot's own
``fingerprint`` block is advisory and not trusted):

* service — ``K8s.node.provider`` (``ocid1.…``, ``oci://…`` or ``oci`` → ``oke``;
  ``linode://…`` or ``linode`` → ``lke``);
* accelerator — the ``NodeTopology.label`` ``nvidia.com/gpu.product`` value (SKU tokens such as ``H100``
  in ``NVIDIA-H100-80GB-HBM3``), else ``GPU.hardware.model`` when it is a known accelerator; a cluster
  whose nodes carry several GPU products gets no accelerator;
* os — ``OS.release.ID`` (``amzn``/``al2``… → ``amazonlinux``, ``redhat``… → ``rhel``);
* nodes — ``NodeTopology.summary`` ``node-count``.

A value that is not a valid criteria value is left ``any``.  Intent and platform cannot be detected.
"""

from __future__ import annotations

from typing import Final

from aicr_pytest.core.constraints import evaluate_constraint
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.snapshot import Snapshot
from aicr_pytest.recipegen.build import Evaluation, Evaluator
from aicr_pytest.recipegen.criteria import STATIC_VALUES, Criteria, CriteriaRegistry
from aicr_pytest.recipegen.spec import Constraint

GPU_PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
#: Token sequences of GPU product names → accelerator, most specific first (``GB200`` before ``B200``).
GPU_SKUS: Final[tuple[tuple[tuple[str, ...], str], ...]] = (
    (("GB300",), "gb300"),
    (("GB200",), "gb200"),
    (("B200",), "b200"),
    (("H100",), "h100"),
    (("H200",), "h200"),
    (("A100",), "a100"),
    (("RTX", "PRO", "6000"), "rtx-pro-6000"),
    (("L40S",), "l40s"),
    (("L40",), "l40"),
)
OS_IDS: Final[dict[str, str]] = {
    "ubuntu": "ubuntu",
    "rhel": "rhel",
    "redhatenterpriselinux": "rhel",
    "redhat": "rhel",
    "cos": "cos",
    "amazonlinux": "amazonlinux",
    "amzn": "amazonlinux",
    "amazon": "amazonlinux",
    "al2": "amazonlinux",
    "al2023": "amazonlinux",
    "ol": "ol",
    "talos": "talos",
}


def gpu_sku(product: str) -> str:
    """``NVIDIA-H100-80GB-HBM3`` → ``h100``; ``""`` when no known SKU token sequence occurs."""
    tokens = product.upper().replace("-", " ").split()
    for sequence, sku in GPU_SKUS:
        n = len(sequence)
        if any(tuple(tokens[i : i + n]) == sequence for i in range(len(tokens) - n + 1)):
            return sku
    return ""


def provider_service(provider: str) -> str:
    if provider.startswith(("ocid1.", "oci://")) or provider == "oci":
        return "oke"
    if provider.startswith("linode://") or provider == "linode":
        return "lke"
    return provider


def _string(snapshot: Snapshot, type_name: str, subtype: str, key: str) -> str:
    st = snapshot.subtype(type_name, subtype)
    value = st.data.get(key) if st is not None else None
    return value if isinstance(value, str) else ""


def detect_accelerator(snapshot: Snapshot) -> str:
    labels = snapshot.subtype("NodeTopology", "label")
    if labels is not None:
        prefix = GPU_PRODUCT_LABEL + "."
        if sum(1 for k in labels.data if k.startswith(prefix)) > 1:
            return ""  # several GPU products: no single accelerator
        raw = labels.data.get(GPU_PRODUCT_LABEL)
        if isinstance(raw, str) and raw:
            sku = gpu_sku(raw.split("|", 1)[0])
            if sku:
                return sku
    model = _string(snapshot, "GPU", "hardware", "model")
    return model if model in STATIC_VALUES["accelerator"] else ""


def detect_node_count(snapshot: Snapshot) -> int:
    st = snapshot.subtype("NodeTopology", "summary")
    value = st.data.get("node-count") if st is not None else None
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and value.is_integer():
        return max(int(value), 0)
    return 0


def detect_criteria(snapshot: Snapshot, registry: CriteriaRegistry) -> Criteria:
    """The criteria a snapshot implies; dimensions that cannot be detected stay ``any``."""

    def parsed(field: str, value: str) -> str:
        try:
            return registry.parse(field, value)  # type: ignore[arg-type]
        except UsageError:
            return "any"

    provider = _string(snapshot, "K8s", "node", "provider")
    os_id = OS_IDS.get(_string(snapshot, "OS", "release", "ID").strip().lower(), "")
    return Criteria(
        service=parsed("service", provider_service(provider)) if provider else "any",
        accelerator=parsed("accelerator", detect_accelerator(snapshot)),
        os=parsed("os", os_id),
        nodes=detect_node_count(snapshot),
    )


def snapshot_evaluator(snapshot: Snapshot) -> Evaluator:
    """Evaluate overlay constraints against ``snapshot`` with the readiness constraint engine."""

    def evaluate(c: Constraint) -> Evaluation:
        result = evaluate_constraint(c.name, c.value, snapshot, severity=c.severity or "error")
        return Evaluation(passed=result.passed, actual=result.actual, error=result.error)

    return evaluate


__all__ = [
    "GPU_PRODUCT_LABEL",
    "detect_accelerator",
    "detect_criteria",
    "detect_node_count",
    "gpu_sku",
    "provider_service",
    "snapshot_evaluator",
]
