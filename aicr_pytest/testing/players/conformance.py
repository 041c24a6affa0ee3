"""Conformance player (phase I): what the conformance checks' workloads and the operators they probe do.

Registered as ``conformance`` (after ``nvidia-smi``, ``nccl``, ``inference``). On a profile it plays:

* **GPU test pods** of dra-support / secure-accelerator-access: a container running the granted-GPU
  probe (``nvidia-smi --query-gpu=uuid``) sees the GPUs it was given -- its ``nvidia.com/gpu`` limit
  or the devices of the ResourceClaim it references -- and prints/exit as the probe script does; a
  container running the absence probe (``ls /dev/nvidia*``) sees none. Each container gets its own
  log and exit code (:class:`~aicr_pytest.testing.simulator.PodScript` ``exit_codes``); pods start
  2 s after binding and run 3 s (clock seconds; :func:`player` builds one with other latencies).
* **KAI gang scheduling**: pods with ``schedulerName: kai-scheduler`` and the
  ``pod-group.scheduling.run.ai/name`` label are held until their PodGroup exists and ``minMember``
  of them are pending, then all are bound in the same instant (all-or-nothing); each worker prints
  what its ``echo`` says.
* **Validating webhooks**: Kubeflow Trainer's ``validator.trainer.kubeflow.org`` denies a TrainJob
  whose ``runtimeRef`` names a runtime that does not exist (422 ``admission webhook … denied the
  request``); Dynamo's denies a DynamoGraphDeployment without components.

Faults (``profile.faults``; see :mod:`aicr_pytest.testing.profiles`): ``gpu-isolation-broken``,
``gpu-visible-without-allocation``, ``gpu-test-image-pull``, ``kai-gang-split``, ``kai-forbidden``,
``kai-queue-missing``, ``trainer-webhook-admits``, ``trainer-schema-rejects``,
``clusterpolicy-not-ready``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from aicr_pytest.testing.players.nvidia_smi import Gpus
from aicr_pytest.testing.simulator import PodScript, Simulator, parse_quantity
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, Player, SimulatedCluster

__all__ = [
    "ABSENCE_MARK",
    "FAULT_ISOLATION",
    "FAULT_VISIBLE",
    "GANG_LABEL",
    "GRANT_MARK",
    "container_output",
    "echo_text",
    "granted_gpus",
    "install",
    "player",
]

GANG_LABEL: Final = "pod-group.scheduling.run.ai/name"
KAI: Final = "kai-scheduler"
GRANT_MARK: Final = "nvidia-smi --query-gpu=uuid"
ABSENCE_MARK: Final = "ls /dev/nvidia*"
GANG_SPLIT_S: Final = 45.0
FAULT_ISOLATION: Final = "gpu-isolation-broken"
FAULT_VISIBLE: Final = "gpu-visible-without-allocation"
FAULT_IMAGE_PULL: Final = "gpu-test-image-pull"
FAULT_GANG_SPLIT: Final = "kai-gang-split"
FAULT_KAI_FORBIDDEN: Final = "kai-forbidden"
FAULT_QUEUE_MISSING: Final = "kai-queue-missing"
FAULT_WEBHOOK_ADMITS: Final = "trainer-webhook-admits"
FAULT_SCHEMA_REJECTS: Final = "trainer-schema-rejects"
FAULT_POLICY_NOT_READY: Final = "clusterpolicy-not-ready"
TRAINER_WEBHOOK: Final = "validator.trainjob.trainer.kubeflow.org"
DYNAMO_WEBHOOK: Final = "vdynamographdeployment.nvidia.com"


# --- what a probe container prints ------------------------------------------------------------------


def _script(container: Mapping[str, Any]) -> str:
    argv = [str(x) for x in (container.get("command") or []) + (container.get("args") or [])]
    return argv[2] if len(argv) >= 3 and argv[1] == "-c" else " ".join(argv)


def _claim_devices(sim: Simulator, pod: Obj, container: Mapping[str, Any]) -> int:
    ns = pod["metadata"].get("namespace")
    refs = {str(r.get("name")): r for r in (pod.get("spec") or {}).get("resourceClaims") or []}
    total = 0
    for use in (container.get("resources") or {}).get("claims") or []:
        name = (refs.get(str(use.get("name"))) or {}).get("resourceClaimName")
        claim = sim.store.peek(sim.rt("resource.k8s.io/v1", "ResourceClaim"), ns, str(name)) if name else None
        for req in (((claim or {}).get("spec") or {}).get("devices") or {}).get("requests") or []:
            total += int((req.get("exactly") or req).get("count") or 1)
    return total


def granted_gpus(sim: Simulator, pod: Obj, container: Mapping[str, Any]) -> int:
    """GPUs a container was given: its ``nvidia.com/gpu`` limit plus its claims' devices."""
    limits = (container.get("resources") or {}).get("limits") or {}
    return int(parse_quantity(limits.get("nvidia.com/gpu", 0))) + _claim_devices(sim, pod, container)


