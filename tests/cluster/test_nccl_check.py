"""The NCCL all-reduce checks end to end: real plugin + real facade + the fake cluster's Trainer player.

Most scenarios run the bundled check through pytester against a FakeCluster profile on a fake
clock that a background thread advances (the check blocks on watches, so something has to move
virtual time); the benchmark's 30-minute budget costs about a second of real time.  The
concurrency test uses two real ``aicr-pytest validate`` processes against one fake on a real clock.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.nccl
import aicr_pytest.nccl.cluster
import aicr_pytest.nccl.nvreg
import aicr_pytest.plugin
from aicr_pytest.core import yamlio
from aicr_pytest.testing.clock import RealClock
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.players import nvreg_probe
from aicr_pytest.testing.profiles import ClusterProfile, h100_eks_training
from aicr_pytest.testing.simulator import NodeProfile, PodScript, Simulator
from aicr_pytest.testing.store import Obj
from tests.cluster._facade_helpers import clock_driver
from tests.cluster.check_runner import CONFTEST, requests_beyond_preflight, run_on_fake

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
BW, NET, NVLS = "nccl-all-reduce-bw", "nccl-all-reduce-bw-net", "nccl-all-reduce-bw-nvls"
BW_LINE = re.compile(r"^NCCL All Reduce bandwidth \((?P<check>[a-z-]+)\): (?P<bw>\d+\.\d\d) GB/s$")
RUN_LABEL = "aicr.run/run-id"
MANAGED = "app.kubernetes.io/managed-by=aicr-pytest"
KINDS = (
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
    ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"),
    ("batch/v1", "Job"),
    ("v1", "Pod"),
    ("resource.nvidia.com/v1beta1", "ComputeDomain"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
)


INTERRUPTING_CONFTEST = """
import pytest
from tests.cluster import shared_clock

class InterruptingClock:
    def __init__(self, inner, flag):
        self.inner, self.flag = inner, flag

    def time(self):
        if self.flag and self.flag.pop():
            raise KeyboardInterrupt("simulated Ctrl-C")
        return self.inner.time()

    def sleep(self, seconds):
        self.inner.sleep(seconds)

@pytest.fixture(scope="session")
def aicr_clock():
    return InterruptingClock(shared_clock.CURRENT[0], shared_clock.CURRENT[1])
"""


# ------------------------------------------------------------------------------------ helpers --
def recipe_with(performance: dict[str, Any], **criteria: str) -> dict[str, Any]:
    recipe: dict[str, Any] = yamlio.load(RECIPE.read_text())
    recipe["criteria"].update(criteria)
    recipe["validation"]["performance"] = performance
    return recipe


def gb200_recipe(**constraints: str) -> dict[str, Any]:
    cons = {NET: ">= 40", NVLS: ">= 500", **{k.replace("_", "-"): v for k, v in constraints.items()}}
    return recipe_with(
        {"checks": [NET, NVLS], "constraints": [{"name": k, "value": v} for k, v in cons.items()]},
        accelerator="gb200",
    )


def run_nccl(
    pytester: pytest.Pytester,
    fc: FakeCluster,
    *extra: str,
    recipe: dict[str, Any] | None = None,
    step: float = 0.25,
    conftest: str = CONFTEST,
    flag: list[bool] | None = None,
) -> tuple[dict[str, dict[str, Any]], pytest.RunResult]:
    run = run_on_fake(
        pytester,
        fc,
        phase="performance",
        recipe=RECIPE if recipe is None else recipe,
        snapshot=SNAPSHOT,
        extra=extra,
        drive=clock_driver(fc, step=step),
        conftest=conftest,
        shared=[flag],
    )
    return run.tests, run.result


def leftovers(fc: FakeCluster, selector: str = MANAGED) -> list[str]:
    """Objects of the benchmark's kinds that carry the selector (all namespaces)."""
    found: list[str] = []
    for api, kind in KINDS:
        for obj in fc.list(api, kind, None, label_selector=selector):
            meta = obj["metadata"]
            found.append(f"{kind} {meta.get('namespace')}/{meta['name']}")
    found += [
        f"Pod {p['metadata']['namespace']}/{p['metadata']['name']}"
        for p in fc.list("v1", "Pod", None, label_selector="jobset.sigs.k8s.io/jobset-name")
    ]
    return found


