"""NCCL all-reduce paths beyond H100/EKS EFA and GB200, end to end on the fake cluster.

* **GKE / GPUDirect-TCPXO** (``h100-gke-training``): ``runtimes/nccl/h100/gke``, GKE GPU NIC
  discovery (``networks.networking.gke.io``) feeding the workers' ``networking.gke.io/interfaces``,
  the TCPXO preflight probe on every target node, and the launcher's termination-message copy of
  the results table.
* **RoCE on EKS** (``gb300-eks-roce-training``, ``AICR_NCCL_FABRIC=roce``, ``-net`` only): the RoCE
  ResourceClaimTemplate is created before the TrainingRuntime, every worker claims it, NCCL runs
  over ``IB`` (RoCE) and cleanup removes the template.
* **Trainer admission retry**: TrainJob creates refused the way Trainer's webhook refuses them
  before its cache has the runtime are retried within the budget; a webhook that never admits ends
  the check (``other``) with the exact budget message.

Each scenario runs the bundled check in-process through :func:`run_on_fake` on a virtual clock.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from aicr_pytest import nccl
from aicr_pytest.nccl import cluster as nccl_cluster
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.simulator import PodScript, Simulator
from aicr_pytest.testing.store import Obj, clone
from tests.cluster._facade_helpers import clock_driver
from tests.cluster.check_runner import PhaseRun, run_on_fake
from tests.cluster.test_nccl_check import (
    BW,
    NET,
    RUN_LABEL,
    SNAPSHOT,
    bandwidth,
    leftovers,
    recipe_with,
)

NS = "aicr-validation"
RJOB = "jobset.sigs.k8s.io/replicatedjob-name"
COMPONENT = "app.kubernetes.io/component"
GKE_NODES = [f"a3mega-{i}" for i in range(4)]
GB300_NODES = [f"gb300-{i}" for i in range(4)]
NICS = [{"interfaceName": "eth0", "network": "default"}] + [
    {"interfaceName": f"eth{i + 1}", "network": f"gpu-nic{i}"} for i in range(8)
]
ADMISSION_TIMEOUT = re.compile(
    r"^timed out applying NCCL TrainJob: Trainer webhook did not admit it within the retry budget "
    r"\((?P<attempts>\d+) attempts\): (?P<error>.*)$",
    re.S,
)


# ------------------------------------------------------------------------------------ helpers --
def one_check(check: str, value: str, **criteria: str) -> dict[str, Any]:
    return recipe_with({"checks": [check], "constraints": [{"name": check, "value": value}]}, **criteria)


def gke_recipe(value: str = ">= 300") -> dict[str, Any]:
    return one_check(BW, value, service="gke")


def roce_recipe(value: str = ">= 40", **criteria: str) -> dict[str, Any]:
    return one_check(NET, value, **{"accelerator": "gb300", **criteria})


def run(
    pytester: pytest.Pytester, fc: FakeCluster, recipe: dict[str, Any], *extra: str, auto: bool = False
) -> PhaseRun:
    """The performance phase on ``fc``: time moves from a background driver, or (``auto``) only when
    the check sleeps or every client waits in a watch, so counting retries is deterministic."""
    return run_on_fake(
        pytester,
        fc,
        phase="performance",
        recipe=recipe,
        snapshot=SNAPSHOT,
        extra=extra,
        drive=None if auto else clock_driver(fc, step=0.25),
    )


class PodLog:
    """The last seen version of every pod (the run deletes them; tests look at what ran)."""

    def __init__(self, fc: FakeCluster) -> None:
        self._by_uid: dict[str, Obj] = {}
        fc.sim.on_create("", "v1", "pods", self._seen)
        fc.sim.on_update("", "v1", "pods", self._seen)

    def _seen(self, sim: Simulator, pod: Obj) -> None:
        self._by_uid[pod["metadata"]["uid"]] = clone(pod)

    def all(self) -> list[Obj]:
        return list(self._by_uid.values())


def role(pods: list[Obj], name: str) -> list[Obj]:
    return [p for p in pods if (p["metadata"].get("labels") or {}).get(RJOB) == name]


def probes(pods: list[Obj], component: str) -> list[Obj]:
    return [p for p in pods if (p["metadata"].get("labels") or {}).get(COMPONENT) == component]


def posts(fc: FakeCluster, plural: str) -> list[int]:
    """HTTP statuses of the POSTs to ``plural`` in the run's namespace, in order."""
    path = re.compile(rf"/namespaces/{NS}/{plural}$")
    return [r.status for r in fc.server.requests if r.method == "POST" and path.search(r.path)]


