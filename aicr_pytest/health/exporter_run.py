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

The pods are found and scraped by :mod:`aicr_pytest.health.scraping`, which ``gpu-inventory``
shares for its driver count (one scrape per node).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from aicr_pytest.core import allocmode
from aicr_pytest.core.clock import Clock
from aicr_pytest.core.records import HealthRow
from aicr_pytest.health import cluster as hc
from aicr_pytest.health import exporter as ex
from aicr_pytest.health import scraping as sc
from aicr_pytest.health import table
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.proof import simulated_gpu_nodes

JSON = dict[str, Any]
Emit = Callable[[str], None]

MSG_NO_EXPORTER: Final = "node {node}: no running DCGM exporter pod ({selector}) on it"
LINE_SCRAPE: Final = "{node}: DCGM exporter {ns}/{pod}"


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
    allow_fake_nodes: bool = False,
) -> str:
    """``gpu-health``: returns the pass message (also emitted) or raises (see ``health.exporter``);
    ``rows`` receives the per-node, per-GPU health table (:mod:`aicr_pytest.health.table`). A node
    whose GPUs are KWOK's or a simulator's is inconclusive and not scraped, unless
    ``allow_fake_nodes``."""
    table_rows: list[HealthRow] = []
    nodes, dra, _ = hc.gpu_nodes(cluster, policy)
    targeted = hc.targeted_gpu_nodes(nodes, dra, node_selector)
    on_node = sc.exporter_pods_on_nodes(cluster)
    not_real = simulated_gpu_nodes(cluster, targeted, allow_fake_nodes=allow_fake_nodes)
    unsure: list[str] = []
    targets: dict[str, tuple[str, str]] = {}
    gpus: dict[str, int] = {}
    for node in targeted:
        name = allocmode.node_name(node)
        if name in not_real:
            unsure.append(not_real[name])
            table_rows.append(table.node_row(name, table.HEALTH_TEST, not_real[name]))
            continue
        if name not in on_node:
            line = MSG_NO_EXPORTER.format(node=name, selector=sc.EXPORTER_SELECTOR)
            unsure.append(line)
            table_rows.append(table.node_row(name, table.HEALTH_TEST, line))
            continue
        targets[name] = on_node[name]
        gpus[name] = allocmode.gpu_count((node.get("status") or {}).get("allocatable")) or dra.get(name, 0)
        emit(LINE_SCRAPE.format(node=name, ns=on_node[name][0], pod=on_node[name][1]))
    extra.update(
        window_s=thresholds.window, exporters={n: f"{ns}/{pod}" for n, (ns, pod) in sorted(targets.items())}
    )
    first = sc.scrape_all(cluster, targets)
    if targets:
        clock.sleep(thresholds.window)
    second = sc.scrape_all(cluster, {n: t for n, t in targets.items() if not isinstance(first[n], str)})
    pairs: list[tuple[ex.ExporterScrape, ex.ExporterScrape]] = []
    counters: dict[str, dict[str, float]] = {}
    for name in sorted(targets):
        before, after = first[name], second.get(name)
        if isinstance(before, str) or isinstance(after, str):
            line = before if isinstance(before, str) else str(after)
            unsure.append(line)
            table_rows.append(table.node_row(name, table.HEALTH_TEST, line))
        elif after is not None:
            pairs.append((before, after))
            counters[name] = ex.counter_increases(before, after)
            table_rows += table.exporter_rows(before, after, thresholds, expected_gpus=gpus[name])
    if rows is not None:
        rows[:] = table.sort_rows(table_rows)
    if any(counters.values()):  # per node, each DCGM counter's increase (the run history's values)
        extra["counters"] = {n: c for n, c in counters.items() if c}
    message = ex.check_exporter_health(
        pairs,
        thresholds,
        expected_gpus={b.node: gpus[b.node] for b, _ in pairs},
        inconclusive=unsure,
    )
    emit(message)
    return message


__all__ = ["run_gpu_health"]
