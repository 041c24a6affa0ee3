"""The DCGM exporter pods through the API server's pod proxy: find each node's pod, scrape it.

The GPU Operator's DaemonSet runs one exporter pod per GPU node (label ``app=nvidia-dcgm-exporter``,
any namespace); :func:`scrape` GETs one pod's ``/metrics`` through the API server's pod proxy (a
Service proxy would reach one random exporter, not a chosen node) and parses it with
:func:`aicr_pytest.health.exporter.parse_scrape`; :func:`scrape_all` does every node in parallel.
A scrape the API server or the exporter refuses, or text that is not Prometheus exposition, is the
one line saying why, never a parsed scrape.

:func:`driver_reports` is ``gpu-inventory``'s driver count from these pods: one scrape per node,
counted by :func:`aicr_pytest.health.inventory.exporter_gpu_count` (what NVML reports to the
exporter); a node with no running exporter pod falls back to GFD's ``nvidia.com/gpu.count`` label
and says so; a refused, unparsable or GPU-less scrape is a report with a problem (inconclusive).
``gpu-health`` (:mod:`aicr_pytest.health.exporter_run`) scrapes the same pods twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from aicr_pytest.core import allocmode
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.health import exporter as ex
from aicr_pytest.health import inventory as inv
from aicr_pytest.health.common import MSG_LIST_FAILED
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError, ApiUnreachable
from aicr_pytest.kube.rawhttp import pod_proxy_path, send_once
from aicr_pytest.kube.transport import Target

JSON = dict[str, Any]

EXPORTER_SELECTOR: Final = "app=nvidia-dcgm-exporter"
EXPORTER_PORT: Final = 9400
SCRAPE_TIMEOUT_S: Final = 30.0
MAX_SCRAPE_BYTES: Final = 8 << 20
_PARALLEL_REQUESTS: Final = 8

MSG_SCRAPE_HTTP: Final = "node {node}: DCGM exporter pod {ns}/{pod} answered HTTP {status}: {text}"
MSG_SCRAPE_UNREACHABLE: Final = "node {node}: DCGM exporter pod {ns}/{pod} could not be reached: {err}"
MSG_SCRAPE_OVERSIZE: Final = "node {node}: DCGM exporter pod {ns}/{pod} sent more than {limit} bytes"
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


def scrape_all(
    cluster: Cluster, targets: Mapping[str, tuple[str, str]]
) -> dict[str, ex.ExporterScrape | str]:
    """One scrape of each node's exporter pod, all nodes in parallel."""
    names = sorted(targets)
    with ThreadPoolExecutor(max_workers=max(1, min(_PARALLEL_REQUESTS, len(names)))) as pool:
        got = pool.map(lambda n: scrape(cluster, n, *targets[n]), names)
        return dict(zip(names, got, strict=True))


def exporter_pods_on_nodes(cluster: Cluster) -> dict[str, tuple[str, str]]:
    """List the exporter pods (a failed list is inconclusive) and pick one per node."""
    try:
        pods = list(cluster.list("v1", "pods", None, label_selector=EXPORTER_SELECTOR))
    except ApiError as err:
        raise Inconclusive(MSG_LIST_FAILED.format(what="the DCGM exporter pods", err=err)) from err
    return exporter_pods(pods)


def _gfd_report(node: Mapping[str, Any]) -> inv.DriverReport | None:
    raw = str(((node.get("metadata") or {}).get("labels") or {}).get(inv.LABEL_COUNT, "")).strip()
    return inv.DriverReport(SOURCE_GFD, count=int(raw)) if raw.isdigit() else None


def driver_reports(cluster: Cluster, nodes: Sequence[Mapping[str, Any]]) -> dict[str, inv.DriverReport]:
    """Node → the GPU count its driver reports through its DCGM exporter (module docstring)."""
    on_node = exporter_pods_on_nodes(cluster)
    names = [allocmode.node_name(n) for n in nodes]
    scraped = scrape_all(cluster, {n: on_node[n] for n in names if n in on_node})
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


__all__ = [
    "EXPORTER_PORT",
    "EXPORTER_SELECTOR",
    "MSG_EXPORTER_NO_GPU",
    "SOURCE_EXPORTER",
    "SOURCE_GFD",
    "driver_reports",
    "exporter_pods",
    "exporter_pods_on_nodes",
    "scrape",
    "scrape_all",
]