def bandwidth(stdout: list[str]) -> tuple[str, float]:
    m = BW_LINE.match(stdout[0])
    assert m, stdout
    return m.group("check"), float(m.group("bw"))


@pytest.fixture
def h100(aicr_fake_cluster_factory: Any) -> FakeCluster:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training")
    return fc


# ---------------------------------------------------------------------------------- passing --
def test_h100_passes_with_exact_lines_sweep_and_svg(
    pytester: pytest.Pytester, h100: FakeCluster, tmp_path: Path
) -> None:
    evidence = tmp_path / "evidence"
    tests, result = run_nccl(pytester, h100, "--aicr-evidence-dir", str(evidence))
    t = tests[BW]
    assert t["status"] == "passed", (t.get("message"), result.outlines[-30:])
    assert len(t["stdout"]) == 2
    check, bw = bandwidth(t["stdout"])
    assert check == BW and 300 <= bw <= 480
    assert t["stdout"][1] == "Constraint: >= 300 → true"
    sweep = t["extra"]["aicr.ncclSweep"]
    assert sweep["busbw_gbps"] == pytest.approx(bw, abs=0.01)
    assert sweep["size_bytes"] == 16 << 30 and sweep["complete"] is True
    assert [r["size_bytes"] for r in sweep["rows"]] == [1024 << i for i in range(25)]
    assert sweep["avg_busbw_gbps"] and sweep["avg_busbw_gbps"] < bw
    run_info = t["extra"]["aicr.ncclRun"]
    assert run_info["workers"] == 4 and run_info["gpusPerWorker"] == 8
    assert run_info["runtime"] == "h100/eks/runtime.yaml"
    assert t["extra"]["runtimeSource"] == "cluster-capability"  # AICR's code: the embedded fixture ran
    svg = (evidence / f"{BW}-busbw.svg").read_text()
    assert svg.lstrip().startswith(("<svg", "<?xml")) and "300" in svg
    log = (evidence / f"{BW}-launcher.log").read_text()
    assert "# Avg bus bandwidth" in log and "NCCL INFO" not in log  # NCCL_DEBUG=WARN on h100/eks
    assert aicr_pytest.nccl.parse_all_reduce(log).busbw_gbps == pytest.approx(bw, abs=0.01)
    # everything the run created is gone; the workers asked for all 32 GPUs and 32 EFA devices
    assert leftovers(h100) == []
    assert h100.find("v1", "Namespace", "aicr-validation") is None


