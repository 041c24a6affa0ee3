"""``aicr-pytest history`` and ``aicr-pytest compare``: the parsed values to
:mod:`aicr_pytest.report.historycmd`; a ``cm://`` history is read through the cluster client first."""

from __future__ import annotations

import argparse
import sys

from aicr_pytest.plugin import options


def run(ns: argparse.Namespace) -> int:
    """``history`` (0) and ``compare`` (0, or 1 when B is worse); bad input: ``UsageError``."""
    from aicr_pytest.report.historycmd import run_compare, run_history

    if ns.command == "compare":
        args = options.command_values(ns, options.COMPARE)
        return run_compare(args["a"], args["b"], max_regression=args["max_regression"], out=sys.stdout)
    args = options.command_values(ns, options.HISTORY)
    check = args["history_check"]
    records = None
    if str(args["target"]).startswith("cm://"):
        from aicr_pytest.kube.client import connect
        from aicr_pytest.plugin.history_cm import ConfigMapHistory

        cluster = connect(args["kubeconfig"], args["kube_context"])
        records = ConfigMapHistory(cluster, args["target"], option="history").runs(
            last=args["last"], check=check
        )
    return run_history(
        args["target"],
        records=records,
        as_json=bool(args["json"]),
        check=check,
        last=args["last"],
        plot=args["plot"],
        out=sys.stdout,
    )


__all__ = ["run"]
