"""``aicr-pytest schedule`` end to end: check the input, render, then print, apply or delete.

Every user error is one line (:class:`~aicr_pytest.core.errors.UsageError`, exit 2) raised before
anything touches the cluster: the cron expression, the image reference, the namespace, the check
names, ``--label-bad-nodes``/``--taint-bad-nodes`` without a node-health check, an unreadable
recipe or snapshot file.  ``--dry-run`` prints the objects as YAML documents and connects to
nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from aicr_pytest.core.errors import UsageError
from aicr_pytest.schedule import render
from aicr_pytest.schedule.cron import validate_cron
from aicr_pytest.schedule.imageref import parse_image

if TYPE_CHECKING:
    from aicr_pytest.kube.client import Cluster

MSG_NO_RECIPE = "schedule: --recipe is required (a file, an https:// URL or cm://namespace/name)"


@dataclass(frozen=True)
class ScheduleArgs:
    """The subcommand's values, as the option table resolved them."""

    recipe: str | None = None
    snapshot: str | None = None
    namespace: str = render.DEFAULT_NAMESPACE
    cron: str = render.DEFAULT_CRON
    image: str = render.DEFAULT_IMAGE
    phases: Sequence[str] = ()
    node_health: bool = False
    checks: Sequence[str] = ()
    label_bad_nodes: bool = False
    taint_bad_nodes: bool = False
    history: str | None = None
    output: str | None = None
    pushgateway: str | None = None
    dry_run: bool = False
    delete: bool = False


def build(args: ScheduleArgs) -> render.ScheduleSpec:
    """Validate ``args`` into the spec (every usage error, before any cluster access)."""
    cron = validate_cron(args.cron)
    image = parse_image(args.image)
    if not args.recipe:
        raise UsageError(MSG_NO_RECIPE)
    return render.spec(
        image=image,
        recipe=args.recipe,
        namespace=args.namespace,
        cron=cron,
        snapshot=args.snapshot,
        phases=args.phases,
        node_health=args.node_health,
        checks=args.checks,
        label_bad_nodes=args.label_bad_nodes,
        taint_bad_nodes=args.taint_bad_nodes,
        history=args.history,
        output=args.output,
        pushgateway=args.pushgateway,
    )


def dump(objects: Sequence[dict[str, object]]) -> str:
    import yaml

    return yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False)


def run(args: ScheduleArgs, connect: Callable[[], Cluster], out: TextIO) -> int:
    """The subcommand; returns its exit code (0).  Raises :class:`UsageError` on bad input."""
    from aicr_pytest.schedule import apply

    if args.delete:
        namespace = render.check_namespace(args.namespace)  # before connecting
        for line in apply.delete(connect(), namespace):
            print(f"schedule: {line}", file=out)
        return 0
    objects = render.render(build(args))
    if args.dry_run:
        out.write(dump(objects))
        return 0
    start = time.monotonic()
    for line in apply.apply(connect(), objects):
        print(f"schedule: {line}", file=out)
    print(f"schedule: applied {len(objects)} objects in {time.monotonic() - start:.2f}s", file=out)
    return 0


def run_values(values: Mapping[str, Any], out: TextIO) -> int:
    """:func:`run` with the values the option table resolved (``aicr-pytest schedule``)."""

    def connect() -> Cluster:
        from aicr_pytest.kube.client import connect as kube_connect

        return kube_connect(values.get("kubeconfig"), values.get("kube_context"))

    args = ScheduleArgs(
        recipe=values.get("recipe"),
        snapshot=values.get("snapshot"),
        namespace=values.get("namespace") or render.DEFAULT_NAMESPACE,
        cron=values.get("cron") or render.DEFAULT_CRON,
        image=values.get("image") or render.DEFAULT_IMAGE,
        phases=tuple(values.get("phase") or ()),
        node_health=bool(values.get("node_health")),
        checks=tuple(values.get("check") or ()),
        label_bad_nodes=bool(values.get("label_bad_nodes")),
        taint_bad_nodes=bool(values.get("taint_bad_nodes")),
        history=values.get("history"),
        output=values.get("output"),
        pushgateway=values.get("pushgateway"),
        dry_run=bool(values.get("dry_run")),
        delete=bool(values.get("delete")),
    )
    return run(args, connect, out)


__all__ = ["MSG_NO_RECIPE", "ScheduleArgs", "build", "dump", "run", "run_values"]
