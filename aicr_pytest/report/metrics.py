"""A run as Prometheus metrics (``--metrics-file``, ``--pushgateway``), built from its CTRF document.

:func:`registry` builds a ``prometheus_client`` :class:`~prometheus_client.CollectorRegistry` (the
format is the library's, never hand-written); :func:`write_textfile` writes it the way
node-exporter's textfile collector wants (``write_to_textfile``: a temporary file renamed into
place), :func:`push` sends it to a Pushgateway (``push_to_gateway``, job ``aicr-pytest``, grouped by
recipe and cluster, with a bounded timeout).  The series, every one labelled ``recipe`` and
``cluster``:

* ``aicr_check_status{check, phase}``: :data:`STATUS_VALUES` (1 passed, 0 failed, 2 skipped,
  3 other) — a check that passed and now fails goes from 1 to 0;
* ``aicr_check_duration_seconds{check, phase}``;
* ``aicr_measurement{check, phase, name, unit, node}`` for each measured value
  (:func:`aicr_pytest.report.measures.measurements`), with ``aicr_measurement_floor`` (the bound it
  was judged against) and ``aicr_measurement_baseline`` (the baseline run's value, when the run was
  compared with one) under the same labels;
* ``aicr_node_health{node}``: 1 healthy, 0 failed, for each node the node-health checks or bad-node
  isolation judged (:func:`aicr_pytest.health.nodemarks.node_verdicts`);
* ``aicr_run_timestamp_seconds``: when the run started (CTRF ``results.summary.start``).

``cluster`` is the run's cluster fingerprint (CTRF ``extra["aicr.identity"]``, written with
``--history``) when there is one, else what the caller gives (the kubeconfig context).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from aicr_pytest.core.errors import UsageError
from aicr_pytest.health.nodemarks import node_verdicts
from aicr_pytest.report.measures import DURATION, measurements

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

JOB: Final = "aicr-pytest"
STATUS_VALUES: Final = {"passed": 1.0, "failed": 0.0, "skipped": 2.0, "other": 3.0}
#: seconds a push may take before it counts as failed
PUSH_TIMEOUT_S: Final = 10.0
IDENTITY_KEY: Final = "aicr.identity"
#: CTRF per-test ``insights.extra`` key of the baseline comparison (``--baseline``)
BASELINE_KEY: Final = "aicr.baseline"
MSG_BAD_URL: Final = "--pushgateway {url!r}: not an http:// or https:// URL"
MSG_PUSH_FAILED: Final = "--pushgateway {url}: push failed ({why}); the run's verdict and CTRF report stand"


def check_pushgateway(url: str) -> str:
    """``url`` when it is an ``http(s)://host[:port][/path]`` URL; :class:`UsageError` otherwise."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(MSG_BAD_URL.format(url=url))
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise UsageError(MSG_BAD_URL.format(url=url)) from None
    return url.strip()


