"""``gpu-health`` against a live cluster: two scrapes of every GPU node's DCGM exporter, a window apart.

1. list the Nodes and pick the targeted GPU nodes (:func:`aicr_pytest.health.cluster.targeted_gpu_nodes`);
2. find each node's DCGM exporter pod (label ``app=nvidia-dcgm-exporter``, any namespace: the GPU
   Operator's DaemonSet) — a node without a running one is inconclusive, naming it;
3. GET ``/metrics`` of each pod through the API server's pod proxy (a Service proxy would reach one
   random exporter, not a chosen node), all nodes in parallel; wait the window on the injected
   clock; scrape again;
4. judge both scrapes per node with :func:`aicr_pytest.health.exporter.check_exporter_health`.

A scrape the API server or the exporter refuses, or text that is not Prometheus exposition, is
inconclusive for that node, never a pass.

:func:`driver_reports` is ``gpu-inventory``'s driver count from the same pods: one scrape per node,
all nodes in parallel, counted by :func:`aicr_pytest.health.inventory.exporter_gpu_count` (what
NVML reports to the exporter); a node with no running exporter pod falls back to GFD's
``nvidia.com/gpu.count`` label and says so; a refused, unparsable or GPU-less scrape is
inconclusive for that node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from aicr_pytest.core import allocmode
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.core.records import HealthRow
from aicr_pytest.health import cluster as hc
from aicr_pytest.health import exporter as ex
from aicr_pytest.health import inventory as inv
from aicr_pytest.health import table
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError, ApiUnreachable
from aicr_pytest.kube.rawhttp import pod_proxy_path, send_once
from aicr_pytest.kube.transport import Target

JSON = dict[str, Any]
Emit = Callable[[str], None]

EXPORTER_SELECTOR: Final = "app=nvidia-dcgm-exporter"
EXPORTER_PORT: Final = 9400
SCRAPE_TIMEOUT_S: Final = 30.0
MAX_SCRAPE_BYTES: Final = 8 << 20
_PARALLEL_REQUESTS: Final = 8

MSG_NO_EXPORTER: Final = "node {node}: no running DCGM exporter pod ({selector}) on it"
MSG_SCRAPE_HTTP: Final = "node {node}: DCGM exporter pod {ns}/{pod} answered HTTP {status}: {text}"
MSG_SCRAPE_UNREACHABLE: Final = "node {node}: DCGM exporter pod {ns}/{pod} could not be reached: {err}"
MSG_SCRAPE_OVERSIZE: Final = "node {node}: DCGM exporter pod {ns}/{pod} sent more than {limit} bytes"
LINE_SCRAPE: Final = "{node}: DCGM exporter {ns}/{pod}"
SOURCE_EXPORTER: Final = "DCGM exporter {ns}/{pod}"
SOURCE_GFD: Final = f"GFD's label {inv.LABEL_COUNT}: no DCGM exporter on the node"
MSG_EXPORTER_NO_GPU: Final = (
    "DCGM exporter pod {ns}/{pod} lists no GPU (no DCGM_FI_DEV_* series with a gpu or UUID label)"
)


def exporter_pods(pods: list[JSON]) -> dict[str, tuple[str, str]]:
    """Node → (namespace, name) of a running DCGM exporter pod on it (the first in name order)."""
    out: dict[str, tuple[str, str]] = {}
    for pod in sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name"))):
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node and (pod.get("status") or {}).get("phase") == "Running" and node not in out:
            meta = pod.get("metadata") or {}
            out[node] = (str(meta.get("namespace")), str(meta.get("name")))
    return out


def scrape(cluster: Cluster, node: str, namespace: str, pod: str) -> ex.ExporterScrape | str:
    """One scrape of ``pod``'s ``/metrics``, parsed; or the one inconclusive line saying why not."""
    target = Target("get", "", "pods/proxy", namespace, f"{pod}:{EXPORTER_PORT}")
    fields = {"node": node, "ns": namespace, "pod": pod}
    try:
        raw = send_once(
            cluster,
            "GET",
            pod_proxy_path(namespace, pod, EXPORTER_PORT, "/metrics"),
            target,
            accept="text/plain",
            timeout=SCRAPE_TIMEOUT_S,
            max_bytes=MAX_SCRAPE_BYTES,
        )
    except (ApiUnreachable, ApiError) as err:
        return MSG_SCRAPE_UNREACHABLE.format(err=err, **fields)
    if raw.status != 200:
        return MSG_SCRAPE_HTTP.format(status=raw.status, text=" ".join(raw.text().split())[:200], **fields)
    if raw.oversize:
        return MSG_SCRAPE_OVERSIZE.format(limit=MAX_SCRAPE_BYTES, **fields)
    try:
        return ex.parse_scrape(raw.text(), node)
    except ex.ExporterParseError as err:
        return str(err)


