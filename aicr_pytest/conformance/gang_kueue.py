"""``gang-scheduling`` with Kueue: the CNCF suite's ``TestGangScheduling`` on a cluster whose gang
scheduler is Kueue rather than KAI.

The program's suite (kubernetes-sigs/ai-conformance ``test/``) drives Kueue: admission against a
ClusterQueue's quota is all-or-nothing -- a Job is unsuspended (and its pods created) only when the
quota covers the whole Job. Its two subtests, reported here under the same names as
``RESULT: TestGangScheduling/<Subtest>: PASS|FAIL|OTHER - ...`` stdout lines:

* ``AllOrNothingScheduling`` -- a run-scoped ResourceFlavor, a ClusterQueue with a
  :data:`QUEUE_CPU` CPU quota and a LocalQueue; a suspended Job of :data:`FIT_REPLICAS` workers of
  :data:`POD_CPU` each (fits) must have every pod bound to a node;
* ``NoPartialScheduling`` -- a suspended Job of :data:`OVERSIZED_REPLICAS` workers (exceeds the quota):
  Kueue must create its Workload (found by the ``kueue.x-k8s.io/job-uid`` label, so a Kueue that
  never looked at the Job cannot pass), and for :data:`NEGATIVE_WINDOW` seconds the Workload stays
  unadmitted (no ``status.admission``), the Job stays suspended and none of its pods is bound.
  A window the check's budget cuts short is ``other``: a shorter look does not confirm the denial.

:func:`denial_violation` is the negative case's pure verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from aicr_pytest.conformance.common import failure, inconclusive, meta, spec, status
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.errors import ApiError, NotFound

JSON = dict[str, Any]
API: Final = "kueue.x-k8s.io/v1beta2"
CRD: Final = "clusterqueues.kueue.x-k8s.io"
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
POD_CPU: Final = "100m"
POD_MEMORY: Final = "64Mi"
QUEUE_CPU: Final = "250m"
QUEUE_MEMORY: Final = "4Gi"
FIT_REPLICAS: Final = 2
OVERSIZED_REPLICAS: Final = 3
FIT_TIMEOUT: Final = 120.0
WORKLOAD_TIMEOUT: Final = 30.0
NEGATIVE_WINDOW: Final = 45.0
POLL: Final = 3.0
WORKER_IMAGE: Final = "busybox:1.37"
SUITE_TEST: Final = "TestGangScheduling"
FIT: Final = "AllOrNothingScheduling"
NO_PARTIAL: Final = "NoPartialScheduling"

MSG_FIT: Final = (
    "Kueue did not schedule all {want} pods of the fitting gang Job {job} within {timeout:g}s ({seen})"
)
MSG_NO_WORKLOAD: Final = (
    "Kueue created no Workload for the oversized gang Job {job} within {timeout:g}s: "
    "its denial cannot be confirmed (is Kueue's Job integration enabled?)"
)
MSG_ADMITTED: Final = (
    "Kueue admitted Workload {workload} of the oversized gang Job {job} beyond the queue quota"
)
MSG_UNSUSPENDED: Final = "the oversized gang Job {job} was unsuspended beyond the queue quota"
MSG_PARTIAL: Final = (
    "pod {pod} of the oversized gang Job {job} was scheduled to node {node}: the gang was partially scheduled"
)
MSG_WINDOW_CUT: Final = (
    "the check's budget ended {held:.0f}s into the {window:g}s NoPartialScheduling window: the oversized "
    "gang Job {job} was seen denied only that long, so its denial is not confirmed"
)


def kueue_installed(ctx: ConformanceContext) -> bool:
    """Kueue's ClusterQueue CRD exists (NotFound: no; any other read error is ``other``)."""
    try:
        ctx.cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD)
    except NotFound:
        return False
    except ApiError as err:
        raise inconclusive("INTERNAL", f"failed to read gang scheduling CRD {CRD}", err) from err
    return True


