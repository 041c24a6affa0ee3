"""Pure pieces behind the GKE/TCPXO, RoCE and Trainer-admission paths of the NCCL check and its fake."""

from __future__ import annotations

import json

import pytest

from aicr_pytest import nccl
from aicr_pytest.nccl.cluster import ADMISSION_RACE_MARKER, admission_race
from aicr_pytest.testing.players.nccl import (
    LauncherSpec,
    peak_busbw,
    render_launcher_log,
    results_digest,
    trainer_webhook_denial,
)

RUNTIME = "nccl-bw-rt-0123456789-r1"
H100 = "NVIDIA-H100-80GB-HBM3"


# --- Trainer admission race (AICR #1670) -------------------------------------------------
@pytest.mark.parametrize(
    ("status", "text", "expected"),
    [
        # Trainer's own wording: retried whatever the status says
        (
            403,
            f'trainingruntimes.trainer.kubeflow.org "{RUNTIME}" not found: specified trainingRuntime '
            f"{ADMISSION_RACE_MARKER}",
            True,
        ),
        (422, f"spec.runtimeRef: Invalid value: ...: {ADMISSION_RACE_MARKER}", True),
        (500, f"admission webhook denied the request: {ADMISSION_RACE_MARKER}", True),
        # "<runtime> not found" only counts as Invalid / BadRequest / Forbidden
        (422, f'TrainingRuntime.trainer.kubeflow.org "{RUNTIME}" not found', True),
        (400, f'TrainingRuntime.trainer.kubeflow.org "{RUNTIME}" not found', True),
        (403, f'TrainingRuntime.trainer.kubeflow.org "{RUNTIME}" not found', True),
        (500, f'TrainingRuntime.trainer.kubeflow.org "{RUNTIME}" not found', False),
        (404, f'namespaces "{RUNTIME}" not found', False),
        # another runtime, or no "not found": not the race
        (422, 'TrainingRuntime.trainer.kubeflow.org "someone-elses" not found', False),
        (422, f"spec.trainer.numNodes: Invalid value: 4 ({RUNTIME})", False),
        (403, "RBAC denied: cannot create trainjobs.trainer.kubeflow.org (403 Forbidden)", False),
    ],
)
def test_admission_race(status: int, text: str, expected: bool) -> None:
    assert admission_race(status, text, RUNTIME) is expected


def test_trainer_webhook_denial_names_the_requested_runtime() -> None:
    ref = {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": RUNTIME}
    text = trainer_webhook_denial(json.dumps({"spec": {"runtimeRef": ref}}).encode())
    assert text == (
        'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: spec.runtimeRef: '
        f"Invalid value: {json.dumps(ref, separators=(',', ':'))}: trainingruntimes.trainer.kubeflow.org "
        f'"{RUNTIME}" not found: specified trainingRuntime must be created before the TrainJob is created'
    )
    assert admission_race(403, text, RUNTIME)
    cluster = trainer_webhook_denial(b'{"spec": {"runtimeRef": {"name": "torch"}}}')
    assert (
        'clustertrainingruntimes.trainer.kubeflow.org "torch" not found: specified clusterTrainingRuntime'
        in (cluster)
    )
    assert ADMISSION_RACE_MARKER in trainer_webhook_denial(b"not json")


# --- launcher model: TCPXO and RoCE -----------------------------------------------------------------------
def rendered_launcher(check: str, accelerator: str, service: str, env: dict[str, str]) -> LauncherSpec:
    plan = nccl.resolve_variant(check, {"service": service, "accelerator": accelerator}, {check: ">= 1"}, env)
    inputs = nccl.RenderInputs(
        namespace="aicr-validation",
        names=nccl.benchmark_names("r1", check),
        sizing=nccl.WorkerSizing(2, 8, ("a", "b")),
        gke_network_interfaces="[]" if service == "gke" else None,
    )
    objs = nccl.render_benchmark(plan, inputs, nccl.WorkerScheduling({}, []))
    launcher = objs.runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    return LauncherSpec.from_container(launcher["template"]["spec"]["template"]["spec"]["containers"][0])


def test_gke_runtime_asks_for_fastrak_and_a_termination_message() -> None:
    spec = rendered_launcher(nccl.CHECK_DEFAULT, "h100", "gke", {})
    assert spec.network == "FasTrak" and spec.termination_log and not spec.debug_info
    assert (spec.min_bytes, spec.max_bytes) == (1 << 10, 16 << 30)
    assert peak_busbw(H100, spec) == 340.0 and peak_busbw(H100, LauncherSpec()) == 452.0


def test_roce_runtime_asks_for_ib_at_info() -> None:
    spec = rendered_launcher(nccl.CHECK_NET, "gb300", "eks", {"AICR_NCCL_FABRIC": "roce"})
    assert spec.network == "IB" and spec.debug_info and not spec.termination_log and not spec.nvls


def render(spec: LauncherSpec, network: str, product: str = "NVIDIA-GB300") -> str:
    head, rows, trailer = render_launcher_log(
        jobset="nccl-x",
        spec=spec,
        workers=["w-0", "w-1"],
        procs_per_node=4,
        product=product,
        peak_gbps=96.0,
        network=network,
        seed="s",
    )
    return head + "".join(r + "\n" for r in rows) + trailer


def test_roce_log_uses_ib_or_reports_no_device() -> None:
    spec = LauncherSpec(debug_info=True, network="IB")
    ok = render(spec, "IB")
    assert "NET/IB : Using [0]rocep144s0:1/RoCE" in ok
    result = nccl.parse_all_reduce(ok)
    nccl.verify_transport("net", result.transport)
    assert result.transport.network == "IB"
    fallback = render(spec, "Socket")
    assert "NET/IB : No device found." in fallback
    with pytest.raises(nccl.TransportError, match="fell back to 'Using network Socket'"):
        nccl.verify_transport("net", nccl.parse_all_reduce(fallback).transport)


def test_results_digest_is_what_the_gke_wrapper_keeps() -> None:
    log = render(LauncherSpec(), "FasTrak", product=H100)
    digest = results_digest(log)
    lines = digest.splitlines()
    assert len(lines) == 26 and lines[-1].startswith("# Avg bus bandwidth")
    assert not any(line.startswith(("#  Rank", "# nThread", "Warning")) for line in lines)
    assert nccl.parse_all_reduce(digest).busbw_gbps == nccl.parse_all_reduce(log).busbw_gbps
    # the kubelet keeps 4 KiB: the wrapper keeps the last 3900 bytes (the largest messages)
    big = "".join(
        f"{1 << i:>12}  {1:>12}  float  sum  -1  1.0  1.0  1.0  0  1.0  1.0  1.0  0\n" for i in range(60)
    )
    cut = results_digest(big + "# Avg bus bandwidth    : 1.0\n")
    assert len(cut.encode()) == 3900 and cut.endswith("# Avg bus bandwidth    : 1.0\n")
    assert results_digest("no table here\n") == ""
