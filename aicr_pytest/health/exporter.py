"""``gpu-health``: passive GPU health from the DCGM exporter's Prometheus metrics.

The caller scrapes each GPU node's exporter twice, ``window`` seconds apart (through the API-server
proxy), and hands both texts to :func:`parse_scrape`.  The parser is a small strict reader of the
Prometheus text exposition format (``# HELP`` / ``# TYPE`` lines, ``name{label="value",...} value
[timestamp]``); a malformed line is inconclusive, naming the node and the line number.  No
Prometheus client library is a dependency of the project, so none is used.

Series are grouped per GPU by the exporter's ``gpu`` label (``UUID`` is reported alongside); the
node is the one the caller scraped (the exporter's ``Hostname`` label is often its pod's name).

The rules per GPU (:func:`gpu_problems`), with the knobs of :class:`HealthThresholds`:

* **XID errors** — ``DCGM_FI_DEV_XID_ERRORS`` is a gauge holding the last XID the GPU raised
  (0: none).  A non-zero value fails unless its code is in ``xid_ignore``; with ``xid_window_only``
  only an XID that changed during the window fails.
* **Row-remap failure** — ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` non-zero fails.
* **Uncorrectable ECC, remapped rows, NVLink errors** — counters; the increase over the window must
  not exceed its threshold (default 0).  These are commented out in the exporter's default counter
  list (``etc/default-counters.csv`` in NVIDIA/dcgm-exporter) except
  ``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS``, so each is judged only where it is exported.
* A GPU the node has (``expected_gpus``) with no series, a series missing from one scrape, a
  ``required`` metric that is not exported (by default the two default-list gauges above), a
  counter that went down (the exporter restarted) or a NaN is inconclusive, never a pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aicr_pytest.core.errors import Inconclusive, UsageError
from aicr_pytest.core.goduration import format_go_duration, parse_go_duration
from aicr_pytest.health.common import conclude, plural

XID: Final = "DCGM_FI_DEV_XID_ERRORS"
ROW_REMAP_FAILURE: Final = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
ECC_DBE_VOLATILE: Final = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
ECC_DBE_AGGREGATE: Final = "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"
REMAPPED_ROWS: Final = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
NVLINK_CRC_FLIT: Final = "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"
NVLINK_CRC_DATA: Final = "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"
NVLINK_REPLAY: Final = "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"
NVLINK_RECOVERY: Final = "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"

#: Counter → (what it counts, the threshold field that bounds its increase).
COUNTERS: Final[Mapping[str, tuple[str, str]]] = {
    ECC_DBE_VOLATILE: ("uncorrectable (double-bit) ECC errors", "ecc_dbe_max"),
    ECC_DBE_AGGREGATE: ("uncorrectable (double-bit) ECC errors", "ecc_dbe_max"),
    REMAPPED_ROWS: ("rows remapped for uncorrectable errors", "remapped_rows_max"),
    NVLINK_CRC_FLIT: ("NVLink CRC flit errors", "nvlink_errors_max"),
    NVLINK_CRC_DATA: ("NVLink CRC data errors", "nvlink_errors_max"),
    NVLINK_REPLAY: ("NVLink replays", "nvlink_errors_max"),
    NVLINK_RECOVERY: ("NVLink recovery errors", "nvlink_errors_max"),
}
HEALTH_METRICS: Final = (XID, ROW_REMAP_FAILURE, *COUNTERS)
GPU_LABEL: Final = "gpu"
UUID_LABEL: Final = "UUID"

# --- thresholds -----------------------------------------------------------------------------------

MAX_WINDOW_S: Final = 3600.0
MSG_BAD_KNOB: Final = "gpu-health: invalid {name}={value!r}: {why}"
MSG_UNKNOWN_KNOB: Final = "gpu-health: unknown threshold {name!r} (known: {known})"
_METRIC_NAME: Final = re.compile(r"^DCGM_FI_[A-Z0-9_]+$")


def _no_bool(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("must be a number, not a boolean")
    return value


class HealthThresholds(BaseModel):
    """The ``gpu-health`` knobs; :func:`health_thresholds` builds one from user input."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Seconds between the two scrapes (a number, or a Go duration such as ``30s`` or ``2m``).
    window: float = Field(60.0, gt=0, le=MAX_WINDOW_S)
    ecc_dbe_max: int = Field(0, ge=0)
    remapped_rows_max: int = Field(0, ge=0)
    nvlink_errors_max: int = Field(0, ge=0)
    xid_ignore: frozenset[int] = frozenset()
    xid_window_only: bool = False
    required: tuple[str, ...] = (XID, ROW_REMAP_FAILURE)

    @field_validator("window", mode="before")
    @classmethod
    def _window(cls, value: object) -> object:
        _no_bool(value)
        if isinstance(value, str):
            text = value.strip()
            try:
                return float(text)
            except ValueError:
                pass
            try:
                return parse_go_duration(text)
            except ValueError:
                raise ValueError("not a duration (seconds, or Go syntax such as 30s or 2m)") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be finite")
        return value

    @field_validator("ecc_dbe_max", "remapped_rows_max", "nvlink_errors_max", mode="before")
    @classmethod
    def _count(cls, value: object) -> object:
        return _no_bool(value)

    @field_validator("xid_ignore", mode="before")
    @classmethod
    def _xids(cls, value: object) -> object:
        if isinstance(value, str):
            value = [v for v in re.split(r"[,\s]+", value.strip()) if v]
        if isinstance(value, (list, tuple, set, frozenset)):
            for v in value:
                _no_bool(v)
        return value

    @field_validator("required", mode="before")
    @classmethod
    def _required(cls, value: object) -> object:
        if isinstance(value, str):
            value = tuple(v for v in re.split(r"[,\s]+", value.strip()) if v)
        if isinstance(value, (list, tuple)):
            for v in value:
                if not isinstance(v, str) or not _METRIC_NAME.match(v):
                    raise ValueError(f"{v!r} is not a DCGM field name (DCGM_FI_...)")
        return value


