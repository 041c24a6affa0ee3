"""The node-health checks end to end: real plugin + real facade + the fake cluster's players.

``gpu-inventory``, ``gpu-diagnostics`` and ``gpu-health`` run through pytester against a FakeCluster
profile (its clock auto-advancing while a check blocks), with the example recipe naming the check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.testing.cluster import FakeCluster
from tests.cluster.check_runner import PhaseRun, run_on_fake

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
GPU_NODES = ["h100-0", "h100-1", "h100-2", "h100-3"]


def recipe_with(*checks: str) -> dict[str, Any]:
    doc = yamlio.load(RECIPE.read_text())
    doc["validation"] = {"deployment": {"checks": list(checks)}}
    return doc


def run_checks(
    pytester: pytest.Pytester, fc: FakeCluster, *checks: str, extra: tuple[str, ...] = ()
) -> PhaseRun:
    return run_on_fake(
        pytester, fc, phase="deployment", recipe=recipe_with(*checks), snapshot=SNAPSHOT, extra=extra
    )


# ----------------------------------------------------------------------------- gpu-inventory --
def test_inventory_passes_on_a_healthy_cluster(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    test = run_checks(pytester, fc, "gpu-inventory").tests["gpu-inventory"]
    assert test["status"] == "passed", test.get("message")
    assert test["stdout"][-1].startswith("GPU inventory consistent on 4 nodes: 8 x ")
    nodes = test["extra"]["aicr.gpuInventory"]["nodes"]
    assert [n["node"] for n in nodes] == GPU_NODES
    assert {(n["allocatable"], n["advertised"], n["driver"]) for n in nodes} == {(8, 8, 8)}
    pods = exporter_pods(fc)
    assert [n["driver_source"] for n in nodes] == [f"DCGM exporter gpu-operator/{pods[n]}" for n in GPU_NODES]
    assert test["stdout"][:4] == [
        f"{n}: 8 allocatable (allocatable nvidia.com/gpu), 8 advertised, "
        f"driver 8 (DCGM exporter gpu-operator/{pods[n]}), product NVIDIA-H100-80GB-HBM3"
        for n in GPU_NODES
    ]
    proxied = [r.path for r in fc.server.requests if r.path.endswith("/proxy/metrics")]
    assert sorted(proxied) == sorted(
        f"/api/v1/namespaces/gpu-operator/pods/{pods[n]}:9400/proxy/metrics" for n in GPU_NODES
    )  # one scrape per node, read-only


@pytest.mark.parametrize(
    ("fault", "message", "driver"),
    [
        # the driver still sees all 8
        ("gpu-missing", "node h100-3: 7 of 8 GPUs allocatable", 8),
        (
            "gpu-driver-missing",
            "node h100-3: the driver reports 7 GPUs but 8 are allocatable and the node advertises 8",
            7,
        ),
    ],
)
def test_a_lost_gpu_fails_naming_the_last_node_and_its_counts(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, fault: str, message: str, driver: int
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, [fault])
    test = run_checks(pytester, fc, "gpu-inventory").tests["gpu-inventory"]
    assert test["status"] == "failed"
    assert test["message"] == message
    last = test["extra"]["aicr.gpuInventory"]["nodes"][-1]
    alloc = 7 if fault == "gpu-missing" else 8
    assert (last["node"], last["allocatable"], last["advertised"], last["driver"]) == (
        "h100-3",
        alloc,
        8,
        driver,
    )


def test_a_node_without_an_exporter_falls_back_to_gfds_label(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-driver-missing"])
    fc.delete("v1", "Pod", exporter_pods(fc)["h100-3"], "gpu-operator")
    test = run_checks(pytester, fc, "gpu-inventory").tests["gpu-inventory"]
    assert test["status"] == "passed", test.get("message")  # GFD's label cannot see the lost GPU
    assert test["stdout"][3] == (
        "h100-3: 8 allocatable (allocatable nvidia.com/gpu), 8 advertised, "
        "driver 8 (GFD's label nvidia.com/gpu.count: no DCGM exporter on the node), "
        "product NVIDIA-H100-80GB-HBM3"
    )
    assert test["stdout"][0].startswith("h100-0: 8 allocatable (allocatable nvidia.com/gpu), 8 advertised, ")
    assert "driver 8 (DCGM exporter gpu-operator/" in test["stdout"][0]


def test_an_exporter_answering_500_leaves_the_driver_count_unknown(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    pod = exporter_pods(fc)["h100-2"]
    fc.faults.server_error(path=rf"/pods/{pod}:9400/proxy/metrics$", times=None)
    test = run_checks(pytester, fc, "gpu-inventory").tests["gpu-inventory"]
    assert test["status"] == "other"
    (line,) = test["message"].splitlines()
    assert line.startswith(
        f"node h100-2: driver report unreadable: DCGM exporter pod gpu-operator/{pod} answered HTTP 500: "
    )


def test_an_exporter_listing_no_gpu_leaves_the_driver_count_unknown(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    pod = exporter_pods(fc)["h100-0"]
    fc.server.pod_proxy_handlers["gpu-operator"] = lambda method, p, path, body: (
        200,
        "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" if p["metadata"]["name"] == pod else "nonsense here\n",
    )
    test = run_checks(pytester, fc, "gpu-inventory").tests["gpu-inventory"]
    assert test["status"] == "other"
    lines = test["message"].splitlines()
    assert lines[0] == (
        f"node h100-0: driver report unreadable: DCGM exporter pod gpu-operator/{pod} lists no GPU "
        "(no DCGM_FI_DEV_* series with a gpu or UUID label)"
    )
    assert lines[1:] == [
        f"node {n}: driver report unreadable: DCGM exporter metrics line 1: bad value 'here'"
        for n in GPU_NODES[1:]
    ]


def test_inventory_is_other_when_nodes_cannot_be_listed(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fc.faults.server_error(path=r"/api/v1/nodes$", times=None)
    test = run_checks(pytester, fc, "gpu-inventory").tests["gpu-inventory"]
    assert test["status"] == "other"
    assert test["message"].startswith("could not list Nodes: ")


def test_inventory_skips_when_the_run_skips_it(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-missing"])
    run = run_checks(
        pytester, fc, "operator-health", "gpu-inventory", extra=("--aicr-skip-check", "gpu-inventory")
    )
    assert run.tests["gpu-inventory"]["status"] == "skipped"
    assert run.tests["operator-health"]["status"] == "passed"


def exporter_pods(fc: FakeCluster) -> dict[str, str]:
    """Node -> the name of the DCGM exporter pod on it."""
    pods = fc.list("v1", "Pod", "gpu-operator", label_selector="app=nvidia-dcgm-exporter")
    return {p["spec"]["nodeName"]: p["metadata"]["name"] for p in pods}


# --------------------------------------------------------------------------- gpu-diagnostics --
def diag_pods(fc: FakeCluster) -> list[dict[str, Any]]:
    return fc.list("v1", "Pod", None, label_selector="app.kubernetes.io/name=aicr-dcgm-diag")


def test_diagnostics_pass_with_one_pod_per_node_holding_all_its_gpus(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    created: list[dict[str, Any]] = []
    fc.sim.on_create("", "v1", "pods", lambda sim, pod: created.append(pod))
    run = run_checks(pytester, fc, "gpu-diagnostics")
    test = run.tests["gpu-diagnostics"]
    assert test["status"] == "passed", test.get("message")
    assert test["stdout"][-1] == (
        "DCGM diagnostics level 1 passed on 4 nodes: 32 GPUs, every test that ran passed (4 tests ran)"
    )
    pods = [p for p in created if p["metadata"]["labels"].get("app.kubernetes.io/name") == "aicr-dcgm-diag"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == GPU_NODES
    for pod in pods:
        container = pod["spec"]["containers"][0]
        assert container["image"] == "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04"
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
        assert "dcgmi diag -r 1 -j" in container["args"][0]
        assert pod["metadata"]["labels"]["aicr.run/run-id"] == run.run_id
        assert pod["metadata"]["name"].endswith(run.run_id)
    assert diag_pods(fc) == []  # the run cleaned up after itself
    extra = test["extra"]["aicr.gpuDiagnostics"]
    assert extra["level"] == 1 and sorted(extra["pods"]) == GPU_NODES


def test_diag_fail_names_node_gpu_test_and_warning(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-diag-fail"])
    run = run_checks(
        pytester,
        fc,
        "gpu-diagnostics",
        extra=("--aicr-dcgm-diag-level", "2", "--aicr-dcgm-image", "registry.local/dcgm:4"),
    )
    test = run.tests["gpu-diagnostics"]
    assert test["status"] == "failed"
    lines = test["message"].splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("node h100-3 GPU 7 (serial ")
    assert "memory failed: DCGM error 999: GPU 7: memory test found 3 uncorrectable errors" in lines[0]
    assert test["extra"]["aicr.gpuDiagnostics"]["image"] == "registry.local/dcgm:4"


def test_diag_fail_does_not_show_at_level_1(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-diag-fail"])
    assert run_checks(pytester, fc, "gpu-diagnostics").tests["gpu-diagnostics"]["status"] == "passed"


def test_an_image_that_never_pulls_is_other_naming_the_node(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    from aicr_pytest.testing.simulator import PodScript

    fc = aicr_fake_cluster_factory(PROFILE)
    fc.sim.script(
        PodScript(
            labels={"app.kubernetes.io/name": "aicr-dcgm-diag"},
            predicate=lambda pod: pod["spec"]["nodeName"] == "h100-1",
            waiting_reason="ImagePullBackOff",
        )
    )
    test = run_checks(pytester, fc, "gpu-diagnostics").tests["gpu-diagnostics"]
    assert test["status"] == "other"
    assert test["message"].startswith(
        "node h100-1: the DCGM image nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04 cannot be pulled"
    )
    # the health table: one other row for the node, naming the image
    (row,) = [r for r in test["extra"]["aicr.healthTable"] if r["result"] != "pass"]
    assert (row["node"], row["gpu"], row["test"], row["result"]) == ("h100-1", "", "dcgmi diag", "other")
    assert row["detail"].startswith("the DCGM image nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04 ")


def test_unparsable_diag_output_is_other(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    from aicr_pytest.testing.simulator import PodScript

    fc = aicr_fake_cluster_factory(PROFILE)
    fc.sim.script(
        PodScript(
            labels={"app.kubernetes.io/name": "aicr-dcgm-diag"},
            predicate=lambda pod: pod["spec"]["nodeName"] == "h100-2",
            logs="Error: unable to connect to host engine\n",
            exit_code=1,
        )
    )
    test = run_checks(pytester, fc, "gpu-diagnostics").tests["gpu-diagnostics"]
    assert test["status"] == "other"
    assert test["message"].startswith("node h100-2: not JSON (")


@pytest.mark.parametrize("level", ["0", "5", "fast"])
def test_a_bad_level_is_one_line_before_any_work(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, level: str
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    run = run_checks(pytester, fc, "gpu-diagnostics", extra=("--aicr-dcgm-diag-level", level))
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    err = run.result.stderr.str().strip().splitlines()
    assert err == [
        f"ERROR: --dcgm-diag-level: DCGM diagnostic level {level!r} is not valid "
        "(expected 1, 2, 3 or 4, or quick, medium, long, xlong)"
    ]
    assert diag_pods(fc) == []


# -------------------------------------------------------------------------------- gpu-health --
def test_health_passes_scraping_every_nodes_exporter_twice(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    start = fc.clock.time()
    test = run_checks(pytester, fc, "gpu-health", extra=("--aicr-gpu-health-window", "2m")).tests[
        "gpu-health"
    ]
    assert test["status"] == "passed", test.get("message")
    assert test["stdout"][-1] == (
        "GPU health clean on 4 nodes: 32 GPUs, no XID, ECC, row-remap or NVLink errors over 2m0s"
    )
    assert sorted(test["extra"]["aicr.gpuHealth"]["exporters"]) == GPU_NODES
    assert fc.clock.time() - start >= 120  # the window passed (on the fake's virtual clock)
    proxied = [r.path for r in fc.server.requests if "/pods/" in r.path and r.path.endswith("/proxy/metrics")]
    assert len(proxied) == 8


def test_gpu_xid_fails_naming_node_and_gpu(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-xid"])
    test = run_checks(pytester, fc, "gpu-health").tests["gpu-health"]
    assert test["status"] == "failed"
    lines = test["message"].splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("node h100-3 GPU 7 (GPU-")
    assert lines[0].endswith("XID 79 during the 1m0s window (DCGM_FI_DEV_XID_ERRORS)")


def test_an_ignored_xid_passes(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-xid"])
    run = run_checks(pytester, fc, "gpu-health", extra=("--aicr-gpu-health-threshold", "xid_ignore=79"))
    assert run.tests["gpu-health"]["status"] == "passed", run.tests["gpu-health"].get("message")


def test_an_unreachable_exporter_is_other(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fc.faults.server_error(path=r"/pods/nvidia-dcgm-exporter-[^/]+/proxy/metrics$", times=None)
    test = run_checks(pytester, fc, "gpu-health").tests["gpu-health"]
    assert test["status"] == "other"
    assert all(" answered HTTP 500: " in line for line in test["message"].splitlines())
    assert len(test["message"].splitlines()) == 4


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (("--aicr-gpu-health-window", "soon"), "gpu-health: invalid window='soon': not a duration"),
        (
            ("--aicr-gpu-health-threshold", "ecc_dbe_max"),
            "--gpu-health-threshold 'ecc_dbe_max': expected KEY=VALUE",
        ),
        (("--aicr-gpu-health-threshold", "bogus=1"), "gpu-health: unknown threshold 'bogus'"),
    ],
)
def test_a_bad_health_knob_is_one_line_before_any_work(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, argv: tuple[str, ...], line: str
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    run = run_checks(pytester, fc, "gpu-health", extra=argv)
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    err = run.result.stderr.str().strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"ERROR: {line}"), err


# ------------------------------------------------------------------------------------ opt-in --
HEALTH = ["gpu-inventory", "gpu-diagnostics", "gpu-health", "gpu-cuda-smoke"]
AICR_DEPLOYMENT = ["operator-health", "expected-resources", "gpu-operator-version", "check-nvidia-smi"]


def run_example(pytester: pytest.Pytester, fc: FakeCluster, *extra: str) -> PhaseRun:
    return run_on_fake(pytester, fc, phase="deployment", recipe=RECIPE, snapshot=SNAPSHOT, extra=extra)


def test_the_example_recipe_runs_no_node_health_check_unless_asked(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-missing", "gpu-xid"])
    run = run_example(pytester, fc)
    assert list(run.tests) == AICR_DEPLOYMENT
    assert {t["status"] for t in run.tests.values()} == {"passed"}  # what AICR reports for it


def test_node_health_adds_the_node_health_checks_after_aicrs(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-missing"])
    run = run_example(pytester, fc, "--aicr-node-health")
    assert list(run.tests) == [*AICR_DEPLOYMENT, *HEALTH]
    assert run.tests["gpu-inventory"]["status"] == "failed"
    assert run.tests["gpu-inventory"]["message"].startswith("node h100-3: 7 of 8 GPUs allocatable")
    assert run.tests["check-nvidia-smi"]["status"] == "passed"  # its pod gets the 7 allocatable GPUs


def test_the_config_key_turns_node_health_on(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    config = pytester.path / "aicr-config.yaml"
    config.write_text("kind: AICRConfig\nspec:\n  validate:\n    execution: {nodeHealth: true}\n")
    run = run_example(pytester, fc, "--aicr-config", str(config))
    assert list(run.tests) == [*AICR_DEPLOYMENT, *HEALTH]
    assert {run.tests[n]["status"] for n in HEALTH} == {"passed"}


def test_marker_health_runs_only_the_node_health_checks(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    run = run_example(pytester, fc, "-m", "health")
    assert [n for n, t in run.tests.items() if t["status"] != "skipped"] == HEALTH, run.tests
    assert {run.tests[n]["status"] for n in HEALTH} == {"passed"}