def _tests(ctrf: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    results = ctrf.get("results")
    tests = results.get("tests") if isinstance(results, Mapping) else None
    return [t for t in tests if isinstance(t, Mapping)] if isinstance(tests, list) else []


def _phase(test: Mapping[str, Any]) -> str:
    suite = test.get("suite")
    return str(suite[0]) if isinstance(suite, list) and suite else ""


def _baselines(ctrf: Mapping[str, Any]) -> dict[tuple[str, str, str], float]:
    """``(check, name, node)`` → the baseline's value, from each test's ``insights``."""
    out: dict[tuple[str, str, str], float] = {}
    for test in _tests(ctrf):
        insights = test.get("insights")
        extra = insights.get("extra") if isinstance(insights, Mapping) else None
        values = extra.get(BASELINE_KEY) if isinstance(extra, Mapping) else None
        for v in values if isinstance(values, list) else ():
            base = v.get("baseline") if isinstance(v, Mapping) else None
            if isinstance(base, int | float) and not isinstance(base, bool):
                out[(str(test.get("name")), str(v.get("name")), str(v.get("node") or ""))] = float(base)
    return out


def cluster_label(ctrf: Mapping[str, Any], fallback: str) -> str:
    """The ``cluster`` label: the run's cluster fingerprint when CTRF carries one, else ``fallback``."""
    extra = ctrf.get("extra")
    identity = extra.get(IDENTITY_KEY) if isinstance(extra, Mapping) else None
    fp = identity.get("cluster") if isinstance(identity, Mapping) else None
    return str(fp) if fp else fallback


def registry(ctrf: Mapping[str, Any], *, recipe: str, cluster: str) -> CollectorRegistry:
    """The run's metrics (see the module); readiness constraints are not checks."""
    from prometheus_client import CollectorRegistry, Gauge

    reg = CollectorRegistry()
    run = ("recipe", "cluster")
    status = Gauge(
        "aicr_check_status",
        "check outcome: 1 passed, 0 failed, 2 skipped, 3 other (not judged)",
        ["check", "phase", *run],
        registry=reg,
    )
    duration = Gauge(
        "aicr_check_duration_seconds", "how long the check ran", ["check", "phase", *run], registry=reg
    )
    value_labels = ["check", "phase", "name", "unit", "node", *run]
    value = Gauge("aicr_measurement", "a value a check measured", value_labels, registry=reg)
    floor = Gauge(
        "aicr_measurement_floor", "the bound the value was judged against", value_labels, registry=reg
    )
    baseline = Gauge(
        "aicr_measurement_baseline", "the baseline run's value (--baseline)", value_labels, registry=reg
    )
    node_health = Gauge(
        "aicr_node_health",
        "node-health verdict: 1 healthy, 0 failed (nodes judged by node-health checks or isolation)",
        ["node", *run],
        registry=reg,
    )
    stamp = Gauge("aicr_run_timestamp_seconds", "when the run started (Unix time)", list(run), registry=reg)
    for test in _tests(ctrf):
        name, phase = str(test.get("name") or ""), _phase(test)
        if not name or phase == "readiness" or test.get("status") not in STATUS_VALUES:
            continue
        status.labels(name, phase, recipe, cluster).set(STATUS_VALUES[str(test["status"])])
        ms = test.get("duration")
        if isinstance(ms, int | float) and not isinstance(ms, bool):
            duration.labels(name, phase, recipe, cluster).set(ms / 1000.0)
    bases = _baselines(ctrf)
    for m in measurements(ctrf):
        if m.name == DURATION:
            continue
        labels = (m.check, m.phase, m.name, m.unit, m.node or "", recipe, cluster)
        value.labels(*labels).set(m.value)
        if m.floor is not None:
            floor.labels(*labels).set(m.floor)
        if (base := bases.get(m.key)) is not None:
            baseline.labels(*labels).set(base)
    extras = [
        (str(t.get("name")), t.get("extra")) for t in _tests(ctrf) if isinstance(t.get("extra"), Mapping)
    ]
    for node, verdict in node_verdicts((n, e) for n, e in extras if isinstance(e, Mapping)).items():
        node_health.labels(node, recipe, cluster).set(1.0 if verdict.verdict == "passed" else 0.0)
    summary = (ctrf.get("results") or {}).get("summary") or {}
    start = summary.get("start") if isinstance(summary, Mapping) else None
    if isinstance(start, int | float) and not isinstance(start, bool):
        stamp.labels(recipe, cluster).set(start / 1000.0)
    return reg


def write_textfile(path: str, reg: CollectorRegistry) -> None:
    """Write ``reg`` to ``path`` atomically (node-exporter's textfile collector reads ``*.prom``)."""
    from prometheus_client import write_to_textfile

    write_to_textfile(path, reg)


def push(
    url: str, reg: CollectorRegistry, *, recipe: str, cluster: str, timeout: float = PUSH_TIMEOUT_S
) -> None:
    """Replace the run's group on the Pushgateway (``PUT``); raises ``OSError`` when it fails."""
    from prometheus_client import push_to_gateway

    push_to_gateway(
        url, job=JOB, registry=reg, grouping_key={"recipe": recipe, "cluster": cluster}, timeout=timeout
    )


__all__ = [
    "JOB",
    "MSG_BAD_URL",
    "MSG_PUSH_FAILED",
    "STATUS_VALUES",
    "check_pushgateway",
    "cluster_label",
    "push",
    "registry",
    "write_textfile",
]