def health_thresholds(raw: Mapping[str, Any] | None = None) -> HealthThresholds:
    """Validate the knobs; a bad or unknown one is a :class:`UsageError` (one line)."""
    try:
        return HealthThresholds.model_validate(dict(raw or {}))
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(str(p) for p in err["loc"][:1]) or "thresholds"
        if err["type"] == "extra_forbidden":
            known = ", ".join(HealthThresholds.model_fields)
            raise UsageError(MSG_UNKNOWN_KNOB.format(name=name, known=known)) from None
        why = str(err["msg"]).removeprefix("Value error, ")
        value = (raw or {}).get(name, err.get("input"))
        raise UsageError(MSG_BAD_KNOB.format(name=name, value=value, why=why[:1].lower() + why[1:])) from None


# --- Prometheus text ------------------------------------------------------------------------------


class ExporterParseError(Inconclusive):
    """A scrape is not valid Prometheus text."""


MSG_PARSE: Final = "node {node}: DCGM exporter metrics line {line}: {why}"
_NAME: Final = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL: Final = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_NUMBER: Final = re.compile(
    r"^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?i:inf|infinity)|(?i:nan))$"
)
_TIMESTAMP: Final = re.compile(r"^-?\d+$")
_TYPES: Final = ("counter", "gauge", "histogram", "summary", "untyped")
_ESCAPES: Final = {"\\": "\\", '"': '"', "n": "\n"}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str | None:
        return next((v for k, v in self.labels if k == key), None)


