"""Compare two sets of CTRF reports (and exit codes) written by ``tools/parity/examples.sh``.

    python tools/parity/compare.py OLD_DIR NEW_DIR

Run ids, durations and timestamps are ignored: the run id (``extra["aicr.runId"]``) is replaced by
``<RUN>`` wherever it appears (object names, messages, stdout), and ``timestamp``, ``reportId``,
``summary.start``/``stop``/``duration`` and each test's (and each retry attempt's)
``start``/``stop``/``duration`` are dropped.  Two things derive from the
run id without containing it, so they are masked too: the 10-hex digests in object names
(``nccl-bw-<digest>-<run>``; a digest of digits only that looks like epoch seconds is the same
token) and fractional numbers, because the simulator seeds its bandwidth
noise with the run-scoped TrainJob name (``456.05 GB/s`` in one run is ``457.47 GB/s`` in the
next).  Integers, statuses, messages and the structure must be equal.
Exit 0 when every case matches, 1 otherwise (the differences are printed).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

_DROP_SUMMARY = ("start", "stop", "duration")
_DROP_TEST = ("start", "stop", "duration")
_DIGEST = re.compile(r"(?<![0-9a-f])[0-9a-f]{10}(?![0-9a-f])")
#: per-run random tokens a check draws itself (not from the run id): 8- and 32-hex suffixes, the
#: simulator's GPU UUIDs, wall-clock timestamps and epoch seconds
_NOISE = (
    (re.compile(r"(?<![0-9a-zA-Z])[0-9a-f]{32}(?![0-9a-f])"), "<HEX32>"),
    (re.compile(r"(?<![0-9a-zA-Z])(?=[0-9a-f]*[0-9])[0-9a-f]{8}(?![0-9a-zA-Z])"), "<HEX8>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"), "<TIME>"),
    (re.compile(r"(?<![\w.])1\d{9}(?:\.\d+)?(?![\w.])"), "<DIGEST>"),
)
_FRACTION = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")


def _mask(text: str, run_id: str) -> str:
    if "... [truncated " in text:  # cut to a byte budget: where the cut lands moves with the noise
        text = text[:160] + "<TRUNCATED>"
    if run_id:
        # a run id of digits only is quoted when YAML is dumped: the quotes are noise too
        text = text.replace(f"'{run_id}'", run_id).replace(run_id, "<RUN>")
    for pattern, token in _NOISE:
        text = pattern.sub(token, text)
    return _FRACTION.sub("<NUM>", _DIGEST.sub("<DIGEST>", text))


def _replace(value: Any, run_id: str) -> Any:
    if isinstance(value, str):
        return _mask(value, run_id)
    if isinstance(value, float):
        return "<NUM>"
    if isinstance(value, list):
        return [_replace(v, run_id) for v in value]
    if isinstance(value, dict):
        return {_replace(k, run_id): _replace(v, run_id) for k, v in value.items()}
    return value


def normalize(report: dict[str, Any]) -> dict[str, Any]:
    """The report without what legitimately differs between two runs."""
    run_id = str((report.get("extra") or {}).get("aicr.runId", ""))
    doc = json.loads(json.dumps(report))
    doc.pop("timestamp", None)
    doc.pop("reportId", None)
    results = doc.get("results", {})
    for key in _DROP_SUMMARY:
        results.get("summary", {}).pop(key, None)
    for test in results.get("tests", []):
        for attempt in [test, *test.get("retryAttempts", [])]:
            for key in _DROP_TEST:
                attempt.pop(key, None)
    normalized: dict[str, Any] = _replace(doc, run_id)
    return normalized


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if type(a) is not type(b):
        return [f"{path or '/'}: {a!r} != {b!r}"]
    if isinstance(a, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            if key not in a:
                out.append(f"{path}/{key}: only in new: {b[key]!r}")
            elif key not in b:
                out.append(f"{path}/{key}: only in old: {a[key]!r}")
            else:
                out.extend(_diff(a[key], b[key], f"{path}/{key}"))
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            shared = min(len(a), len(b))
            return [f"{path}: {len(a)} items != {len(b)} items", *_diff(a[:shared], b[:shared], path)]
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out.extend(_diff(x, y, f"{path}[{i}]"))
        return out
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def compare_dirs(old: Path, new: Path) -> list[str]:
    problems: list[str] = []
    names = sorted({p.stem for p in old.glob("*.json")} | {p.stem for p in new.glob("*.json")})
    if not names:
        problems.append(f"no CTRF reports in {old} or {new}")
    for name in names:
        a, b = old / f"{name}.json", new / f"{name}.json"
        if not a.is_file() or not b.is_file():
            problems.append(f"{name}: report missing in {'old' if not a.is_file() else 'new'}")
            continue
        rc_a, rc_b = old / f"{name}.rc", new / f"{name}.rc"
        if rc_a.is_file() and rc_b.is_file() and rc_a.read_text().strip() != rc_b.read_text().strip():
            problems.append(f"{name}: exit code {rc_a.read_text().strip()} != {rc_b.read_text().strip()}")
        diffs = _diff(normalize(json.loads(a.read_text())), normalize(json.loads(b.read_text())))
        problems.extend(f"{name}: {d}" for d in diffs)
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: compare.py OLD_DIR NEW_DIR", file=sys.stderr)
        return 2
    old, new = Path(argv[0]), Path(argv[1])
    problems = compare_dirs(old, new)
    count = len({p.stem for p in old.glob("*.json")})
    if problems:
        for line in problems:
            print(line)
        print(f"MISMATCH: {len(problems)} difference(s) across {count} case(s)")
        return 1
    print(f"MATCH: {count} case(s) equal (run ids, durations and timestamps ignored)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
