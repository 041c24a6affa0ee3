"""The conformance checks' pure decisions: gang span and verdicts, webhook rejection reasons, the GPU
test pods' builders, output parsing and verdicts, NVIDIA ResourceSlice validation, platform-health's
resource health, and the conformance player's probe output (what the fake and the control plane play)."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.conformance import gang_scheduling as gang
from aicr_pytest.conformance import gpu_workload as gw
from aicr_pytest.conformance import robust_controller as rc
from aicr_pytest.conformance.dra import validate_nvidia_slices
from aicr_pytest.conformance.platform_health import resource_problem
from aicr_pytest.testing.players import conformance as player

Obj = dict[str, Any]
GROUP = "gang-group-1a2b3c4d-runid"


# --- gang-scheduling -----------------------------------------------------------------------------


def worker(name: str, scheduled: str | None = "2026-07-01T10:00:00Z", **over: Any) -> Obj:
    conds = (
        []
        if scheduled is None
        else [{"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled}]
    )
    pod: Obj = {
        "metadata": {"name": name, "labels": {gang.GROUP_NAME_LABEL: GROUP}},
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "worker"}]},
        "status": {"phase": "Succeeded", "conditions": conds},
    }
    for key, value in over.items():
        section, _, field = key.partition("__")
        pod[section][field] = value
    return pod


def test_parse_time_second_granularity_and_fail_closed() -> None:
    assert gang.parse_time("2026-07-01T10:00:00.900Z") == gang.parse_time("2026-07-01T10:00:00Z")
    assert gang.parse_time("garbage") is None
    assert gang.parse_time("2026-07-01T10:00:00") is None  # no zone: ambiguous
    assert gang.parse_time(None) is None


def test_gang_verdict_pass_and_span_boundary() -> None:
    ok = [worker("w0"), worker("w1", "2026-07-01T10:00:30Z")]
    assert gang.gang_verdict(ok, GROUP) is None  # exactly 30 s is within the window
    late = [worker("w0"), worker("w1", "2026-07-01T10:00:31Z")]
    assert gang.gang_verdict(late, GROUP) == (
        "[INTERNAL] gang scheduling pods not co-scheduled: schedule times span 31s (max 30s)"
    )
    assert (
        gang.gang_span([gang.parse_time("2026-07-01T10:01:00Z"), gang.parse_time("2026-07-01T10:00:00Z")])
        == 60
    )  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            worker("w1", status__phase="Failed"),
            "gang test pod w1 phase=Failed (want Succeeded), gang scheduling may have failed",
        ),
        (
            worker("w1", spec__schedulerName="default-scheduler"),
            "gang test pod w1 schedulerName=default-scheduler (want kai-scheduler)",
        ),
        (worker("w1", metadata__labels={}), f"gang test pod w1 missing PodGroup label (want {GROUP})"),
        (
            worker("w1", spec__resourceClaims=[{"name": "gpu"}]),
            "gang test pod w1 unexpectedly uses resourceClaims",
        ),
        (worker("w1", scheduled=None), "gang test pod w1 missing PodScheduled=True condition"),
        (
            worker("w1", scheduled="yesterday"),
            "gang test pod w1 PodScheduled=True condition has no valid lastTransitionTime",
        ),
    ],
)
def test_gang_verdict_per_pod_failures(bad: Obj, message: str) -> None:
    assert gang.gang_verdict([worker("w0"), bad], GROUP) == f"[INTERNAL] {message}"


def test_gang_verdict_needs_both_workers() -> None:
    assert gang.gang_verdict([worker("w0")], GROUP) == "[INTERNAL] expected 2 gang test pods, found 1"


def test_gang_manifest_is_cpu_only_and_labelled() -> None:
    objs = gang.build_manifest("ns", GROUP, ["w0", "w1"], [{"operator": "Exists"}], {"aicr.run/run-id": "r"})
    podgroup, *pods = objs
    assert podgroup["apiVersion"] == "scheduling.run.ai/v2alpha2"
    assert podgroup["spec"] == {"minMember": 2, "queue": "default-queue"}
    for i, pod in enumerate(pods):
        assert (
            pod["metadata"]["labels"][gang.GROUP_NAME_LABEL]
            == GROUP
            == pod["metadata"]["labels"][gang.GROUP_ID_LABEL]
        )
        assert pod["metadata"]["labels"]["aicr.run/run-id"] == "r"
        (container,) = pod["spec"]["containers"]
        assert "resources" not in container and "resourceClaims" not in pod["spec"]
        assert container["command"] == ["sh", "-c", f"echo 'Gang worker {i} completed successfully'"]


# --- robust-controller ---------------------------------------------------------------------------

HOOKS = ["validator.trainjob.trainer.kubeflow.org"]


def test_rejection_by_the_operators_webhook_passes() -> None:
    msg = 'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: spec.runtimeRef: x'
    assert rc.rejection_verdict(422, msg, HOOKS) is None
    assert rc.rejection_verdict(403, msg, HOOKS) is None


@pytest.mark.parametrize(
    ("code", "message", "kind", "text"),
    [
        (400, "bad", "fail", "[INTERNAL] unexpected error testing webhook rejection: bad"),
        (
            500,
            'failed calling webhook "x"',
            "fail",
            '[INTERNAL] unexpected error testing webhook rejection: failed calling webhook "x"',
        ),
        (
            403,
            'trainjobs.trainer.kubeflow.org is forbidden: User "u" cannot create resource "trainjobs"',
            "other",
            "[INTERNAL] RBAC denied the request, not an admission webhook rejection: "
            "trainjobs.trainer.kubeflow.org "
            'is forbidden: User "u" cannot create resource "trainjobs"',
        ),
        (
            422,
            'TrainJob.trainer.kubeflow.org "t" is invalid: spec.runtimeRef.kind: Unsupported value',
            "fail",
            "[INTERNAL] rejection does not appear to be from admission webhook "
            "(missing 'admission webhook' in "
            'message): TrainJob.trainer.kubeflow.org "t" is invalid: spec.runtimeRef.kind: Unsupported value',
        ),
        (
            422,
            "ValidatingAdmissionPolicy 'deny-all' with binding 'b' denied request: no",
            "fail",
            "[INTERNAL] rejection does not appear to be from admission webhook "
            "(missing 'admission webhook' in "
            "message): ValidatingAdmissionPolicy 'deny-all' with binding 'b' denied request: no",
        ),
        (
            403,
            'admission webhook "gatekeeper.sh" denied the request: everything is denied',
            "fail",
            "[INTERNAL] rejection came from an admission webhook other than the operator's "
            "(validator.trainjob.trainer.kubeflow.org): "
            'admission webhook "gatekeeper.sh" denied the request: '
            "everything is denied",
        ),
    ],
)
def test_rejection_reasons_not_accepted(code: int, message: str, kind: str, text: str) -> None:
    assert rc.rejection_verdict(code, message, HOOKS) == (kind, text)


def test_choose_webhook() -> None:
    configs = [
        {"metadata": {"name": "validator.trainer.kubeflow.org.old"}},
        {"metadata": {"name": "validator.trainer.kubeflow.org"}, "webhooks": [{"name": "a"}]},
        {"metadata": {"name": "z-dynamo-webhook"}},
        {"metadata": {"name": "a-dynamo-webhook"}},
    ]
    assert rc.choose_webhook(configs, rc.KUBEFLOW) is configs[1]
    assert rc.choose_webhook(configs, rc.DYNAMO) is configs[3]
    assert rc.choose_webhook(configs[:1], rc.KUBEFLOW) is None


def test_webhook_services_skip_url_entries_and_duplicates() -> None:
    config = {
        "webhooks": [
            {"name": "a", "clientConfig": {"service": {"namespace": "kubeflow", "name": "svc"}}},
            {"name": "b", "clientConfig": {"service": {"namespace": "kubeflow", "name": "svc"}}},
            {"name": "c", "clientConfig": {"url": "https://example.invalid/validate"}},
        ]
    }
    assert rc.webhook_services(config) == [("kubeflow", "svc")]
    assert rc.webhook_names(config) == ["a", "b", "c"]


def test_invalid_objects() -> None:
    assert rc.KUBEFLOW.invalid_object("t")["spec"]["runtimeRef"]["kind"] == "ClusterTrainingRuntime"
    assert rc.DYNAMO.invalid_object("d")["spec"] == {"components": []}


# --- the GPU test pods ---------------------------------------------------------------------------


def test_claim_shape_per_served_version() -> None:
    v1 = gw.build_claim("c", "ns", "resource.k8s.io/v1", {"l": "v"})
    assert v1["apiVersion"] == "resource.k8s.io/v1"
    assert v1["spec"]["devices"]["requests"] == [
        {
            "name": "gpu",
            "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1},
        }
    ]
    beta = gw.build_claim("c", "ns", "resource.k8s.io/v1beta1", {})
    assert beta["spec"]["devices"]["requests"] == [
        {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}
    ]


def test_device_plugin_pod_affinity_is_one_term_per_node() -> None:
    pod = gw.build_device_plugin_pod("p", "ns", ["n1", "n2"], [{"operator": "Exists"}], {})
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
    ]
    assert gw.pattern_errors_device_plugin(pod) is None
    granted, unauthorized = pod["spec"]["containers"]
    assert granted["resources"] == {"limits": {"nvidia.com/gpu": "1"}} and "resources" not in unauthorized


def test_probe_pod_tolerates_everything_and_is_pinned() -> None:
    pod = gw.build_probe_pod("probe", "ns", "node-1", {})
    assert pod["spec"]["nodeName"] == "node-1" and pod["spec"]["tolerations"] == [{"operator": "Exists"}]
    assert pod["spec"]["containers"][0]["image"] == gw.BUSYBOX_IMAGE


GRANT_OK = "granted GPU count: 1\ngranted GPU UUIDs: GPU-1 \nPASS: exactly one usable GPU visible\n"


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        (GRANT_OK, True),
        (
            "granted GPU count: 2\ngranted GPU UUIDs: GPU-1 GPU-2\n"
            "FAIL: expected exactly 1 usable GPU, saw 2\n",
            False,
        ),
        ("granted GPU count: 1\ngranted GPU UUIDs: GPU-1\n", False),  # no PASS line
        ("PASS: exactly one usable GPU visible\n", False),  # no count
        (GRANT_OK + GRANT_OK, False),  # two reports: ambiguous
        ("garbage\x00\n", False),
        ("", False),
    ],
)
def test_parse_grant_output_fail_closed(text: str, ok: bool) -> None:
    assert gw.parse_grant_output(text).ok is ok


def test_parse_absence_output() -> None:
    assert gw.parse_absence_output("PASS: GPU isolated\n")
    assert not gw.parse_absence_output("FAIL: GPU visible without GPU allocation\nPASS: GPU isolated\n")
    assert not gw.parse_absence_output("")


def finished(phase: str = "Succeeded", **codes: Any) -> Obj:
    statuses = []
    for name, code in codes.items():
        state = {"terminated": {"exitCode": code}} if code is not None else {"running": {}}
        statuses.append({"name": name.replace("_", "-"), "state": state})
    return {
        "metadata": {"name": "p"},
        "spec": {"nodeName": "n"},
        "status": {"phase": phase, "containerStatuses": statuses},
    }


def test_container_exit_code_fail_closed() -> None:
    pod = finished(gpu_test=0, unauthorized=None)
    assert gw.container_exit_code(pod, "gpu-test") == 0
    assert gw.container_exit_code(pod, "unauthorized") is None
    assert gw.container_exit_code(pod, "missing") is None
    weird = {"status": {"containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": "0"}}}]}}
    assert gw.container_exit_code(weird, "c") is None
    boolean = {"status": {"containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": False}}}]}}
    assert gw.container_exit_code(boolean, "c") is None


LOGS = {"gpu-test": GRANT_OK, "unauthorized": "PASS: GPU isolated\n"}


def test_isolation_verdicts() -> None:
    assert gw.isolation_verdict(finished(gpu_test=0, unauthorized=0), "DRA", LOGS) is None
    assert gw.isolation_verdict(finished("Failed", gpu_test=0, unauthorized=1), "DRA", LOGS) == (
        "GPU devices visible in unauthorized container unauthorized (exit code 1) — "
        "container-level isolation broken"
    )
    assert gw.isolation_verdict(finished("Failed", gpu_test=1, unauthorized=0), "device plugin", LOGS) == (
        "device plugin test pod phase=Failed (want Succeeded), GPU allocation may have failed"
    )
    assert gw.isolation_verdict(finished(gpu_test=0), "DRA", LOGS) == (
        "unauthorized container unauthorized has no terminated status — "
        "cannot verify container-level isolation"
    )
    # exit 0 but the output says two GPUs: the output wins (fail closed)
    two = {
        **LOGS,
        "gpu-test": "granted GPU count: 2\ngranted GPU UUIDs: a b\nPASS: exactly one usable GPU visible\n",
    }
    assert gw.isolation_verdict(finished(gpu_test=0, unauthorized=0), "DRA", two) == (
        "granted container gpu-test exited 0 but its output does not report exactly one usable GPU "
        "(2 GPU(s), PASS line present)"
    )
    # unreadable logs (kwok without Logs): the exit codes decide, as AICR does
    unread = {c: "failed to read logs: 404" for c in LOGS}
    assert gw.isolation_verdict(finished(gpu_test=0, unauthorized=0), "DRA", unread) is None


def probe(phase: str, code: int | None, **spec: Any) -> Obj:
    pod = finished(phase, isolation_test=code)
    pod["spec"].update(spec)
    return pod


def test_probe_verdicts() -> None:
    assert gw.probe_verdict(probe("Succeeded", 0), "PASS: GPU isolated\n") is None
    assert gw.probe_verdict(probe("Failed", 1), "") == (
        "GPU devices visible without any GPU allocation — isolation broken (container exit code 1)"
    )
    assert gw.probe_verdict(probe("Failed", 2), "") == (
        "no-allocation probe pod failed with exit code 2 — cannot verify isolation"
    )
    assert gw.probe_verdict(probe("Failed", None), "") == (
        "no-allocation probe pod failed with exit code -1 — cannot verify isolation"
    )
    hostpath = probe("Succeeded", 0, volumes=[{"name": "dev", "hostPath": {"path": "/dev/nvidia0"}}])
    assert gw.probe_verdict(hostpath, "PASS: GPU isolated\n") == (
        "no-allocation probe pod has hostPath volume to /dev/nvidia0 — isolation broken"
    )
    assert gw.probe_verdict(probe("Succeeded", 0), "FAIL: GPU visible without GPU allocation\n") == (
        "no-allocation probe pod exited 0 but its output does not report GPU isolation"
    )


def dra_pod(**over: Any) -> Obj:
    pod = gw.build_dra_pod("p", "ns", "claim", [{"operator": "Exists"}], {})
    pod["spec"].update(over)
    return pod


def test_dra_pattern_errors() -> None:
    assert gw.pattern_errors_dra(dra_pod()) is None
    assert gw.pattern_errors_dra(dra_pod(resourceClaims=[])) == "pod does not use DRA resourceClaims"
    pod = dra_pod()
    pod["spec"]["containers"][0]["resources"] = {}
    assert gw.pattern_errors_dra(pod) == "granted container gpu-test does not reference the ResourceClaim"
    pod = dra_pod()
    pod["spec"]["containers"][1]["resources"] = {"claims": [{"name": "gpu"}]}
    assert (
        gw.pattern_errors_dra(pod)
        == "unauthorized container unauthorized unexpectedly references a ResourceClaim"
    )
    pod = dra_pod()
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    assert gw.pattern_errors_dra(pod) == (
        "DRA test pod unexpectedly requests nvidia.com/gpu in limits — "
        "must allocate via its ResourceClaim only"
    )
    assert gw.pattern_errors_dra(
        dra_pod(volumes=[{"name": "d", "hostPath": {"path": "/dev/nvidiactl"}}])
    ) == ("pod has hostPath volume to /dev/nvidiactl")


def test_device_plugin_pattern_errors() -> None:
    pod = gw.build_device_plugin_pod("p", "ns", ["n"], [], {})
    pod["spec"]["resourceClaims"] = [{"name": "gpu"}]
    assert (
        gw.pattern_errors_device_plugin(pod) == "device plugin test pod unexpectedly uses DRA resourceClaims"
    )
    pod = gw.build_device_plugin_pod("p", "ns", ["n"], [], {})
    pod["spec"]["containers"][0]["resources"] = {}
    assert gw.pattern_errors_device_plugin(pod) == (
        "device plugin test pod does not request nvidia.com/gpu in resources.limits"
    )
    pod = gw.build_device_plugin_pod("p", "ns", ["n"], [], {})
    pod["spec"]["containers"][1]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    assert gw.pattern_errors_device_plugin(pod) == (
        "unauthorized container unauthorized unexpectedly requests nvidia.com/gpu in resources.limits"
    )


# --- NVIDIA ResourceSlice validation ---------------------------------------------------------------


def node(name: str, ready: bool = True, cordoned: bool = False) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {"unschedulable": cordoned},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def rslice(name: str, driver: str, node_name: str, *, count: int = 1, gen: int = 1, pool: str | None = None,
           devices: list[Obj] | None = None) -> Obj:  # fmt: skip
    return {
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": pool or node_name, "generation": gen, "resourceSliceCount": count},
            "devices": devices if devices is not None else [{"name": "d0"}],
        },
    }


def test_compute_domain_only_slices_validate() -> None:
    v = validate_nvidia_slices([rslice("s", "compute-domain.nvidia.com", "n1")], [node("n1")])
    assert v.drivers == ("compute-domain.nvidia.com",) and v.usable_nodes == 1
    assert v.lines[-1] == "driver compute-domain.nvidia.com: usable nodes=[n1]"


@pytest.mark.parametrize(
    ("slices", "nodes"),
    [
        ([rslice("s", "gpu.nvidia.com", "n1", count=2)], [node("n1")]),  # incomplete pool
        (
            [rslice("a", "gpu.nvidia.com", "n1", pool="p"), rslice("b", "gpu.nvidia.com", "n1", pool="p")],
            [node("n1")],
        ),
        (
            [
                rslice(
                    "s", "gpu.nvidia.com", "n1", devices=[{"name": "d", "taints": [{"effect": "NoSchedule"}]}]
                )
            ],
            [node("n1")],
        ),
        ([rslice("s", "gpu.nvidia.com", "n1")], [node("n1", ready=False)]),
        ([rslice("s", "gpu.nvidia.com", "n1")], [node("n1", cordoned=True)]),
        ([rslice("s", "gpu.nvidia.com", "other")], [node("n1")]),
    ],
    ids=["incomplete", "duplicate-devices", "tainted", "not-ready", "cordoned", "no-such-node"],
)
def test_invalid_slices_do_not_count(slices: list[Obj], nodes: list[Obj]) -> None:
    v = validate_nvidia_slices(slices, nodes)
    assert v.drivers == ("gpu.nvidia.com",) and v.usable_nodes == 0


def test_stale_generation_is_ignored_and_foreign_drivers_are_not_nvidia() -> None:
    slices = [
        rslice("old", "gpu.nvidia.com", "n1", gen=1, count=2),
        rslice("new", "gpu.nvidia.com", "n1", gen=2, count=1),
        rslice("amd", "gpu.amd.com", "n1"),
    ]
    v = validate_nvidia_slices(slices, [node("n1")])
    assert v.drivers == ("gpu.nvidia.com",) and dict(v.usable) == {"gpu.nvidia.com": {"n1": 1}}


# --- platform-health ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "obj", "problem"),
    [
        (
            "Deployment",
            {"spec": {"replicas": 2}, "status": {"availableReplicas": 1}},
            "not healthy: 1/2 replicas available",
        ),
        ("Deployment", {"spec": {}, "status": {"availableReplicas": 1}}, None),
        (
            "DaemonSet",
            {"status": {"desiredNumberScheduled": 0, "numberReady": 0}},
            "not healthy: 0/0 pods ready (desiredNumberScheduled is 0: the DaemonSet runs on no node)",
        ),
        (
            "DaemonSet",
            {"status": {"desiredNumberScheduled": 4, "numberReady": 3}},
            "not healthy: 3/4 pods ready",
        ),
        ("StatefulSet", {"spec": {"replicas": 1}, "status": {}}, "not healthy: 0/1 replicas ready"),
        ("ConfigMap", {}, None),
    ],
)
def test_resource_problem(kind: str, obj: Obj, problem: str | None) -> None:
    assert resource_problem(kind, obj) == problem


# --- the conformance player's probe output --------------------------------------------------------


def test_player_output_follows_the_probe_scripts() -> None:
    log, code = player.container_output(gw.GRANT_PROBE, 1, "node") or ("", -1)
    assert code == 0 and gw.parse_grant_output(log).ok
    log, code = player.container_output(gw.GRANT_PROBE, 8, "node") or ("", -1)
    assert code == 1 and "FAIL: expected exactly 1 usable GPU, saw 8" in log
    log, code = player.container_output(gw.GRANT_PROBE, 0, "node") or ("", -1)
    assert code == 1 and "FAIL: nvidia-smi cannot enumerate GPUs - no usable GPU granted" in log
    assert player.container_output(gw.ABSENCE_PROBE, 0, "node") == ("PASS: GPU isolated\n", 0)
    assert player.container_output(gw.ABSENCE_PROBE, 8, "node") == (
        "FAIL: GPU visible without GPU allocation\n",
        1,
    )
    assert player.container_output("sleep 1", 0, "node") is None
    assert (
        player.echo_text("echo 'Gang worker 1 completed successfully'")
        == "Gang worker 1 completed successfully\n"
    )
