"""``gang-scheduling`` (CNCF ``gang_scheduling``): all-or-nothing co-scheduling
with KAI scheduler PodGroups, using CPU-only workers (so one-GPU clusters can run the whole phase).

Without KAI, a cluster with Kueue (its ClusterQueue CRD) runs the CNCF suite's Kueue test instead
(:mod:`aicr_pytest.conformance.gang_kueue`: ``AllOrNothingScheduling`` and ``NoPartialScheduling``).
Skips only when KAI and Kueue are genuinely absent: the ``kai-scheduler/kai-scheduler-default``
Deployment or one of the two CRDs answers NotFound.
state is ``other`` (AICR skips on any error, which hides a broken or forbidden KAI).

The test objects live in a run-scoped namespace (``gang-scheduling-test-<run id>[-<worker>]``,
AICR's fixed ``gang-scheduling-test`` would collide between concurrent runs): one PodGroup
(``minMember: 2``, queue ``default-queue``) and two busybox workers with ``schedulerName:
kai-scheduler``. Both must succeed, carry the PodGroup label and no claims, and have been scheduled
(``PodScheduled=True``) at most 30 s apart.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from aicr_pytest.conformance import gang_kueue
from aicr_pytest.conformance.common import (
    CO_SCHEDULE_WINDOW,
    GANG_TEST_POD_TIMEOUT,
    K8S_CLEANUP_TIMEOUT,
    K8S_POD_READY_TIMEOUT,
    ConformanceFailure,
    aicr_error,
    as_int,
    create_pod_when_sa_ready,
    describe_cause,
    failure,
    inconclusive,
    list_objects,
    meta,
    pod_log,
    prove_ran,
    spec,
    status,
    wait_deployment_available,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import CheckSkip
from aicr_pytest.core.goduration import format_go_duration
from aicr_pytest.kube.errors import ApiError, NotFound, WaitTimeout
from aicr_pytest.kube.wait import observe, wait_deleted

JSON = dict[str, Any]
KAI_NAMESPACE: Final = "kai-scheduler"
SCHEDULER_NAME: Final = "kai-scheduler"
GATE_DEPLOYMENT: Final = "kai-scheduler-default"
KAI_DEPLOYMENTS: Final = (
    "kai-scheduler-default",
    "admission",
    "binder",
    "kai-operator",
    "pod-grouper",
    "podgroup-controller",
    "queue-controller",
)
KAI_CRDS: Final = ("queues.scheduling.run.ai", "podgroups.scheduling.run.ai")
PODGROUP_API: Final = "scheduling.run.ai/v2alpha2"
QUEUE_API: Final = "scheduling.run.ai/v2"
QUEUE: Final = "default-queue"
GROUP_NAME_LABEL: Final = "pod-group.scheduling.run.ai/name"
GROUP_ID_LABEL: Final = "pod-group.scheduling.run.ai/group-id"
TEST_NAMESPACE: Final = "gang-scheduling-test"
WORKER_IMAGE: Final = "busybox:1.37"
WORKERS: Final = 2

MSG_SKIP: Final = "KAI scheduler not found — cluster may use a different scheduler"
MSG_SKIP_CRD: Final = MSG_SKIP + " (CustomResourceDefinition {crd} not found)"
MSG_NO_QUEUE: Final = (
    "KAI queue default-queue not found — the gang test PodGroup's queue does not exist, so KAI cannot "
    "schedule it"
)
MSG_PHASE: Final = "gang test pod {pod} phase={phase} (want Succeeded), gang scheduling may have failed"
MSG_SCHEDULER: Final = "gang test pod {pod} schedulerName={name} (want kai-scheduler)"
MSG_LABEL: Final = "gang test pod {pod} missing PodGroup label (want {group})"
MSG_CLAIMS: Final = "gang test pod {pod} unexpectedly uses resourceClaims"
MSG_SCHEDULED: Final = "gang test pod {pod} missing PodScheduled=True condition"
MSG_SCHEDULED_TIME: Final = "gang test pod {pod} PodScheduled=True condition has no valid lastTransitionTime"
MSG_SPAN: Final = "gang scheduling pods not co-scheduled: schedule times span {span} (max {window})"


# --- the pure decisions -----------------------------------------------------------------------------


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 timestamp (``2026-01-02T03:04:05Z``) at second granularity; ``None`` if malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return None if parsed.tzinfo is None else parsed.replace(microsecond=0)


def scheduled_at(pod: Mapping[str, Any]) -> tuple[bool, datetime | None]:
    """(has ``PodScheduled=True``, its lastTransitionTime)."""
    for cond in status(pod).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            return True, parse_time(cond.get("lastTransitionTime"))
    return False, None


def gang_span(times: Sequence[datetime]) -> float:
    """Seconds between the earliest and the latest schedule time."""
    return (max(times) - min(times)).total_seconds() if times else 0.0


def gang_verdict(
    pods: Sequence[Mapping[str, Any]], group: str, window: float = CO_SCHEDULE_WINDOW
) -> str | None:
    """The check's verdict over the finished workers (in order), AICR's texts, or ``None`` for a pass."""
    times: list[datetime] = []
    for pod in pods:
        name = str(meta(pod).get("name") or "")
        phase = str(status(pod).get("phase") or "Pending")
        if phase != "Succeeded":
            return aicr_error("INTERNAL", MSG_PHASE.format(pod=name, phase=phase))
        scheduler = str(spec(pod).get("schedulerName") or "")
        if scheduler != SCHEDULER_NAME:
            return aicr_error("INTERNAL", MSG_SCHEDULER.format(pod=name, name=scheduler))
        if (meta(pod).get("labels") or {}).get(GROUP_NAME_LABEL) != group:
            return aicr_error("INTERNAL", MSG_LABEL.format(pod=name, group=group))
        if spec(pod).get("resourceClaims"):
            return aicr_error("INTERNAL", MSG_CLAIMS.format(pod=name))
        ok, when = scheduled_at(pod)
        if not ok:
            return aicr_error("INTERNAL", MSG_SCHEDULED.format(pod=name))
        if when is None:
            return aicr_error("INTERNAL", MSG_SCHEDULED_TIME.format(pod=name))
        times.append(when)
    if len(times) != WORKERS:
        return aicr_error("INTERNAL", f"expected {WORKERS} gang test pods, found {len(times)}")
    span = gang_span(times)
    if span > window:
        return aicr_error(
            "INTERNAL", MSG_SPAN.format(span=format_go_duration(span), window=format_go_duration(window))
        )
    return None


def build_manifest(
    namespace: str,
    group: str,
    workers: Sequence[str],
    tolerations: Sequence[Mapping[str, str]],
    labels: Mapping[str, str],
) -> list[JSON]:
    """The PodGroup and its CPU-only workers."""
    objs: list[JSON] = [
        {
            "apiVersion": PODGROUP_API,
            "kind": "PodGroup",
            "metadata": {"name": group, "namespace": namespace, "labels": dict(labels)},
            "spec": {"minMember": WORKERS, "queue": QUEUE},
        }
    ]
    for i, name in enumerate(workers):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {**labels, GROUP_NAME_LABEL: group, GROUP_ID_LABEL: group},
                },
                "spec": {
                    "schedulerName": SCHEDULER_NAME,
                    "restartPolicy": "Never",
                    "tolerations": [dict(t) for t in tolerations],
                    "containers": [
                        {
                            "name": "worker",
                            "image": WORKER_IMAGE,
                            "command": ["sh", "-c", f"echo 'Gang worker {i} completed successfully'"],
                        }
                    ],
                },
            }
        )
    return objs


# --- the check ---------------------------------------------------------------------------------------


def _gate(ctx: ConformanceContext) -> None:
    """Skip only when KAI is absent (NotFound); any other read error is ``other``."""
    try:
        ctx.cluster.get("apps/v1", "Deployment", GATE_DEPLOYMENT, KAI_NAMESPACE)
    except NotFound:
        raise CheckSkip(MSG_SKIP) from None
    except ApiError as err:
        raise inconclusive(
            "INTERNAL", f"failed to read deployment {KAI_NAMESPACE}/{GATE_DEPLOYMENT}", err
        ) from err
    for crd in KAI_CRDS:
        try:
            ctx.cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd)
        except NotFound:
            raise CheckSkip(MSG_SKIP_CRD.format(crd=crd)) from None
        except ApiError as err:
            raise inconclusive("INTERNAL", f"failed to read gang scheduling CRD {crd}", err) from err


def _inventory(ctx: ConformanceContext) -> None:
    cluster = ctx.cluster
    lines = []
    for name in KAI_DEPLOYMENTS:
        dep = wait_deployment_available(
            cluster, KAI_NAMESPACE, name, K8S_POD_READY_TIMEOUT, ctx.clock, remaining=ctx.remaining()
        )
        lines.append(
            f"{name}: {as_int(status(dep).get('availableReplicas'))}/{spec(dep).get('replicas', 1)} available"
        )
    ctx.record("KAI scheduler deployments", lines, f"kubectl get deployments -n {KAI_NAMESPACE}")
    pods = list_objects(cluster, "v1", "Pod", KAI_NAMESPACE, "failed to list KAI scheduler pods")
    ctx.record(
        "KAI scheduler pods",
        [f"{meta(p).get('name')}: {status(p).get('phase') or 'Pending'}" for p in pods] or ["(none)"],
        f"kubectl get pods -n {KAI_NAMESPACE}",
    )
    ctx.record(
        "Gang Scheduling CRDs",
        [f"{crd}: present" for crd in KAI_CRDS],
        "kubectl get crd " + " ".join(KAI_CRDS),
    )
    queues = list_objects(cluster, QUEUE_API, "queues", None, "failed to list KAI queues")
    ctx.record(
        "KAI queues",
        [f"{meta(q).get('name')}: parent={spec(q).get('parentQueue') or '-'}" for q in queues] or ["(none)"],
        "kubectl get queues.scheduling.run.ai",
    )
    if not any(meta(q).get("name") == QUEUE for q in queues):
        raise failure("NOT_FOUND", MSG_NO_QUEUE)


def run_gang_scheduling(ctx: ConformanceContext) -> None:
    """Run the check (see the module docstring); raises to report anything but a pass. Without
    KAI, a cluster with Kueue runs the CNCF suite's Kueue gang test (:mod:`.gang_kueue`)."""
    try:
        _gate(ctx)
    except CheckSkip:
        if gang_kueue.kueue_installed(ctx):
            gang_kueue.run_kueue_gang(ctx)
            return
        raise
    _inventory(ctx)
    run = ctx.run
    try:
        namespace = run.create_namespace_for_run(TEST_NAMESPACE)
    except ApiError as err:
        raise inconclusive("INTERNAL", f"failed to create namespace {run.name(TEST_NAMESPACE)}", err) from err
    suffix = secrets.token_hex(4)
    group = run.name(f"gang-group-{suffix}")
    workers = [run.name(f"gang-worker-{suffix}-{i}") for i in range(WORKERS)]
    manifest = build_manifest(namespace, group, workers, ctx.inner_tolerations(), run.labels())
    ctx.record("Apply test manifest", "---\n".join(yamlio.dump(o) for o in manifest))
    created: list[tuple[str, str]] = []
    try:
        try:
            run.create(manifest[0])
            created.append(("PodGroup", group))
        except ApiError as err:
            raise inconclusive("INTERNAL", f"failed to create PodGroup {group}", err) from err
        for pod in manifest[1:]:
            try:
                create_pod_when_sa_ready(run, pod, ctx.clock)
                created.append(("Pod", str(pod["metadata"]["name"])))
            except ApiError as err:
                raise inconclusive(
                    "INTERNAL", f"failed to create gang test pod {pod['metadata']['name']}", err
                ) from err
        done = _wait_workers(ctx, namespace, group, workers)
        verdict = gang_verdict(done, group)
        _record_results(ctx, namespace, group, done)
        if verdict is not None:
            raise ConformanceFailure(verdict)
        prove_ran(ctx.run, *done)
    finally:
        _cleanup(ctx, namespace, created)


