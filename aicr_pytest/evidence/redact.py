"""Minimal-bundle policy ``minimal``/``v1``: what of the snapshot and the CTRF reports is published.

Fail closed at every level: a measurement type, subtype or data key that is not on the allowlist
is dropped, including types that do not exist yet.  Inside a kept subtype only ``data`` survives
(``context`` and ``items`` are dropped); a kept subtype whose data ends up empty is dropped, and a
measurement with no surviving subtype is dropped.  Order of measurements and subtypes is kept.

Everything here is pure: inputs are never mutated and the output is deterministic.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

POLICY: Final = "minimal"
POLICY_VERSION: Final = "v1"

RULE_SNAPSHOT_HEADER: Final = "snapshot.header.allowlist"
RULE_SNAPSHOT_MEASUREMENTS: Final = "snapshot.measurements.allowlist"
RULE_CTRF_MESSAGE: Final = "ctrf.tests.omit:message"
RULE_CTRF_STDOUT: Final = "ctrf.tests.omit:stdout"
#: ours (AICR's CTRF has no per-test ``extra``): check evidence such as chosen node names lives there
RULE_CTRF_EXTRA: Final = "ctrf.tests.omit:extra"
#: ours: a failure's traceback, and each earlier attempt's message and traceback (reruns)
RULE_CTRF_TRACE: Final = "ctrf.tests.omit:trace"

#: (measurement type, subtype) -> data keys that are published
ALLOWLIST: Final[Mapping[tuple[str, str], frozenset[str]]] = {
    ("K8s", "server"): frozenset({"version", "platform", "goVersion"}),
    ("K8s", "node"): frozenset(
        {
            "provider",
            "kubelet-version",
            "kernel-version",
            "operating-system",
            "os-image",
            "container-runtime-name",
            "container-runtime-version",
        }
    ),
    ("GPU", "hardware"): frozenset(
        {"gpu-present", "gpu-count", "driver-loaded", "detection-source", "model"}
    ),
    ("OS", "release"): frozenset(
        {"ID", "ID_LIKE", "NAME", "PRETTY_NAME", "VERSION", "VERSION_ID", "VERSION_CODENAME"}
    ),
    ("NodeTopology", "summary"): frozenset({"node-count", "taint-count", "label-count"}),
}
HEADER_METADATA_KEYS: Final = frozenset({"timestamp", "version"})


def minimize_snapshot(snapshot: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The published snapshot and the rule IDs applied."""
    out: dict[str, Any] = {}
    for key in ("kind", "apiVersion"):
        if snapshot.get(key):
            out[key] = snapshot[key]
    metadata = snapshot.get("metadata")
    if isinstance(metadata, Mapping):
        kept_meta = {k: metadata[k] for k in sorted(metadata) if k in HEADER_METADATA_KEYS}
        if kept_meta:
            out["metadata"] = kept_meta
    fingerprint = snapshot.get("fingerprint")
    if isinstance(fingerprint, Mapping) and fingerprint:
        out["fingerprint"] = copy.deepcopy(dict(fingerprint))
    measurements: list[dict[str, Any]] = []
    for measurement in snapshot.get("measurements") or ():
        if not isinstance(measurement, Mapping):
            continue
        mtype = measurement.get("type")
        subtypes: list[dict[str, Any]] = []
        for sub in measurement.get("subtypes") or ():
            if not isinstance(sub, Mapping):
                continue
            allowed = ALLOWLIST.get((str(mtype), str(sub.get("subtype"))))
            data = sub.get("data")
            if allowed is None or not isinstance(data, Mapping):
                continue
            kept = {k: copy.deepcopy(data[k]) for k in data if k in allowed}
            if kept:
                subtypes.append({"subtype": sub["subtype"], "data": kept})
        if subtypes:
            measurements.append({"type": mtype, "subtypes": subtypes})
    out["measurements"] = measurements
    return out, [RULE_SNAPSHOT_HEADER, RULE_SNAPSHOT_MEASUREMENTS]


def minimize_ctrf(report: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with every test's ``stdout``, ``message``, ``trace`` and ``extra`` removed, and each
    retry attempt's ``message`` and ``trace`` (everything else unchanged)."""
    out = copy.deepcopy(dict(report))
    results = out.get("results")
    if isinstance(results, dict):
        for test in results.get("tests") or ():
            if isinstance(test, dict):
                for key in ("message", "stdout", "extra", "trace"):
                    test.pop(key, None)
                for attempt in test.get("retryAttempts") or ():
                    if isinstance(attempt, dict):
                        attempt.pop("message", None)
                        attempt.pop("trace", None)
    return out


CTRF_RULES: Final = (RULE_CTRF_EXTRA, RULE_CTRF_MESSAGE, RULE_CTRF_STDOUT, RULE_CTRF_TRACE)

_COUNTED = ("passed", "failed", "skipped", "pending", "other")


def split_ctrf_by_phase(report: Mapping[str, Any], phases: Sequence[str]) -> dict[str, dict[str, Any]]:
    """One CTRF document per phase that has tests, derived from the run's combined report.

    A test belongs to the phase named by ``suite[0]``; readiness results (suite ``readiness``) and
    tests of other suites are not part of any phase.  Each document keeps the run's header,
    timestamps and tool, with the summary recounted over its own tests.
    """
    results = report.get("results") if isinstance(report, Mapping) else None
    if not isinstance(results, Mapping):
        raise ValueError("CTRF report has no results object")
    tests = results.get("tests")
    if not isinstance(tests, list):
        raise ValueError("CTRF report has no tests list")
    raw_summary = results.get("summary")
    summary: Mapping[str, Any] = raw_summary if isinstance(raw_summary, Mapping) else {}
    out: dict[str, dict[str, Any]] = {}
    for phase in phases:
        mine = [
            copy.deepcopy(t)
            for t in tests
            if isinstance(t, Mapping) and isinstance(t.get("suite"), list) and t["suite"][:1] == [phase]
        ]
        if not mine:
            continue
        counts: dict[str, Any] = {"tests": len(mine)}
        for status in _COUNTED:
            counts[status] = sum(1 for t in mine if t.get("status") == status)
        for key in ("start", "stop"):
            if key in summary:
                counts[key] = summary[key]
        doc: dict[str, Any] = {k: copy.deepcopy(v) for k, v in report.items() if k != "results"}
        if isinstance(doc.get("reportId"), str):  # each document its own id, derived from the run's
            doc["reportId"] = str(uuid.uuid5(uuid.UUID(int=0), f"{doc['reportId']}/{phase}"))
        doc["results"] = {k: copy.deepcopy(v) for k, v in results.items() if k not in ("summary", "tests")}
        doc["results"]["summary"] = counts
        doc["results"]["tests"] = mine
        out[phase] = doc
    return out