def container_output(script: str, visible: int, node: str) -> tuple[str, int] | None:
    """(log, exit code) of a conformance probe container that sees ``visible`` GPUs; ``None`` when the
    script is not one of the probes."""
    if GRANT_MARK in script:
        if visible == 0:
            return (
                "No devices were found\nFAIL: nvidia-smi cannot enumerate GPUs - no usable GPU granted\n",
                1,
            )
        gpus = Gpus(visible, "NVIDIA H100 80GB HBM3", 81559, "580.95.05", node)
        uuids = [gpus.uuid(i) for i in range(visible)]
        lines = [f"granted GPU count: {visible}", f"granted GPU UUIDs: {' '.join(uuids)} "]
        if visible == 1:
            return "\n".join([*lines, "PASS: exactly one usable GPU visible"]) + "\n", 0
        return "\n".join([*lines, f"FAIL: expected exactly 1 usable GPU, saw {visible}"]) + "\n", 1
    if ABSENCE_MARK in script:
        if visible:
            return "FAIL: GPU visible without GPU allocation\n", 1
        return "PASS: GPU isolated\n", 0
    return None


def _uid_is(uid: object) -> Callable[[Obj], bool]:
    def match(pod: Obj) -> bool:
        return bool(pod["metadata"].get("uid") == uid)

    return match


def echo_text(script: str) -> str:
    """What ``echo '<text>'`` prints (a gang worker's whole script); ``""`` for anything else."""
    m = re.fullmatch(r"\s*echo\s+'([^']*)'\s*", script) or re.fullmatch(r'\s*echo\s+"([^"]*)"\s*', script)
    return m.group(1) + "\n" if m else ""


def _script_probe_pod(sim: Simulator, pod: Obj, faults: frozenset[str], timing: tuple[float, float]) -> None:
    containers = (pod.get("spec") or {}).get("containers") or []
    scripts = {str(c.get("name")): _script(c) for c in containers}
    if not any(GRANT_MARK in s or ABSENCE_MARK in s for s in scripts.values()):
        return
    meta = pod["metadata"]
    uid = meta.get("uid")
    is_probe_pod = bool((pod.get("spec") or {}).get("nodeName"))  # the no-allocation probe is pinned
    if FAULT_IMAGE_PULL in faults and any("cuda" in str(c.get("image")) for c in containers):
        sim.script(PodScript(predicate=_uid_is(uid), waiting_reason="ImagePullBackOff"))
        return
    logs: dict[str, str] = {}
    codes: dict[str, int] = {}
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    for c in containers:
        name = str(c.get("name"))
        visible = granted_gpus(sim, pod, c)
        leaks = (FAULT_ISOLATION in faults and not is_probe_pod) or (FAULT_VISIBLE in faults and is_probe_pod)
        if visible == 0 and ABSENCE_MARK in scripts[name] and leaks:
            visible = 8
        out = container_output(scripts[name], visible, node or str(meta.get("name")))
        if out is not None:
            logs[name], codes[name] = out
    sim.script(
        PodScript(
            predicate=_uid_is(uid),
            logs=logs,
            exit_codes=codes,
            start_after=timing[0],
            run_for=timing[1],
        )
    )