def _wait_workers(ctx: ConformanceContext, namespace: str, group: str, workers: Sequence[str]) -> list[JSON]:
    """Both workers once they are Succeeded or Failed (watch on the run's pods of this group)."""
    keys = [f"{namespace}/{w}" for w in workers]
    seen: set[str] = set()

    def check(view: dict[str, JSON]) -> list[JSON] | None:
        pods = []
        for key in keys:
            pod = view.get(key)
            if pod is None:
                if key in seen:
                    raise inconclusive(
                        "INTERNAL",
                        "gang test pod polling failed",
                        aicr_error("INTERNAL", f"gang test pod {key.split('/', 1)[1]} was deleted"),
                    )
                return None
            seen.add(key)
            pods.append(pod)
        return pods if all(str(status(p).get("phase")) in ("Succeeded", "Failed") for p in pods) else None

    def describe(view: dict[str, JSON]) -> str:
        return ", ".join(
            f"{k.split('/', 1)[1]}: {status(view[k]).get('phase') or 'Pending'}"
            if k in view
            else f"{k}: not found"
            for k in keys
        )

    bound = ctx.bounded(GANG_TEST_POD_TIMEOUT)
    try:
        return observe(
            ctx.cluster,
            "v1",
            "pods",
            namespace,
            check,
            timeout=bound,
            clock=ctx.clock,
            what=f"gang test pods of PodGroup {group}",
            describe=describe,
            label_selector=f"{GROUP_NAME_LABEL}={group}",
        )
    except WaitTimeout as err:
        raise inconclusive("TIMEOUT", "gang test pods did not complete in time", err) from err
    except ApiError as err:
        raise inconclusive("INTERNAL", "gang test pod polling failed", err) from err


