"""Validated run options: one object, built once in ``pytest_configure``.

Both entry points (plain ``pytest --recipe ...`` and ``aicr-pytest validate``) end up here, so
flag validation and its messages live in one place.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from aicr_pytest.core.catalog import parse_phases
from aicr_pytest.core.errors import UsageError

DEFAULT_NVIDIA_SMI_IMAGE = "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04"  # same default as deployment.py
TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class Toleration(BaseModel):
    """A Kubernetes toleration as given by ``--toleration``."""

    model_config = ConfigDict(frozen=True)

    key: str | None = None
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = None
    effect: str | None = None

    def to_k8s(self) -> dict[str, str]:
        out: dict[str, str] = {"operator": self.operator}
        if self.key is not None:
            out["key"] = self.key
        if self.value is not None:
            out["value"] = self.value
        if self.effect is not None:
            out["effect"] = self.effect
        return out


def parse_node_selector(values: Sequence[str] | None) -> dict[str, str] | None:
    """``--node-selector key=value`` (repeatable; later duplicates of a key win)."""
    if not values:
        return None
    result: dict[str, str] = {}
    for raw in values:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip():
            raise UsageError(f'invalid node-selector: invalid format "{raw}", expected key=value')
        result[key.strip()] = value.strip()
    return result


def parse_toleration(raw: str) -> Toleration:
    """``--toleration key=value:Effect`` | ``key:Effect`` | ``*`` (tolerate everything)."""
    if raw.strip() == "*":
        return Toleration(operator="Exists")
    parts = raw.split(":")
    if len(parts) != 2 or not parts[0]:
        raise UsageError(
            f'invalid toleration: invalid format "{raw}", expected key=value:Effect, key:Effect or *'
        )
    spec, effect = parts
    if effect not in TOLERATION_EFFECTS:
        raise UsageError(
            f'invalid toleration: invalid effect "{effect}" in "{raw}", '
            f"must be one of: {', '.join(TOLERATION_EFFECTS)}"
        )
    key, sep, value = spec.partition("=")
    if sep:
        if not key:
            raise UsageError(f'invalid toleration: empty key in "{raw}"')
        return Toleration(key=key, operator="Equal", value=value, effect=effect)
    return Toleration(key=spec, operator="Exists", effect=effect)


class Settings(BaseModel):
    """Everything a run needs to know from the command line."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    recipe: str | None = None
    snapshot: str | None = None
    phases: tuple[str, ...] = ("deployment", "conformance", "performance")
    phases_explicit: bool = False
    no_cluster: bool = False
    fail_fast: bool = False
    data: Path | None = None
    node_selector: dict[str, str] | None = None
    tolerations: tuple[Toleration, ...] | None = None
    kubeconfig: str | None = None
    kube_context: str | None = None
    no_cleanup: bool = False
    ctrf_report: str | None = None
    nvidia_smi_image: str = DEFAULT_NVIDIA_SMI_IMAGE
    evidence_dir: Path | None = None
    simulated: bool = False

    @property
    def active(self) -> bool:
        """The validator is active only when a recipe was given."""
        return self.recipe is not None


def build_settings(
    *,
    recipe: str | None,
    snapshot: str | None,
    phase: Sequence[str] | None,
    no_cluster: bool,
    fail_fast: bool,
    data: str | None,
    node_selector: Sequence[str] | None,
    toleration: Sequence[str] | None,
    kubeconfig: str | None,
    kube_context: str | None,
    no_cleanup: bool,
    ctrf_report: str | None,
    nvidia_smi_image: str | None,
    evidence_dir: str | None,
) -> Settings:
    """Validate raw option values; raises :class:`UsageError` with one clear line."""
    phases = parse_phases(phase)
    if recipe is None and (snapshot or no_cluster or phase):
        raise UsageError("--recipe is required")
    if no_cluster and not snapshot:
        raise UsageError("--no-cluster requires --snapshot; cannot capture a snapshot without cluster access")
    data_path: Path | None = None
    if data is not None:
        data_path = Path(data).expanduser()
        if not data_path.is_dir():
            raise UsageError(f"--data {data}: not a directory")
        data_path = data_path.resolve()
    tolerations = tuple(parse_toleration(t) for t in toleration) if toleration else None
    image = nvidia_smi_image or os.environ.get("AICR_NVIDIA_SMI_IMAGE") or DEFAULT_NVIDIA_SMI_IMAGE
    return Settings(
        recipe=recipe,
        snapshot=snapshot,
        phases=tuple(phases),
        phases_explicit=bool(phase),
        no_cluster=no_cluster,
        fail_fast=fail_fast,
        data=data_path,
        node_selector=parse_node_selector(node_selector),
        tolerations=tolerations,
        kubeconfig=kubeconfig,
        kube_context=kube_context,
        no_cleanup=no_cleanup,
        ctrf_report=ctrf_report,
        nvidia_smi_image=image,
        evidence_dir=Path(evidence_dir) if evidence_dir else None,
        simulated=os.environ.get("AICR_PYTEST_SIMULATED") == "1",
    )