# --- KAI gangs --------------------------------------------------------------------------------------


def _is_gang_pod(pod: Obj) -> bool:
    return (pod.get("spec") or {}).get("schedulerName") == KAI and bool(
        ((pod.get("metadata") or {}).get("labels") or {}).get(GANG_LABEL)
    )


def _schedule_gangs(sim: Simulator, namespace: str, faults: frozenset[str]) -> None:
    pods_rt = sim.rt("v1", "Pod")
    groups: dict[str, list[Obj]] = {}
    for pod in sim.store.iter_objects(pods_rt, namespace):
        if (
            _is_gang_pod(pod)
            and not (pod.get("spec") or {}).get("nodeName")
            and not pod["metadata"].get("deletionTimestamp")
        ):
            groups.setdefault(str(pod["metadata"]["labels"][GANG_LABEL]), []).append(pod)
    for group, members in groups.items():
        try:
            pg_rt = sim.rt("scheduling.run.ai/v2alpha2", "PodGroup")
        except Exception:  # no PodGroup CRD: KAI is not installed
            return
        podgroup = sim.store.peek(pg_rt, namespace, group)
        if podgroup is None:
            continue
        if len(members) < int((podgroup.get("spec") or {}).get("minMember") or 1):
            continue
        members.sort(key=lambda p: str(p["metadata"]["name"]))
        for i, pod in enumerate(members):
            if i and FAULT_GANG_SPLIT in faults:
                sim.clock.call_later(GANG_SPLIT_S * i, _binder(sim, pod))
            else:
                sim.schedule_now(pod)


def _binder(sim: Simulator, pod: Obj) -> Callable[[], None]:
    def bind() -> None:
        sim.schedule_now(pod)

    return bind


def _gang_logs(sim: Simulator, pod: Obj, timing: tuple[float, float]) -> None:
    uid = pod["metadata"].get("uid")
    logs = {
        str(c.get("name")): echo_text(_script(c)) for c in (pod.get("spec") or {}).get("containers") or []
    }
    sim.script(
        PodScript(
            predicate=_uid_is(uid),
            logs=logs,
            start_after=timing[0],
            run_for=timing[1],
        )
    )


# --- webhooks ---------------------------------------------------------------------------------------


def _body(raw: bytes) -> Obj:
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _install_webhooks(fc: SimulatedCluster, profile: ClusterProfile, faults: frozenset[str]) -> None:
    trainer = profile.component("kubeflow-trainer")
    if trainer is not None and trainer.options.get("webhook", True) and FAULT_WEBHOOK_ADMITS not in faults:
        store = fc.store

        def missing_runtime(raw: bytes) -> bool:
            body = _body(raw)
            ref = (body.get("spec") or {}).get("runtimeRef") or {}
            kind = str(ref.get("kind") or "ClusterTrainingRuntime")
            ns = (body.get("metadata") or {}).get("namespace")
            try:
                rt = store.resolve("trainer.kubeflow.org/v1alpha1", kind)
            except Exception:
                return True
            return store.peek(rt, ns if rt.namespaced else None, str(ref.get("name") or "")) is None

        def trainer_message(raw: bytes) -> str:
            ref = (_body(raw).get("spec") or {}).get("runtimeRef") or {}
            if FAULT_SCHEMA_REJECTS in faults:
                name = (_body(raw).get("metadata") or {}).get("name")
                return (
                    f'TrainJob.trainer.kubeflow.org "{name}" is invalid: spec.runtimeRef.name: '
                    f'Invalid value: "{ref.get("name")}"'
                )
            return (
                f'admission webhook "{TRAINER_WEBHOOK}" denied the request: spec.runtimeRef: Invalid value: '
                f"{json.dumps(ref, separators=(',', ':'))}: "
                f"{ref.get('kind', 'ClusterTrainingRuntime')}.trainer.kubeflow.org "
                f'"{ref.get("name")}" not found'
            )

        fc.faults.reject(
            "POST",
            r"^/apis/trainer\.kubeflow\.org/v1alpha1/namespaces/[^/]+/trainjobs$",
            status=422,
            reason="Invalid",
            message=trainer_message,
            times=None,
            when=missing_runtime,
        )
    dynamo = profile.component("dynamo-platform")
    if dynamo is not None and dynamo.options.get("webhook", True):
        fc.faults.reject(
            "POST",
            r"^/apis/nvidia\.com/v1beta1/namespaces/[^/]+/dynamographdeployments$",
            status=422,
            reason="Invalid",
            message=f'admission webhook "{DYNAMO_WEBHOOK}" denied the request: spec.components: '
            "Required value: at least one component is required",
            times=None,
            when=lambda raw: not (_body(raw).get("spec") or {}).get("components"),
        )