def build_queue_objects(flavor: str, cluster_queue: str, local_queue: str, namespace: str) -> list[JSON]:
    """The ResourceFlavor, the ClusterQueue with its CPU quota and the namespace's LocalQueue."""
    return [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": flavor}},
        {
            "apiVersion": API,
            "kind": "ClusterQueue",
            "metadata": {"name": cluster_queue},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": flavor,
                                "resources": [
                                    {"name": "cpu", "nominalQuota": QUEUE_CPU},
                                    {"name": "memory", "nominalQuota": QUEUE_MEMORY},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": API,
            "kind": "LocalQueue",
            "metadata": {"name": local_queue, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue},
        },
    ]


def build_job(
    name: str, namespace: str, queue: str, replicas: int, tolerations: list[dict[str, str]]
) -> JSON:
    """A suspended Job of ``replicas`` CPU-only workers in Kueue's ``queue``."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "suspend": True,
            "parallelism": replicas,
            "completions": replicas,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "tolerations": tolerations,
                    "containers": [
                        {
                            "name": "worker",
                            "image": WORKER_IMAGE,
                            "command": ["sh", "-c", "sleep 30"],
                            "resources": {"requests": {"cpu": POD_CPU, "memory": POD_MEMORY}},
                        }
                    ],
                }
            },
        },
    }


def denial_violation(
    job: str, workload: Mapping[str, Any], job_obj: Mapping[str, Any], pods: Sequence[JSON]
) -> str:
    """The negative case's verdict at one instant: ``""`` while the gang stays wholly denied, else
    the violation (admitted Workload, unsuspended Job, a bound pod)."""
    if status(workload).get("admission"):
        return MSG_ADMITTED.format(workload=meta(workload).get("name"), job=job)
    if spec(job_obj).get("suspend") is not True:
        return MSG_UNSUSPENDED.format(job=job)
    for pod in sorted(pods, key=lambda p: str(meta(p).get("name"))):
        node = spec(pod).get("nodeName")
        if node:
            return MSG_PARTIAL.format(pod=meta(pod).get("name"), job=job, node=node)
    return ""


def result_line(subtest: str, word: str, line: str) -> str:
    return f"RESULT: {SUITE_TEST}/{subtest}: {word} - {line}"


def _job_pods(ctx: ConformanceContext, namespace: str, job: str) -> list[JSON]:
    return list(ctx.cluster.list("v1", "pods", namespace, label_selector=f"{JOB_NAME_LABEL}={job}"))


def run_kueue_gang(ctx: ConformanceContext) -> None:
    """Both subtests (module docstring); every subtest gets its RESULT line before the check ends."""
    run = ctx.run
    ctx.record("Gang scheduler", f"Kueue ({CRD} present); KAI scheduler not installed")
    try:
        namespace = run.create_namespace_for_run("gang-scheduling-test")
        flavor, cq, lq = run.name("gang-flavor"), run.name("gang-cq"), run.name("gang-queue")
        objects = build_queue_objects(flavor, cq, lq, namespace)
        for obj in objects:
            run.create(obj)
    except ApiError as err:
        raise inconclusive("INTERNAL", "failed to create the Kueue gang queue", err) from err
    ctx.record(
        "Kueue queue",
        f"ClusterQueue {cq}: cpu {QUEUE_CPU}, memory {QUEUE_MEMORY}; LocalQueue {namespace}/{lq}",
    )
    try:
        fit = _fit_case(ctx, namespace, lq)
    except Inconclusive as err:
        ctx.emit(result_line(FIT, "OTHER", str(err)))
        raise
    ctx.emit(
        result_line(FIT, "PASS" if not fit else "FAIL", fit or f"all {FIT_REPLICAS} pods scheduled together")
    )
    try:
        word, denied = _no_partial_case(ctx, namespace, lq)
    except Inconclusive as err:
        ctx.emit(result_line(NO_PARTIAL, "OTHER", str(err)))
        raise
    ctx.emit(result_line(NO_PARTIAL, word, denied or "the oversized gang stayed wholly unadmitted"))
    if fit:
        raise failure("CONFLICT", fit)
    if word == "OTHER":
        raise inconclusive("TIMEOUT" if denied.startswith("the check's budget") else "NOT_FOUND", denied)
    if denied:
        raise failure("CONFLICT", denied)


def _fit_case(ctx: ConformanceContext, namespace: str, queue: str) -> str:
    job = ctx.run.name("gang-fits")
    try:
        ctx.run.create(build_job(job, namespace, queue, FIT_REPLICAS, ctx.inner_tolerations()))
    except ApiError as err:
        raise inconclusive("INTERNAL", f"failed to create gang Job {job}", err) from err
    end = ctx.clock.time() + ctx.bounded(FIT_TIMEOUT)
    seen = "no pods"
    while True:
        try:
            pods = _job_pods(ctx, namespace, job)
        except ApiError as err:
            raise inconclusive("INTERNAL", f"failed to list pods of gang Job {job}", err) from err
        bound = [p for p in pods if spec(p).get("nodeName")]
        seen = f"{len(bound)} of {len(pods)} pods scheduled"
        if len(bound) >= FIT_REPLICAS:
            ctx.record("AllOrNothingScheduling", f"Job {job}: {seen}")
            return ""
        if ctx.clock.time() >= end:
            ctx.record("AllOrNothingScheduling", f"Job {job}: {seen}")
            return MSG_FIT.format(want=FIT_REPLICAS, job=job, timeout=FIT_TIMEOUT, seen=seen)
        ctx.clock.sleep(POLL)


def _no_partial_case(ctx: ConformanceContext, namespace: str, queue: str) -> tuple[str, str]:
    """``(word, line)``: ``PASS`` and ``""`` when the gang stayed denied for the whole window;
    ``FAIL`` naming the violation; ``OTHER`` when Kueue made no Workload or the check's budget cut
    the window short (a shorter look does not confirm the denial)."""
    job = ctx.run.name("gang-too-big")
    try:
        created = ctx.run.create(
            build_job(job, namespace, queue, OVERSIZED_REPLICAS, ctx.inner_tolerations())
        )
    except ApiError as err:
        raise inconclusive("INTERNAL", f"failed to create gang Job {job}", err) from err
    uid = str(meta(created).get("uid") or "")
    selector = f"{JOB_UID_LABEL}={uid}"
    try:
        end = ctx.clock.time() + ctx.bounded(WORKLOAD_TIMEOUT)
        workloads = list(ctx.cluster.list(API, "workloads", namespace, label_selector=selector))
        while not workloads and ctx.clock.time() < end:
            ctx.clock.sleep(POLL / 3)
            workloads = list(ctx.cluster.list(API, "workloads", namespace, label_selector=selector))
        if not workloads:
            return "OTHER", MSG_NO_WORKLOAD.format(job=job, timeout=WORKLOAD_TIMEOUT)
        window = ctx.bounded(NEGATIVE_WINDOW)
        end = ctx.clock.time() + window
        while True:
            workloads = list(ctx.cluster.list(API, "workloads", namespace, label_selector=selector))
            job_obj = ctx.cluster.get("batch/v1", "Job", job, namespace)
            verdict = denial_violation(
                job, workloads[0] if workloads else {}, job_obj, _job_pods(ctx, namespace, job)
            )
            if verdict or ctx.clock.time() >= end:
                ctx.record(
                    "NoPartialScheduling",
                    f"Job {job}: {verdict or 'stayed suspended, Workload unadmitted, no pod scheduled'}",
                )
                if verdict:
                    return "FAIL", verdict
                if window < NEGATIVE_WINDOW:
                    return "OTHER", MSG_WINDOW_CUT.format(held=window, window=NEGATIVE_WINDOW, job=job)
                return "PASS", ""
            ctx.clock.sleep(POLL)
    except ApiError as err:
        raise inconclusive("INTERNAL", f"failed to read the oversized gang Job {job}", err) from err


__all__ = [
    "CRD",
    "FIT",
    "NO_PARTIAL",
    "build_job",
    "build_queue_objects",
    "denial_violation",
    "kueue_installed",
    "run_kueue_gang",
]
