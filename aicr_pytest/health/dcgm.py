"""``dcgmi diag -r LEVEL -j``: the run levels, the parser, the verdict and ``parse dcgm``.

The JSON shape is NVIDIA's (the schema DCGM ships as ``dcgm_diag_schema.json``): a top-level
``"DCGM Diagnostic"`` object with ``test_categories`` (each a ``category`` and its ``tests``; a test
has a ``name``, per-entity ``results`` and a ``test_summary``) or a ``runtime_error`` string, an
``entity_groups`` list (``entities`` with ``entity_id``, ``device_id`` and ``serial_num``) and
``metadata`` (``version``, ``Driver Version Detected``).  A result names its entity by
``entity_group`` (``"GPU"`` for a GPU) and ``entity_id`` (the GPU index), has a ``status`` string and
may carry ``warnings`` (``error_id``, ``error_category``, ``error_severity``, ``warning``).

Statuses are read case-insensitively: ``Pass``, ``Fail``, ``Warn``, ``Skip`` and ``Not Run``; any other
text is *unknown* and never a pass.

The verdict (:func:`node_problems`, :func:`check_diagnostics`) fails closed:

* it passes only when at least one test ran (a result that is not a skip) and every GPU passed
  every test that ran;
* a failed (or, unless ``allow_warn``, warned) result fails the check naming the node, the GPU
  (index and serial), the test and DCGM's error id and warning;
* a ``runtime_error``, a diag where every test was skipped, an unknown status, a GPU skipped by a
  test that ran on the others, a GPU no test ran on, or fewer GPUs than the node has are
  inconclusive (:class:`~aicr_pytest.health.common.HealthInconclusive`);
* unparsable JSON or a document that is not a DCGM diagnostic raises :class:`DcgmDocumentError`
  (an :class:`~aicr_pytest.core.errors.Inconclusive`); ``parse dcgm`` turns it into a
  :class:`~aicr_pytest.core.errors.UsageError`.

Run levels, as DCGM's ``dcgmi diag`` reference documents them
(https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html):
1 "quick" normally lasts seconds, 2 "medium" about two minutes, 3 "long" about 15 minutes, 4 "xlong"
is the extended, longer-running suite (no figure given; we budget hours).  The budgets below are what
a check waits for one node's diag before calling it inconclusive: a generous multiple of the
documented time, since the diag also waits for the GPUs to be free and the host engine to start.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TextIO

from aicr_pytest.core.errors import Inconclusive, UsageError
from aicr_pytest.health.common import conclude, plural

Status = Literal["pass", "fail", "warn", "skip", "unknown"]

DIAG_KEY: Final = "DCGM Diagnostic"
GPU_GROUP: Final = "GPU"

# --- run levels -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiagLevel:
    """One ``dcgmi diag -r`` suite level and the time a check allows it on one node."""

    level: int
    name: str
    typical: str
    budget_s: float


LEVELS: Final[Mapping[int, DiagLevel]] = {
    1: DiagLevel(1, "quick", "seconds", 5 * 60.0),
    2: DiagLevel(2, "medium", "about 2 minutes", 15 * 60.0),
    3: DiagLevel(3, "long", "about 15 minutes", 60 * 60.0),
    4: DiagLevel(4, "xlong", "hours (extended suite)", 4 * 3600.0),
}
DEFAULT_LEVEL: Final = 1
_LEVEL_ALIASES: Final = {"quick": 1, "short": 1, "medium": 2, "long": 3, "xlong": 4}

MSG_BAD_LEVEL: Final = (
    "DCGM diagnostic level {value!r} is not valid (expected 1, 2, 3 or 4, or quick, medium, long, xlong)"
)


def diag_level(value: object) -> DiagLevel:
    """The level of a knob value: ``1``–``4`` (int or digit text) or DCGM's aliases.

    Anything else is a :class:`UsageError` (one line).
    """
    if isinstance(value, bool):
        raise UsageError(MSG_BAD_LEVEL.format(value=value))
    if isinstance(value, int) and value in LEVELS:
        return LEVELS[value]
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _LEVEL_ALIASES:
            return LEVELS[_LEVEL_ALIASES[text]]
        if text.isdigit() and int(text) in LEVELS:
            return LEVELS[int(text)]
    raise UsageError(MSG_BAD_LEVEL.format(value=value))


def diag_command(level: DiagLevel | int) -> list[str]:
    """The command a diagnostics pod runs: ``dcgmi diag -r LEVEL -j``."""
    lv = level.level if isinstance(level, DiagLevel) else diag_level(level).level
    return ["dcgmi", "diag", "-r", str(lv), "-j"]


# --- the parsed document --------------------------------------------------------------------------


class DcgmDocumentError(Inconclusive):
    """The text is not JSON, or not a DCGM diagnostic document."""


MSG_NOT_JSON: Final = "{source}: not JSON ({error})"
MSG_NOT_DCGM: Final = "{source}: not a DCGM diagnostic document ({why})"


@dataclass(frozen=True)
class DcgmWarning:
    error_id: int | None
    category: int | None
    severity: int | None
    text: str

    def describe(self) -> str:
        prefix = f"DCGM error {self.error_id}: " if self.error_id is not None else ""
        return prefix + " ".join(self.text.split())


@dataclass(frozen=True)
class DcgmResult:
    """One entity's result in one test."""

    group: str
    entity_id: int
    status: Status
    raw_status: str
    warnings: tuple[DcgmWarning, ...] = ()


