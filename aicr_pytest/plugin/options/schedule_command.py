"""Rows: ``aicr-pytest schedule`` (:mod:`aicr_pytest.schedule`): the CronJob that runs ``validate`` in
the cluster.  The selection flags are the run's rows on this entry point (:meth:`Option.on`)."""

from __future__ import annotations

from aicr_pytest.plugin.options.execution import (
    IMAGE,
    LABEL_BAD_NODES,
    NODE_HEALTH,
    PHASE,
    TAINT_BAD_NODES,
)
from aicr_pytest.plugin.options.inputs import (
    KUBE_CONTEXT,
    KUBECONFIG,
    NAMESPACE,
    RECIPE_OPTION,
    SNAPSHOT_OPTION,
)
from aicr_pytest.plugin.options.outputs import OUTPUT, PUSHGATEWAY
from aicr_pytest.plugin.options.spec import SCHEDULE, Option
from aicr_pytest.schedule.defaults import DEFAULT_CRON, DEFAULT_IMAGE, DEFAULT_NAMESPACE

#: the rows, in the order the help lists them
ROWS: tuple[Option, ...] = (
    RECIPE_OPTION.on(
        SCHEDULE,
        flags=("-r", "--recipe"),
        help="recipe the scheduled runs validate against: a file (stored as a ConfigMap), an https:// "
        "URL or cm://namespace/name",
        metavar="PATH|URL|cm://NS/NAME",
        group="what runs",
    ),
    SNAPSHOT_OPTION.on(
        SCHEDULE,
        flags=("-s", "--snapshot"),
        help="snapshot for the scheduled runs (a file is stored as a ConfigMap); omitted: each run "
        "captures one",
        metavar="PATH|URL|cm://NS/NAME",
        group="what runs",
    ),
    PHASE.on(SCHEDULE, action="append", metavar="PHASE", group="what runs"),
    NODE_HEALTH.on(SCHEDULE, action="store_true", default=False, group="what runs"),
    Option(
        "check",
        ("--check",),
        "run only this check (repeatable); the others of the run's phases are reported skipped",
        setting=None,
        entry_points=(SCHEDULE,),
        action="append",
        metavar="NAME",
        group="what runs",
    ),
    LABEL_BAD_NODES.on(SCHEDULE, action="store_true", default=False, group="what runs"),
    TAINT_BAD_NODES.on(SCHEDULE, action="store_true", default=False, group="what runs"),
    Option(
        "cron",
        ("--cron",),
        f'when the runs start: a five-field cron expression (default "{DEFAULT_CRON}")',
        setting=None,
        entry_points=(SCHEDULE,),
        default=DEFAULT_CRON,
        metavar="EXPR",
        group="schedule",
    ),
    IMAGE.on(
        SCHEDULE,
        help=f"the runner image (deploy/Containerfile); a @sha256: digest pins it (default {DEFAULT_IMAGE})",
        default=DEFAULT_IMAGE,
        metavar="IMAGE",
        group="schedule",
    ),
    NAMESPACE.on(
        SCHEDULE,
        flags=("-n", "--namespace"),
        help=f"namespace of the runner, its history and reports (default {DEFAULT_NAMESPACE})",
        default=DEFAULT_NAMESPACE,
        metavar="NAME",
        group="schedule",
    ),
    Option(
        "history",
        ("--history",),
        "where each run's history goes (default cm://NAMESPACE/aicr-pytest-history)",
        setting=None,
        entry_points=(SCHEDULE,),
        metavar="cm://NS/NAME",
        group="results",
    ),
    OUTPUT.on(
        SCHEDULE,
        flags=("-o", "--output"),
        help="where each run's CTRF report goes (default cm://NAMESPACE/aicr-pytest-ctrf)",
        metavar="cm://NS/NAME",
        group="results",
    ),
    PUSHGATEWAY.on(SCHEDULE, metavar="URL", group="results"),
    Option(
        "dry_run",
        ("--dry-run",),
        "print the objects as YAML and touch nothing",
        setting=None,
        entry_points=(SCHEDULE,),
        action="store_true",
        default=False,
        group="apply",
    ),
    Option(
        "delete",
        ("--delete",),
        "remove what schedule created in --namespace (the CronJob, its RBAC and ConfigMaps, the namespace)",
        setting=None,
        entry_points=(SCHEDULE,),
        action="store_true",
        default=False,
        group="apply",
    ),
    KUBECONFIG.on(SCHEDULE, flags=("-k", "--kubeconfig"), metavar="PATH", group="apply"),
    KUBE_CONTEXT.on(SCHEDULE, metavar="NAME", group="apply"),
)