def _scrape_all(
    cluster: Cluster, targets: Mapping[str, tuple[str, str]]
) -> dict[str, ex.ExporterScrape | str]:
    """One scrape of each node's exporter pod, all nodes in parallel."""
    names = sorted(targets)
    with ThreadPoolExecutor(max_workers=max(1, min(_PARALLEL_REQUESTS, len(names)))) as pool:
        got = pool.map(lambda n: scrape(cluster, n, *targets[n]), names)
        return dict(zip(names, got, strict=True))


def _exporter_pods_on_nodes(cluster: Cluster) -> dict[str, tuple[str, str]]:
    try:
        pods = list(cluster.list("v1", "pods", None, label_selector=EXPORTER_SELECTOR))
    except ApiError as err:
        raise Inconclusive(hc.MSG_LIST_FAILED.format(what="the DCGM exporter pods", err=err)) from err
    return exporter_pods(pods)


def _gfd_report(node: Mapping[str, Any]) -> inv.DriverReport | None:
    raw = str(((node.get("metadata") or {}).get("labels") or {}).get(inv.LABEL_COUNT, "")).strip()
    return inv.DriverReport(SOURCE_GFD, count=int(raw)) if raw.isdigit() else None


def driver_reports(cluster: Cluster, nodes: Sequence[Mapping[str, Any]]) -> dict[str, inv.DriverReport]:
    """Node → the GPU count its driver reports through its DCGM exporter (module docstring)."""
    on_node = _exporter_pods_on_nodes(cluster)
    names = [allocmode.node_name(n) for n in nodes]
    scraped = _scrape_all(cluster, {n: on_node[n] for n in names if n in on_node})
    out: dict[str, inv.DriverReport] = {}
    for node, name in zip(nodes, names, strict=True):
        if name not in on_node:
            if (gfd := _gfd_report(node)) is not None:
                out[name] = gfd
            continue
        ns, pod = on_node[name]
        source = SOURCE_EXPORTER.format(ns=ns, pod=pod)
        got = scraped[name]
        if isinstance(got, str):
            out[name] = inv.DriverReport(source, problem=got.removeprefix(f"node {name}: "))
        elif (count := inv.exporter_gpu_count(got)) == 0:
            out[name] = inv.DriverReport(source, problem=MSG_EXPORTER_NO_GPU.format(ns=ns, pod=pod))
        else:
            out[name] = inv.DriverReport(source, count=count)
    return out


def run_gpu_health(
    cluster: Cluster,
    *,
    thresholds: ex.HealthThresholds,
    policy: str | None,
    node_selector: Mapping[str, str] | None,
    clock: Clock,
    emit: Emit,
    extra: dict[str, Any],
    rows: list[HealthRow] | None = None,
) -> str:
    """``gpu-health``: returns the pass message (also emitted) or raises (see ``health.exporter``);
    ``rows`` receives the per-node, per-GPU health table (:mod:`aicr_pytest.health.table`)."""
    table_rows: list[HealthRow] = []
    nodes, dra, _ = hc.gpu_nodes(cluster, policy)
    targeted = hc.targeted_gpu_nodes(nodes, dra, node_selector)
    on_node = _exporter_pods_on_nodes(cluster)
    unsure: list[str] = []
    targets: dict[str, tuple[str, str]] = {}
    gpus: dict[str, int] = {}
    for node in targeted:
        name = allocmode.node_name(node)
        if name not in on_node:
            line = MSG_NO_EXPORTER.format(node=name, selector=EXPORTER_SELECTOR)
            unsure.append(line)
            table_rows.append(table.node_row(name, table.HEALTH_TEST, line))
            continue
        targets[name] = on_node[name]
        gpus[name] = allocmode.gpu_count((node.get("status") or {}).get("allocatable")) or dra.get(name, 0)
        emit(LINE_SCRAPE.format(node=name, ns=on_node[name][0], pod=on_node[name][1]))
    extra.update(
        window_s=thresholds.window, exporters={n: f"{ns}/{pod}" for n, (ns, pod) in sorted(targets.items())}
    )
    first = _scrape_all(cluster, targets)
    if targets:
        clock.sleep(thresholds.window)
    second = _scrape_all(cluster, {n: t for n, t in targets.items() if not isinstance(first[n], str)})
    pairs: list[tuple[ex.ExporterScrape, ex.ExporterScrape]] = []
    for name in sorted(targets):
        before, after = first[name], second.get(name)
        if isinstance(before, str) or isinstance(after, str):
            line = before if isinstance(before, str) else str(after)
            unsure.append(line)
            table_rows.append(table.node_row(name, table.HEALTH_TEST, line))
        elif after is not None:
            pairs.append((before, after))
            table_rows += table.exporter_rows(before, after, thresholds, expected_gpus=gpus[name])
    if rows is not None:
        rows[:] = table.sort_rows(table_rows)
    message = ex.check_exporter_health(
        pairs,
        thresholds,
        expected_gpus={b.node: gpus[b.node] for b, _ in pairs},
        inconclusive=unsure,
    )
    emit(message)
    return message


__all__ = ["EXPORTER_SELECTOR", "driver_reports", "exporter_pods", "run_gpu_health", "scrape"]