@dataclass(frozen=True)
class DcgmTest:
    name: str
    category: str
    summary: Status
    raw_summary: str
    results: tuple[DcgmResult, ...]

    @property
    def ran(self) -> bool:
        """At least one entity result is not a skip."""
        return any(r.status != "skip" for r in self.results)


@dataclass(frozen=True)
class DcgmGpu:
    index: int
    serial: str | None
    device_id: str | None


@dataclass(frozen=True)
class DcgmDiag:
    """One node's ``dcgmi diag -j`` document."""

    node: str
    version: str | None
    driver: str | None
    runtime_error: str | None
    gpus: tuple[DcgmGpu, ...]
    tests: tuple[DcgmTest, ...]

    def serial(self, index: int) -> str | None:
        return next((g.serial for g in self.gpus if g.index == index), None)

    def tested_gpus(self) -> tuple[int, ...]:
        """GPU indexes with a non-skip result in some test, sorted."""
        return tuple(
            sorted(
                {
                    r.entity_id
                    for t in self.tests
                    for r in t.results
                    if r.group == GPU_GROUP and r.status != "skip"
                }
            )
        )


_STATUSES: Final[Mapping[str, Status]] = {
    "pass": "pass",
    "passed": "pass",
    "fail": "fail",
    "failed": "fail",
    "warn": "warn",
    "warning": "warn",
    "skip": "skip",
    "skipped": "skip",
    "not run": "skip",
    "notrun": "skip",
}


def status_of(raw: str) -> Status:
    """DCGM's status text as a :data:`Status` (``unknown`` for anything unrecognised)."""
    return _STATUSES.get(" ".join(raw.lower().split()), "unknown")


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _need(cond: bool, source: str, why: str) -> None:
    if not cond:
        raise DcgmDocumentError(MSG_NOT_DCGM.format(source=source, why=why))