def test_gb200_net_and_nvls_pass_with_their_transports(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("gb200-eks-training")
    evidence = tmp_path / "ev"
    tests, _ = run_nccl(pytester, fc, "--aicr-evidence-dir", str(evidence), recipe=gb200_recipe())
    net, nvls = tests[NET], tests[NVLS]
    assert net["status"] == "passed", net.get("message")
    assert nvls["status"] == "passed", nvls.get("message")
    assert net["stdout"][1] == "Constraint: >= 40 → true"
    assert nvls["stdout"][1] == "Constraint: >= 500 → true"
    assert bandwidth(net["stdout"])[1] > 44 and bandwidth(nvls["stdout"])[1] > 600
    assert net["extra"]["aicr.ncclSweep"]["transport"]["network"] == "AWS Libfabric"
    assert nvls["extra"]["aicr.ncclSweep"]["transport"]["nvls"] is True
    assert net["extra"]["aicr.ncclRun"]["gpusPerWorker"] == 4
    assert {p.name for p in evidence.iterdir()} >= {f"{NET}-busbw.svg", f"{NVLS}-busbw.svg"}
    assert leftovers(fc) == []


# ---------------------------------------------------------------------------------- failing --
def test_low_bandwidth_fails_with_false_constraint_line(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training", faults=["nccl-low-bandwidth"])
    tests, _ = run_nccl(pytester, fc)
    t = tests[BW]
    assert t["status"] == "failed"
    _, bw = bandwidth(t["stdout"])
    assert 100 <= bw <= 140
    assert t["stdout"][1] == "Constraint: >= 300 → false"
    assert t["message"] == f'NCCL bandwidth {bw:.2f} GB/s does not satisfy constraint ">= 300"'
    assert t["extra"]["aicr.ncclSweep"]["rows"]
    assert t["extra"]["runtimeSource"] == "cluster-capability"  # on a failure too
    assert leftovers(fc) == []


def test_socket_fallback_fails_net_transport_even_with_good_bandwidth(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("gb200-eks-training", faults=["nccl-socket-fallback"])
    tests, _ = run_nccl(pytester, fc, recipe=gb200_recipe())
    net = tests[NET]
    assert net["status"] == "failed"
    assert net["message"] == aicr_pytest.nccl.MSG_NET_SOCKET
    assert net.get("stdout", []) == []  # bandwidth lines only once the transport is verified
    sweep = net["extra"]["aicr.ncclSweep"]
    assert sweep["transport"]["network"] == "Socket" and sweep["busbw_gbps"] > 40
    assert tests[NVLS]["status"] == "passed"  # NVLS does not ride the NET plugin
    assert leftovers(fc) == []


def test_unparsable_launcher_log_fails_with_diagnostic_tail(
    pytester: pytest.Pytester, h100: FakeCluster
) -> None:
    noise = "".join(f"[1,0]<stderr>: mpirun warning {i}\n" for i in range(150))
    h100.state["nccl"] = {"launcher_log": noise}
    tests, _ = run_nccl(pytester, h100)
    t = tests[BW]
    assert t["status"] == "failed"
    assert t["message"].startswith("failed to parse bandwidth from logs: could not find bandwidth value")
    tail = t["extra"]["aicr.diagnostics"][aicr_pytest.nccl.DIAGNOSTIC_LABEL]
    assert len(tail) == 100 and tail[-1] == "[1,0]<stderr>: mpirun warning 149"
    assert t["stdout"][0].startswith("--- launcher log (bandwidth parse failed): last 100 lines")


def test_trainer_missing_fails_naming_the_component(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    profile = h100_eks_training()
    profile.remove("kubeflow-trainer")
    fc: FakeCluster = aicr_fake_cluster_factory(profile)
    tests, _ = run_nccl(pytester, fc)
    t = tests[BW]
    assert t["status"] == "failed"
    assert "Kubeflow Trainer is not installed" in t["message"] and "kubeflow-trainer" in t["message"]
    assert fc.request_count("POST") == 0


def test_gpu_census_names_the_short_node(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    profile = h100_eks_training()
    gpu = profile.node_pools[1]
    profile.node_pools.append(
        NodeProfile(
            count=1,
            name_prefix="h100-short",
            instance_type=gpu.instance_type,
            gpu_product=gpu.gpu_product,
            gpus_per_node=4,
            extra_resources=dict(gpu.extra_resources),
            labels=dict(gpu.labels),
        )
    )
    fc: FakeCluster = aicr_fake_cluster_factory(profile)
    tests, _ = run_nccl(pytester, fc)
    t = tests[BW]
    assert t["status"] == "failed"
    assert t["message"].startswith("GPU census: h100-short-0 (4 of 8) has fewer allocatable nvidia.com/gpu")
    assert fc.request_count("POST") == 0


def _override(fc: FakeCluster, node: str, value: str) -> None:
    """The node driver's ``NVreg_GrdmaPciTopoCheckOverride`` (what the probe player prints)."""
    obj = fc.get("v1", "Node", node)
    obj["metadata"].setdefault("annotations", {})[nvreg_probe.OVERRIDE_ANNOTATION] = value
    fc.add(obj)


def test_nvreg_preflight_names_the_nodes_missing_the_override(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("gb200-eks-training")
    for node in ("gb200-1", "gb200-3"):
        _override(fc, node, "0")
    tests, _ = run_nccl(pytester, fc, recipe=gb200_recipe())
    net = tests[NET]
    assert net["status"] == "failed"
    assert net["message"] == aicr_pytest.nccl.nvreg.MSG_FLAG_MISSING.format(
        nodes="gb200-1 (driver 580.95.05), gb200-3 (driver 580.95.05)",
        hint=aicr_pytest.nccl.nvreg.HINT_FLAG_MISSING,
    )
    assert tests[NVLS]["status"] == "passed"  # the NVreg preflight is a -net (EFA) requirement only
    assert fc.request_count("POST", r"/trainjobs$") == 1  # the -nvls benchmark only
    assert leftovers(fc) == []


def test_the_net_preflight_fails_on_an_r595_driver(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("gb200-eks-training", faults=["driver-r595"])
    tests, _ = run_nccl(pytester, fc, recipe=gb200_recipe())
    net = tests[NET]
    assert net["status"] == "failed"
    assert net["message"] == (
        "GPUDirect RDMA cannot be verified on GPU nodes running driver R595 or later: "
        "gb200-3 (driver 595.58.03). " + aicr_pytest.nccl.nvreg.HINT_OVERRIDE_REMOVED
    )
    assert tests[NVLS]["status"] == "passed"
    assert fc.request_count("POST", r"/trainjobs$") == 1  # no -net benchmark was started
    assert leftovers(fc) == []


@pytest.mark.parametrize(
    ("logs", "phase_exit", "message"),
    [
        pytest.param(
            "",
            0,
            "NVIDIA driver version could not be determined on GPU nodes: gb200-2. "
            + aicr_pytest.nccl.nvreg.HINT_UNDETERMINED,
            id="nothing-read",
        ),
        pytest.param(
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  release build\n"
            "===AICR-NVREG-VERSION-OK===\n===AICR-NVREG-SPLIT===\nGrdmaPciTopoCheckOverride: 1\n"
            "===AICR-NVREG-PARAMS-OK===\n",
            0,
            "NVIDIA driver version could not be determined on GPU nodes: gb200-2. "
            + aicr_pytest.nccl.nvreg.HINT_UNDETERMINED,
            id="unparsable-banner",
        ),
        pytest.param(
            "sh: can't create pipe\n",
            1,
            "NVreg preflight pod on node gb200-2 terminated in phase Failed before completing the probe: "
            "sh: can't create pipe",
            id="probe-never-ran",
        ),
    ],
)
def test_an_undetermined_driver_is_other_never_a_pass(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, logs: str, phase_exit: int, message: str
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("gb200-eks-training")
    fc.sim.script(
        PodScript(
            labels={"app.kubernetes.io/component": "nccl-nvreg-probe"},
            predicate=lambda pod: pod["spec"].get("nodeName") == "gb200-2",
            exit_code=phase_exit,
            logs=logs,
        )
    )
    tests, _ = run_nccl(pytester, fc, recipe=gb200_recipe())
    assert tests[NET]["status"] == "other"
    assert tests[NET]["message"] == message
    assert fc.request_count("POST", r"/trainjobs$") == 1  # the -nvls benchmark only
    assert leftovers(fc) == []


def test_workers_on_simulated_gpus_are_other_though_the_launcher_ran_on_a_cpu_node(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    # a fresh CPU node (fewest pods) takes the launcher; the workers hold the NVML mock's GPUs
    profile = h100_eks_training()
    profile.node_pools.append(dataclasses.replace(profile.node_pools[0], name_prefix="cpu", labels={}))
    fc: FakeCluster = aicr_fake_cluster_factory(profile, faults=["nvml-mock"])
    placed: dict[str, str] = {}

    def seen(_sim: Simulator, pod: Obj) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            placed[pod["metadata"]["name"]] = pod["spec"]["nodeName"]

    fc.sim.on_update("", "v1", "pods", seen)
    tests, _ = run_nccl(pytester, fc)
    t = tests[BW]
    assert {node for name, node in placed.items() if "-launcher-" in name} == {"cpu-0"}
    assert t["status"] == "other", t.get("message")
    assert re.fullmatch(
        r"no proof of execution for pod \S+-node-0-0-\S+ on node h100-\d: NVIDIA's NVML mock simulates its "
        r"GPUs \(pod nvml-mock/nvml-mock-\S+ runs image ghcr\.io/nvidia/nvml-mock:v0\.1\.0\), so no GPU ran "
        r"the pod \(--allow-fake-nodes accepts simulated nodes\)",
        t["message"],
    ), t["message"]
    assert leftovers(fc) == []


def test_a_probe_that_never_ran_does_not_hide_an_r595_node(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    # gb200-3 runs R595 (measured: a failure); gb200-2's probe never ran (nothing measured there)
    fc: FakeCluster = aicr_fake_cluster_factory("gb200-eks-training", faults=["driver-r595"])
    fc.sim.script(
        PodScript(
            labels={"app.kubernetes.io/component": "nccl-nvreg-probe"},
            predicate=lambda pod: pod["spec"].get("nodeName") == "gb200-2",
            exit_code=1,
            logs="sh: can't create pipe\n",
        )
    )
    tests, _ = run_nccl(pytester, fc, recipe=gb200_recipe())
    net = tests[NET]
    assert net["status"] == "failed", net.get("message")
    assert net["message"] == (
        "GPUDirect RDMA cannot be verified on GPU nodes running driver R595 or later: "
        "gb200-3 (driver 595.58.03). " + aicr_pytest.nccl.nvreg.HINT_OVERRIDE_REMOVED + " "
        "NVreg preflight pod on node gb200-2 terminated in phase Failed before completing the probe: "
        "sh: can't create pipe"
    )
    assert fc.request_count("POST", r"/trainjobs$") == 1  # the -nvls benchmark only
    assert leftovers(fc) == []


def test_the_runtime_image_override_is_rendered_into_the_nccl_job(
    pytester: pytest.Pytester, h100: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = "nvcr.io/nvidia/pytorch:25.09-py3"
    monkeypatch.setenv("AICR_NCCL_RUNTIME_IMAGE", image)
    seen: list[Obj] = []
    h100.sim.on_create(
        "trainer.kubeflow.org", "v1alpha1", "trainingruntimes", lambda _sim, obj: seen.append(obj)
    )
    tests, _ = run_nccl(pytester, h100)
    t = tests[BW]
    assert t["status"] == "passed"
    assert t["stdout"][0] == f"NCCL runtime image: {image} (AICR_NCCL_RUNTIME_IMAGE)"
    [runtime] = seen
    images = {
        (job["name"], c["name"]): c["image"]
        for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]
        for key in ("initContainers", "containers")
        for c in job["template"]["spec"]["template"]["spec"].get(key) or []
    }
    assert images == {
        ("launcher", "fix-ssh-perms"): image,
        ("launcher", "node"): image,
        ("node", "fix-ssh-perms"): image,
        ("node", "node"): image,
    }
    assert leftovers(h100) == []


# ------------------------------------------------------------------------------------ skips --
def test_no_constraint_skips_without_touching_the_cluster(
    pytester: pytest.Pytester, h100: FakeCluster
) -> None:
    tests, _ = run_nccl(pytester, h100, recipe=recipe_with({"checks": [BW], "constraints": []}))
    assert tests[BW]["status"] == "skipped"
    assert tests[BW]["message"] == "no nccl-all-reduce-bw constraint in recipe"
    assert "extra" not in tests[BW]  # no runtime was chosen, so no runtimeSource (and no skip code)
    assert requests_beyond_preflight(h100) == []  # the check itself asked nothing


def test_profile_without_the_variant_skips(pytester: pytest.Pytester, h100: FakeCluster) -> None:
    recipe = recipe_with(
        {
            "checks": [BW],
            "constraints": [
                {"name": BW, "value": ">= 300"},
                {"name": "nccl-benchmark-profile", "value": "gb200/eks"},
            ],
        }
    )
    tests, _ = run_nccl(pytester, h100, recipe=recipe)
    assert tests[BW]["status"] == "skipped"
    assert tests[BW]["message"] == (
        "skipped - benchmark profile gb200/eks does not implement the nccl-all-reduce-bw NCCL variant"
    )
    assert h100.request_count("POST") == 0


def test_fewer_than_two_gpu_nodes_skips(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    profile = h100_eks_training()
    profile.node_pools[1].count = 1
    fc: FakeCluster = aicr_fake_cluster_factory(profile)
    tests, _ = run_nccl(pytester, fc)
    assert tests[BW]["status"] == "skipped"
    assert tests[BW]["message"] == "skipped - requires at least 2 GPU nodes for EW fabric test"
    assert fc.request_count("POST") == 0


# --------------------------------------------------------------------------- usage errors --
def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("constraints", "data", "env", "stderr"),
    [
        (
            {"nccl-benchmark-runtime-ref": "gb200/mycloud"},
            False,
            {},
            'nccl-benchmark-runtime-ref="gb200/mycloud" is set but no --data source is available',
        ),
        (
            {"nccl-benchmark-runtime-ref": "gb200/mycloud"},
            True,
            {},
            'failed to resolve nccl-benchmark-runtime-ref="gb200/mycloud": expected '
            '"validators/performance/testdata/gb200/mycloud/runtime.yaml" in the --data tree: no such file',
        ),
        (
            {"nccl-benchmark-runtime-ref": "../mycloud"},
            True,
            {},
            'invalid nccl-benchmark-runtime-ref="../mycloud": must be "{accelerator}/{service}"',
        ),
        ({BW: "== 300"}, False, {}, 'uses "==", which a measured bandwidth can never meet exactly'),
        ({BW: "300"}, False, {}, 'has no comparator; a bandwidth gate needs a direction — write ">= 300"'),
    ],
    ids=["ref-no-data", "ref-missing-file", "ref-malformed", "comparator-equals", "comparator-bare"],
)
def test_input_errors_exit_2_before_any_cluster_object(
    tmp_path: Path,
    h100: FakeCluster,
    constraints: dict[str, str],
    data: bool,
    env: dict[str, str],
    stderr: str,
) -> None:
    cons = {BW: ">= 300", **constraints}
    recipe = recipe_with({"checks": [BW], "constraints": [{"name": k, "value": v} for k, v in cons.items()]})
    path = tmp_path / "recipe.yaml"
    path.write_text(yamlio.dump(recipe))
    args = ["validate", "--recipe", str(path), "--snapshot", str(SNAPSHOT), "--phase", "performance"]
    args += ["--kubeconfig", str(h100.kubeconfig_path)]
    if data:
        root = tmp_path / "mydata"
        root.mkdir()
        (root / "registry.yaml").write_text("components: []\n")
        args += ["--data", str(root)]
    proc = _cli(*args, env=env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert stderr in proc.stderr
    assert h100.request_count("POST") == 0
    assert h100.request_count() == 0  # validated before anything touched the cluster


def test_unsupported_fabric_for_net_exits_2(tmp_path: Path, aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("gb200-eks-training")
    path = tmp_path / "recipe.yaml"
    path.write_text(yamlio.dump(gb200_recipe()))
    proc = _cli(
        "validate",
        "--recipe",
        str(path),
        "--snapshot",
        str(SNAPSHOT),
        "--phase",
        "performance",
        "--kubeconfig",
        str(fc.kubeconfig_path),
        env={"AICR_NCCL_FABRIC": "infiniband"},
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert 'unsupported AICR_NCCL_FABRIC="infiniband" (expected "efa" or "roce")' in proc.stderr
    assert fc.request_count() == 0


def test_private_runtime_from_data_runs_the_benchmark(
    pytester: pytest.Pytester, h100: FakeCluster, tmp_path: Path
) -> None:
    root = tmp_path / "mydata"
    rel = root / "validators/performance/testdata/h100/mycloud"
    rel.mkdir(parents=True)
    (root / "registry.yaml").write_text("components: []\n")
    (rel / "runtime.yaml").write_text(PRIVATE_RUNTIME)
    recipe = recipe_with(
        {
            "checks": [BW],
            "constraints": [
                {"name": BW, "value": ">= 300"},
                {"name": "nccl-benchmark-runtime-ref", "value": "h100/mycloud"},
            ],
        },
        service="mycloud",
    )
    tests, _ = run_nccl(pytester, h100, "--aicr-data", str(root), recipe=recipe)
    t = tests[BW]
    assert t["status"] == "passed", t.get("message")
    assert (
        t["extra"]["aicr.ncclRun"]["runtime"] == "validators/performance/testdata/h100/mycloud/runtime.yaml"
    )
    assert t["extra"]["aicr.ncclRun"]["workers"] == 4
    assert t["extra"]["runtimeSource"] == "recipe-supplied-runtime"
    assert leftovers(h100) == []


PRIVATE_RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: nccl-all-reduce-runtime
  labels: {trainer.kubeflow.org/framework: mpi}
spec:
  mlPolicy:
    mpi:
      mpiImplementation: OpenMPI
      numProcPerNode: "${GPU_COUNT_PER_NODE}"
      sshAuthMountPath: /tmp/mpi-keys
  template:
    spec:
      replicatedJobs:
        - name: launcher
          replicas: 1
          template:
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: registry.example/private/nccl-tests:2.16
                      command: [mpirun]
                      args: [-np, "${GPU_COUNT}", "/opt/nccl-tests/build/${TEST_TYPE}",
                             -b, "${MIN_MESSAGE_SIZE}", -e, "${MAX_MESSAGE_SIZE}", -f, "2", -g, "1"]
        - name: node
          template:
            spec:
              template:
                spec:
                  nodeSelector: {node-role.aicr.run/gpu: "true"}
                  containers:
                    - name: node
                      image: registry.example/private/nccl-tests:2.16
                      command: [/usr/sbin/sshd, -D, -e]
                      resources:
                        limits: {nvidia.com/gpu: "${GPU_COUNT_PER_NODE}"}
"""


# ------------------------------------------------------------------------------------- other --
def test_launcher_that_never_starts_is_other(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training", faults=["nccl-launcher-never-starts"])
    tests, _ = run_nccl(pytester, fc, step=5.0)
    t = tests[BW]
    assert t["status"] == "other"
    assert t["message"].startswith("timed out after")
    assert "ImagePullBackOff" in t["message"] and "workers Running 4/4" in t["message"]
    assert leftovers(fc) == []


def test_evicted_worker_is_other(pytester: pytest.Pytester, h100: FakeCluster) -> None:
    def evict_first_running_worker(sim: Simulator, pod: Obj) -> None:
        labels = pod["metadata"].get("labels") or {}
        if labels.get("jobset.sigs.k8s.io/replicatedjob-name") != "node":
            return
        if (pod.get("status") or {}).get("phase") != "Running" or evicted:
            return
        evicted.append(pod["metadata"]["name"])

        def evict(obj: Obj) -> None:
            st = obj["status"]
            st.update(
                phase="Failed",
                reason="Evicted",
                message="The node was low on resource: memory. Threshold quantity: 100Mi, available: 52Mi.",
            )
            st.setdefault("conditions", []).append(
                {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}
            )

        sim.store.mutate(sim.rt("v1", "Pod"), pod["metadata"]["namespace"], pod["metadata"]["name"], evict)

    evicted: list[str] = []
    h100.sim.on_update("", "v1", "pods", evict_first_running_worker)
    tests, _ = run_nccl(pytester, h100)
    t = tests[BW]
    assert t["status"] == "other"
    assert f"NCCL worker pod aicr-validation/{evicted[0]} was evicted from node h100-" in t["message"]
    assert "Evicted: The node was low on resource: memory." in t["message"]
    assert leftovers(h100) == []


# ------------------------------------------------------------------------------ interruption --
def test_ctrl_c_mid_benchmark_cleans_up(pytester: pytest.Pytester, h100: FakeCluster) -> None:
    flag: list[bool] = []
    seen: dict[str, str] = {}

    def interrupt_when_launcher_runs(sim: Simulator, pod: Obj) -> None:
        labels = pod["metadata"].get("labels") or {}
        launcher = labels.get("jobset.sigs.k8s.io/replicatedjob-name") == "launcher"
        if launcher and not seen and (pod.get("status") or {}).get("phase") == "Running":
            seen["run"] = labels[RUN_LABEL]
            flag.append(True)  # the check's next clock read raises KeyboardInterrupt

    h100.sim.on_update("", "v1", "pods", interrupt_when_launcher_runs)
    _, result = run_nccl(pytester, h100, conftest=INTERRUPTING_CONFTEST, flag=flag)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert seen and not flag
    assert leftovers(h100, f"{RUN_LABEL}={seen['run']}") == []
    assert leftovers(h100) == []


# ------------------------------------------------------------------------------- concurrency --
def split_pool_profile() -> ClusterProfile:
    """Two GPU node groups of two nodes each, so two runs can benchmark at the same time."""
    profile = h100_eks_training()
    gpu = profile.node_pools[1]
    profile.node_pools[1:] = [
        NodeProfile(
            count=2,
            name_prefix=f"h100{group}",
            instance_type=gpu.instance_type,
            gpu_product=gpu.gpu_product,
            gpus_per_node=gpu.gpus_per_node,
            extra_resources=dict(gpu.extra_resources),
            labels={**gpu.labels, "eks.amazonaws.com/nodegroup": f"gpu-{group}"},
        )
        for group in ("a", "b")
    ]
    return profile


@pytest.fixture
def realtime_cluster(aicr_fake_cluster_factory: Any) -> Iterator[FakeCluster]:
    fc: FakeCluster = aicr_fake_cluster_factory(split_pool_profile(), clock=RealClock())
    yield fc


def test_concurrent_runs_create_no_colliding_names(tmp_path: Path, realtime_cluster: FakeCluster) -> None:
    fc = realtime_cluster
    procs = []
    for group in ("a", "b"):
        out = tmp_path / f"ctrf-{group}.json"
        cmd = [sys.executable, "-m", "aicr_pytest.cli", "validate", "--recipe", str(RECIPE)]
        cmd += ["--snapshot", str(SNAPSHOT), "--phase", "performance", "--no-cleanup", "-o", str(out)]
        cmd += [
            "--kubeconfig",
            str(fc.kubeconfig_path),
            "--node-selector",
            f"eks.amazonaws.com/nodegroup=gpu-{group}",
        ]
        procs.append((out, subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
    started = time.monotonic()
    for out, proc in procs:
        stdout, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, stdout.decode()[-3000:]
        test = json.loads(out.read_text())["results"]["tests"][0]
        assert test["status"] == "passed" and test["extra"]["aicr.ncclRun"]["workers"] == 2
    assert time.monotonic() - started < 60
    for kind in ("TrainJob", "TrainingRuntime"):
        objs = fc.list("trainer.kubeflow.org/v1alpha1", kind, "aicr-validation")
        names = [o["metadata"]["name"] for o in objs]
        runs = {o["metadata"]["labels"][RUN_LABEL] for o in objs}
        assert len(objs) == 2 and len(set(names)) == 2 and len(runs) == 2, names
        for o in objs:  # each name is scoped by its own run id
            assert o["metadata"]["labels"][RUN_LABEL] in o["metadata"]["name"]
    nodes = {
        p["spec"]["nodeName"][:5]
        for p in fc.list(
            "v1", "Pod", "aicr-validation", label_selector="jobset.sigs.k8s.io/replicatedjob-name"
        )
        if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "launcher"
    }
    assert nodes  # the launchers (kept with --no-cleanup) ran