def _labels(text: str, pos: int) -> tuple[tuple[tuple[str, str], ...], int]:
    """Labels from ``text[pos]`` == ``{`` to the closing brace; returns them and the end index."""
    out: list[tuple[str, str]] = []
    pos += 1
    while True:
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos < len(text) and text[pos] == "}":
            return tuple(out), pos + 1
        m = _LABEL.match(text, pos)
        if m is None:
            raise ValueError("bad label name")
        key, pos = m.group(0), m.end()
        if text[pos : pos + 2] != '="':
            raise ValueError(f'label {key}: expected ="')
        pos += 2
        chars: list[str] = []
        while True:
            if pos >= len(text):
                raise ValueError(f"label {key}: unterminated value")
            c = text[pos]
            if c == '"':
                pos += 1
                break
            if c == "\\":
                esc = text[pos + 1 : pos + 2]
                if esc not in _ESCAPES:
                    raise ValueError(f"label {key}: bad escape")
                chars.append(_ESCAPES[esc])
                pos += 2
                continue
            chars.append(c)
            pos += 1
        if any(k == key for k, _ in out):
            raise ValueError(f"label {key} repeated")
        out.append((key, "".join(chars)))
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos < len(text) and text[pos] == "}":
            return tuple(out), pos + 1
        else:
            raise ValueError("expected , or } after a label")


def _sample(line: str) -> Sample:
    m = _NAME.match(line)
    if m is None:
        raise ValueError("bad metric name")
    name, pos = m.group(0), m.end()
    labels: tuple[tuple[str, str], ...] = ()
    if pos < len(line) and line[pos] == "{":
        labels, pos = _labels(line, pos)
    rest = line[pos:].split()
    if not rest or len(rest) > 2 or (pos < len(line) and line[pos] not in " \t"):
        raise ValueError("expected a value (and an optional timestamp) after the series")
    if not _NUMBER.match(rest[0]):
        raise ValueError(f"bad value {rest[0][:40]!r}")
    if len(rest) == 2 and not _TIMESTAMP.match(rest[1]):
        raise ValueError(f"bad timestamp {rest[1][:40]!r}")
    return Sample(name, labels, float(rest[0]))


@dataclass(frozen=True)
class GpuSeries:
    """One GPU's health series in one scrape."""

    gpu: str
    uuid: str | None
    values: Mapping[str, float]


@dataclass(frozen=True)
class ExporterScrape:
    node: str
    samples: tuple[Sample, ...]
    types: Mapping[str, str]

    def gpus(self) -> dict[str, GpuSeries]:
        """The health metrics per ``gpu`` label (several series of one GPU, e.g. per MIG instance,
        keep the largest value)."""
        values: dict[str, dict[str, float]] = {}
        uuids: dict[str, str] = {}
        for s in self.samples:
            gpu = s.label(GPU_LABEL)
            if s.name not in HEALTH_METRICS or gpu is None:
                continue
            per = values.setdefault(gpu, {})
            old = per.get(s.name)
            per[s.name] = s.value if old is None or math.isnan(s.value) or s.value > old else old
            uuid = s.label(UUID_LABEL)
            if uuid:
                uuids.setdefault(gpu, uuid)
        return {
            g: GpuSeries(g, uuids.get(g), v)
            for g, v in sorted(values.items(), key=lambda kv: _gpu_key(kv[0]))
        }


def _gpu_key(gpu: str) -> tuple[int, str]:
    return (int(gpu), "") if gpu.isdigit() else (1 << 30, gpu)


def parse_scrape(text: str, node: str) -> ExporterScrape:
    """Parse one scrape of a node's exporter; :class:`ExporterParseError` on malformed text."""
    samples: list[Sample] = []
    types: dict[str, str] = {}
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        try:
            if line.startswith("#"):
                parts = line[1:].split(None, 3)
                if parts[:1] == ["TYPE"]:
                    if len(parts) != 3 or not _NAME.fullmatch(parts[1]) or parts[2] not in _TYPES:
                        raise ValueError("malformed # TYPE line")
                    types[parts[1]] = parts[2]
                elif parts[:1] == ["HELP"] and (len(parts) < 2 or not _NAME.fullmatch(parts[1])):
                    raise ValueError("malformed # HELP line")
                continue
            sample = _sample(line)
            key = (sample.name, tuple(sorted(sample.labels)))
            if key in seen:
                raise ValueError(f"series {sample.name} repeated")
            seen.add(key)
            samples.append(sample)
        except ValueError as exc:
            raise ExporterParseError(MSG_PARSE.format(node=node, line=number, why=exc)) from None
    return ExporterScrape(node, tuple(samples), types)


