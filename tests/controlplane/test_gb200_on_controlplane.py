"""The GB200 NCCL variants (``-net``, ``-nvls``) end to end on both backends, least-privilege kubeconfig.

Like tests/controlplane/test_checks_on_controlplane.py (H100), against the ``gb200-eks-training`` profile.
On the control plane the workers land on the kwok GB200 pool (``gpu-gb200-*``: 4 GPUs, 8 EFA devices,
arm64, one ``nvidia.com/gpu.clique``) by the real scheduler:

* ``-net``: the check's NVreg preflight pods are pinned to those nodes (played by the NVreg probe
  player: the override is set), the workers ask for ``vpc.amazonaws.com/efa``, and the launcher log
  says ``Using network AWS Libfabric``;
* ``-nvls``: the check's ComputeDomain is reconciled by the test controller of
  :mod:`tests.harness.controlplane_computedomain` into the IMEX channel ResourceClaimTemplate;
  the real resource-claim controller makes each worker's claim from it and the real scheduler's DRA
  plugin allocates an IMEX channel device from the clique nodes' ResourceSlices before it binds the
  pod (an unallocated claim keeps a pod Pending, so a pass proves the allocation); the launcher log
  carries the NVLS banners.

Afterwards nothing labelled with the run id is left, nor any pod of either JobSet or claim made for one.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.nccl
import aicr_pytest.nccl.cluster
import aicr_pytest.nccl.nvreg
import aicr_pytest.plugin
from aicr_pytest.core import yamlio
from aicr_pytest.kube.client import RUN_ID_LABEL
from tests.cluster.check_runner import run_on_backend
from tests.controlplane.test_checks_on_controlplane import RUN_KINDS
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
TRAINING_RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "gb200-eks-training"
NET, NVLS = "nccl-all-reduce-bw-net", "nccl-all-reduce-bw-nvls"
CONSTRAINTS = {NET: ">= 40", NVLS: ">= 500"}
BW_LINE = re.compile(r"^NCCL All Reduce bandwidth \((?P<check>[a-z-]+)\): (?P<bw>\d+\.\d\d) GB/s$")
#: Every kind either run (or what plays the DRA driver for it) creates, besides the H100 run's.
GB200_RUN_KINDS = (
    *RUN_KINDS,
    ("resource.nvidia.com/v1beta1", "ComputeDomain"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
    ("resource.k8s.io/v1", "ResourceClaim"),
)


def gb200_recipe() -> dict[str, Any]:
    """The H100 training recipe for accelerator ``gb200`` with only the two GB200 NCCL checks."""
    recipe: dict[str, Any] = yamlio.load(TRAINING_RECIPE.read_text())
    recipe["criteria"]["accelerator"] = "gb200"
    recipe["validation"]["performance"] = {
        "checks": [NET, NVLS],
        "constraints": [{"name": name, "value": value} for name, value in CONSTRAINTS.items()],
    }
    return recipe


def run_gb200(
    pytester: pytest.Pytester, backend: K8sBackend, *extra: str
) -> tuple[dict[str, dict[str, Any]], str]:
    """The performance phase with the restricted kubeconfig (no RBAC denials); (tests by name, the run id)."""
    run = run_on_backend(
        pytester, backend, phase="performance", recipe=gb200_recipe(), snapshot=SNAPSHOT, extra=extra
    )
    return run.tests, run.run_id


def cd_slices(backend: K8sBackend) -> set[str]:
    """The ``compute-domain.nvidia.com`` ResourceSlices (the profile's own: the DRA driver's kubelet
    plugin serves the clique nodes; the control plane's ComputeDomain controller adds any missing
    while a ComputeDomain exists)."""
    return {
        f"ResourceSlice {s['metadata']['name']}"
        for s in backend.list(
            "resource.k8s.io/v1",
            "ResourceSlice",
            None,
            field_selector="spec.driver=compute-domain.nvidia.com",
        )
    }


def leftovers(backend: K8sBackend, run_id: str, trainjobs: list[str], slices: set[str]) -> list[str]:
    """Objects labelled with ``run_id``, pods of the runs' JobSets, claims made for those pods, and the
    IMEX channel devices that were not there before the run (``slices``)."""
    found = [
        f"{kind} {(o.get('metadata') or {}).get('namespace')}/{o['metadata']['name']}"
        for api, kind in GB200_RUN_KINDS
        for o in backend.list(api, kind, None, label_selector=f"{RUN_ID_LABEL}={run_id}")
    ]
    for trainjob in trainjobs:
        found += [
            f"Pod {p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in backend.list(
                "v1", "Pod", None, label_selector=f"jobset.sigs.k8s.io/jobset-name={trainjob}"
            )
        ]
        found += [  # generated claims are named after their pod (<trainjob>-node-0-<i>-<hash>-imex-channel-…)
            f"ResourceClaim {c['metadata']['namespace']}/{c['metadata']['name']}"
            for c in backend.list("resource.k8s.io/v1", "ResourceClaim", None)
            if str(c["metadata"]["name"]).startswith(f"{trainjob}-")
        ]
    found += sorted(cd_slices(backend) - slices)
    return sorted(set(found))


def test_nccl_gb200_net_and_nvls_pass_with_least_privilege(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, tmp_path: Path
) -> None:
    k8s_backend.seed_profile(PROFILE)
    slices = cd_slices(k8s_backend)
    evidence = tmp_path / "evidence"
    started = time.monotonic()
    tests, run_id = run_gb200(pytester, k8s_backend, "--aicr-evidence-dir", str(evidence))
    elapsed = time.monotonic() - started
    workers = len(k8s_backend.gpu_nodes(2)) if k8s_backend.name == "controlplane" else 4
    expected = {
        NET: ("gb200/eks/runtime-net.yaml", 80.0, 100.0),
        NVLS: ("gb200/eks/runtime-nvls.yaml", 700.0, 760.0),
    }
    trainjobs: list[str] = []
    for check, (runtime, low, high) in expected.items():
        t = tests[check]
        assert t["status"] == "passed", (check, t.get("message"), k8s_backend.controller_errors())
        # exactly AICR's two lines: the measured bus bandwidth, then the constraint verdict
        assert len(t["stdout"]) == 2, t["stdout"]
        m = BW_LINE.match(t["stdout"][0])
        assert m and m.group("check") == check, t["stdout"]
        bw = float(m.group("bw"))
        assert low <= bw <= high, (check, bw)
        assert t["stdout"][1] == f"Constraint: {CONSTRAINTS[check]} → true"

        run_info = t["extra"]["aicr.ncclRun"]
        assert run_info["workers"] == workers and run_info["gpusPerWorker"] == 4
        assert run_info["runtime"] == runtime
        sweep = t["extra"]["aicr.ncclSweep"]
        assert sweep["size_bytes"] == 16 << 30 and sweep["complete"] is True
        assert sweep["busbw_gbps"] == pytest.approx(bw, abs=0.01)
        log = (evidence / f"{check}-launcher.log").read_text()
        assert f"Rank {workers * 4 - 1:2d} Group" in log and "NVIDIA GB200" in log  # every rank, GB200 GPUs
        assert aicr_pytest.nccl.parse_all_reduce(log).busbw_gbps == pytest.approx(bw, abs=0.01)
        trainjobs.append(str(run_info["trainJob"]).split("/", 1)[1])
    # the transport each variant must prove: EFA through the OFI plugin; NVLS multicast + an NVLS comm
    assert tests[NET]["extra"]["aicr.ncclSweep"]["transport"] == {"network": "AWS Libfabric", "nvls": False}
    assert tests[NVLS]["extra"]["aicr.ncclSweep"]["transport"]["nvls"] is True

    # the runs' cleanup removed everything (on the control plane: real foreground GC through the
    # ComputeDomain to its claim template). The pods' claims go with the pods, by the real garbage
    # collector once a pod is gone (kwok drops a deleted pod's finalizers), so allow them a moment.
    deadline = time.monotonic() + (15 if k8s_backend.name == "controlplane" else 0)
    while (left := leftovers(k8s_backend, run_id, trainjobs, slices)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == []
    assert k8s_backend.controller_errors() == []
    if k8s_backend.name == "controlplane":
        assert elapsed < 90, f"GB200 NCCL checks on the control plane took {elapsed:.1f}s"


def test_the_net_preflight_fails_on_an_r595_driver_on_both_backends(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    """Fault ``driver-r595``: the last GB200 node's driver removed the NVreg override; ``-net`` fails
    naming it and its driver before any TrainJob, ``-nvls`` is untouched."""
    k8s_backend.seed_profile(PROFILE, ["driver-r595"])
    slices = cd_slices(k8s_backend)
    tests, run_id = run_gb200(pytester, k8s_backend)
    net = tests[NET]
    assert net["status"] == "failed", (net.get("message"), k8s_backend.controller_errors())
    head = re.match(
        r"^GPUDirect RDMA cannot be verified on GPU nodes running driver R595 or later: "
        r"(?P<node>\S+) \(driver 595\.58\.03\)\. ",
        net["message"],
    )
    assert head, net["message"]
    assert net["message"].endswith(aicr_pytest.nccl.nvreg.HINT_OVERRIDE_REMOVED)
    assert tests[NVLS]["status"] == "passed"
    trainjobs = [str(tests[NVLS]["extra"]["aicr.ncclRun"]["trainJob"]).split("/")[-1]]
    assert leftovers(k8s_backend, run_id, trainjobs, slices) == []
