"""Builders for ``dcgmi diag -j`` documents in the shape of DCGM's JSON schema (written from the
schema's field names; no real output is copied)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

#: A result: a status, or a status with warnings ``(error_id, text)``.
Result = str | tuple[str, Sequence[tuple[int, str]]]


def gpu_result(index: int, result: Result, group: str = "GPU") -> dict[str, Any]:
    status, warnings = (result, ()) if isinstance(result, str) else result
    out: dict[str, Any] = {"entity_group": group, "entity_group_id": 1, "entity_id": index, "status": status}
    if warnings:
        out["warnings"] = [
            {"error_category": 3, "error_id": eid, "error_severity": 2, "warning": text}
            for eid, text in warnings
        ]
    return out


def make_test(name: str, results: Mapping[int, Result], summary: str | None = None) -> dict[str, Any]:
    statuses = [r if isinstance(r, str) else r[0] for r in results.values()]
    if summary is None:
        summary = "Fail" if "Fail" in statuses else "Skip" if all(s == "Skip" for s in statuses) else "Pass"
    return {
        "name": name,
        "results": [gpu_result(i, r) for i, r in sorted(results.items())],
        "test_summary": {"status": summary},
    }


def diag_doc(
    tests: Sequence[tuple[str, str, Mapping[int, Result]]] = (),
    *,
    gpus: int = 2,
    serials: bool = True,
    runtime_error: str | None = None,
    version: str = "4.2.3",
) -> dict[str, Any]:
    """A document: ``tests`` are ``(category, name, {gpu index: result})``."""
    diag: dict[str, Any] = {}
    if runtime_error is not None:
        diag["runtime_error"] = runtime_error
    else:
        cats: dict[str, list[dict[str, Any]]] = {}
        for category, name, results in tests:
            cats.setdefault(category, []).append(make_test(name, results))
        diag["test_categories"] = [{"category": c, "tests": ts} for c, ts in cats.items()]
    entities = []
    for i in range(gpus):
        e: dict[str, Any] = {"entity_id": i, "device_id": "2330"}
        if serials:
            e["serial_num"] = f"SN{1000 + i}"
        entities.append(e)
    return {
        "DCGM Diagnostic": diag,
        "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": entities}],
        "metadata": {"version": version, "Driver Version Detected": "570.86.15"},
    }


def all_pass(gpus: int = 2, names: Sequence[str] = ("software", "memory")) -> dict[str, Any]:
    return diag_doc([("Hardware", n, dict.fromkeys(range(gpus), "Pass")) for n in names], gpus=gpus)


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=1)
