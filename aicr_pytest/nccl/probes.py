"""The NCCL preflights on a live cluster (step 4 of :mod:`aicr_pytest.nccl.cluster`).

One pinned, run-scoped probe pod per target node (busybox, a read-only hostPath, no API token,
every taint tolerated), all watched together, deleted when judged:

* **NET** (Grace-Blackwell ``-net``, :func:`aicr_pytest.nccl.nvreg.applies`): the pod prints
  ``/proc/driver/nvidia/version`` and ``params`` and always exits 0; :mod:`aicr_pytest.nccl.nvreg`
  decides each node.  R595+ drivers and a missing override fail; a node whose driver could not be
  determined is ``other`` when nothing else failed; so is a probe pod that did not succeed, named
  with its phase (nothing was measured there; after the failures when another node failed).
* **GKE TCPXO** (``h100/gke`` default variant): the pod fails (``tcpxo-artifact-missing``) where
  ``/home/kubernetes/bin/nvidia/lib64/nccl-env-profile.sh`` is missing; the check fails naming
  those nodes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.client import RUN_ID_LABEL
from aicr_pytest.kube.errors import ApiError
from aicr_pytest.kube.wait import observe, summarize
from aicr_pytest.nccl import nvreg
from aicr_pytest.nccl.objects import _name, _phase
from aicr_pytest.nccl.sizing import node_name
from aicr_pytest.nccl.variant import NcclCheckFailure, VariantPlan

if TYPE_CHECKING:
    from aicr_pytest.core.clock import Clock
    from aicr_pytest.kube.client import Cluster
    from aicr_pytest.kube.run import RunScope


class NcclBenchmark(Protocol):
    """What the preflights use of :class:`aicr_pytest.nccl.cluster.NcclBenchmark`."""

    cluster: Cluster
    run: RunScope
    check: str
    clock: Clock
    namespace: str

    def remaining(self, reserve: float = 0.0) -> float: ...
    def log_or_message(self, pod: Mapping[str, Any], container: str) -> str: ...


log = logging.getLogger("aicr_pytest.nccl")

JSON = dict[str, Any]
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
PROBE_IMAGE: Final = "busybox:1.37"
PROBE_TIMEOUT_S: Final = 120.0
PROBE_CONTAINER: Final = "probe"
#: probe output appended to a "did not complete" message, at most
MAX_PROBE_OUTPUT: Final = 256

MSG_TCPXO_NOT_READY: Final = (
    "GPUDirect-TCPXO not ready on GPU nodes: {nodes}. The GKE GPUDirect-TCPXO NCCL plugin "
    "(/home/kubernetes/bin/nvidia/lib64/nccl-env-profile.sh) is not installed there; deploy GKE's "
    "TCPXO NCCL plugin installer DaemonSet and re-run"
)
MSG_PROBE_UNEXPECTED: Final = (
    '{what} preflight pod on node "{node}" Failed for an unexpected reason (output: "{output}")'
)
MSG_NVREG_POD_NOT_DONE: Final = (
    "NVreg preflight pod on node {node} terminated in phase {phase} before completing the probe"
)
TCPXO_MARKER: Final = "tcpxo-artifact-missing"

#: ``(finished pods, pod name -> node)``: judges the probe (raises to fail the check)
Judge = Callable[[list[JSON], Mapping[str, str]], None]


def run_preflight(bench: NcclBenchmark, plan: VariantPlan, targets: Sequence[Mapping[str, Any]]) -> None:
    """Run the plan's preflight (if any) on every target node."""
    kind = plan.preflight
    if kind is None:
        return
    nodes = [node_name(n) for n in targets]
    if kind == "nvreg":
        log.info(
            "%s: NET preflight: checking GPUDirect RDMA prerequisites on %d GPU node(s)",
            bench.check,
            len(nodes),
        )
        _probe(
            bench,
            "nvreg",
            nodes,
            nvreg.MOUNT,
            "/proc/driver/nvidia",
            "Directory",
            nvreg.PROBE_SCRIPT,
            "NVreg",
            lambda pods, created: _judge_nvreg(bench, pods, created),
        )
        log.info(
            "%s: NET preflight passed: NVreg_GrdmaPciTopoCheckOverride=1 on all target nodes", bench.check
        )
        return
    script = f"test -f /host-nvidia/lib64/nccl-env-profile.sh || {{ echo {TCPXO_MARKER}; exit 1; }}"
    _probe(
        bench,
        "tcpxo",
        nodes,
        "/host-nvidia",
        "/home/kubernetes/bin/nvidia",
        "DirectoryOrCreate",
        script,
        "TCPXO",
        lambda pods, created: _judge_tcpxo(bench, pods, created),
    )


