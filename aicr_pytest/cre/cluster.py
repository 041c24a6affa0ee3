"""The cluster half of the CRE checks: discovery, the Certification, the wait, the measurements.

:class:`CreRun` does, in order:

* :meth:`~CreRun.gpu_nodes`: every node, paginated;
* :meth:`~CreRun.require_api`: discovery; NVCRE's ``certifications`` must be served, else the check
  fails naming the component (upstream's create would fail there);
* :meth:`~CreRun.submit`: the Certification through :class:`~aicr_pytest.kube.run.RunScope`
  (run-scoped name, the run's labels, deleted by the run's cleanup);
* :meth:`~CreRun.wait`: one watch until ``Succeeded``/``Failed``, a progress line every minute; the
  deadline is the check's, so ``other`` comes before the check's own timeout;
* :meth:`~CreRun.measure`: the ``BandwidthMeasurement``/``GoodputMeasurement`` list of the run's
  namespace, which :mod:`aicr_pytest.cre` filters by owner Workflow and age;
* :meth:`~CreRun.refuse_simulated`: before a pass, the target nodes must be neither KWOK's nor a GPU
  simulator's (NVCRE's workload ran there; no pod of ours did), else ``other`` naming the simulator,
  unless ``--allow-fake-nodes``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from aicr_pytest.core.clock import Clock
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.cre import (
    API_VERSION,
    GOODPUT_CHECK,
    GROUP,
    MSG_API_MISSING,
    MSG_TIMEOUT,
    VERSION,
    CreCheckFailure,
    Plan,
    build_certification,
    goodput_ratio,
    goodput_status,
    max_bus_bandwidth,
    progress_line,
    terminal,
)
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import WaitTimeout
from aicr_pytest.kube.proof import simulated_gpu_nodes
from aicr_pytest.kube.run import RunScope
from aicr_pytest.kube.wait import summarize, wait_for

log = logging.getLogger(__name__)

JSON = dict[str, Any]
#: seconds between two progress lines while the Certification runs
PROGRESS_EVERY_S = 60.0
#: kept back from the check's timeout so the wait ends as ``other`` with the Certification's state
DEADLINE_MARGIN_S = 30.0


class CreRun:
    """One CRE check's cluster work (module docstring)."""

    def __init__(self, cluster: Cluster, run: RunScope, *, check: str, clock: Clock, deadline: float) -> None:
        self.cluster, self.run, self.check, self.clock, self.deadline = cluster, run, check, clock, deadline
        self.namespace = run.namespace
        self._nodes: list[JSON] = []

    def require_api(self) -> None:
        if not self.cluster.has_resource(GROUP, VERSION, "certifications"):
            raise CreCheckFailure(MSG_API_MISSING.format(check=self.check, api=API_VERSION))

    def gpu_nodes(self) -> list[JSON]:
        self._nodes = list(self.cluster.list("v1", "nodes"))
        return self._nodes

    def refuse_simulated(self, names: Sequence[str]) -> None:
        """``other`` (one line per node) when a target node's GPUs are KWOK's or a simulator's."""
        wanted = set(names)
        targets = [n for n in self._nodes if (n.get("metadata") or {}).get("name") in wanted]
        lines = simulated_gpu_nodes(self.cluster, targets, allow_fake_nodes=self.run.allow_fake_nodes)
        if lines:
            raise Inconclusive("\n".join(lines[name] for name in sorted(lines)))

    def submit(self, p: Plan) -> JSON:
        """Create the Certification (run-scoped) and return it as created."""
        self.run.ensure_namespace()
        obj = build_certification(p, self.run.name(p.entry.run_name), self.namespace)
        created: JSON = self.run.create(obj)
        return created

    def wait(self, name: str, emit: Callable[[str], None]) -> JSON:
        """Watch the Certification until it is terminal; a timeout is :class:`Inconclusive`."""
        last: list[JSON | None] = [None]

        def progress(obj: JSON | None) -> None:
            last[0] = obj
            emit(progress_line(name, obj))

        timeout = max(1.0, self.deadline - DEADLINE_MARGIN_S - self.clock.time())
        try:
            done: JSON = wait_for(
                self.cluster,
                API_VERSION,
                "certifications",
                name,
                self.namespace,
                terminal,
                timeout,
                self.clock,
                progress=progress,
                progress_every=PROGRESS_EVERY_S,
            )
        except WaitTimeout:
            raise Inconclusive(MSG_TIMEOUT.format(name=name, state=summarize(last[0]))) from None
        return done

    def measurements(self, plural: str) -> list[JSON]:
        return list(self.cluster.list(API_VERSION, plural, self.namespace))

    def measure(self, workflow: str, created_at: str) -> tuple[float, JSON | None]:
        """The check's measured value and, for goodput, the GoodputMeasurement status it came from."""
        if self.check == GOODPUT_CHECK:
            status = goodput_status(self.measurements("goodputmeasurements"), workflow, created_at)
            return goodput_ratio(status), status
        return max_bus_bandwidth(self.measurements("bandwidthmeasurements"), workflow, created_at), None
