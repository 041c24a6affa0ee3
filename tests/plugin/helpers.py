"""Throw-away recipes and snapshots for plugin tests."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from aicr_pytest.core import catalog

#: a bundled example recipe and the snapshot it was made from
EXAMPLES = Path(__file__).resolve().parents[2] / "recipes" / "examples"
EXAMPLE_RECIPE = EXAMPLES / "h100-eks-training.yaml"
EXAMPLE_SNAPSHOT = EXAMPLES / "h100-eks-training-snapshot.yaml"

SNAPSHOT: dict[str, Any] = {
    "kind": "Snapshot",
    "apiVersion": "aicr.run/v1alpha2",
    "metadata": {"source-node": "node-a"},
    "measurements": [
        {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.33.5-eks-abc"}}]},
        {
            "type": "OS",
            "subtypes": [
                {"subtype": "release", "data": {"ID": "ubuntu", "VERSION_ID": "24.04"}},
                {"subtype": "sysctl", "data": {"/proc/sys/kernel/osrelease": "6.8.0-1040-aws"}},
            ],
        },
        {
            "type": "GPU",
            "subtypes": [{"subtype": "smi", "data": {"driver-version": "580.95.05", "gpu-count": 8}}],
        },
    ],
}


def make_recipe(
    *,
    constraints: list[dict[str, Any]] | None = None,
    deployment: list[str] | None = None,
    conformance: list[str] | None = None,
    performance: list[str] | None = None,
    phase_constraints: dict[str, list[dict[str, Any]]] | None = None,
    api_version: str = "aicr.run/v1alpha2",
) -> dict[str, Any]:
    validation: dict[str, Any] = {}
    for phase, checks in (
        ("deployment", deployment),
        ("conformance", conformance),
        ("performance", performance),
    ):
        if checks is not None:
            validation[phase] = {"checks": checks}
    for phase, cons in (phase_constraints or {}).items():
        validation.setdefault(phase, {})["constraints"] = cons
    return {
        "kind": "RecipeResult",
        "apiVersion": api_version,
        "metadata": {"version": "test"},
        "criteria": {"service": "eks", "accelerator": "h100", "intent": "training", "os": "ubuntu"},
        "constraints": constraints
        if constraints is not None
        else [{"name": "K8s.server.version", "value": ">= 1.32"}],
        "componentRefs": [
            {
                "name": "gpu-operator",
                "namespace": "gpu-operator",
                "type": "Helm",
                "source": "https://helm.ngc.nvidia.com/nvidia",
                "version": "v25.10.1",
            },
        ],
        "validation": validation,
    }


def every_check_recipe() -> dict[str, Any]:
    """A recipe that declares every catalog check, each under its phase."""
    by_phase: dict[str, list[str]] = {}
    for spec in catalog.CATALOG:
        by_phase.setdefault(spec.phase, []).append(spec.name)
    return make_recipe(**by_phase)


def read_ctrf(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def ctrf_js_dir() -> Path:
    """Where ``scripts/ctrf.sh`` installs the ``ctrf`` npm package."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "aicr-pytest" / "ctrf-js"
    return Path(os.environ.get("AICR_CTRF_JS_DIR", default))
