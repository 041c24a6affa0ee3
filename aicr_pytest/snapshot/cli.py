"""``aicr-pytest snapshot``: capture a live cluster's snapshot, like ``aicr snapshot``.

This module owns the subcommand's run (:func:`run`); its flags, their defaults and environment
variables are declared in the CLI's option table, which hands :func:`run` the values. Every input
is checked before the cluster is touched (exit 2 with one line). Exit codes: 0 written; 2 bad
input; 5 the agent did not finish within ``--timeout``, or Ctrl-C/SIGTERM; 8 the agent failed,
``--require-gpu`` found no GPU, or the API failed.

Flags (AICR's names and defaults; env where AICR has one):

* ``-k/--kubeconfig``, ``--kube-context``;
* ``-n/--namespace`` (``AICR_NAMESPACE``, default ``default``): where the agent runs;
* ``--node-selector key=value`` (repeatable), ``--toleration key=value:Effect|key:Effect|*``
  (repeatable; default: tolerate every taint);
* ``--image`` (default ``AICR_NVIDIA_SMI_IMAGE``, else the CUDA image ``check-nvidia-smi`` uses);
* ``--privileged[=false]`` (default true), ``--require-gpu`` (``AICR_REQUIRE_GPU``);
* ``--timeout`` (Go duration, default ``5m``): how long to wait for the agent;
* ``--max-nodes-per-entry N`` (default 0: unlimited) for ``NodeTopology`` node lists;
* ``--format yaml|json`` (default yaml), ``-o/--output FILE|-|cm://namespace/name`` (default stdout);
* ``--no-cleanup``: keep the agent's Job and ConfigMap and print ``kubectl`` commands;
* ``--runtime-class`` (``AICR_RUNTIME_CLASS``; not with ``--require-gpu``), ``--requests``/``--limits``
  (``AICR_REQUESTS``/``AICR_LIMITS``, ``name=quantity,...``), ``--image-pull-secret`` (repeatable),
  ``--job-name`` (the Job's name prefix), ``--service-account-name`` (an existing account):
  :mod:`.agentflags`;
* ``--template FILE``: render the snapshot through a Jinja2 template (:mod:`.template`);
* ``--aks-gpu-pools``, ``--gke-gpu-pools``, ``--oke-addons FILE`` (``AICR_AKS_GPU_POOLS_PATH``, …):
  the provider CLI's JSON, read before the cluster is touched and added to the ``K8s`` measurement
  (:mod:`aicr_pytest.snapshot.providers`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, TextIO

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.goduration import parse_positive_go_duration
from aicr_pytest.core.settings import parse_node_selector, parse_toleration
from aicr_pytest.snapshot.agentflags import (
    check_job_prefix,
    check_runtime_class,
    check_subdomain,
    parse_resource_list,
)

if TYPE_CHECKING:
    from aicr_pytest.snapshot.cluster import CaptureOptions

PROG: Final = "aicr-pytest snapshot"
MSG_BAD_TIMEOUT: Final = 'invalid --timeout "{value}": expected a positive duration such as 90s, 5m or 1h30m'
MSG_BAD_MAX_NODES: Final = "invalid --max-nodes-per-entry {value}: must be 0 (unlimited) or more"
MSG_EMPTY: Final = "--{flag} must not be empty"
MSG_BAD_NAMESPACE: Final = 'invalid --namespace "{value}": must be a DNS-1123 label'

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def parse_timeout(text: str) -> float:
    """``--timeout``: a positive Go duration (``90s``, ``5m``, ``1h30m``) in seconds, else ``UsageError``."""
    try:
        return parse_positive_go_duration(text)
    except ValueError:
        raise UsageError(MSG_BAD_TIMEOUT.format(value=text)) from None


def build_options(args: Mapping[str, Any]) -> CaptureOptions:
    """Validated :class:`~aicr_pytest.snapshot.cluster.CaptureOptions`; raises :class:`UsageError`.

    ``args``: the subcommand's values as the CLI resolved them (each single-value flag given at
    most once; an option not given holds its environment variable or its default)."""
    from aicr_pytest.snapshot.agent import JOB_BASE
    from aicr_pytest.snapshot.cluster import CaptureOptions

    namespace = str(args["namespace"])
    if not _DNS_LABEL.fullmatch(namespace) or len(namespace) > 63:
        raise UsageError(MSG_BAD_NAMESPACE.format(value=namespace))
    image = str(args["image"])
    if not image.strip():
        raise UsageError(MSG_EMPTY.format(flag="image"))
    max_nodes = int(args["max_nodes_per_entry"])
    if max_nodes < 0:
        raise UsageError(MSG_BAD_MAX_NODES.format(value=max_nodes))
    toleration = args["toleration"]
    tolerations = tuple(parse_toleration(t) for t in toleration) if toleration else None
    require_gpu = bool(args["require_gpu"])
    secrets = [check_subdomain("image-pull-secret", s) for s in args.get("image_pull_secret") or ()]
    return CaptureOptions(
        image=image.strip(),
        namespace=namespace,
        privileged=bool(args["privileged"]),
        node_selector=parse_node_selector(args["node_selector"]),
        tolerations=tolerations,
        require_gpu=require_gpu,
        timeout=parse_timeout(str(args["timeout"])),
        max_nodes_per_entry=max_nodes,
        image_pull_secrets=tuple(s for s in secrets if s),
        job_base=check_job_prefix(args.get("job_name"), JOB_BASE),
        runtime_class=check_runtime_class(args.get("runtime_class"), require_gpu=require_gpu),
        service_account=check_subdomain("service-account-name", args.get("service_account_name")),
        requests=parse_resource_list("requests", args.get("requests")),
        limits=parse_resource_list("limits", args.get("limits")),
    )


def run(args: Mapping[str, Any], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``aicr-pytest snapshot``; returns the exit code (usage errors raise :class:`UsageError`)."""
    from aicr_pytest.snapshot.output import parse_destination, parse_format, probe_configmap, write
    from aicr_pytest.snapshot.providers import PROVIDERS, attach, project_all
    from aicr_pytest.snapshot.template import TemplateRenderError, load_template

    err = stderr or sys.stderr
    fmt = parse_format(args["format"] or "yaml")
    destination = parse_destination(args["output"])
    opts = build_options(args)
    provider_data = project_all({p.flag: args[p.flag.replace("-", "_")] for p in PROVIDERS})
    template = None
    if args.get("template"):
        cm_uri = destination.describe() if destination.kind == "configmap" else None
        template = load_template(str(args["template"]), fmt=fmt, output_is_configmap=cm_uri)

    from aicr_pytest.kube import ApiError, connect
    from aicr_pytest.kube.reach import DEFAULT_REACH_TIMEOUT_S
    from aicr_pytest.snapshot.cluster import CaptureError, capture_live

    cluster = connect(args["kubeconfig"], args["kube_context"], reach_timeout=DEFAULT_REACH_TIMEOUT_S)
    if destination.kind == "configmap":  # before the capture: a missing namespace is found now
        probe_configmap(destination, fmt, cluster.create)

    def emit(line: str) -> None:
        print(line, file=err, flush=True)

    def report_cleanup(lines: list[str]) -> None:
        for line in lines:
            print(line, file=err, flush=True)

    try:
        live = capture_live(
            lambda: cluster, opts, no_cleanup=bool(args["no_cleanup"]), emit=emit, on_cleanup=report_cleanup
        )
    except CaptureError as exc:
        print(f"aicr-pytest: error: {exc}", file=err, flush=True)
        return exc.exit_code
    except ApiError as exc:
        print(f"aicr-pytest: error: [INTERNAL] {exc}", file=err, flush=True)
        return 8
    for warning in live.result.warnings:
        print(f"WARNING: {warning}", file=err, flush=True)

    def write_configmap(obj: dict[str, Any]) -> None:
        cluster.apply(obj)

    attach(live.result.document, provider_data)
    text = None
    if template is not None:
        try:
            text = template.render(live.result.document)
        except TemplateRenderError as exc:
            print(f"aicr-pytest: error: {exc}", file=err, flush=True)
            return 8
    where = write(
        live.result.document, fmt, destination, stdout=stdout, configmap_writer=write_configmap, text=text
    )
    print(f"snapshot: captured from node {live.result.source_node}, written to {where}", file=err, flush=True)
    return 0


__all__ = ["PROG", "build_options", "parse_timeout", "run"]
