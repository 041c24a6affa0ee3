"""Inputs for evidence tests: the example recipe and snapshot, CTRF reports, bundles."""

from __future__ import annotations

import copy
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aicr_pytest.core import yamlio
from aicr_pytest.core.datatree import DataTree, embedded_data_root
from aicr_pytest.core.recipe import Recipe, parse_recipe
from aicr_pytest.core.snapshot import Snapshot, load_snapshot_text
from aicr_pytest.evidence import bundle, emit
from aicr_pytest.evidence.settings import EvidenceSettings
from aicr_pytest.report import ctrf

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
EXAMPLE_SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
NOW = datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)


def example_recipe() -> Recipe:
    recipe, _ = parse_recipe(yamlio.load(EXAMPLE_RECIPE.read_text()), str(EXAMPLE_RECIPE))
    return recipe


def example_snapshot() -> Snapshot:
    return load_snapshot_text(EXAMPLE_SNAPSHOT.read_text(), str(EXAMPLE_SNAPSHOT))


def data_tree() -> DataTree:
    return DataTree(embedded_data_root())


def report(
    results: dict[str, list[tuple[str, str]]] | None = None,
    *,
    stdout: str = "evidence line from node ip-10-42-7-118",
    readiness: list[tuple[str, str]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    """A run's CTRF report: ``{phase: [(check, status), ...]}`` (+ readiness tests)."""
    results = results or {
        "deployment": [("operator-health", "passed"), ("expected-resources", "passed")],
        "performance": [("nccl-all-reduce-bw", "passed")],
    }
    tests = [
        ctrf.TestResult(name=name, status=status, suite=["readiness"], message=f"readiness {name}")  # type: ignore[arg-type]
        for name, status in readiness
    ]
    for phase, items in results.items():
        for name, status in items:
            tests.append(
                ctrf.TestResult(
                    name=name,
                    status=status,  # type: ignore[arg-type]
                    suite=[phase],
                    duration=12,
                    message=f"{name} said {status} on node ip-10-42-7-118",
                    stdout=[stdout],
                    extra={"aicr.node": "ip-10-42-7-118"},
                )
            )
    return ctrf.build_report(
        tests, start_ms=1_782_000_000_000, stop_ms=1_782_000_060_000, extra={"aicr.runId": "ab12"}
    )


def inputs(**overrides: Any) -> bundle.BundleInputs:
    values: dict[str, Any] = {
        "recipe": example_recipe(),
        "snapshot": example_snapshot(),
        "report": report(),
        "tool_version": "0.1.0",
        "registry_entries": data_tree().registry(),
        "now": NOW,
    }
    values.update(overrides)
    return bundle.BundleInputs(**values)


def build(out: Path, **overrides: Any) -> bundle.BuiltBundle:
    return bundle.build(out, inputs(**overrides))


def deep(obj: Any) -> Any:
    return copy.deepcopy(obj)


#: :func:`report` under a name :func:`emitted`'s ``report`` parameter does not hide
default_report = report


def emitted(
    out: Path,
    *,
    push: str | None = None,
    token: str | None = None,
    no_sign: bool = False,
    report: dict[str, Any] | None = None,
    predicate_version: int = 1,
) -> emit.Emitted:
    """A run's evidence emission into ``out`` (pushed and signed when ``push``/``token`` are given)."""
    settings = EvidenceSettings(
        out_dir=out,
        push=push,
        identity_token=token,
        plain_http=True,
        no_sign=no_sign,
        predicate_version=predicate_version,
    )
    plan = emit.prepare(settings, {}, write=lambda s: None, read_line=lambda: "", stdin_is_tty=False)
    assert plan is not None
    return emit.emit(
        plan,
        report=report or default_report(),
        recipe=example_recipe(),
        snapshot=example_snapshot(),
        registry_entries=data_tree().registry(),
        tool_version="0.1.0",
        env=dict(os.environ),
        write=lambda s: None,
    )
