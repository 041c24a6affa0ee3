"""``aicr-pytest history`` and ``aicr-pytest compare`` (the command line hands the parsed values here).

``history TARGET [--json] [--check NAME] [--last N] [--plot PATH.svg]``: one line per run, then
per check and value its trend (min / median / last); ``--plot`` draws the trend of the first
value (``--check`` chooses the check) as SVG.  ``compare A.json B.json [--max-regression PCT]``:
the checks whose status changed and the values that moved, B against A; exit 1 when a status got
worse or a value regressed beyond PCT.  Bad input is a one-line
:class:`~aicr_pytest.core.errors.UsageError` (exit 2); nothing is ever written to a history here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final, TextIO

from aicr_pytest.core.errors import UsageError
from aicr_pytest.report import baseline as bl
from aicr_pytest.report import history as hs
from aicr_pytest.report import trend as tr

MSG_BAD_LAST: Final = "history --last {value}: must be a positive number of runs"
MSG_NO_VALUE: Final = "history --plot: no measured value{which} in {target}"
MSG_PLOT_WRITE: Final = "history --plot {path}: cannot write it ({why})"
MSG_PLOT_SUFFIX: Final = "history --plot {path}: the plot is SVG; name a .svg file"
MSG_EMPTY: Final = "no runs recorded in {target}"
MSG_PLOTTED: Final = "trend of {label} written to {path}"


def run_history(
    target: str,
    *,
    as_json: bool = False,
    check: str | None = None,
    last: int | None = None,
    plot: str | None = None,
    out: TextIO,
    records: list[hs.RunRecord] | None = None,
) -> int:
    """``aicr-pytest history``: 0 (also with no runs recorded); bad input raises :class:`UsageError`."""
    if last is not None and last < 1:
        raise UsageError(MSG_BAD_LAST.format(value=last))
    if plot is not None and Path(plot).suffix.lower() != ".svg":
        raise UsageError(MSG_PLOT_SUFFIX.format(path=plot))
    if records is None:  # else the caller read them (a ConfigMap history)
        with hs.SqliteHistory.open(target, create=False, option="history") as store:
            records = store.runs(last=last, check=check)
    if plot is not None:
        _plot(records, check, target, plot, out)
    if as_json:
        out.write(json.dumps(tr.runs_json(records, check)) + "\n")  # one line: C encoder
        return 0
    if not records:
        out.write(MSG_EMPTY.format(target=target) + "\n")
        return 0
    for line in tr.run_lines(records):
        out.write(line + "\n")
    out.write("\n")
    for trend in tr.trends(records, check):
        out.write(trend.line() + "\n")
    return 0


def _plot(records: list[hs.RunRecord], check: str | None, target: str, path: str, out: TextIO) -> None:
    found = [t for t in tr.trends(records, check) if not t.label.endswith(": duration")] or tr.trends(
        records, check
    )
    if not found:
        which = f" of {check}" if check else ""
        raise UsageError(MSG_NO_VALUE.format(which=which, target=target))
    trend = found[0]
    floor = next(
        (m.floor for r in reversed(records) for m in r.measurements if m.label() == trend.label and m.floor),
        None,
    )
    try:
        Path(path).write_text(tr.trend_svg(trend, floor), encoding="utf-8")
    except OSError as err:
        raise UsageError(MSG_PLOT_WRITE.format(path=path, why=err.strerror or err)) from None
    out.write(MSG_PLOTTED.format(label=trend.label, path=path) + "\n")


def run_compare(a: str, b: str, *, max_regression: float | None = None, out: TextIO) -> int:
    """``aicr-pytest compare``: 0 nothing got worse, 1 a status got worse or a value regressed."""
    pct = bl.check_pct(max_regression)
    docs: list[dict[str, Any]] = [bl.load_ctrf(path, option="compare") for path in (a, b)]
    status, moved = tr.compare_docs(docs[0], docs[1], pct)
    for line in tr.compare_lines(status, moved):
        out.write(line + "\n")
    return tr.compare_exit(status, moved)


__all__ = ["run_compare", "run_history"]
