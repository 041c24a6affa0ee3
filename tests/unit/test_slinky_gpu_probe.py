"""The pure half of ``slinky-slurm-gpu-access``: the probe's output parser and the two evaluators.

Each case is one probe output a broken or unusual Slurm can produce, and the exact verdict upstream
AICR gives it; the probe script itself is run through ``sh`` to prove it prints what the parser reads.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from aicr_pytest.conformance import slinky_gpu_access as g
from aicr_pytest.conformance.common import ConformanceFailure

ALLOCATED_OK = """srun: job 12 queued and waiting for resources
NODE=slurm-0
CUDA_VISIBLE_DEVICES=0
NVSMI_RC=0
NVSMI_LINE=GPU-aaaa, Disabled
DEVICES_LISTED=2
DEV=/dev/nvidia0 0
DEV=/dev/nvidia1 1
DONE=1
"""
UNALLOCATED_OK = """NODE=slurm-0
CUDA_VISIBLE_DEVICES=<unset>
NVSMI_RC=6
NVSMI_LINE=No devices were found
DEVICES_LISTED=2
DEV=/dev/nvidia0 1
DEV=/dev/nvidia1 1
DONE=1
"""


def verdict(fn: object, *args: object) -> str:
    with pytest.raises(ConformanceFailure) as info:
        fn(*args)  # type: ignore[operator]
    return str(info.value)


def test_healthy_probes_pass_and_parse_every_field() -> None:
    allocated = g.parse_probe(ALLOCATED_OK)
    assert (allocated.node, allocated.gpu_uuids, allocated.devices) == (
        "slurm-0",
        ["GPU-aaaa"],
        [("/dev/nvidia0", 0), ("/dev/nvidia1", 1)],
    )
    g.evaluate_allocated(allocated)
    g.evaluate_unallocated(g.parse_probe(UNALLOCATED_OK), "slurm-0")


@pytest.mark.parametrize(("stdout", "message"), [
    (ALLOCATED_OK.replace("DONE=1\n", ""),
     "allocated job (--gpus=1): GPU probe output has no DONE=1 marker, so the probe did not finish"),
    (ALLOCATED_OK.replace("NODE=slurm-0", "NODE=slurm-[0-1]"),
     'allocated job (--gpus=1): GPU probe reported Slurm node "slurm-[0-1]", want a single node name'),
    (ALLOCATED_OK.replace("DEV=/dev/nvidia1 1\n", ""),
     "allocated job (--gpus=1): GPU probe reported 1 of 2 listed GPU device nodes"),
    (ALLOCATED_OK.replace("NVSMI_RC=0", "NVSMI_RC=9"),
     "allocated job (--gpus=1): nvidia-smi exited 9, so the job cannot use its allocated GPU"),
    (ALLOCATED_OK.replace("GPU-aaaa, Disabled", "GPU-aaaa, Enabled"),
     "allocated job (--gpus=1): nvidia-smi reports MIG mode enabled on 1 GPU(s); this check verifies "
     "whole-GPU allocation only"),
    (ALLOCATED_OK.replace("DEV=/dev/nvidia1 1", "DEV=/dev/nvidia1 0"),
     "allocated job (--gpus=1): opened 2 of 2 GPU device nodes, want exactly 1 (0: the allocation "
     "reached no device; more than 1: Slurm is not confining the job)"),
    (ALLOCATED_OK.replace("DEV=/dev/nvidia1 1", "DEV=/dev/nvidia1 13"),
     "allocated job (--gpus=1): unexpected errno opening GPU device nodes (/dev/nvidia1 errno 13); "
     "only EPERM counts as denied"),
])  # fmt: skip
def test_allocated_job_rules(stdout: str, message: str) -> None:
    assert verdict(g.evaluate_allocated, g.parse_probe(stdout)) == f"[INTERNAL] {message}"


@pytest.mark.parametrize(("stdout", "node", "message"), [
    (UNALLOCATED_OK, "slurm-1",
     'unallocated job (no GPU request) ran on Slurm node "slurm-0", want "slurm-1" (the allocated '
     "job's node)"),
    (UNALLOCATED_OK.replace("DEV=/dev/nvidia0 1", "DEV=/dev/nvidia0 2"), "slurm-0",
     "unallocated job (no GPU request): unexpected errno opening GPU device nodes (/dev/nvidia0 errno 2); "
     "only EPERM counts as denied, so isolation is unproven"),
    (UNALLOCATED_OK.replace("NVSMI_LINE=No devices were found", "NVSMI_LINE=GPU-bbbb, Disabled"), "slurm-0",
     "unallocated job (no GPU request): nvidia-smi listed 1 GPU(s) without a GPU allocation: Slurm GPU "
     "isolation is broken"),
])  # fmt: skip
def test_unallocated_job_rules(stdout: str, node: str, message: str) -> None:
    assert verdict(g.evaluate_unallocated, g.parse_probe(stdout), node) == f"[INTERNAL] {message}"


@pytest.mark.parametrize(("stdout", "message"), [
    (ALLOCATED_OK + "NODE=slurm-1\n", "GPU probe output repeats NODE; more than one task ran the probe"),
    ("NVSMI_RC=x\n", 'GPU probe NVSMI_RC "x" is not an integer'),
    ("DEVICES_LISTED=-1\n", 'GPU probe DEVICES_LISTED "-1" is not a non-negative integer'),
    ("DEV=/dev/nvidia0\n", 'malformed GPU probe line "DEV=/dev/nvidia0"'),
    ("NVSMI_LINE=GPU-a, b, c\n", 'nvidia-smi line "GPU-a, b, c" is not "<uuid>, <mig.mode.current>"'),
])  # fmt: skip
def test_unreadable_probe_output_is_refused(stdout: str, message: str) -> None:
    assert verdict(g.parse_probe, stdout) == f"[INTERNAL] {message}"


def test_a_gpu_request_or_limit_counts_only_when_positive() -> None:
    def pod(resources: dict[str, dict[str, str]]) -> dict[str, object]:
        return {"spec": {"containers": [{"name": "slurmd", "resources": resources}]}}

    assert g.requests_gpus([pod({"limits": {"nvidia.com/gpu": "4"}})])
    assert g.requests_gpus([pod({}), pod({"requests": {"nvidia.com/gpu": "1"}})])
    assert not g.requests_gpus([pod({"limits": {"nvidia.com/gpu": "0"}}), pod({"limits": {"cpu": "2"}})])


@pytest.mark.skipif(shutil.which("perl") is None, reason="the probe needs perl, as the slurmd image has")
def test_the_probe_script_prints_what_the_parser_reads() -> None:
    """Every line the parser needs; on a machine without GPUs nvidia-smi fails and nothing opens."""
    out = subprocess.run(
        ["/bin/sh", "-c", g.PROBE_SCRIPT],
        env={"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": "slurm-7"},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    probe = g.parse_probe(out)
    assert (probe.node, probe.cuda_visible_devices, probe.done) == ("slurm-7", "<unset>", True)
    assert probe.devices_listed == len(probe.devices)
    if not probe.devices:  # a machine without GPU device nodes: nothing reachable, isolation holds
        assert probe.nvsmi_exit not in (None, 0) and probe.gpu_uuids == []
        g.evaluate_unallocated(probe, "slurm-7")
