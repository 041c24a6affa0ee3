"""``aicr-pytest snapshot``: capture a live cluster's snapshot, like ``aicr snapshot``.

This module owns the subcommand's arguments (:func:`add_arguments`) and its run (:func:`run`); the
top-level CLI only wires them in. Every input is checked before the cluster is touched (exit 2 with
one line). Exit codes: 0 written; 2 bad input; 5 the agent did not finish within ``--timeout``, or
Ctrl-C/SIGTERM; 8 the agent failed, ``--require-gpu`` found no GPU, or the API failed.

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
* ``--no-cleanup``: keep the agent's Job and ConfigMap and print ``kubectl`` commands.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING, Any, Final, TextIO

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.settings import DEFAULT_NVIDIA_SMI_IMAGE, parse_node_selector, parse_toleration

if TYPE_CHECKING:
    from aicr_pytest.snapshot.cluster import CaptureOptions

PROG: Final = "aicr-pytest snapshot"
DEFAULT_NAMESPACE: Final = "default"
DEFAULT_TIMEOUT: Final = "5m"
SINGLE_VALUE_FLAGS: Final[tuple[tuple[str, str], ...]] = (
    ("namespace", "namespace"),
    ("image", "image"),
    ("timeout", "timeout"),
    ("max_nodes_per_entry", "max-nodes-per-entry"),
    ("format", "format"),
    ("output", "output"),
    ("privileged", "privileged"),
    ("require_gpu", "require-gpu"),
)
MSG_REPEATED: Final = "flag --{flag} can only be specified once"
MSG_BAD_TIMEOUT: Final = 'invalid --timeout "{value}": expected a positive duration such as 90s, 5m or 1h30m'
MSG_BAD_MAX_NODES: Final = "invalid --max-nodes-per-entry {value}: must be 0 (unlimited) or more"
MSG_EMPTY: Final = "--{flag} must not be empty"
MSG_BAD_ENV_BOOL: Final = 'invalid {name}="{value}" (use true or false)'
MSG_BAD_NAMESPACE: Final = 'invalid --namespace "{value}": must be a DNS-1123 label'

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_TRUE = ("true", "1", "t", "yes")
_FALSE = ("false", "0", "f", "no")


def _bool_value(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r} (use true or false)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``snapshot`` subcommand's flags (single-value flags are checked for repeats at run time)."""
    a = parser.add_argument_group("agent")
    a.add_argument(
        "-k", "--kubeconfig", help="kubeconfig path (default: KUBECONFIG, in-cluster, ~/.kube/config)"
    )
    a.add_argument("--kube-context", help="kubeconfig context")
    a.add_argument(
        "-n",
        "--namespace",
        action="append",
        help=f"namespace the agent runs in (env AICR_NAMESPACE, default {DEFAULT_NAMESPACE})",
    )
    a.add_argument(
        "--node-selector",
        action="append",
        metavar="KEY=VALUE",
        help="where the agent runs (repeatable; default: nodes labelled nvidia.com/gpu.present=true)",
    )
    a.add_argument(
        "--toleration",
        action="append",
        metavar="KEY=VALUE:EFFECT",
        help="agent toleration (repeatable; key:Effect, * for all; default: tolerate every taint)",
    )
    a.add_argument(
        "--image",
        action="append",
        help="agent image: any image with /bin/sh (env AICR_NVIDIA_SMI_IMAGE, default: the CUDA image "
        "check-nvidia-smi uses)",
    )
    a.add_argument(
        "--privileged",
        action="append",
        nargs="?",
        const=True,
        type=_bool_value,
        metavar="BOOL",
        help="host namespaces + host os-release for OS.release/SystemD/host nvidia-smi (default true); "
        "--privileged=false for PSS-restricted namespaces",
    )
    a.add_argument(
        "--require-gpu",
        action="append",
        nargs="?",
        const=True,
        type=_bool_value,
        metavar="BOOL",
        help="fail (exit 8) when no GPU is found; also requests one nvidia.com/gpu (env AICR_REQUIRE_GPU)",
    )
    a.add_argument(
        "--timeout",
        action="append",
        metavar="DURATION",
        help=f"wait for the agent (default {DEFAULT_TIMEOUT})",
    )
    a.add_argument("--no-cleanup", action="store_true", help="keep the agent's Job and ConfigMap")
    o = parser.add_argument_group("output")
    o.add_argument(
        "--max-nodes-per-entry",
        action="append",
        type=int,
        metavar="N",
        help="node names per NodeTopology taint/label entry (default 0: unlimited)",
    )
    o.add_argument("--format", action="append", metavar="FMT", help="yaml (default) or json")
    o.add_argument(
        "-o",
        "--output",
        action="append",
        metavar="DEST",
        help="FILE, - (stdout, default) or cm://namespace/name",
    )