def _judge_tcpxo(bench: NcclBenchmark, finished: list[JSON], created: Mapping[str, str]) -> None:
    not_ready: list[str] = []
    for pod in finished:
        if _phase(pod) == "Succeeded":
            continue
        node = created[_name(pod)]
        output = bench.log_or_message(pod, PROBE_CONTAINER)
        if TCPXO_MARKER not in output:
            raise NcclCheckFailure(
                MSG_PROBE_UNEXPECTED.format(what="TCPXO", node=node, output=output.strip()[-300:])
            )
        not_ready.append(node)
    if not_ready:
        raise NcclCheckFailure(MSG_TCPXO_NOT_READY.format(nodes=", ".join(sorted(not_ready))))


def _judge_nvreg(bench: NcclBenchmark, finished: list[JSON], created: Mapping[str, str]) -> None:
    """A node measured failing fails the check even where another node's probe did not run through
    (that one is reported after it); with nothing measured failing, any unmeasured node is ``other``."""
    results: dict[str, nvreg.NodeResult] = {}
    not_done: list[str] = []
    for pod in sorted(finished, key=lambda p: created[_name(p)]):
        node = created[_name(pod)]
        output = bench.log_or_message(pod, PROBE_CONTAINER)
        if _phase(pod) != "Succeeded":  # the script always exits 0: the probe did not run through
            message = MSG_NVREG_POD_NOT_DONE.format(node=node, phase=_phase(pod))
            text = output.strip()
            if text:
                cut = text[:MAX_PROBE_OUTPUT] + ("..." if len(text) > MAX_PROBE_OUTPUT else "")
                message += f": {cut}"
            not_done.append(message)
            continue
        results[node] = nvreg.evaluate_probe(output)
    found = nvreg.outcome(results)
    if found is not None and found.measured:
        raise NcclCheckFailure(" ".join([found.message, *not_done]))
    unsure = [*not_done, *([found.message] if found is not None else [])]
    if unsure:
        raise Inconclusive(" ".join(unsure))


def _probe(
    bench: NcclBenchmark,
    kind: str,
    nodes: Sequence[str],
    mount: str,
    host_path: str,
    path_type: str,
    script: str,
    what: str,
    judge: Judge,
) -> None:
    component = f"nccl-{kind}-probe"
    bench.run.ensure_namespace()
    created: dict[str, str] = {}  # pod name -> node
    for i, node in enumerate(nodes):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": bench.run.name(f"{component}-{i}"),
                "namespace": bench.namespace,
                "labels": {COMPONENT_LABEL: component},
            },
            "spec": {
                "nodeName": node,
                "restartPolicy": "Never",
                "automountServiceAccountToken": False,
                "tolerations": [{"operator": "Exists"}],
                "containers": [
                    {
                        "name": PROBE_CONTAINER,
                        "image": PROBE_IMAGE,
                        "command": ["/bin/sh", "-c", script],
                        "resources": {
                            "requests": {"cpu": "10m", "memory": "16Mi"},
                            "limits": {"cpu": "100m", "memory": "32Mi"},
                        },
                        "volumeMounts": [{"name": "host", "mountPath": mount, "readOnly": True}],
                    }
                ],
                "volumes": [{"name": "host", "hostPath": {"path": host_path, "type": path_type}}],
            },
        }
        out = bench.run.create(pod)
        created[_name(out)] = node

    def done(view: dict[str, JSON]) -> list[JSON] | None:
        pods = [p for p in view.values() if _name(p) in created]
        finished = [p for p in pods if _phase(p) in ("Succeeded", "Failed")]
        return finished if len(finished) == len(created) else None

    def describe(view: dict[str, JSON]) -> str:
        pods = [p for p in view.values() if _name(p) in created]
        return "; ".join(f"{created[_name(p)]}: {summarize(p)}" for p in pods) or "no probe pods seen"

    try:
        finished = observe(
            bench.cluster,
            "v1",
            "pods",
            bench.namespace,
            done,
            timeout=min(PROBE_TIMEOUT_S, bench.remaining()),
            clock=bench.clock,
            what=f"{what} preflight pods on {len(created)} node(s)",
            describe=describe,
            label_selector=f"{RUN_ID_LABEL}={bench.run.run_id},{COMPONENT_LABEL}={component}",
        )
        judge(finished, created)
    finally:
        for name in created:  # done with them; the run's cleanup tolerates NotFound
            try:
                bench.cluster.delete("v1", "Pod", name, bench.namespace, missing_ok=True)
            except ApiError as exc:
                log.warning("%s: could not delete preflight pod %s: %s", bench.check, name, exc)


__all__ = [
    "COMPONENT_LABEL",
    "MSG_NVREG_POD_NOT_DONE",
    "MSG_PROBE_UNEXPECTED",
    "MSG_TCPXO_NOT_READY",
    "PROBE_IMAGE",
    "PROBE_TIMEOUT_S",
    "run_preflight",
]