# --- the player -------------------------------------------------------------------------------------


def _install(fc: SimulatedCluster, profile: ClusterProfile, timing: tuple[float, float]) -> None:
    faults = frozenset(profile.faults)
    sim = fc.sim
    kai = profile.component(KAI) is not None

    def on_pod(sim: Simulator, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        if any(s.matches(pod) for s in sim.scripts):
            return  # a test scripted this pod itself: its script wins
        if (meta.get("labels") or {}).get("app.kubernetes.io/managed-by") == "aicr-pytest":
            _script_probe_pod(sim, pod, faults, timing)
        if kai and _is_gang_pod(pod):
            _gang_logs(sim, pod, timing)

    def on_gang_pod(sim: Simulator, pod: Obj) -> None:
        if kai and _is_gang_pod(pod):
            _schedule_gangs(sim, str((pod.get("metadata") or {}).get("namespace") or ""), faults)

    sim.on_create("", "v1", "pods", on_pod)
    sim.on_create("", "v1", "pods", on_gang_pod)
    if kai:
        sim.defer_scheduling.append(_is_gang_pod)
        sim.on_create(
            "scheduling.run.ai",
            "v2alpha2",
            "podgroups",
            lambda s, pg: _schedule_gangs(s, str(pg["metadata"].get("namespace") or ""), faults),
        )
        if FAULT_QUEUE_MISSING in faults and fc.find("scheduling.run.ai/v2", "Queue", "default-queue"):
            fc.delete("scheduling.run.ai/v2", "Queue", "default-queue")
        if FAULT_KAI_FORBIDDEN in faults:  # KAI runs, but its CRDs and queues are not readable
            fc.faults.deny(
                None,
                r"^/apis/apiextensions\.k8s\.io/v1/customresourcedefinitions/(queues|podgroups)\.scheduling\.run\.ai$"
                r"|^/apis/scheduling\.run\.ai/v2/queues",
            )
    _install_webhooks(fc, profile, faults)
    if FAULT_POLICY_NOT_READY in faults and fc.find("nvidia.com/v1", "ClusterPolicy", "cluster-policy"):
        sim.set_status("nvidia.com/v1", "ClusterPolicy", "cluster-policy", {"state": "notReady"})


def player(*, pod_start_s: float = 2.0, pod_run_s: float = 3.0) -> Player:
    """The conformance player with its pods taking ``pod_start_s`` from binding to Running and
    ``pod_run_s`` from Running to exit (clock seconds; benchmarks register a slower one)."""

    def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
        _install(fc, profile, (pod_start_s, pod_run_s))

    return install


#: the built-in player (pods start 2 s after binding and run 3 s)
install: Player = player()