# --- the verdict ----------------------------------------------------------------------------------

MSG_XID: Final = "node {node} {gpu}: XID {code} {when} ({metric})"
MSG_ROW_REMAP: Final = "node {node} {gpu}: row remapping failed ({metric}={value:g})"
MSG_COUNTER: Final = "node {node} {gpu}: {delta:g} new {what} in {window} ({metric}; at most {limit} allowed)"
MSG_NO_SCRAPE: Final = "node {node}: no DCGM exporter scrape"
MSG_NO_GPU: Final = "node {node} GPU {gpu}: no DCGM exporter series"
MSG_NOT_IN_FIRST: Final = "node {node} {gpu}: no series in the first scrape"
MSG_NO_METRIC: Final = "node {node} {gpu}: no {metric} series (not in the exporter's counter list?)"
MSG_RESET: Final = "node {node} {gpu}: {metric} went from {before:g} to {after:g} (did the exporter restart?)"
MSG_NAN: Final = "node {node} {gpu}: {metric} is NaN"
MSG_PASSED: Final = (
    "GPU health clean on {nodes}: {gpus}, no XID, ECC, row-remap or NVLink errors over {window}"
)
MSG_NO_NODES: Final = "no DCGM exporter scrape to judge"


def gpu_label(series: GpuSeries) -> str:
    """``GPU 3 (GPU-8c1e...)``: the index and, where exported, the UUID."""
    return f"GPU {series.gpu} ({series.uuid})" if series.uuid else f"GPU {series.gpu}"


@dataclass(frozen=True)
class ScrapeProblems:
    failures: tuple[str, ...]
    inconclusive: tuple[str, ...]
    gpus: int


def gpu_problems(
    before: GpuSeries | None, after: GpuSeries, node: str, t: HealthThresholds
) -> tuple[list[str], list[str]]:
    """Failures and inconclusive lines for one GPU over the window."""
    failures: list[str] = []
    unsure: list[str] = []
    label = gpu_label(after)
    if before is None:
        return [], [MSG_NOT_IN_FIRST.format(node=node, gpu=label)]
    for metric in t.required:
        if metric not in after.values or metric not in before.values:
            unsure.append(MSG_NO_METRIC.format(node=node, gpu=label, metric=metric))
    for metric, value in after.values.items():
        if math.isnan(value) or math.isnan(before.values.get(metric, 0.0)):
            unsure.append(MSG_NAN.format(node=node, gpu=label, metric=metric))
    if unsure:
        return failures, unsure
    window = format_go_duration(t.window)
    xid = after.values.get(XID)
    if xid is not None and xid != 0 and int(xid) not in t.xid_ignore:
        changed = before.values.get(XID) != xid
        if changed or not t.xid_window_only:
            when = f"during the {window} window" if changed else "reported (last XID before the window)"
            failures.append(MSG_XID.format(node=node, gpu=label, code=int(xid), when=when, metric=XID))
    remap = after.values.get(ROW_REMAP_FAILURE)
    if remap is not None and remap != 0:
        failures.append(MSG_ROW_REMAP.format(node=node, gpu=label, metric=ROW_REMAP_FAILURE, value=remap))
    for metric, (what, knob) in COUNTERS.items():
        if metric not in after.values or metric not in before.values:
            continue
        old, new = before.values[metric], after.values[metric]
        if new < old:
            unsure.append(MSG_RESET.format(node=node, gpu=label, metric=metric, before=old, after=new))
            continue
        limit = int(getattr(t, knob))
        if new - old > limit:
            failures.append(
                MSG_COUNTER.format(
                    node=node,
                    gpu=label,
                    delta=new - old,
                    what=what,
                    window=window,
                    metric=metric,
                    limit=limit,
                )
            )
    return failures, unsure