def _record_results(ctx: ConformanceContext, namespace: str, group: str, pods: Sequence[JSON]) -> None:
    try:
        groups = list(ctx.cluster.list(PODGROUP_API, "podgroups", namespace))
        text = [f"{meta(g).get('name')} minMember={spec(g).get('minMember')}" for g in groups] or ["(none)"]
    except ApiError as err:
        text = [f"failed to list PodGroups: {describe_cause(err)}"]
    ctx.record("PodGroup status", text, f"kubectl get podgroups -n {namespace}")
    lines, times = [], []
    for pod in pods:
        ok, when = scheduled_at(pod)
        if when is not None:
            times.append(when)
        stamp = when.isoformat() if when else ("unknown" if ok else "no")
        lines.append(
            f"{meta(pod).get('name')}: phase={status(pod).get('phase')} "
            f"scheduler={spec(pod).get('schedulerName')} scheduled={stamp}"
        )
    if times:
        lines += [
            f"Schedule span: {format_go_duration(gang_span(times))} "
            f"(window {format_go_duration(CO_SCHEDULE_WINDOW)})",
            f"Earliest: {min(times).isoformat()}",
            f"Latest: {max(times).isoformat()}",
        ]
    ctx.record("Pod status", lines, f"kubectl get pods -n {namespace} -l {GROUP_NAME_LABEL}={group}")
    for i, pod in enumerate(pods):
        name = str(meta(pod).get("name"))
        ctx.record(
            f"gang-worker-{i} logs",
            pod_log(ctx.cluster, namespace, name, "worker"),
            f"kubectl logs {name} -n {namespace}",
        )


