"""Rows: where a validation run's reports go (CTRF, HTML)."""

from __future__ import annotations

from aicr_pytest.plugin.options.spec import PYTEST, VALIDATE, Option

OUTPUT = Option(
    "output",
    ("--output",),
    "CTRF report destination: a file path, cm://namespace/name (a ConfigMap, kept after the run), "
    "or - for stdout",
    setting=None,
    entry_points=(VALIDATE,),
    validate_flags=("-o", "--output"),
    default="-",
    metavar="PATH|cm://NS/NAME|-",
)

#: the rows, in the order the help lists them
ROWS: tuple[Option, ...] = (
    OUTPUT,
    Option(
        "ctrf_report",
        ("--ctrf-report",),
        "write a CTRF JSON report ('-' for stdout)",
        setting="ctrf_report",
        entry_points=(PYTEST,),
        metavar="PATH|-",
    ),
    Option(
        "html",
        ("--html",),
        "write a self-contained HTML report of the run (one page, opens offline)",
        setting="html",
        # pytest-html owns --html when it is installed; --aicr-html always works
        pytest_flags=("--html", "--aicr-html"),
        ceded_flags=(("--html", "pytest_html"),),
        metavar="PATH",
    ),
)
