"""Rows: the run history and baselines (``--history``, ``--baseline``, ``--max-regression``,
``--normalize-gates``) and the ``history`` / ``compare`` subcommands (:mod:`aicr_pytest.report.history`,
:mod:`aicr_pytest.report.baseline`, :mod:`aicr_pytest.report.historycmd`)."""

from __future__ import annotations

from aicr_pytest.plugin.options.inputs import KUBE_CONTEXT, KUBECONFIG
from aicr_pytest.plugin.options.spec import COMPARE, HISTORY, Option
from aicr_pytest.plugin.options.subcommands import JSON

MAX_REGRESSION = Option(
    "max_regression",
    ("--max-regression",),
    "with --baseline: a value more than PCT percent worse than the baseline fails its check "
    "(off: regressions are only reported)",
    setting="max_regression",
    type=float,
    metavar="PCT",
    config_key="output.maxRegression",
)

HISTORY_ROW = Option(
    "history",
    ("--history",),
    "record the run (CTRF, recipe and cluster identity, every measured value) in this SQLite "
    "history database, or cm://NAMESPACE/NAME (a ring of ConfigMaps); read it with `aicr-pytest history`",
    setting="history",
    metavar="PATH|cm://NS/NAME",
    config_key="output.history",
)

#: a validation run's rows, in the order the help lists them
RUN_ROWS: tuple[Option, ...] = (
    HISTORY_ROW,
    Option(
        "history_keep",
        ("--history-keep",),
        "with --history cm://NAMESPACE/NAME: keep the N newest runs (the oldest are deleted)",
        setting="history_keep",
        type=int,
        default=20,
        metavar="N",
        config_key="output.historyKeep",
    ),
    Option(
        "baseline",
        ("--baseline",),
        "compare every measured value with a previous run: its CTRF report, or 'auto' (the last "
        "passing run of this recipe on this cluster in --history)",
        setting="baseline",
        metavar="PATH|auto",
        config_key="output.baseline",
    ),
    MAX_REGRESSION,
    Option(
        "normalize_gates",
        ("--normalize-gates",),
        "aicr-pytest's own, not AICR's: scale the inference throughput floor to the GPUs the benchmark "
        "used against the recipe's calibrated node size, and the NCCL floor by fabric class and GPUs "
        "per node (CTRF shows the raw and the normalized verdict)",
        setting="normalize_gates",
        action="store_true",
        default=False,
        config_key="execution.normalizeGates",
    ),
)

#: the ``history`` and ``compare`` subcommands' rows
COMMAND_ROWS: tuple[Option, ...] = (
    Option(
        "target",
        ("target",),
        "the history (--history of the runs): an SQLite file or cm://NAMESPACE/NAME",
        setting=None,
        entry_points=(HISTORY,),
        positional=True,
    ),
    JSON.on(HISTORY, help="print the runs and the trends as JSON", action="store_true", default=False),
    KUBECONFIG.on(HISTORY, help="kubeconfig for a cm://NAMESPACE/NAME history", metavar="PATH"),
    KUBE_CONTEXT.on(HISTORY, help="kubeconfig context for a cm://NAMESPACE/NAME history", metavar="NAME"),
    Option(
        "history_check",
        ("--check",),
        "only the runs and values of this check",
        setting=None,
        entry_points=(HISTORY,),
        metavar="NAME",
    ),
    Option(
        "last",
        ("--last",),
        "only the N newest runs",
        setting=None,
        entry_points=(HISTORY,),
        type=int,
        metavar="N",
    ),
    Option(
        "plot",
        ("--plot",),
        "draw the trend of a measured value (of --check) as SVG",
        setting=None,
        entry_points=(HISTORY,),
        metavar="PATH.svg",
    ),
    Option("a", ("a",), "the earlier CTRF report", setting=None, entry_points=(COMPARE,), positional=True),
    Option("b", ("b",), "the later CTRF report", setting=None, entry_points=(COMPARE,), positional=True),
    MAX_REGRESSION.on(
        COMPARE, help="exit 1 when a value is more than PCT percent worse in B", type=float, metavar="PCT"
    ),
)