def first_post(fc: FakeCluster, plural: str) -> int:
    path = re.compile(rf"/namespaces/{NS}/{plural}$")
    return next(i for i, r in enumerate(fc.server.requests) if r.method == "POST" and path.search(r.path))


def assert_clean(fc: FakeCluster, phase_run: PhaseRun) -> None:
    assert leftovers(fc, f"{RUN_LABEL}={phase_run.run_id}") == []
    assert leftovers(fc) == []


# --------------------------------------------------------------------------------- GKE / TCPXO --
def test_gke_tcpxo_passes_with_nic_discovery_preflight_and_termination_message(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    pod_log = PodLog(fc)
    phase_run = run(pytester, fc, gke_recipe())
    t = phase_run.tests[BW]
    assert t["status"] == "passed", (t.get("message"), phase_run.result.outlines[-30:])
    pods = pod_log.all()
    check, bw = bandwidth(t["stdout"])
    assert check == BW and 330 <= bw <= 350  # a3-megagpu-8g over TCPXO, ~340 GB/s
    assert t["stdout"] == [f"NCCL All Reduce bandwidth ({BW}): {bw:.2f} GB/s", "Constraint: >= 300 → true"]
    run_info = t["extra"]["aicr.ncclRun"]
    assert run_info["runtime"] == "h100/gke/runtime.yaml"
    assert (run_info["workers"], run_info["gpusPerWorker"], run_info["nodes"]) == (4, 8, GKE_NODES)

    # TCPXO preflight: one pinned, read-only probe of the host's TCPXO directory per target node
    tcpxo = probes(pods, "nccl-tcpxo-probe")
    assert sorted(p["spec"]["nodeName"] for p in tcpxo) == GKE_NODES
    for probe in tcpxo:
        assert probe["spec"]["volumes"][0]["hostPath"] == {
            "path": "/home/kubernetes/bin/nvidia",
            "type": "DirectoryOrCreate",
        }
        assert (
            "test -f /host-nvidia/lib64/nccl-env-profile.sh" in probe["spec"]["containers"][0]["command"][2]
        )
    assert posts(fc, "pods")[:4] == [201] * 4 and first_post(fc, "pods") < first_post(fc, "trainingruntimes")

    # GKE NIC discovery → eth0 + the 8 sorted gpu-nic Networks on every worker; TCPXO sidecar;
    # GKE scheduling (gke-accelerator selector, the nvidia.com/gpu=present taint tolerated)
    workers = role(pods, "node")
    assert sorted(w["spec"]["nodeName"] for w in workers) == GKE_NODES
    for w in workers:
        annotations = w["metadata"]["annotations"]
        assert json.loads(annotations["networking.gke.io/interfaces"]) == NICS
        assert "- path: /dev/nvidia7" in annotations["devices.gke.io/container.tcpxo-daemon"]
        assert [c["name"] for c in w["spec"]["initContainers"]] == ["tcpxo-daemon"]
        assert w["spec"]["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb"}
        assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in (
            w["spec"]["tolerations"]
        )

    # transport: the player ran FasTrak (every worker TCPXO-ready); NCCL_DEBUG=WARN prints no banner,
    # and the launcher's wrapper copied the results table into its termination message
    (launch,) = fc.state["nccl_launches"]
    assert launch["network"] == "FasTrak"
    message = launch["termination_message"]
    assert message.rstrip().splitlines()[-1].startswith("# Avg bus bandwidth")
    assert nccl.parse_all_reduce(message).busbw_gbps == pytest.approx(bw, abs=0.01)
    sweep = t["extra"]["aicr.ncclSweep"]
    assert sweep["transport"]["network"] is None
    # the appended copy is read as the same sweep, not a second table
    assert [r["size_bytes"] for r in sweep["rows"]] == [1024 << i for i in range(25)]
    assert sweep["complete"] is True
    assert_clean(fc, phase_run)


def test_gke_rotated_launcher_log_is_read_from_the_termination_message(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    """#1713: teardown noise rotated the table out of the served log; the termination message has it."""
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training", faults=["nccl-launcher-log-rotated"])
    phase_run = run(pytester, fc, gke_recipe())
    t = phase_run.tests[BW]
    assert t["status"] == "passed", t.get("message")
    _, bw = bandwidth(t["stdout"])
    assert t["stdout"][1] == "Constraint: >= 300 → true" and 330 <= bw <= 350
    sweep = t["extra"]["aicr.ncclSweep"]
    assert sweep["size_bytes"] == 16 << 30 and len(sweep["rows"]) == 25
    assert_clean(fc, phase_run)


def test_tcpxo_preflight_names_the_node_without_the_plugin(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training", faults=["tcpxo-plugin-missing"])
    phase_run = run(pytester, fc, gke_recipe())
    t = phase_run.tests[BW]
    assert t["status"] == "failed"
    assert t["message"] == nccl_cluster.MSG_TCPXO_NOT_READY.format(nodes="a3mega-3")
    assert t["message"].startswith("GPUDirect-TCPXO not ready on GPU nodes: a3mega-3. ")
    assert posts(fc, "trainingruntimes") == [] and posts(fc, "trainjobs") == []
    assert_clean(fc, phase_run)


def test_tcpxo_probe_failing_without_its_marker_is_unexpected(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    fc.sim.script(
        PodScript(
            labels={COMPONENT: "nccl-tcpxo-probe"},
            predicate=lambda pod: pod["spec"].get("nodeName") == "a3mega-1",
            exit_code=126,
            logs="/bin/sh: test: Permission denied\n",
        )
    )
    phase_run = run(pytester, fc, gke_recipe())
    t = phase_run.tests[BW]
    assert t["status"] == "failed"
    assert t["message"] == (
        'TCPXO preflight pod on node "a3mega-1" Failed for an unexpected reason '
        '(output: "/bin/sh: test: Permission denied")'
    )
    assert_clean(fc, phase_run)


def test_gke_with_fewer_than_eight_gpu_nics_fails_before_creating_anything(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training", faults=["gke-gpu-nics-incomplete"])
    phase_run = run(pytester, fc, gke_recipe())
    t = phase_run.tests[BW]
    assert t["status"] == "failed"
    assert t["message"] == (
        "expected 8 GPU NIC networks, found 6 — cluster may not have multi-NIC networking configured"
    )
    assert fc.request_count("POST") == 0


def test_gke_mixed_accelerator_labels_fail(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    fc.sim.store.mutate(
        fc.sim.rt("v1", "Node"),
        None,
        "a3mega-2",
        lambda n: n["metadata"]["labels"].update({"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}),
    )
    phase_run = run(pytester, fc, gke_recipe())
    t = phase_run.tests[BW]
    assert t["status"] == "failed"
    assert t["message"] == nccl.MSG_GKE_MIXED_ACCELERATOR
    assert fc.request_count("POST") == 0


# ------------------------------------------------------------------------------------- RoCE --
def test_roce_net_claims_nics_before_the_runtime_and_cleans_the_claim_template(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AICR_NCCL_FABRIC", "roce")
    fc: FakeCluster = aicr_fake_cluster_factory("gb300-eks-roce-training")
    pod_log = PodLog(fc)
    templates: list[Obj] = []
    fc.sim.on_create(
        "resource.k8s.io", "v1", "resourceclaimtemplates", lambda sim, obj: templates.append(clone(obj))
    )
    phase_run = run(pytester, fc, roce_recipe())
    t = phase_run.tests[NET]
    assert t["status"] == "passed", (t.get("message"), phase_run.result.outlines[-30:])
    pods = pod_log.all()
    check, bw = bandwidth(t["stdout"])
    assert check == NET and bw > 44
    assert t["stdout"] == [f"NCCL All Reduce bandwidth ({NET}): {bw:.2f} GB/s", "Constraint: >= 40 → true"]
    run_info = t["extra"]["aicr.ncclRun"]
    assert run_info["runtime"] == "roce/eks/runtime-net.yaml"
    assert (run_info["workers"], run_info["gpusPerWorker"], run_info["nodes"]) == (4, 4, GB300_NODES)

    # the claim template: one RoCE NIC per GPU, run-scoped, created before the TrainingRuntime
    (rct,) = templates
    name = rct["metadata"]["name"]
    assert rct["metadata"]["labels"][RUN_LABEL] == phase_run.run_id and phase_run.run_id in name
    (request,) = rct["spec"]["spec"]["devices"]["requests"]
    assert request == {"name": "roce", "exactly": {"deviceClassName": "roce.networking.k8s.aws", "count": 4}}
    assert posts(fc, "resourceclaimtemplates") == [201]
    assert first_post(fc, "resourceclaimtemplates") < first_post(fc, "trainingruntimes")
    assert not probes(pods, "nccl-nvreg-probe")  # the NVreg preflight is an EFA requirement

    # every worker claims it (and asks for no EFA); NCCL used the RoCE NICs (IB verbs)
    workers = role(pods, "node")
    assert sorted(w["spec"]["nodeName"] for w in workers) == GB300_NODES
    for w in workers:
        assert w["spec"]["resourceClaims"] == [{"name": "roce", "resourceClaimTemplateName": name}]
        (container,) = w["spec"]["containers"]
        assert container["resources"]["claims"] == [{"name": "roce"}]
        assert "vpc.amazonaws.com/efa" not in container["resources"]["limits"]
    (launch,) = fc.state["nccl_launches"]
    assert launch["network"] == "IB" and set(launch["roce_devices"].values()) == {4}
    sweep = t["extra"]["aicr.ncclSweep"]
    assert sweep["transport"]["network"] == "IB"
    assert sweep["size_bytes"] == 16 << 30  # no EFA, yet no TCP-fallback cap: RoCE carries 16G
    assert_clean(fc, phase_run)
    assert fc.list("resource.k8s.io/v1", "ResourceClaimTemplate", NS) == []


def test_roce_without_the_dra_driver_fails_on_the_socket_fallback(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AICR_NCCL_FABRIC", "roce")
    fc: FakeCluster = aicr_fake_cluster_factory("gb300-eks-roce-training", faults=["roce-driver-missing"])
    phase_run = run(pytester, fc, roce_recipe())
    t = phase_run.tests[NET]
    assert t["status"] == "failed"
    assert t["message"] == nccl.MSG_NET_SOCKET
    assert t.get("stdout", []) == []
    assert t["extra"]["aicr.ncclSweep"]["transport"]["network"] == "Socket"
    assert fc.state["nccl_launches"][0]["network"] == "Socket"
    assert_clean(fc, phase_run)


def test_roce_outside_eks_skips_before_touching_the_cluster(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RoCE -net is service-keyed (eks only); elsewhere the check is not implemented."""
    monkeypatch.setenv("AICR_NCCL_FABRIC", "roce")
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    phase_run = run(pytester, fc, roce_recipe(service="gke"))
    t = phase_run.tests[NET]
    assert t["status"] == "skipped"
    assert t["message"] == "skipped - requires Service + Accelerator to be implemented"
    assert fc.request_count("POST") == 0


def test_roce_fabric_does_not_touch_the_default_variant(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``AICR_NCCL_FABRIC`` is scoped to -net: the GKE default benchmark still runs TCPXO."""
    monkeypatch.setenv("AICR_NCCL_FABRIC", "roce")
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    phase_run = run(pytester, fc, gke_recipe())
    t = phase_run.tests[BW]
    assert t["status"] == "passed", t.get("message")
    assert t["extra"]["aicr.ncclRun"]["runtime"] == "h100/gke/runtime.yaml"
    assert posts(fc, "resourceclaimtemplates") == []


# ------------------------------------------------------------------------ admission webhook --
def test_trainjob_denied_by_the_webhook_cache_race_is_retried_then_admitted(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training", faults=["trainer-webhook-cache-lag"])
    phase_run = run(pytester, fc, one_check(BW, ">= 300"), auto=True)
    t = phase_run.tests[BW]
    assert t["status"] == "passed", t.get("message")
    _, bw = bandwidth(t["stdout"])
    assert t["stdout"] == [f"NCCL All Reduce bandwidth ({BW}): {bw:.2f} GB/s", "Constraint: >= 300 → true"]
    assert posts(fc, "trainjobs") == [403, 403, 403, 201]
    assert posts(fc, "trainingruntimes") == [201]  # the runtime is created once, not re-applied
    assert_clean(fc, phase_run)


def test_webhook_that_never_admits_ends_with_the_budget_message(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training", faults=["trainer-webhook-never-admits"])
    phase_run = run(pytester, fc, one_check(BW, ">= 300"), auto=True)
    t = phase_run.tests[BW]
    assert t["status"] == "other"
    m = ADMISSION_TIMEOUT.match(t["message"])
    assert m, t["message"]
    statuses = posts(fc, "trainjobs")
    assert int(m["attempts"]) == len(statuses) and set(statuses) == {403}
    # 60 s budget, one attempt every 0.5 s of virtual time: t = 0, 0.5, ..., 60
    assert len(statuses) == int(nccl_cluster.ADMISSION_RETRY_S / nccl_cluster.ADMISSION_RETRY_INTERVAL_S) + 1
    runtime = m["error"].split('trainingruntimes.trainer.kubeflow.org "')[1].split('"')[0]
    assert runtime.startswith("nccl-bw-rt-") and runtime.endswith(phase_run.run_id)  # the run's own
    ref = f'{{"apiGroup":"trainer.kubeflow.org","kind":"TrainingRuntime","name":"{runtime}"}}'
    # the facade's AdmissionDenied: the webhook's own words, never "RBAC denied"
    assert re.fullmatch(
        r'admission denied: cannot create trainjobs\.trainer\.kubeflow\.org "[^"]+" in namespace [^:]+: '
        + re.escape(
            'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: '
            f"spec.runtimeRef: Invalid value: {ref}: "
            f'trainingruntimes.trainer.kubeflow.org "{runtime}" not found: '
            "specified trainingRuntime must be created before the TrainJob is created"
        )
        + re.escape(" (403 Forbidden)"),
        m["error"],
    ), m["error"]
    assert "RBAC denied" not in t["message"]
    assert_clean(fc, phase_run)


def test_a_webhook_denial_that_is_not_the_cache_race_is_not_retried(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training")
    fc.faults.reject(
        "POST",
        r"/trainjobs$",
        status=422,
        message='admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: '
        "spec.trainer.numNodes: Invalid value: 4: must not exceed the runtime's maximum",
        times=None,
    )
    phase_run = run(pytester, fc, one_check(BW, ">= 300"))
    t = phase_run.tests[BW]
    assert t["status"] == "other"
    assert "must not exceed the runtime's maximum" in t["message"]
    assert posts(fc, "trainjobs") == [422]
    assert_clean(fc, phase_run)