def _cleanup(ctx: ConformanceContext, namespace: str, created: Sequence[tuple[str, str]]) -> None:
    """Delete the workers (and wait, shared 30 s), then the PodGroup; the namespace goes with the run."""
    if ctx.run.no_cleanup:
        ctx.record("Delete test namespace", f"cleanup disabled (--no-cleanup): namespace {namespace} kept")
        return
    cluster = ctx.cluster
    end = ctx.clock.time() + K8S_CLEANUP_TIMEOUT
    notes: list[str] = []
    pods = [name for kind, name in created if kind == "Pod"]
    for name in pods:
        try:
            cluster.delete(
                "v1",
                "Pod",
                name,
                namespace,
                propagation="Background",
                grace_period_seconds=0,
                missing_ok=True,
            )
        except ApiError as err:
            notes.append(f"delete pod {name}: {describe_cause(err)}")
    for name in pods:
        try:
            wait_deleted(
                cluster,
                "v1",
                "Pod",
                name,
                namespace,
                timeout=max(1.0, end - ctx.clock.time()),
                clock=ctx.clock,
            )
        except (ApiError, WaitTimeout) as err:
            notes.append(f"pod {name} not confirmed deleted: {describe_cause(err)}")
    for kind, name in created:
        if kind == "PodGroup":
            try:
                cluster.delete(
                    PODGROUP_API, "PodGroup", name, namespace, propagation="Background", missing_ok=True
                )
            except ApiError as err:
                notes.append(f"delete PodGroup {name}: {describe_cause(err)}")
    text = (
        f"Deleted gang test pods and PodGroup; the run-scoped namespace {namespace} is deleted with the "
        "run's other objects at cleanup."
    )
    ctx.record("Delete test namespace", "\n".join([text, *notes]))


__all__ = [
    "KAI_CRDS",
    "KAI_DEPLOYMENTS",
    "MSG_SKIP",
    "build_manifest",
    "gang_span",
    "gang_verdict",
    "parse_time",
    "run_gang_scheduling",
    "scheduled_at",
]
