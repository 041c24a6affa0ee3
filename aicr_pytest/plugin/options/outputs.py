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

METRICS_FILE = Option(
    "metrics_file",
    ("--metrics-file",),
    "write the run's Prometheus metrics (text exposition format) to PATH, e.g. for node-exporter's "
    "textfile collector",
    setting="metrics_file",
    metavar="PATH",
    env="AICR_METRICS_FILE",
)

PUSHGATEWAY = Option(
    "pushgateway",
    ("--pushgateway",),
    "push the run's Prometheus metrics to this Pushgateway (job aicr-pytest); a push that fails is a "
    "warning and never changes the run's verdict",
    setting="pushgateway",
    metavar="URL",
    env="AICR_PUSHGATEWAY",
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
        metavar="PATH",
    ),
    METRICS_FILE,
    PUSHGATEWAY,
)