def _single(ns: argparse.Namespace, dest: str, flag: str) -> Any:
    values = getattr(ns, dest, None)
    if not values:
        return None
    if len(values) > 1:
        raise UsageError(MSG_REPEATED.format(flag=flag))
    return values[0]


def parse_duration(text: str) -> float:
    """A Go duration (``90s``, ``5m``, ``1h30m``) in seconds; ``UsageError`` unless positive."""
    s = text.strip()
    total, pos = 0.0, 0
    while s and pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise UsageError(MSG_BAD_TIMEOUT.format(value=text))
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if not s or total <= 0:
        raise UsageError(MSG_BAD_TIMEOUT.format(value=text))
    return total


def _env_bool(name: str) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return False
    try:
        return _bool_value(raw)
    except argparse.ArgumentTypeError:
        raise UsageError(MSG_BAD_ENV_BOOL.format(name=name, value=raw)) from None


def build_options(ns: argparse.Namespace) -> CaptureOptions:
    """Validated :class:`~aicr_pytest.snapshot.cluster.CaptureOptions`; raises :class:`UsageError`."""
    from aicr_pytest.snapshot.cluster import CaptureOptions

    namespace = _single(ns, "namespace", "namespace")
    if namespace is None:
        namespace = os.environ.get("AICR_NAMESPACE") or DEFAULT_NAMESPACE
    if not _DNS_LABEL.fullmatch(namespace) or len(namespace) > 63:
        raise UsageError(MSG_BAD_NAMESPACE.format(value=namespace))
    image = _single(ns, "image", "image")
    if image is not None and not image.strip():
        raise UsageError(MSG_EMPTY.format(flag="image"))
    image = (image or os.environ.get("AICR_NVIDIA_SMI_IMAGE") or DEFAULT_NVIDIA_SMI_IMAGE).strip()
    timeout = _single(ns, "timeout", "timeout")
    max_nodes = _single(ns, "max_nodes_per_entry", "max-nodes-per-entry")
    if max_nodes is not None and max_nodes < 0:
        raise UsageError(MSG_BAD_MAX_NODES.format(value=max_nodes))
    privileged = _single(ns, "privileged", "privileged")
    require_flag = _single(ns, "require_gpu", "require-gpu")
    require_gpu = bool(require_flag) if require_flag is not None else _env_bool("AICR_REQUIRE_GPU")
    tolerations = tuple(parse_toleration(t) for t in ns.toleration) if ns.toleration else None
    return CaptureOptions(
        image=image,
        namespace=namespace,
        privileged=True if privileged is None else bool(privileged),
        node_selector=parse_node_selector(ns.node_selector),
        tolerations=tolerations,
        require_gpu=require_gpu,
        timeout=parse_duration(timeout if timeout is not None else DEFAULT_TIMEOUT),
        max_nodes_per_entry=int(max_nodes or 0),
    )


def run(ns: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``aicr-pytest snapshot``; returns the exit code (usage errors raise :class:`UsageError`)."""
    from aicr_pytest.snapshot.output import parse_destination, parse_format, write

    err = stderr or sys.stderr
    for dest, flag in SINGLE_VALUE_FLAGS:
        _single(ns, dest, flag)
    fmt = parse_format(_single(ns, "format", "format") or "yaml")
    destination = parse_destination(_single(ns, "output", "output"))
    opts = build_options(ns)

    from aicr_pytest.kube import ApiError, connect
    from aicr_pytest.snapshot.cluster import CaptureError, capture_live

    cluster = connect(ns.kubeconfig, ns.kube_context)

    def emit(line: str) -> None:
        print(line, file=err, flush=True)

    def report_cleanup(lines: list[str]) -> None:
        for line in lines:
            print(line, file=err, flush=True)

    try:
        live = capture_live(
            lambda: cluster, opts, no_cleanup=bool(ns.no_cleanup), emit=emit, on_cleanup=report_cleanup
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

    where = write(live.result.document, fmt, destination, stdout=stdout, configmap_writer=write_configmap)
    print(f"snapshot: captured from node {live.result.source_node}, written to {where}", file=err, flush=True)
    return 0


__all__ = ["PROG", "add_arguments", "build_options", "parse_duration", "run"]
