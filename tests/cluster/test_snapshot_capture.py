"""``aicr-pytest snapshot``'s capture on both backends (``k8s_backend``: the fake, a real control plane).

The API collectors read what the cluster holds (compared with independent reads of the backend); the
agent runs the real ``collect.sh`` (the fake's ``snapshot-agent`` player, the control plane's
:class:`~tests.harness.controlplane_players.SnapshotAgent`); every run leaves nothing labelled with
its run id, also after Ctrl-C, SIGTERM, SIGHUP and a timeout. The facade runs as the least-privilege user of
``deploy/rbac.yaml`` (validate captures a snapshot with these rights) and refuses undeclared requests.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from _facade_helpers import assert_rbac_covers, backend_facade

from aicr_pytest.core import yamlio
from aicr_pytest.core.inputs import evaluate_readiness
from aicr_pytest.core.recipe import parse_recipe
from aicr_pytest.core.snapshot import Snapshot, load_snapshot_text
from aicr_pytest.kube import RUN_ID_LABEL, Cluster, Terminated
from aicr_pytest.snapshot.cluster import (
    AgentFailed,
    AgentTimeout,
    CaptureOptions,
    LiveCapture,
    NoGpuFound,
    capture_live,
    collect_api,
)
from aicr_pytest.snapshot.output import dumps
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
H100_RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
PROFILE = "h100-eks-training"
IMAGE = "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04"
NOWHERE = {"aicr.test/no-such-pool": "true"}


def options(backend: K8sBackend, **kw: Any) -> CaptureOptions:
    return CaptureOptions(image=IMAGE, namespace=backend.namespace("default"), **kw)


def capture(backend: K8sBackend, cluster: Cluster, opts: CaptureOptions, **kw: Any) -> LiveCapture:
    with backend.clock_running():
        return capture_live(lambda: cluster, opts, run_id=backend.run_id, clock=backend.clock, **kw)


def labelled_leftovers(backend: K8sBackend) -> list[str]:
    """What the cluster still holds with the run label (read independently of the facade)."""
    found = []
    for api_version, kind in (("v1", "Pod"), ("batch/v1", "Job"), ("v1", "ConfigMap")):
        for obj in backend.list(api_version, kind, label_selector=f"{RUN_ID_LABEL}={backend.run_id}"):
            found.append(f"{kind} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}")
    return found


def loaded(live: LiveCapture) -> Snapshot:
    return load_snapshot_text(dumps(live.result.document, "yaml"), "captured")


def gpu_nodes(backend: K8sBackend) -> list[str]:
    return sorted(
        n["metadata"]["name"]
        for n in backend.list("v1", "Node", label_selector="nvidia.com/gpu.present=true")
    )


PRODUCT_LABEL = "nvidia.com/gpu.product"


def h100_product(backend: K8sBackend) -> str:
    """The ``nvidia.com/gpu.product`` label value of the cluster's H100 nodes."""
    products = {
        str((n["metadata"].get("labels") or {}).get(PRODUCT_LABEL, ""))
        for n in backend.list("v1", "Node", label_selector="nvidia.com/gpu.present=true")
    }
    (product,) = (p for p in products if "H100" in p)
    return product


