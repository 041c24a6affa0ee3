"""The run history as a bounded ring of ConfigMaps, ``--history cm://NAMESPACE/NAME`` (pure: objects in,
objects out; the plugin and the command line do the API calls).

Each run is one or more ConfigMaps named ``NAME-<seq>-<part>`` (``seq``: the run's place in the ring,
six digits), labelled ``aicr.run/history=NAME`` and ``aicr.run/history-run=<run id>``, holding the
run's record (:class:`~aicr_pytest.report.history.RunRecord`, CTRF included) as ASCII JSON under
``run.json``.  A record larger than one object holds (:data:`MAX_PART_BYTES`, under the API
server's 1 MiB) is split over several parts (annotation ``aicr.run/history-part: i/n``): nothing is
cut.  A run whose parts are not all there reads as missing, never as a half run.  After a run is
written the oldest runs beyond ``--history-keep`` are deleted (:func:`to_prune`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.sources import CM_PREFIX
from aicr_pytest.core.version import __version__
from aicr_pytest.report.configmap import parse_output_uri
from aicr_pytest.report.history import RunIdentity, RunRecord
from aicr_pytest.report.measures import Measurement

HISTORY_LABEL: Final = "aicr.run/history"
RUN_LABEL: Final = "aicr.run/history-run"
PART_ANNOTATION: Final = "aicr.run/history-part"
DATA_KEY: Final = "run.json"
COMPONENT: Final = "RunHistory"
#: one part's data at most (the API server takes 1 MiB per object, metadata included)
MAX_PART_BYTES: Final = 900 * 1024
DEFAULT_KEEP: Final = 20
MSG_KEEP: Final = "--history-keep {value}: must be at least 1"
#: the longest ring name: NAME-<6 digits>-<part> must stay a 253-character object name
MAX_NAME: Final = 253 - len("-000000-000")


def is_cm(target: str | None) -> bool:
    return (target or "").startswith(CM_PREFIX)


def parse_target(target: str, option: str = "--history") -> tuple[str, str]:
    """``cm://ns/name`` → ``(ns, name)``; one-line :class:`UsageError` otherwise."""
    try:
        namespace, name = parse_output_uri(target)
    except UsageError as err:
        raise UsageError(str(err).replace("--output", option)) from None
    if len(name) > MAX_NAME:
        raise UsageError(f'invalid {option} "{target}": ConfigMap name longer than {MAX_NAME} characters')
    return namespace, name


def check_keep(keep: int) -> int:
    if keep < 1:
        raise UsageError(MSG_KEEP.format(value=keep))
    return keep


def record_json(record: RunRecord) -> str:
    """The record as ASCII JSON (one character, one byte: parts are cut by length)."""
    ident = record.identity
    return json.dumps(
        {
            "runId": record.run_id,
            "started": record.started,
            "identity": [ident.recipe, ident.recipe_fp, ident.snapshot_fp, ident.server, ident.context],
            "passed": record.passed,
            "verdicts": record.verdicts,
            "measurements": [
                [m.check, m.phase, m.name, m.value, m.unit, m.node, m.floor, m.better]
                for m in record.measurements
            ],
            "ctrf": record.ctrf,
        },
        separators=(",", ":"),
        ensure_ascii=True,
    )


def record_from_json(text: str) -> RunRecord:
    doc = json.loads(text)
    return RunRecord(
        run_id=str(doc["runId"]),
        started=str(doc["started"]),
        identity=RunIdentity(*[str(x) for x in doc["identity"]]),
        passed=bool(doc["passed"]),
        verdicts={str(k): str(v) for k, v in doc["verdicts"].items()},
        measurements=tuple(Measurement(*m) for m in doc["measurements"]),
        ctrf=doc.get("ctrf"),
    )


def _seq(obj: Mapping[str, Any]) -> int:
    parts = str(obj.get("metadata", {}).get("name", "")).rsplit("-", 2)
    return int(parts[-2]) if len(parts) == 3 and parts[-2].isdigit() else -1


def next_seq(objects: Iterable[Mapping[str, Any]]) -> int:
    return max((_seq(o) for o in objects), default=-1) + 1


def run_objects(namespace: str, name: str, record: RunRecord, seq: int) -> list[dict[str, Any]]:
    """The ConfigMaps of one run (one per :data:`MAX_PART_BYTES` of its record)."""
    text = record_json(record)
    chunks = [text[i : i + MAX_PART_BYTES] for i in range(0, len(text), MAX_PART_BYTES)] or [""]
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"{name}-{seq:06d}-{i}",
                "namespace": namespace,
                "labels": {
                    "app.kubernetes.io/name": "aicr-pytest",
                    "app.kubernetes.io/component": COMPONENT,
                    "app.kubernetes.io/version": __version__,
                    HISTORY_LABEL: name,
                    RUN_LABEL: _label_value(record.run_id),
                },
                "annotations": {PART_ANNOTATION: f"{i + 1}/{len(chunks)}"},
            },
            "data": {DATA_KEY: chunk},
        }
        for i, chunk in enumerate(chunks)
    ]


def _label_value(text: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "-" for c in text)[:63].strip("-_.")
    return cleaned or "run"


def _by_run(objects: Iterable[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    runs: dict[int, list[Mapping[str, Any]]] = {}
    for obj in objects:
        seq = _seq(obj)
        if seq >= 0:
            runs.setdefault(seq, []).append(obj)
    return runs


def records_of(objects: Iterable[Mapping[str, Any]]) -> list[RunRecord]:
    """The complete runs among ``objects``, oldest first (a run with a part missing is left out)."""
    out: list[RunRecord] = []
    for _, parts in sorted(_by_run(objects).items()):
        marks = [str(p.get("metadata", {}).get("annotations", {}).get(PART_ANNOTATION, "")) for p in parts]
        try:
            total = int(marks[0].split("/")[1])
            ordered = sorted(
                zip((int(m.split("/")[0]) for m in marks), parts, strict=True), key=lambda x: x[0]
            )
        except (IndexError, ValueError):
            continue
        if [i for i, _ in ordered] != list(range(1, total + 1)):
            continue
        try:
            out.append(
                record_from_json("".join(str(p.get("data", {}).get(DATA_KEY, "")) for _, p in ordered))
            )
        except (ValueError, KeyError, TypeError):
            continue
    return out


def to_prune(objects: Sequence[Mapping[str, Any]], keep: int) -> list[str]:
    """The names of the objects of every run older than the ``keep`` newest."""
    runs = _by_run(objects)
    old = sorted(runs)[: max(0, len(runs) - keep)]
    return [str(o["metadata"]["name"]) for seq in old for o in runs[seq]]


__all__ = [
    "DATA_KEY",
    "DEFAULT_KEEP",
    "HISTORY_LABEL",
    "MAX_PART_BYTES",
    "PART_ANNOTATION",
    "RUN_LABEL",
    "check_keep",
    "is_cm",
    "next_seq",
    "parse_target",
    "record_from_json",
    "record_json",
    "records_of",
    "run_objects",
    "to_prune",
]