def scrape_problems(
    before: ExporterScrape, after: ExporterScrape, t: HealthThresholds, *, expected_gpus: int | None = None
) -> ScrapeProblems:
    """Judge one node's two scrapes; ``expected_gpus`` GPUs (indexes 0..n-1) must all have series."""
    node = after.node
    failures: list[str] = []
    unsure: list[str] = []
    first, second = before.gpus(), after.gpus()
    if expected_gpus is not None:
        unsure += [MSG_NO_GPU.format(node=node, gpu=i) for i in range(expected_gpus) if str(i) not in second]
    elif not second:
        unsure.append(MSG_NO_GPU.format(node=node, gpu="(any)"))
    for gpu, series in second.items():
        f, u = gpu_problems(first.get(gpu), series, node, t)
        failures += f
        unsure += u
    return ScrapeProblems(tuple(failures), tuple(unsure), len(second))


def check_exporter_health(
    scrapes: Sequence[tuple[ExporterScrape, ExporterScrape]],
    thresholds: HealthThresholds,
    *,
    expected_gpus: Mapping[str, int] | None = None,
    inconclusive: Sequence[str] = (),
) -> str:
    """The ``gpu-health`` verdict over every node's (before, after) scrapes.

    ``expected_gpus`` (node → GPU count) names the nodes that must have been scraped and how many
    GPUs each must report; ``inconclusive`` carries lines the caller already has.
    """
    failures: list[str] = []
    unsure = list(inconclusive)
    expected = dict(expected_gpus or {})
    scraped = {after.node for _, after in scrapes}
    unsure += [MSG_NO_SCRAPE.format(node=n) for n in sorted(expected) if n not in scraped]
    gpus = 0
    for before, after in sorted(scrapes, key=lambda pair: pair[1].node):
        p = scrape_problems(before, after, thresholds, expected_gpus=expected.get(after.node))
        failures += p.failures
        unsure += p.inconclusive
        gpus += p.gpus
    if not scrapes and not unsure:
        unsure.append(MSG_NO_NODES)
    passed = MSG_PASSED.format(
        nodes=plural(len(scrapes), "node"),
        gpus=plural(gpus, "GPU"),
        window=format_go_duration(thresholds.window),
    )
    return conclude(failures, unsure, passed)


def counter_increases(before: ExporterScrape, after: ExporterScrape) -> dict[str, float]:
    """Per DCGM counter of :data:`COUNTERS`, its increase over the window summed over the node's
    GPUs (CTRF ``extra["aicr.gpuHealth"]["counters"]``, the history's per-node counters).  A counter
    missing from either scrape, NaN or gone down (the exporter restarted) is left out, never 0."""
    first, second = before.gpus(), after.gpus()
    out: dict[str, float] = {}
    for gpu, series in second.items():
        old = first.get(gpu)
        for metric in COUNTERS:
            a = series.values.get(metric)
            b = old.values.get(metric) if old is not None else None
            if a is None or b is None or math.isnan(a) or math.isnan(b) or a < b:
                continue
            out[metric] = out.get(metric, 0.0) + (a - b)
    return out


__all__ = [
    "COUNTERS",
    "HEALTH_METRICS",
    "ExporterParseError",
    "ExporterScrape",
    "GpuSeries",
    "HealthThresholds",
    "Sample",
    "ScrapeProblems",
    "check_exporter_health",
    "counter_increases",
    "gpu_label",
    "gpu_problems",
    "health_thresholds",
    "parse_scrape",
    "scrape_problems",
]