def test_api_collectors_read_what_the_cluster_holds(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    backend.seed_profile(PROFILE)
    cluster, _ = backend_facade(backend)
    collected, gpu_labelled = collect_api(cluster, max_nodes_per_entry=0)
    assert collected.warnings == [] and gpu_labelled
    server = collected.data("K8s", "server") or {}
    assert server["version"] == (cluster.server_version()["gitVersion"])
    assert server["version"].startswith("v1.34.1-eks" if backend.name == "fake" else "v1.37.")
    (policy,) = backend.list("nvidia.com/v1", "ClusterPolicy")
    assert (collected.data("K8s", "policy") or {})["driver.version"] == policy["spec"]["driver"]["version"]
    (operator,) = backend.list(
        "apps/v1", "Deployment", "gpu-operator", field_selector="metadata.name=gpu-operator"
    )
    tag = operator["spec"]["template"]["spec"]["containers"][0]["image"].rsplit(":", 1)[1]
    assert (collected.data("K8s", "image") or {})["gpu-operator"] == tag
    nodes = backend.list("v1", "Node")
    summary = collected.data("NodeTopology", "summary") or {}
    assert summary["node-count"] == len(nodes)
    labels = collected.data("NodeTopology", "label") or {}
    assert labels["nvidia.com/gpu.present"] == "true|" + ",".join(gpu_nodes(backend))
    assert summary["label-count"] == len(labels) and summary["taint-count"] == len(
        collected.data("NodeTopology", "taint") or {}
    )
    assert_rbac_covers(cluster)


def test_capture_on_a_gpu_node_passes_the_h100_readiness(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    backend.seed_profile(PROFILE)
    cluster, _ = backend_facade(backend)
    # the control plane also has a GB200 pool: which GPU node the scheduler picks depends on what
    # earlier tests left running, so the capture asks for an H100 node as a user would
    live = capture(backend, cluster, options(backend, node_selector={PRODUCT_LABEL: h100_product(backend)}))
    assert live.result.warnings == [] and live.cleanup_lines == []
    assert backend.controller_errors() == []
    node = live.result.source_node
    assert node in gpu_nodes(backend)
    snap = loaded(live)
    assert snap.metadata["source-node"] == node and snap.lookup("K8s.node.source-node") == node
    assert snap.types() == ["K8s", "GPU", "OS", "SystemD", "NodeTopology"]
    assert snap.lookup("GPU.hardware.model") == "h100" and snap.lookup("GPU.hardware.gpu-count") == "8"
    kernel = backend.find("v1", "Node", node)["status"]["nodeInfo"]["kernelVersion"]  # type: ignore[index]
    assert snap.lookup("OS.sysctl./proc/sys/kernel/osrelease") == kernel
    recipe, _ = parse_recipe(yamlio.load(H100_RECIPE.read_text()), str(H100_RECIPE))
    readiness = evaluate_readiness(recipe, snap)
    assert readiness.results and not readiness.blocking_failures, [r.error for r in readiness.results]
    assert all(r.passed for r in readiness.results), readiness.results
    assert labelled_leftovers(backend) == []
    assert_rbac_covers(cluster)


@pytest.mark.fake_only("the control plane's kwok GPU nodes are of the H100 pool; none is a ConnectX host")
def test_a_connectx_node_gives_network_topology(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    backend.seed_profile("gb300-eks-roce-training")
    cluster, _ = backend_facade(backend)
    live = capture(backend, cluster, options(backend))
    assert live.result.warnings == []
    snap = loaded(live)
    assert snap.types() == ["K8s", "GPU", "OS", "SystemD", "NodeTopology", "NetworkTopology"]
    identity = snap.subtype("NetworkTopology", "identity")
    assert identity is not None
    assert identity.context["nodeSelector"] == f"kubernetes.io/hostname={live.result.source_node}"
    assert identity.context["gpuType"] == "NVIDIA-GB300" and identity.context["linkType"] == "Ethernet"
    assert snap.lookup("NetworkTopology.identity.rail-count") == "4"
    assert snap.lookup("NetworkTopology.capabilities.rdma") == "true"
    assert snap.lookup("NetworkTopology.pfs[rail=2].connectedGPU") == "GPU2"
    assert snap.lookup("NetworkTopology.pfs[0].rdmaDevice") == "mlx5_0"
    assert labelled_leftovers(backend) == []


def test_unprivileged_capture_omits_what_needs_the_host(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    backend.seed_profile(PROFILE)
    cluster, _ = backend_facade(backend)
    live = capture(backend, cluster, options(backend, privileged=False))
    snap = loaded(live)
    assert snap.subtype("OS", "release") is None and "SystemD" not in snap.types()
    assert [w.split(" omitted")[0] for w in live.result.warnings] == ["OS.release", "GPU.smi", "SystemD"]
    assert snap.lookup("OS.kmod.nvidia") == "true"
    assert labelled_leftovers(backend) == []


def test_agent_that_never_runs_times_out_and_is_cleaned_up(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    backend.seed_profile(PROFILE)
    cluster, _ = backend_facade(backend)
    with pytest.raises(AgentTimeout) as err:
        capture(backend, cluster, options(backend, node_selector=NOWHERE, timeout=3.0))
    assert err.value.exit_code == 5
    assert str(err.value).startswith("[TIMEOUT] the snapshot agent did not finish within 3s (pod ")
    assert "not scheduled" in str(err.value)
    assert labelled_leftovers(backend) == []


def signal_once_watching(cluster: Cluster, signum: int) -> None:
    """Deliver ``signum`` to this process once the capture waits on its agent (a real signal)."""
    original = cluster.watch
    opened = threading.Event()

    def watch(*args: Any, **kwargs: Any) -> Any:
        opened.set()
        return original(*args, **kwargs)

    cluster.watch = watch  # type: ignore[method-assign]

    def fire() -> None:
        if opened.wait(20):
            time.sleep(0.2)
        os.kill(os.getpid(), signum)

    threading.Thread(target=fire, daemon=True).start()


@pytest.mark.usefixtures("sigint_raises", "sighup_default")
@pytest.mark.parametrize(
    ("signum", "raised"),
    [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated), (signal.SIGHUP, Terminated)],
)
def test_signal_mid_capture_leaves_nothing_behind(
    k8s_backend: K8sBackend, signum: int, raised: type[BaseException]
) -> None:
    backend = k8s_backend
    backend.seed_profile(PROFILE)
    cluster, _ = backend_facade(backend)
    reported: list[list[str]] = []
    assert threading.current_thread() is threading.main_thread()
    signal_once_watching(cluster, signum)
    with pytest.raises(raised):
        capture_live(
            lambda: cluster,
            options(backend, node_selector=NOWHERE, timeout=600.0),
            run_id=backend.run_id,
            clock=backend.clock,
            on_cleanup=reported.append,
        )
    assert reported == [[]]  # cleanup ran, with no warning
    assert labelled_leftovers(backend) == []


def test_no_cleanup_keeps_the_agent_and_says_how_to_remove_it(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    backend.seed_profile(PROFILE)
    cluster, _ = backend_facade(backend)
    live = capture(backend, cluster, options(backend), no_cleanup=True)
    kept = labelled_leftovers(backend)
    assert any(k.startswith("Job ") for k in kept) and any(k.startswith("ConfigMap ") for k in kept)
    assert live.cleanup_lines[0].startswith("cleanup disabled (--no-cleanup): 2 object(s) of run")
    assert any("delete configmaps,jobs" in line and RUN_ID_LABEL in line for line in live.cleanup_lines)


def test_image_pull_secrets_reach_the_agent_pod(k8s_backend: K8sBackend) -> None:
    # validate's --image-pull-secret reaches the agent pod
    backend = k8s_backend
    backend.seed_profile(PROFILE)
    cluster, _ = backend_facade(backend)
    capture(backend, cluster, options(backend, image_pull_secrets=("regcred",)), no_cleanup=True)
    jobs = backend.list("batch/v1", "Job", label_selector=f"{RUN_ID_LABEL}={backend.run_id}")
    assert len(jobs) == 1
    assert jobs[0]["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "regcred"}]


@pytest.mark.fake_only("the control plane's agent player answers only Jobs named aicr-snapshot-*")
def test_job_name_is_the_agent_jobs_prefix(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    backend.seed_profile(PROFILE)
    cluster, _ = backend_facade(backend)
    capture(backend, cluster, options(backend, job_base="mine"), no_cleanup=True)
    jobs = backend.list("batch/v1", "Job", label_selector=f"{RUN_ID_LABEL}={backend.run_id}")
    assert [j["metadata"]["name"] for j in jobs] == [f"mine-{backend.run_id}"]


# --- what only the fake can stage ----------------------------------------------------------------


@pytest.mark.fake_only("fault injection: the agent's log is cut inside the sysctl section")
def test_a_truncated_agent_log_omits_only_the_cut_section(k8s_backend: K8sBackend) -> None:
    backend = k8s_backend
    backend.seed_profile(PROFILE, ["snapshot-agent-log-truncated"])
    cluster, _ = backend_facade(backend)
    live = capture(backend, cluster, options(backend))
    assert live.result.warnings == ["OS.sysctl omitted: the agent's log ends inside this section (truncated)"]
    snap = loaded(live)
    assert snap.subtype("OS", "sysctl") is None and snap.lookup("OS.release.ID") == "ubuntu"
    assert labelled_leftovers(backend) == []


@pytest.mark.fake_only("scripted container exit: the agent's container fails")
def test_a_failed_agent_is_an_error_and_is_cleaned_up(k8s_backend: K8sBackend) -> None:
    from _facade_helpers import fake_of

    backend = k8s_backend
    backend.seed_profile(PROFILE)
    fake_of(backend).sim.script(
        labels={"app.kubernetes.io/name": "aicr-pytest-snapshot-agent"},
        logs="/bin/sh: 1: /aicr-snapshot/collect.sh: Permission denied\n",
        exit_code=126,
        start_after=1.0,
        run_for=0.5,
    )
    cluster, _ = backend_facade(backend)
    with pytest.raises(AgentFailed) as err:
        capture(backend, cluster, options(backend))
    assert err.value.exit_code == 8
    assert str(err.value).startswith("[INTERNAL] the snapshot agent failed on node h100-")
    assert "exited 126" in str(err.value)
    assert labelled_leftovers(backend) == []


@pytest.mark.fake_only("a node whose advertised GPUs are gone from its PCI bus (Xid 79 style)")
def test_require_gpu_without_a_gpu_is_exit_8(k8s_backend: K8sBackend) -> None:
    from _facade_helpers import fake_of

    from aicr_pytest.testing.simulator import NodeProfile

    backend = k8s_backend
    backend.seed_profile(PROFILE)
    fc = fake_of(backend)
    fc.sim.add_nodes(
        NodeProfile(count=1, name_prefix="lost", instance_type="custom.gpu", gpu_product="NVIDIA-X1")
    )
    cluster, _ = backend_facade(backend)
    where = {"kubernetes.io/hostname": "lost-0"}
    with pytest.raises(NoGpuFound) as err:
        capture(backend, cluster, options(backend, require_gpu=True, node_selector=where))
    assert err.value.exit_code == 8
    assert str(err.value) == (
        "[NOT_FOUND] --require-gpu was set but no GPU was detected on node lost-0 "
        "(neither PCI enumeration nor nvidia-smi found one)"
    )
    assert labelled_leftovers(backend) == []
