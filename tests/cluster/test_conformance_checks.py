"""Conformance phase I end to end: the bundled checks through pytester on both backends (``k8s_backend``).

Every scenario runs the conformance phase with ``--kubeconfig`` set to the backend's least-privilege
kubeconfig (on the control plane: the user bound to ``deploy/rbac.yaml`` only; an RBAC denial is a red
test). The fake is seeded with a profile and its faults (the conformance player plays the GPU probe
pods, KAI gangs and operator webhooks); the control plane with the same profile, where the real
scheduler allocates DRA claims and binds device-plugin pods, and the test controllers of
:mod:`tests.harness.controlplane_conformance` play what kwok cannot (probe output, KAI's gang binder,
the operators' webhooks behind the apiserver). Scenarios only the fake can express are marked
``fake_only`` with the reason.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _facade_helpers import fake_of

import aicr_pytest.conformance
import aicr_pytest.core.inputs
import aicr_pytest.plugin
from aicr_pytest.conformance import dra_support, gang_scheduling, robust_controller, testns
from aicr_pytest.core import catalog, yamlio
from aicr_pytest.core.artifacts import EXTRA_KEY
from aicr_pytest.kube.client import RUN_ID_LABEL
from tests.cluster.check_runner import PhaseRun, run_on_backend, run_phase
from tests.data_trees import catalog_data_tree
from tests.harness.backends import K8sBackend

#: a coherent chart for extra component refs (load-time coherence)
CHART = {"source": "https://charts.example.com", "version": "1.0.0"}

REPO = Path(__file__).resolve().parents[2]
TRAINING = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
DRA = REPO / "recipes" / "examples" / "h100-eks-training-dra.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
DRA_PROFILE = "h100-eks-training-dra"
PHASE1 = (
    "dra-support",
    "gang-scheduling",
    "robust-controller",
    "secure-accelerator-access",
    "gpu-operator-health",
    "platform-health",
)

Recipe = dict[str, Any]


def recipe(base: Path, *checks: str, edit: Callable[[Recipe], None] | None = None) -> Recipe:
    doc: Recipe = yamlio.load(base.read_text())
    doc["validation"] = {"conformance": {"checks": list(checks)}}
    if edit is not None:
        edit(doc)
    return doc


def component(doc: Recipe, name: str) -> dict[str, Any]:
    return next(c for c in doc["componentRefs"] if c["name"] == name)


def run(
    pytester: pytest.Pytester, backend: K8sBackend, doc: Recipe, *extra: str, denial_expected: bool = False
) -> PhaseRun:
    """The conformance phase of ``doc`` as the least-privilege user; no RBAC denial unless the scenario
    injects one (``denial_expected``)."""
    drive = fake_of(backend).auto_advancing() if backend.virtual_time else None
    if denial_expected:
        result = run_phase(
            pytester,
            phase="conformance",
            recipe=doc,
            snapshot=SNAPSHOT,
            kubeconfig=backend.restricted_kubeconfig_path,
            clock=backend.check_clock,
            extra=extra,
            drive=drive,
        )
    else:
        result = run_on_backend(
            pytester, backend, phase="conformance", recipe=doc, snapshot=SNAPSHOT, extra=extra, drive=drive
        )
    assert backend.controller_errors() == []
    return result


def labels(test: dict[str, Any]) -> list[str]:
    return [a["label"] for a in (test.get("extra") or {}).get(EXTRA_KEY) or []]


def artifact(test: dict[str, Any], label: str) -> str:
    found = [a["data"] for a in (test.get("extra") or {}).get(EXTRA_KEY) or [] if a["label"] == label]
    assert len(found) == 1, f"artifact {label!r}: {labels(test)}"
    return str(found[0])


def leftovers(backend: K8sBackend, run_id: str, timeout: float = 60.0) -> list[str]:
    """Objects still labelled with the run id (the control plane's namespace controller needs time)."""
    kinds = [
        ("v1", "Namespace"),
        ("v1", "Pod"),
        ("resource.k8s.io/v1", "ResourceClaim"),
        ("scheduling.run.ai/v2alpha2", "PodGroup"),
        ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
    ]
    deadline = time.monotonic() + timeout
    while True:
        found = [
            f"{kind} {(o.get('metadata') or {}).get('namespace', '')}/{o['metadata']['name']}"
            for api_version, kind in kinds
            for o in backend.list(api_version, kind, None, label_selector=f"{RUN_ID_LABEL}={run_id}")
            if not (o.get("metadata") or {}).get("deletionTimestamp")
        ]
        if not found or backend.virtual_time or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


# --- the healthy profiles -------------------------------------------------------------------------


def test_healthy_training_profile_passes_all_six(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    result = run(pytester, k8s_backend, recipe(TRAINING, *PHASE1))
    statuses = {name: (t["status"], t.get("message")) for name, t in result.tests.items()}
    assert statuses == {name: ("passed", None) for name in PHASE1}
    dra = result.tests["dra-support"]
    assert labels(dra) == [
        "DRA driver namespace",
        "DRA API resources",
        "DRA driver pods",
        "DRA Controller Deployment",
        "DRA Kubelet Plugin DaemonSet",
        "ResourceSlices",
        "GPU allocation policy",
        "GPU allocation mode",
        "Behavioral IMEX channel allocation",  # not applicable: no NVLink clique
        "Behavioral GPU allocation",
    ]
    assert artifact(dra, "GPU allocation policy") == "configured policy: device-plugin-extended-resource"
    assert artifact(dra, "Behavioral GPU allocation").startswith(
        dra_support.MSG_NA_DEVICE_PLUGIN.split("{detail}")[0]
    )
    # the artifacts are the stdout blocks, in AICR's format
    assert "--- DRA driver namespace ---" in dra["stdout"]
    secure = result.tests["secure-accelerator-access"]
    assert artifact(secure, "Secure access mode") == "mode exercised: device plugin (nvidia.com/gpu limits)"
    assert "PASS: exactly one usable GPU visible" in artifact(secure, "GPU test pod logs (gpu-test)")
    assert artifact(secure, "GPU test pod logs (unauthorized)").strip() == "PASS: GPU isolated"
    assert artifact(secure, "Cleanup test namespace").endswith(
        "confirmed absent (all test resources removed with it)"
    ) or artifact(secure, "Cleanup test namespace").startswith("WARNING: namespace")
    gang = result.tests["gang-scheduling"]
    assert "Gang worker 0 completed successfully" in artifact(gang, "gang-worker-0 logs")
    assert "Schedule span:" in artifact(gang, "Pod status")
    robust = result.tests["robust-controller"]
    assert 'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request' in artifact(
        robust, "Webhook Rejection Test"
    )
    assert leftovers(k8s_backend, result.run_id) == []


def test_dra_profile_runs_the_behavioral_claim(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(DRA_PROFILE)
    result = run(pytester, k8s_backend, recipe(DRA, "dra-support", "secure-accelerator-access"))
    dra, secure = result.tests["dra-support"], result.tests["secure-accelerator-access"]
    assert dra["status"] == "passed", dra.get("message")
    assert secure["status"] == "passed", secure.get("message")
    assert artifact(dra, "GPU allocation policy") == "configured policy: dra-resource-claim"
    created = artifact(dra, "Created test resources")
    assert created.startswith(f"Namespace: {testns.NAMESPACE_PREFIX}") and result.run_id in created
    assert "API version: resource.k8s.io/v1" in created
    assert "Phase: Succeeded" in artifact(dra, "Pod status")
    if k8s_backend.virtual_time:  # the real claim controller deallocates a claim once its pod is done
        assert "Allocated devices: 1" in artifact(dra, "ResourceClaim status")
    assert artifact(secure, "Secure access mode") == "mode exercised: DRA (gpu.nvidia.com ResourceClaim)"
    assert "Allocated devices: " in artifact(secure, "ResourceClaim allocation")
    assert "Verdict: no GPU visible without an allocation" in artifact(secure, "DRA Isolation Test")
    assert leftovers(k8s_backend, result.run_id) == []


# --- dra-support ----------------------------------------------------------------------------------


def test_dra_support_skips_when_the_recipe_disables_the_driver(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    def disable(doc: Recipe) -> None:
        component(doc, "nvidia-dra-driver-gpu")["overrides"]["enabled"] = False

    k8s_backend.seed_profile(PROFILE)
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support", edit=disable)).tests["dra-support"]
    assert (test["status"], test["message"]) == ("skipped", dra_support.MSG_SKIP_RECIPE)


def test_policy_mismatch_fails_both_gpu_checks(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    """Recipe says DRA, the cluster serves whole GPUs through the device plugin only."""
    k8s_backend.seed_profile(PROFILE, ["dra-gpu-slices-missing"])
    result = run(pytester, k8s_backend, recipe(DRA, "dra-support", "secure-accelerator-access"))
    for name in ("dra-support", "secure-accelerator-access"):
        test = result.tests[name]
        assert test["status"] == "failed"
        assert test["message"].startswith(
            "[INVALID_REQUEST] GPU allocation policy mismatch: the recipe configures "
            '"dra-resource-claim" but the cluster has no usable full-GPU DRA (gpu.nvidia.com DeviceClass + '
            "validated ResourceSlices).\n"
            "Observed state:\nDRA (gpu.nvidia.com): usable=false nodes=[]\n"
        ), test["message"]
        assert "full-GPU DRA not usable: DeviceClass gpu.nvidia.com not found" in test["message"]
    # ComputeDomain-only slices are enough for DRA itself: the mismatch is the only failure
    assert "driver compute-domain.nvidia.com: usable nodes=[" in artifact(
        result.tests["dra-support"], "ResourceSlices"
    )


@pytest.mark.fake_only("the control plane's kwok GPU nodes always advertise nvidia.com/gpu")
def test_device_plugin_recipe_on_a_dra_only_cluster_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(DRA_PROFILE)
    test = run(pytester, k8s_backend, recipe(TRAINING, "secure-accelerator-access")).tests[
        "secure-accelerator-access"
    ]
    assert test["status"] == "failed"
    assert test["message"].startswith(
        "[INVALID_REQUEST] GPU allocation policy mismatch: the recipe configures "
        '"device-plugin-extended-resource" '
        "but no Ready, schedulable node advertises allocatable nvidia.com/gpu.\nObserved state:\n"
    )


def test_dra_support_fails_without_nvidia_slices(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-inference")  # the DRA driver runs, but publishes no slices
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support")).tests["dra-support"]
    assert (test["status"], test["message"]) == ("failed", "[NOT_FOUND] " + dra_support.MSG_NO_NVIDIA_SLICES)


@pytest.mark.fake_only("the apiserver answers 404 for every resource.k8s.io version (DRA API not served)")
def test_dra_api_not_served(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    """Not served at all: dra-support (driver in scope) fails; secure-accelerator-access reads it as
    zero DRA and exercises the device plugin the recipe configures."""
    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).faults.reject(
        "GET", r"^/apis/resource\.k8s\.io/v1(beta[12])?$", status=404, reason="NotFound", times=None
    )
    result = run(pytester, k8s_backend, recipe(TRAINING, "dra-support", "secure-accelerator-access"))
    dra, secure = result.tests["dra-support"], result.tests["secure-accelerator-access"]
    assert (dra["status"], dra["message"]) == (
        "failed",
        "[SERVICE_UNAVAILABLE] " + dra_support.MSG_NO_VERSION,
    )
    assert secure["status"] == "passed", secure.get("message")
    assert (
        artifact(secure, "ResourceSlices")
        == "no served resource.k8s.io API version — ResourceSlices unavailable"
    )


@pytest.mark.fake_only("removes the DRA controller Deployment from the seeded profile")
def test_dra_support_fails_without_the_controller(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).delete("apps/v1", "Deployment", dra_support.CONTROLLER, "nvidia-dra-driver")
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support")).tests["dra-support"]
    assert test["status"] == "failed"
    assert test["message"].startswith(
        "[NOT_FOUND] deployment nvidia-dra-driver/nvidia-dra-driver-gpu-controller not found: "
    )


@pytest.mark.fake_only("writes DaemonSet status the real DaemonSet controller owns")
def test_dra_support_fails_when_no_kubelet_plugin_is_ready(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).sim.set_daemonset_status("nvidia-dra-driver", dra_support.KUBELET_PLUGIN, ready=0)
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support")).tests["dra-support"]
    assert (test["status"], test["message"]) == (
        "failed",
        "[INTERNAL] daemonset nvidia-dra-driver/nvidia-dra-driver-gpu-kubelet-plugin not ready: 0/4 pods",
    )


@pytest.mark.fake_only("rewrites the profile's ResourceSlices into incomplete pools")
def test_dra_support_fails_when_no_slice_validates(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE)
    fc = fake_of(k8s_backend)
    rt = fc.store.resolve("resource.k8s.io/v1", "ResourceSlice")
    for s in fc.list("resource.k8s.io/v1", "ResourceSlice"):

        def incomplete(obj: dict[str, Any]) -> None:
            obj["spec"]["pool"]["resourceSliceCount"] = 2  # one of two slices published

        fc.store.mutate(rt, None, s["metadata"]["name"], incomplete)
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support")).tests["dra-support"]
    assert (test["status"], test["message"]) == ("failed", "[INTERNAL] " + dra_support.MSG_NO_VALID_SLICES)


@pytest.mark.fake_only("HTTP fault injection: ResourceSlice list answers 500 past the retry budget")
def test_dra_support_list_error_is_other(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).faults.server_error("GET", r"/resourceslices$", times=None)
    test = run(pytester, k8s_backend, recipe(TRAINING, "dra-support")).tests["dra-support"]
    assert test["status"] == "other"
    assert test["message"].startswith("[INTERNAL] failed to list ResourceSlices: API unreachable: ")


@pytest.mark.fake_only("the GPU test pod is scripted to never finish (virtual time runs out the bound)")
def test_dra_behavioral_timeout_is_other_and_cleans_up(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(DRA_PROFILE)
    fake_of(k8s_backend).sim.script(name_prefix=testns.POD_PREFIX, run_for=None)
    result = run(pytester, k8s_backend, recipe(DRA, "dra-support"))
    test = result.tests["dra-support"]
    assert test["status"] == "other"
    assert test["message"].startswith(
        "[TIMEOUT] GPU test pod did not complete in time (last phase=Running, status=none): "
    ), test["message"]
    assert artifact(test, "Delete test namespace").endswith(
        "confirmed absent (all test resources removed with it)"
    )
    assert leftovers(k8s_backend, result.run_id) == []


@pytest.mark.fake_only("the conformance player's gpu-isolation-broken fault on a DRA pod")
def test_dra_behavioral_isolation_broken_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(DRA_PROFILE, ["gpu-isolation-broken"])
    test = run(pytester, k8s_backend, recipe(DRA, "dra-support")).tests["dra-support"]
    assert (test["status"], test["message"]) == (
        "failed",
        "[INTERNAL] DRA test pod phase=Failed (want Succeeded), GPU allocation may have failed",
    )
    assert artifact(test, "Pod logs (unauthorized)").strip() == "FAIL: GPU visible without GPU allocation"


# --- secure-accelerator-access --------------------------------------------------------------------


def test_secure_access_unauthorized_container_seeing_gpus_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["gpu-isolation-broken"])
    result = run(pytester, k8s_backend, recipe(TRAINING, "secure-accelerator-access"))
    test = result.tests["secure-accelerator-access"]
    assert (test["status"], test["message"]) == (
        "failed",
        "[INTERNAL] GPU devices visible in unauthorized container unauthorized (exit code 1) — "
        "container-level isolation broken",
    )
    assert leftovers(k8s_backend, result.run_id) == []


def test_secure_access_gpu_visible_without_allocation_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["gpu-visible-without-allocation"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "secure-accelerator-access")).tests[
        "secure-accelerator-access"
    ]
    assert (test["status"], test["message"]) == (
        "failed",
        "[INTERNAL] GPU devices visible without any GPU allocation — isolation broken "
        "(container exit code 1)",
    )
    assert "Exit code: 1" in artifact(test, "Device Plugin Isolation Test")


@pytest.mark.fake_only("the CUDA image pull failure (kwok never pulls images)")
def test_secure_access_stuck_pod_fails_fast(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["gpu-test-image-pull"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "secure-accelerator-access")).tests[
        "secure-accelerator-access"
    ]
    assert test["status"] == "failed"
    assert test["message"] == (
        "[INTERNAL] GPU test pod stuck: ImagePullBackOff:  (image: nvidia/cuda:12.9.0-base-ubuntu24.04)"
    )


@pytest.mark.fake_only("inspects the pods kept by --no-cleanup")
def test_toleration_flag_reaches_the_inner_gpu_pod_only(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    """``--toleration`` replaces tolerate-all on the GPU test pod, never on the no-allocation probe."""
    k8s_backend.seed_profile(PROFILE)
    result = run(
        pytester,
        k8s_backend,
        recipe(TRAINING, "secure-accelerator-access"),
        "--aicr-toleration",
        "nvidia.com/gpu:NoSchedule",
        "--aicr-no-cleanup",
    )
    test = result.tests["secure-accelerator-access"]
    assert test["status"] == "passed", test.get("message")
    assert artifact(test, "Cleanup test namespace").startswith("cleanup disabled (--no-cleanup): namespace ")
    pods = {
        p["metadata"]["name"].split("-")[0]: p
        for p in k8s_backend.list("v1", "Pod", None, label_selector=f"{RUN_ID_LABEL}={result.run_id}")
    }
    assert pods["gpu"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert pods["no"]["spec"]["tolerations"] == [{"operator": "Exists"}]
    assert "nodeSelector" not in pods["gpu"]["spec"]  # --node-selector is not used by conformance checks


# --- gang-scheduling ------------------------------------------------------------------------------


def test_gang_scheduling_skips_without_kai(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["no-kai"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "gang-scheduling")).tests["gang-scheduling"]
    assert (test["status"], test["message"]) == ("skipped", gang_scheduling.MSG_SKIP)


def kueue_results(test: dict[str, Any]) -> dict[str, str]:
    """``RESULT: TestGangScheduling/<Subtest>: WORD - ...`` lines of the check's CTRF stdout."""
    found: dict[str, str] = {}
    for line in test.get("stdout") or []:
        if line.startswith("RESULT: TestGangScheduling/"):
            name, _, rest = line.removeprefix("RESULT: TestGangScheduling/").partition(": ")
            found[name] = rest.partition(" - ")[0]
    return found


def kueue_leftovers(backend: K8sBackend, run_id: str) -> list[str]:
    """The run's namespaces and cluster-scoped Kueue objects still present (the Kueue profiles have
    no KAI, so :func:`leftovers` cannot list PodGroups there)."""
    run_label = f"{RUN_ID_LABEL}={run_id}"
    kinds = (
        ("v1", "Namespace"),
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue"),
        ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"),
    )
    return [
        f"{kind}/{o['metadata']['name']}"
        for api_version, kind in kinds
        for o in backend.list(api_version, kind, None, label_selector=run_label)
    ]


def test_gang_scheduling_runs_with_kueue_where_there_is_no_kai(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["kueue-gang"])
    result = run(pytester, k8s_backend, recipe(TRAINING, "gang-scheduling"))
    test = result.tests["gang-scheduling"]
    assert (test["status"], test.get("message")) == ("passed", None)
    assert kueue_results(test) == {"AllOrNothingScheduling": "PASS", "NoPartialScheduling": "PASS"}
    seen = {a["label"]: a["data"] for a in (test.get("extra") or {}).get(EXTRA_KEY) or []}
    assert seen["NoPartialScheduling"].endswith(": stayed suspended, Workload unadmitted, no pod scheduled")
    assert seen["AllOrNothingScheduling"].endswith(": 2 of 2 pods scheduled")
    run_label = f"{RUN_ID_LABEL}={result.run_id}"
    assert k8s_backend.list("v1", "Namespace", None, label_selector=run_label) == []  # or terminating
    for kind in ("ClusterQueue", "ResourceFlavor"):  # cluster-scoped: the check deletes them itself
        assert k8s_backend.list("kueue.x-k8s.io/v1beta2", kind, None, label_selector=run_label) == []


def test_kueue_admitting_a_gang_beyond_its_quota_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["gang-partial-admission"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "gang-scheduling")).tests["gang-scheduling"]
    assert test["status"] == "failed"
    assert re.fullmatch(
        r"\[CONFLICT\] Kueue admitted Workload job-[a-z0-9-]+ of the oversized gang Job [a-z0-9-]+ "
        r"beyond the queue quota",
        test["message"],
    ), test["message"]
    assert kueue_results(test) == {"AllOrNothingScheduling": "PASS", "NoPartialScheduling": "FAIL"}


@pytest.mark.fake_only("HTTP fault injection: every Kueue Workload read, or every Job create, answers 500")
@pytest.mark.parametrize(
    ("method", "path", "message", "results"),
    [
        pytest.param(
            "GET",
            r"/workloads$",
            "[INTERNAL] failed to read the oversized gang Job gang-too-big-",
            {"AllOrNothingScheduling": "PASS", "NoPartialScheduling": "OTHER"},
            id="workloads-unreadable",
        ),
        pytest.param(
            "POST",
            r"/jobs$",
            "[INTERNAL] failed to create gang Job gang-fits-",
            {"AllOrNothingScheduling": "OTHER"},
            id="job-create-refused",
        ),
    ],
)
def test_an_api_error_in_a_kueue_subtest_is_other_with_its_subtest_line(
    pytester: pytest.Pytester,
    k8s_backend: K8sBackend,
    method: str,
    path: str,
    message: str,
    results: dict[str, str],
) -> None:
    k8s_backend.seed_profile(PROFILE, ["kueue-gang"])
    fake_of(k8s_backend).faults.server_error(method, path, times=None)
    result = run(pytester, k8s_backend, recipe(TRAINING, "gang-scheduling"))
    test = result.tests["gang-scheduling"]
    assert test["status"] == "other"
    assert test["message"].startswith(message), test["message"]
    assert kueue_results(test) == results
    assert kueue_leftovers(k8s_backend, result.run_id) == []


@pytest.mark.fake_only("a 20 s gang-scheduling budget from a --data catalog (virtual time)")
def test_a_no_partial_window_cut_short_by_the_budget_is_other(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, tmp_path: Path
) -> None:
    data = catalog_data_tree(tmp_path / "data", "gang-scheduling", timeout="20s")
    k8s_backend.seed_profile(PROFILE, ["kueue-gang"])
    result = run(pytester, k8s_backend, recipe(TRAINING, "gang-scheduling"), "--aicr-data", str(data))
    test = result.tests["gang-scheduling"]
    assert test["status"] == "other", test.get("message")
    assert re.fullmatch(
        r"\[TIMEOUT\] the check's budget ended \d+s into the 45s NoPartialScheduling window: the oversized "
        r"gang Job gang-too-big-\S+ was seen denied only that long, so its denial is not confirmed",
        test["message"],
    ), test["message"]
    assert kueue_results(test) == {"AllOrNothingScheduling": "PASS", "NoPartialScheduling": "OTHER"}
    assert kueue_leftovers(k8s_backend, result.run_id) == []


@pytest.mark.fake_only("the least-privilege user on the control plane is granted KAI's objects")
def test_gang_scheduling_forbidden_kai_is_other_not_skip(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["kai-forbidden"])
    doc = recipe(TRAINING, "gang-scheduling")
    test = run(pytester, k8s_backend, doc, denial_expected=True).tests["gang-scheduling"]
    assert test["status"] == "other"
    assert test["message"] == (
        "[INTERNAL] failed to read gang scheduling CRD queues.scheduling.run.ai: RBAC denied: cannot get "
        'customresourcedefinitions.apiextensions.k8s.io "queues.scheduling.run.ai" (403 Forbidden)'
    )


@pytest.mark.fake_only("KAI binds the second worker 45 s after the first (virtual time)")
def test_gang_pods_not_co_scheduled_fail(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["kai-gang-split"])
    result = run(pytester, k8s_backend, recipe(TRAINING, "gang-scheduling"))
    test = result.tests["gang-scheduling"]
    assert (test["status"], test["message"]) == (
        "failed",
        "[INTERNAL] gang scheduling pods not co-scheduled: schedule times span 45s (max 30s)",
    )
    assert leftovers(k8s_backend, result.run_id) == []


@pytest.mark.fake_only("deletes KAI's default-queue from the seeded profile")
def test_gang_scheduling_without_default_queue_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["kai-queue-missing"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "gang-scheduling")).tests["gang-scheduling"]
    assert (test["status"], test["message"]) == ("failed", "[NOT_FOUND] " + gang_scheduling.MSG_NO_QUEUE)


@pytest.mark.fake_only("the gang workers are scripted to never finish (virtual time runs out the bound)")
def test_gang_timeout_is_other_and_cleans_up(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).sim.script(name_prefix="gang-worker-", run_for=None)
    result = run(pytester, k8s_backend, recipe(TRAINING, "gang-scheduling"))
    test = result.tests["gang-scheduling"]
    assert test["status"] == "other"
    assert test["message"].startswith("[TIMEOUT] gang test pods did not complete in time: timed out after ")
    assert leftovers(k8s_backend, result.run_id) == []


# --- robust-controller ----------------------------------------------------------------------------


def test_robust_controller_skips_without_an_operator(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    def drop_trainer(doc: Recipe) -> None:
        doc["componentRefs"] = [c for c in doc["componentRefs"] if c["name"] != "kubeflow-trainer"]

    k8s_backend.seed_profile(PROFILE)
    test = run(pytester, k8s_backend, recipe(TRAINING, "robust-controller", edit=drop_trainer)).tests[
        "robust-controller"
    ]
    assert (test["status"], test["message"]) == ("skipped", robust_controller.MSG_SKIP)


def test_robust_controller_without_webhook_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["trainer-webhook-missing"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "robust-controller")).tests["robust-controller"]
    assert (test["status"], test["message"]) == (
        "failed",
        "[NOT_FOUND] Kubeflow Trainer validating webhook not found",
    )


def test_robust_controller_webhook_that_admits_fails_and_deletes(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["trainer-webhook-admits"])
    result = run(pytester, k8s_backend, recipe(TRAINING, "robust-controller"))
    test = result.tests["robust-controller"]
    assert (test["status"], test["message"]) == (
        "failed",
        "[INTERNAL] validating webhook did not reject invalid TrainJob",
    )
    assert leftovers(k8s_backend, result.run_id) == []


@pytest.mark.fake_only("a schema-style 422 without an admission webhook behind it")
def test_robust_controller_rejection_not_from_webhook_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["trainer-schema-rejects"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "robust-controller")).tests["robust-controller"]
    assert test["status"] == "failed"
    assert test["message"].startswith(
        "[INTERNAL] rejection does not appear to be from admission webhook (missing 'admission webhook' in "
        'message): TrainJob.trainer.kubeflow.org "robust-test-'
    )


@pytest.mark.fake_only("HTTP fault injection: an RBAC 403 on the TrainJob create")
def test_robust_controller_rbac_denial_is_other(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    faults = fake_of(k8s_backend).faults
    faults.clear()  # authorization comes before admission: the webhook never sees the request
    faults.deny("POST", r"/trainjobs$")
    doc = recipe(TRAINING, "robust-controller")
    test = run(pytester, k8s_backend, doc, denial_expected=True).tests["robust-controller"]
    assert test["status"] == "other"
    assert test["message"].startswith(
        "[INTERNAL] RBAC denied the request, not an admission webhook rejection: "
    ), test["message"]


# --- gpu-operator-health, platform-health ---------------------------------------------------------


def test_gpu_operator_health_fails_when_clusterpolicy_not_ready(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["device-plugin-crashloop"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "gpu-operator-health")).tests["gpu-operator-health"]
    assert (test["status"], test["message"]) == (
        "failed",
        "[INTERNAL] ClusterPolicy state=notReady (want ready)",
    )


def test_gpu_operator_health_fails_without_the_operator(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["gpu-operator-missing"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "gpu-operator-health")).tests["gpu-operator-health"]
    assert test["status"] == "failed"
    assert test["message"].startswith(
        "[NOT_FOUND] GPU operator deployment not found (checked label "
        "app.kubernetes.io/name=gpu-operator and "
        "exact name): [NOT_FOUND] deployment gpu-operator/gpu-operator not found: "
    )


@pytest.mark.fake_only("HTTP fault injection: a 403 on the ClusterPolicy read")
def test_gpu_operator_health_api_error_is_other(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).faults.deny("GET", r"/clusterpolicies/cluster-policy$")
    doc = recipe(TRAINING, "gpu-operator-health")
    test = run(pytester, k8s_backend, doc, denial_expected=True).tests["gpu-operator-health"]
    assert test["status"] == "other"
    assert test["message"].startswith("[NOT_FOUND] ClusterPolicy not found: RBAC denied: cannot get ")


def test_platform_health_collects_every_issue(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    def extra(doc: Recipe) -> None:
        component(doc, "cert-manager")["expectedResources"].append(
            {"kind": "Deployment", "name": "cert-manager-missing", "namespace": "cert-manager"}
        )
        component(doc, "nfd")["expectedResources"] = [{"kind": "CronJob", "name": "x", "namespace": "nfd"}]

    k8s_backend.seed_profile(PROFILE, ["no-kai"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "platform-health", edit=extra)).tests[
        "platform-health"
    ]
    assert test["status"] == "failed"
    assert test["message"] == (
        "[NOT_FOUND] platform health check failed (3 issues):\n"
        "  namespace kai-scheduler: not found\n"
        "  Deployment cert-manager/cert-manager-missing (cert-manager): not found\n"
        '  CronJob nfd/x (nfd): unsupported resource kind "CronJob"'
    )


def test_platform_health_ignores_disabled_components(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    def disable_kai(doc: Recipe) -> None:
        component(doc, "kai-scheduler").setdefault("overrides", {})["enabled"] = False

    k8s_backend.seed_profile(PROFILE, ["no-kai"])
    test = run(pytester, k8s_backend, recipe(TRAINING, "platform-health", edit=disable_kai)).tests[
        "platform-health"
    ]
    assert test["status"] == "passed", test.get("message")
    assert "kai-scheduler" not in artifact(test, "Platform components")


@pytest.mark.fake_only("HTTP fault injection: namespace reads answer 500 past the retry budget")
def test_platform_health_api_errors_are_other(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).faults.server_error("GET", r"^/api/v1/namespaces/[^/]+$", times=None)
    test = run(pytester, k8s_backend, recipe(TRAINING, "platform-health")).tests["platform-health"]
    assert test["status"] == "other"
    assert test["message"].startswith("[INTERNAL] platform health check could not read ")


# --- the phase as a whole -------------------------------------------------------------------------


@pytest.mark.fake_only("--no-cluster never touches a cluster")
def test_no_cluster_skips_every_conformance_check(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    result = run(pytester, k8s_backend, recipe(TRAINING, *PHASE1), "--aicr-no-cluster")
    assert {n: (t["status"], t["message"]) for n, t in result.tests.items()} == {
        n: ("skipped", "skipped - no-cluster mode") for n in PHASE1
    }
    assert fake_of(k8s_backend).request_count("POST") == 0


def test_check_functions_are_registered() -> None:
    """Every conformance check of the catalog has its function (the bundled checks, the CNCF collector)."""
    phase = [c.name for c in catalog.CATALOG if c.phase == "conformance"]
    assert sorted(aicr_pytest.conformance.CHECKS) == sorted(phase) and set(PHASE1) <= set(phase)
    for name in phase:
        assert callable(aicr_pytest.conformance.check_function(name))
    assert aicr_pytest.core.inputs is not None
