"""``accelerator-metrics`` (CNCF ``accelerator_metrics``): the DCGM exporter
serves per-GPU metrics in the Prometheus text format.

One GET of ``http://nvidia-dcgm-exporter.gpu-operator.svc:9400/metrics`` (AICR's hard-coded
endpoint; reached as :mod:`.endpoints` says), no retry, never a skip. The body must carry each of
:data:`REQUIRED_METRICS`.

Deliberate difference from AICR: AICR matches the metric names as substrings, so an exporter that
serves only its ``# HELP``/``# TYPE`` lines -- the shape of a DCGM exporter that sees no GPU --
passes. Here a metric counts as FOUND only when at least one sample line carries it (fail closed);
the messages are AICR's.

Beyond AICR (the guide's "GPU metrics exporter and Prometheus scrape config"): once the metrics are
there, something must scrape them -- a ServiceMonitor or PodMonitor selecting the exporter, or a
``prometheus.io/scrape`` annotation on its Service (:mod:`.scrape_config`); nothing is a failure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aicr_pytest.conformance.common import failure
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.endpoints import Endpoints, ServiceEndpoint
from aicr_pytest.conformance.scrape_config import verify_scrape_config

__all__ = [
    "DCGM_EXPORTER",
    "REQUIRED_METRICS",
    "SAMPLE_LINES",
    "metrics_found",
    "required_metrics_report",
    "run_accelerator_metrics",
    "sample_of",
]

DCGM_EXPORTER = ServiceEndpoint("gpu-operator", "nvidia-dcgm-exporter", 9400)
REQUIRED_METRICS: tuple[str, ...] = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
)
#: lines of the body kept in the ``DCGM Exporter Metrics (sample)`` artifact
SAMPLE_LINES = 8


def sample_of(body: str, lines: int = SAMPLE_LINES) -> str:
    """The first ``lines`` lines of ``body``, plus ``... [truncated]`` when there are more."""
    all_lines = body.splitlines()
    head = all_lines[:lines]
    if len(all_lines) > lines:
        head.append("... [truncated]")
    return "\n".join(head)


def metrics_found(body: str, names: Sequence[str] = REQUIRED_METRICS) -> dict[str, bool]:
    """Whether each metric has at least one sample line (``NAME{labels} value`` or ``NAME value``)."""
    found = dict.fromkeys(names, False)
    pattern = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{|\s)")
    for line in body.splitlines():
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        match = pattern.match(stripped)
        if match is not None and match.group(1) in found:
            found[match.group(1)] = True
    return found


def required_metrics_report(found: dict[str, bool]) -> str:
    """AICR's ``Required DCGM Metrics`` artifact: one ``  <NAME padded to 30> FOUND|MISSING`` line each."""
    return "\n".join(f"  {name:<30} {'FOUND' if ok else 'MISSING'}" for name, ok in found.items())


def run_accelerator_metrics(ctx: ConformanceContext) -> None:
    """The check (module docstring): pass, ``[NOT_FOUND] DCGM metrics missing: …``, an HTTP failure,
    ``[NOT_FOUND] no Prometheus scrape configuration selects the DCGM exporter: …``, or ``other``
    when the exporter cannot be reached."""
    endpoints = Endpoints(ctx.cluster, ctx.env)
    answer = endpoints.get(DCGM_EXPORTER, "/metrics")
    ctx.emit(f"DCGM exporter {answer.url}: HTTP {answer.status} ({answer.route})")
    body = answer.require_ok().text()
    ctx.record("DCGM Exporter Metrics (sample)", sample_of(body))
    found = metrics_found(body)
    ctx.record("Required DCGM Metrics", required_metrics_report(found))
    missing = [name for name, ok in found.items() if not ok]
    if missing:
        raise failure("NOT_FOUND", f"DCGM metrics missing: {', '.join(missing)}")
    verify_scrape_config(ctx, DCGM_EXPORTER)