def _warnings(raw: object, source: str, where: str) -> tuple[DcgmWarning, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise DcgmDocumentError(MSG_NOT_DCGM.format(source=source, why=f"{where}: warnings is not a list"))
    out: list[DcgmWarning] = []
    for w in raw:
        _need(
            isinstance(w, dict) and isinstance(w.get("warning"), str), source, f"{where}: malformed warning"
        )
        out.append(
            DcgmWarning(
                error_id=_int(w.get("error_id")),
                category=_int(w.get("error_category")),
                severity=_int(w.get("error_severity")),
                text=w["warning"],
            )
        )
    return tuple(out)


def _results(raw: object, source: str, where: str) -> tuple[DcgmResult, ...]:
    if not isinstance(raw, list):
        raise DcgmDocumentError(MSG_NOT_DCGM.format(source=source, why=f"{where}: results is not a list"))
    out: list[DcgmResult] = []
    for r in raw:
        _need(isinstance(r, dict), source, f"{where}: a result is not an object")
        group, entity, status = r.get("entity_group"), _int(r.get("entity_id")), r.get("status")
        _need(
            isinstance(group, str) and entity is not None and isinstance(status, str),
            source,
            f"{where}: a result lacks entity_group, entity_id or status",
        )
        assert isinstance(group, str) and entity is not None and isinstance(status, str)
        where_r = f"{where} {group} {entity}"
        out.append(
            DcgmResult(
                group, entity, status_of(status), status, _warnings(r.get("warnings"), source, where_r)
            )
        )
    return tuple(out)


def _tests(diag: Mapping[str, Any], source: str) -> tuple[DcgmTest, ...]:
    cats = diag.get("test_categories")
    if cats is None:
        return ()
    _need(isinstance(cats, list), source, "test_categories is not a list")
    out: list[DcgmTest] = []
    for cat in cats:
        _need(
            isinstance(cat, dict)
            and isinstance(cat.get("category"), str)
            and isinstance(cat.get("tests"), list),
            source,
            "a test category lacks category or tests",
        )
        for t in cat["tests"]:
            _need(isinstance(t, dict) and isinstance(t.get("name"), str), source, "a test lacks its name")
            summary = t.get("test_summary")
            _need(
                isinstance(summary, dict) and isinstance(summary.get("status"), str),
                source,
                f"test {t['name']!r} lacks test_summary.status",
            )
            out.append(
                DcgmTest(
                    name=t["name"],
                    category=cat["category"],
                    summary=status_of(summary["status"]),
                    raw_summary=summary["status"],
                    results=_results(t.get("results"), source, f"test {t['name']!r}"),
                )
            )
    return tuple(out)


def _gpus(doc: Mapping[str, Any], source: str) -> tuple[DcgmGpu, ...]:
    groups = doc.get("entity_groups")
    if groups is None:
        return ()
    _need(isinstance(groups, list), source, "entity_groups is not a list")
    out: dict[int, DcgmGpu] = {}
    for g in groups:
        _need(isinstance(g, dict) and isinstance(g.get("entities"), list), source, "malformed entity group")
        if g.get("entity_group") != GPU_GROUP:
            continue
        for e in g["entities"]:
            index = _int(e.get("entity_id")) if isinstance(e, dict) else None
            _need(index is not None, source, "a GPU entity lacks entity_id")
            assert index is not None and isinstance(e, dict)
            serial = e.get("serial_num")
            device = e.get("device_id")
            out[index] = DcgmGpu(
                index,
                serial if isinstance(serial, str) and serial.strip() else None,
                device if isinstance(device, str) and device.strip() else None,
            )
    return tuple(out[i] for i in sorted(out))


def parse_diag(text: str | bytes, node: str, *, source: str | None = None) -> DcgmDiag:
    """Parse one node's ``dcgmi diag -j`` output.

    ``source`` names the input in messages (default ``node <node>``).  Raises
    :class:`DcgmDocumentError` for text that is not JSON or not a DCGM diagnostic document.
    """
    src = source or f"node {node}"
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DcgmDocumentError(MSG_NOT_JSON.format(source=src, error=_json_error(exc))) from None
    _need(isinstance(doc, dict), src, "the top level is not an object")
    diag = doc.get(DIAG_KEY)
    _need(isinstance(diag, dict), src, f'no "{DIAG_KEY}" object')
    runtime_error = diag.get("runtime_error")
    _need(runtime_error is None or isinstance(runtime_error, str), src, "runtime_error is not a string")
    _need(
        runtime_error is not None or "test_categories" in diag,
        src,
        "neither test_categories nor runtime_error",
    )
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    version, driver = meta.get("version"), meta.get("Driver Version Detected")
    return DcgmDiag(
        node=node,
        version=version if isinstance(version, str) else None,
        driver=driver if isinstance(driver, str) else None,
        runtime_error=" ".join(runtime_error.split()) if isinstance(runtime_error, str) else None,
        gpus=_gpus(doc, src),
        tests=_tests(diag, src),
    )


def _json_error(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return str(exc)


# --- the verdict ----------------------------------------------------------------------------------

MSG_GPU_FAILED: Final = "node {node} {entity}: {test} {verdict}: {detail}"
MSG_TEST_FAILED: Final = "node {node}: {test} failed (test_summary {summary!r}) though no GPU result failed"
MSG_RUNTIME_ERROR: Final = "node {node}: dcgmi diag runtime error: {error}"
MSG_NONE_RAN: Final = "node {node}: no DCGM diagnostic test ran (every test was skipped)"
MSG_NO_TESTS: Final = "node {node}: the DCGM diagnostic has no tests"
MSG_UNKNOWN_STATUS: Final = "node {node} {entity}: {test}: unrecognised DCGM status {raw!r}"
MSG_GPU_SKIPPED: Final = "node {node} {entity}: {test} was skipped while it ran on other GPUs"
MSG_GPU_UNTESTED: Final = "node {node} {entity}: no DCGM test ran on it"
#: How a message names an entity: ``GPU 3 (serial 1650924060039)``; other groups by group and id.
ENTITY_GPU: Final = "GPU {index} (serial {serial})"
MSG_TOO_FEW_GPUS: Final = "node {node}: DCGM diagnosed {seen} of {expected} GPUs"
MSG_PASSED: Final = (
    "DCGM diagnostics{level} passed on {nodes}: {gpus}, every test that ran passed ({tests} ran)"
)
MSG_NO_NODES: Final = "no DCGM diagnostic to judge (no node ran one)"
NO_SERIAL: Final = "not reported"
NO_WARNING: Final = "no warning text"


@dataclass(frozen=True)
class NodeProblems:
    """What is wrong with one node's diag: failures and inconclusive lines."""

    failures: tuple[str, ...]
    inconclusive: tuple[str, ...]
    tests_ran: int


def entity_label(diag: DcgmDiag, group: str, entity_id: int) -> str:
    """``GPU 3 (serial 1650924060039)`` for a GPU, ``CPU 0`` for another entity group."""
    if group != GPU_GROUP:
        return f"{group} {entity_id}"
    return ENTITY_GPU.format(index=entity_id, serial=diag.serial(entity_id) or NO_SERIAL)


def node_problems(
    diag: DcgmDiag, *, expected_gpus: int | None = None, allow_warn: bool = False
) -> NodeProblems:
    """Judge one node's diag (see the module docstring for the rules).

    ``expected_gpus`` is the node's GPU count when the caller knows it: fewer GPUs tested is
    inconclusive.
    """
    failures: list[str] = []
    inconclusive: list[str] = []
    if diag.runtime_error is not None:
        return NodeProblems((), (MSG_RUNTIME_ERROR.format(node=diag.node, error=diag.runtime_error),), 0)
    ran = [t for t in diag.tests if t.ran]
    if not diag.tests:
        inconclusive.append(MSG_NO_TESTS.format(node=diag.node))
    elif not ran:
        inconclusive.append(MSG_NONE_RAN.format(node=diag.node))
    bad = ("fail",) if allow_warn else ("fail", "warn")
    for test in ran:
        gpu_failed = False
        for r in test.results:
            fields = {
                "node": diag.node,
                "entity": entity_label(diag, r.group, r.entity_id),
                "test": test.name,
            }
            if r.status in bad:
                detail = "; ".join(w.describe() for w in r.warnings) or NO_WARNING
                verdict = "failed" if r.status == "fail" else "warned"
                failures.append(MSG_GPU_FAILED.format(verdict=verdict, detail=detail, **fields))
                gpu_failed = True
            elif r.status == "unknown":
                inconclusive.append(MSG_UNKNOWN_STATUS.format(raw=r.raw_status, **fields))
            elif r.status == "skip" and r.group == GPU_GROUP:
                inconclusive.append(MSG_GPU_SKIPPED.format(**fields))
        if test.summary == "fail" and not gpu_failed:
            failures.append(MSG_TEST_FAILED.format(node=diag.node, test=test.name, summary=test.raw_summary))
    if ran:
        tested = set(diag.tested_gpus())
        seen_in_results = {r.entity_id for t in ran for r in t.results if r.group == GPU_GROUP}
        for gpu in diag.gpus:
            if gpu.index not in seen_in_results:
                entity = entity_label(diag, GPU_GROUP, gpu.index)
                inconclusive.append(MSG_GPU_UNTESTED.format(node=diag.node, entity=entity))
        seen = len(tested | {g.index for g in diag.gpus})
        if expected_gpus is not None and seen < expected_gpus:
            inconclusive.append(MSG_TOO_FEW_GPUS.format(node=diag.node, seen=seen, expected=expected_gpus))
    return NodeProblems(tuple(failures), tuple(inconclusive), len(ran))


def check_diagnostics(
    diags: Sequence[DcgmDiag],
    *,
    level: int | None = None,
    expected_gpus: Mapping[str, int] | None = None,
    allow_warn: bool = False,
    inconclusive: Sequence[str] = (),
) -> str:
    """The ``gpu-diagnostics`` verdict over every node's diag; returns the pass message.

    ``inconclusive`` carries lines the caller already has (a node whose pod never ran, an image
    that never pulled, a document that did not parse).  Raises
    :class:`~aicr_pytest.health.common.HealthCheckFailed` or
    :class:`~aicr_pytest.health.common.HealthInconclusive` (see :func:`~aicr_pytest.health.common.conclude`).
    """
    failures: list[str] = []
    unsure: list[str] = list(inconclusive)
    ran = 0
    gpus = 0
    for diag in sorted(diags, key=lambda d: d.node):
        p = node_problems(diag, expected_gpus=(expected_gpus or {}).get(diag.node), allow_warn=allow_warn)
        failures += p.failures
        unsure += p.inconclusive
        ran += p.tests_ran
        gpus += len(diag.tested_gpus())
    if not diags and not unsure:
        unsure.append(MSG_NO_NODES)
    passed = MSG_PASSED.format(
        level=f" level {level}" if level is not None else "",
        nodes=plural(len(diags), "node"),
        gpus=plural(gpus, "GPU"),
        tests=plural(ran, "test"),
    )
    return conclude(failures, unsure, passed)


# --- parse dcgm -----------------------------------------------------------------------------------

MSG_FILE_NOT_FOUND: Final = "DCGM diagnostic {path}: no such file"
MSG_FILE_UNREADABLE: Final = "DCGM diagnostic {path}: {error}"
MSG_PARSE_RUNTIME_ERROR: Final = "{source}: dcgmi diag reported a runtime error: {error}"


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(MSG_FILE_NOT_FOUND.format(path=path)) from None
    except IsADirectoryError:
        raise UsageError(MSG_FILE_UNREADABLE.format(path=path, error="is a directory")) from None
    except UnicodeDecodeError:
        raise UsageError(MSG_FILE_UNREADABLE.format(path=path, error="not UTF-8 text")) from None
    except OSError as exc:
        raise UsageError(MSG_FILE_UNREADABLE.format(path=path, error=exc.strerror or exc)) from None


def analyse(source: str | os.PathLike[str], *, node: str | None = None) -> dict[str, Any]:
    """The ``parse dcgm --json`` document for a saved diag (a path, ``-`` for stdin, or the JSON text).

    A ``str`` whose first non-blank character is ``{`` is the document itself; anything else is a
    path.  Unreadable files, text that is not a DCGM diagnostic and a diag that reports a
    ``runtime_error`` raise :class:`UsageError` (one line).  ``exit_code`` in the document is 0
    only when at least one test ran and every GPU passed every test that ran.
    """
    if isinstance(source, str) and source.lstrip().startswith("{"):
        text, label = source, "DCGM diagnostic"
        name = node or "-"
    else:
        path = os.fspath(source)
        text, label = _read(path), f"DCGM diagnostic {path}"
        name = node or ("-" if path == "-" else Path(path).stem)
    try:
        diag = parse_diag(text, name, source=label)
    except DcgmDocumentError as exc:
        raise UsageError(str(exc)) from None
    if diag.runtime_error is not None:
        raise UsageError(MSG_PARSE_RUNTIME_ERROR.format(source=label, error=diag.runtime_error))
    p = node_problems(diag)
    verdict = "fail" if p.failures else "inconclusive" if p.inconclusive else "pass"
    return {
        "node": diag.node,
        "dcgm_version": diag.version,
        "driver_version": diag.driver,
        "gpus": [{"index": g.index, "serial": g.serial, "device_id": g.device_id} for g in diag.gpus],
        "tests": [
            {
                "name": t.name,
                "category": t.category,
                "summary": t.summary,
                "ran": t.ran,
                "results": [
                    {
                        "entity_group": r.group,
                        "entity_id": r.entity_id,
                        "serial": diag.serial(r.entity_id) if r.group == GPU_GROUP else None,
                        "status": r.status,
                        "raw_status": r.raw_status,
                        "warnings": [
                            {
                                "error_id": w.error_id,
                                "error_category": w.category,
                                "error_severity": w.severity,
                                "warning": w.text,
                            }
                            for w in r.warnings
                        ],
                    }
                    for r in t.results
                ],
            }
            for t in diag.tests
        ],
        "tests_ran": p.tests_ran,
        "gpus_tested": list(diag.tested_gpus()),
        "verdict": verdict,
        "failures": list(p.failures),
        "inconclusive": list(p.inconclusive),
        "exit_code": 0 if verdict == "pass" else 1,
    }


def render_text(doc: Mapping[str, Any]) -> list[str]:
    """The per-node, per-GPU table ``parse dcgm`` prints for an :func:`analyse` document."""
    lines = [
        f"node {doc['node']}: DCGM {doc['dcgm_version'] or 'version not reported'}, "
        f"driver {doc['driver_version'] or 'not reported'}"
    ]
    rows: list[tuple[str, str, str, str, str]] = []
    for t in doc["tests"]:
        for r in t["results"]:
            entity = (
                f"{r['entity_id']}"
                if r["entity_group"] == GPU_GROUP
                else f"{r['entity_group']} {r['entity_id']}"
            )
            detail = "; ".join(
                (f"DCGM error {w['error_id']}: " if w["error_id"] is not None else "")
                + " ".join(w["warning"].split())
                for w in r["warnings"]
            )
            rows.append((entity, r["serial"] or "-", t["name"], r["raw_status"], detail))
    header = ("GPU", "serial", "test", "result", "warning")
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header[:4])]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    if rows:
        lines.append(fmt.format(*header).rstrip())
        lines += [fmt.format(*row).rstrip() for row in rows]
    else:
        lines.append("(no test results)")
    if doc["verdict"] == "pass":
        ran, gpus = plural(doc["tests_ran"], "test"), plural(len(doc["gpus_tested"]), "GPU")
        lines.append(f"result: pass ({ran} ran on {gpus}, all passed)")
    else:
        lines += [f"FAIL: {line}" for line in doc["failures"]]
        lines += [f"INCONCLUSIVE: {line}" for line in doc["inconclusive"]]
        lines.append(f"result: {doc['verdict']}")
    return lines


def run_parse_dcgm(path: str, fmt: Literal["text", "json"], out: TextIO) -> int:
    """``aicr-pytest parse dcgm FILE [--json]``: print the analysis, return the exit code."""
    if fmt not in ("text", "json"):
        raise UsageError(f"unknown format {fmt!r} (expected text or json)")
    doc = analyse(path)
    if fmt == "json":
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.write("\n".join(render_text(doc)) + "\n")
    return int(doc["exit_code"])


__all__ = [
    "DEFAULT_LEVEL",
    "LEVELS",
    "DcgmDiag",
    "DcgmDocumentError",
    "DcgmGpu",
    "DcgmResult",
    "DcgmTest",
    "DcgmWarning",
    "DiagLevel",
    "NodeProblems",
    "analyse",
    "check_diagnostics",
    "diag_command",
    "diag_level",
    "entity_label",
    "node_problems",
    "parse_diag",
    "render_text",
    "run_parse_dcgm",
    "status_of",
]
