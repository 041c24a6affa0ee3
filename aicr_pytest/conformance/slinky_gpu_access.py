"""``slinky-slurm-gpu-access``: on a Slinky Slurm recipe, a Slurm job allocated one GPU can use
exactly that GPU, and a job without a GPU allocation on the same Slurm node can open none.

Upstream AICR (v1.x) added this conformance check for what ``secure-accelerator-access`` proves for
Kubernetes pods (and skips on Slinky recipes there): ``validators/conformance/
slinky_slurm_gpu_access_check.go`` and ``slinky_slurm_gpu_access_probe.go`` (repository
NVIDIA/aicr); upstream's recipe tests require it on every leaf that resolves ``slinky-slurm`` on a
GPU service (``pkg/recipe``, ``TestGPUSlurmLeavesSelectGPUAccessCheck``), and its CNCF evidence maps
it to the ``secure_accelerator_access`` requirement.

Guards, in order: ``slinky-slurm`` enabled in the recipe (else skip); recipe service ``kind`` (skip:
Kind leaves run Slurm without task/cgroup); then the guards the other Slinky checks share
(:mod:`aicr_pytest.conformance.slinky`: the API, the owned NodeSet/LoginSet pods, the KWOK skip).
When no NodeSet pod has a positive ``nvidia.com/gpu`` request or limit, a recipe whose service and
accelerator are both concrete fails (``UNAVAILABLE``) and any other skips.

The probe: two ``srun`` job steps from the login pod (``pods/exec``), no container image (the cgroup
Slurm sets up is the same with Pyxis or without): first with ``--gpus=1``, then with
``--nodelist=<the node the first one ran on>`` and no GPU request.  Each prints ``KEY=value`` lines
(:data:`PROBE_SCRIPT`): the Slurm node, ``CUDA_VISIBLE_DEVICES``, nvidia-smi's exit code and its
``uuid, mig.mode.current`` lines, how many ``/dev/nvidia<N>`` device nodes exist and the errno of a
read-only open of each (0: opened).  Slurm's cgroup device controller leaves the nodes listed and
refuses ``open()`` with ``EPERM``, so only an open proves access and only ``EPERM`` counts as denied.

* allocated job: passes only when nvidia-smi exits 0 and lists exactly one GPU, no GPU has MIG
  enabled (whole-GPU allocation only), and exactly one device node opens (every other refusal EPERM);
* unallocated job: passes only when it ran on the allocated job's node, opened no device node, saw
  only EPERM and nvidia-smi listed no GPU.

The verdict is recorded as the ``Slinky Slurm GPU access and isolation`` artifact.  Messages are
upstream's.  Deliberate difference, as in the other Slinky checks: an API read that fails (RBAC,
transport) is ``other``, not a failure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.conformance.common import failure, spec
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.slinky import (
    COMPONENT,
    SKIP_NOT_IN_RECIPE,
    SlurmPods,
    _exec,
    _guards,
    _login_pod,
    _result_text,
)
from aicr_pytest.core.allocmode import parse_quantity
from aicr_pytest.core.errors import CheckSkip
from aicr_pytest.core.textsafe import printable

__all__ = [
    "ALLOCATED_JOB",
    "PROBE_SCRIPT",
    "SKIP_KIND",
    "SKIP_NO_GPU_PODS",
    "UNALLOCATED_JOB",
    "GpuProbe",
    "evaluate_allocated",
    "evaluate_unallocated",
    "parse_probe",
    "probe_argv",
    "run_slinky_slurm_gpu_access",
]

GPU_RESOURCE = "nvidia.com/gpu"
SKIP_KIND = (
    "recipe service is kind: Kind Slinky leaves run without task/cgroup, so there is no Slurm GPU "
    "device confinement to verify"
)
SKIP_NO_GPU_PODS = (
    "no NodeSet pod has a positive nvidia.com/gpu request or limit and the recipe criteria are "
    "incomplete: no GPU-backed Slurm node to verify"
)
ALLOCATED_JOB = "allocated job (--gpus=1)"
UNALLOCATED_JOB = "unallocated job (no GPU request)"
ALLOCATED_LABEL = "GPU access (allocated job)"
UNALLOCATED_LABEL = "GPU isolation (unallocated job)"
ARTIFACT = "Slinky Slurm GPU access and isolation"
EPERM = 1

#: One job step's view of the GPUs, as KEY=value lines; it decides nothing (the evaluators do).
#: Commands whose failure would lose evidence abort the probe with PROBE_ERROR instead.
PROBE_SCRIPT = "\n".join(
    (
        'PATH="$PATH:/usr/local/nvidia/bin:/usr/local/bin:/usr/bin:/bin"; export PATH',
        'echo "NODE=${SLURMD_NODENAME:-}"',
        'echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}"',
        "smi=$(nvidia-smi --query-gpu=uuid,mig.mode.current --format=csv,noheader 2>&1); rc=$?",
        'echo "NVSMI_RC=$rc"',
        'while IFS= read -r l; do echo "NVSMI_LINE=$l"; done <<AICR_NVSMI',
        "$smi",
        "AICR_NVSMI",
        'command -v perl > /dev/null 2>&1 || { echo "PROBE_ERROR=perl not found"; exit 1; }',
        "devs=$(find /dev -maxdepth 1 -type c -name 'nvidia[0-9]*') || "
        '{ echo "PROBE_ERROR=find failed"; exit 1; }',
        'n=0; [ -z "$devs" ] || n=$(printf "%s\\n" "$devs" | wc -l)',
        'echo "DEVICES_LISTED=$n"',
        '[ -z "$devs" ] || printf "%s\\n" "$devs" | perl -ne '
        "'chomp; my $e = 0; if (sysopen(my $h, $_, 0)) { close $h } else { $e = $! + 0 } "
        'print "DEV=$_ $e\\n"\' '
        '|| { echo "PROBE_ERROR=perl failed"; exit 1; }',
        'echo "DONE=1"',
    )
)

_SINGLE_KEYS = frozenset(
    {"NODE", "CUDA_VISIBLE_DEVICES", "NVSMI_RC", "DEVICES_LISTED", "PROBE_ERROR", "DONE"}
)
#: one Slurm node name; a hostlist expression (``slinky-[0-1]``) would expand under --nodelist
_NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def probe_argv(placement: str) -> tuple[str, ...]:
    """The ``srun`` command of one probe job; ``placement``: ``--gpus=1`` or ``--nodelist=<node>``."""
    return (
        "srun", "--immediate=30", "--time=1:00", "--nodes=1", "--ntasks=1", "--cpus-per-task=1",
        "--mem=128M", placement, "/bin/sh", "-c", PROBE_SCRIPT,
    )  # fmt: skip


@dataclass
class GpuProbe:
    """The parsed output of one probe job (``devices``: ``(path, errno)`` per GPU device node)."""

    node: str = ""
    cuda_visible_devices: str = ""
    nvsmi_exit: int | None = None
    gpu_uuids: list[str] = field(default_factory=list)
    mig_enabled: int = 0
    devices_listed: int | None = None
    devices: list[tuple[str, int]] = field(default_factory=list)
    probe_error: str = ""
    done: bool = False

    def counts(self) -> tuple[int, int, list[str]]:
        """Opened, refused with EPERM, and every other errno (never counted as denied)."""
        opened = sum(1 for _, errno in self.devices if errno == 0)
        denied = sum(1 for _, errno in self.devices if errno == EPERM)
        other = [f"{path} errno {errno}" for path, errno in self.devices if errno not in (0, EPERM)]
        return opened, denied, other

    def summary(self) -> str:
        opened, denied, other = self.counts()
        uuids = "[" + " ".join(self.gpu_uuids) + "]"
        return (
            f"node={self.node or 'unknown'} nvidia-smi exit={self.nvsmi_exit} GPUs={uuids} "
            f"MIG-enabled={self.mig_enabled} CUDA_VISIBLE_DEVICES={self.cuda_visible_devices or 'unknown'} "
            f"device nodes listed={self.devices_listed} opened={opened} denied(EPERM)={denied} "
            f"other=[{' '.join(other)}]"
        )


def _int(key: str, value: str, *, non_negative: bool = False) -> int:
    try:
        number: int | None = int(value.strip())
    except ValueError:
        number = None
    if number is None or (non_negative and number < 0):
        want = "a non-negative integer" if non_negative else "an integer"
        raise failure("INTERNAL", f'GPU probe {key} "{value}" is not {want}')
    return number


def parse_probe(stdout: str) -> GpuProbe:
    """Parse probe stdout.  Lines without ``=`` and unknown keys are ignored (srun and prolog output
    share the stream); a repeated single-valued key means more than one task ran the probe."""
    probe = GpuProbe()
    seen: set[str] = set()
    for raw in stdout.split("\n"):
        line = raw.rstrip("\r")
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key in _SINGLE_KEYS:
            if key in seen:
                raise failure("INTERNAL", f"GPU probe output repeats {key}; more than one task ran the probe")
            seen.add(key)
        if key == "NODE":
            probe.node = value.strip()
        elif key == "CUDA_VISIBLE_DEVICES":
            probe.cuda_visible_devices = value
        elif key == "NVSMI_RC":
            probe.nvsmi_exit = _int(key, value)
        elif key == "NVSMI_LINE":
            entry = value.strip()
            if not entry.startswith("GPU-"):
                continue
            fields = entry.split(",")
            if len(fields) != 2:
                raise failure("INTERNAL", f'nvidia-smi line "{entry}" is not "<uuid>, <mig.mode.current>"')
            probe.gpu_uuids.append(fields[0].strip())
            probe.mig_enabled += fields[1].strip() == "Enabled"
        elif key == "DEVICES_LISTED":
            probe.devices_listed = _int(key, value, non_negative=True)
        elif key == "DEV":
            path, _, errno_text = value.strip().partition(" ")
            try:
                errno = int(errno_text.strip())
            except ValueError:
                errno = -1
            if not path or errno < 0:
                raise failure("INTERNAL", f'malformed GPU probe line "{line}"')
            probe.devices.append((path, errno))
        elif key == "PROBE_ERROR":
            probe.probe_error = value.strip()
        elif key == "DONE":
            probe.done = value.strip() == "1"
    return probe


def _complete(probe: GpuProbe, job: str) -> None:
    if probe.probe_error:
        raise failure("INTERNAL", f"{job}: GPU probe aborted: {probe.probe_error}")
    if not probe.done:
        raise failure(
            "INTERNAL", f"{job}: GPU probe output has no DONE=1 marker, so the probe did not finish"
        )
    if not _NODE_NAME.match(probe.node):
        raise failure(
            "INTERNAL", f'{job}: GPU probe reported Slurm node "{probe.node}", want a single node name'
        )
    if probe.nvsmi_exit is None:
        raise failure("INTERNAL", f"{job}: GPU probe output has no NVSMI_RC line")
    if probe.devices_listed is None:
        raise failure("INTERNAL", f"{job}: GPU probe output has no DEVICES_LISTED line")
    if len(probe.devices) != probe.devices_listed:
        raise failure(
            "INTERNAL",
            f"{job}: GPU probe reported {len(probe.devices)} of {probe.devices_listed} "
            "listed GPU device nodes",
        )


def evaluate_allocated(probe: GpuProbe) -> None:
    """The one-GPU job: exactly one GPU through NVML, no MIG, exactly one device node opens."""
    _complete(probe, ALLOCATED_JOB)
    if probe.nvsmi_exit != 0:
        raise failure(
            "INTERNAL",
            f"{ALLOCATED_JOB}: nvidia-smi exited {probe.nvsmi_exit}, so the job cannot use its allocated GPU",
        )
    if probe.mig_enabled > 0:
        raise failure(
            "INTERNAL",
            f"{ALLOCATED_JOB}: nvidia-smi reports MIG mode enabled on {probe.mig_enabled} GPU(s); "
            "this check verifies whole-GPU allocation only",
        )
    if len(probe.gpu_uuids) != 1:
        raise failure(
            "INTERNAL", f"{ALLOCATED_JOB}: nvidia-smi listed {len(probe.gpu_uuids)} GPUs, want exactly 1"
        )
    opened, _, other = probe.counts()
    if other:
        raise failure(
            "INTERNAL",
            f"{ALLOCATED_JOB}: unexpected errno opening GPU device nodes ({', '.join(other)}); "
            "only EPERM counts as denied",
        )
    if opened != 1:
        raise failure(
            "INTERNAL",
            f"{ALLOCATED_JOB}: opened {opened} of {len(probe.devices)} GPU device nodes, want exactly 1 "
            "(0: the allocation reached no device; more than 1: Slurm is not confining the job)",
        )


def evaluate_unallocated(probe: GpuProbe, want_node: str) -> None:
    """The job without a GPU request on ``want_node``: no device node opens, NVML lists no GPU."""
    _complete(probe, UNALLOCATED_JOB)
    if probe.node != want_node:
        raise failure(
            "INTERNAL",
            f'{UNALLOCATED_JOB} ran on Slurm node "{probe.node}", want "{want_node}" '
            "(the allocated job's node)",
        )
    opened, _, other = probe.counts()
    if opened > 0:
        raise failure(
            "INTERNAL",
            f"{UNALLOCATED_JOB} opened {opened} GPU device node(s) without a GPU allocation: "
            "Slurm GPU isolation is broken",
        )
    if other:
        raise failure(
            "INTERNAL",
            f"{UNALLOCATED_JOB}: unexpected errno opening GPU device nodes ({', '.join(other)}); "
            "only EPERM counts as denied, so isolation is unproven",
        )
    if probe.gpu_uuids:
        raise failure(
            "INTERNAL",
            f"{UNALLOCATED_JOB}: nvidia-smi listed {len(probe.gpu_uuids)} GPU(s) without a GPU allocation: "
            "Slurm GPU isolation is broken",
        )


def requests_gpus(pods: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any container of any pod has a positive ``nvidia.com/gpu`` limit or request."""
    for pod in pods:
        for container in spec(pod).get("containers") or []:
            resources = (container.get("resources") if isinstance(container, Mapping) else None) or {}
            for kind in ("limits", "requests"):
                value = (resources.get(kind) or {}).get(GPU_RESOURCE)
                if value is None:
                    continue
                try:
                    if parse_quantity(value) > 0:
                        return True
                except ValueError:  # not a quantity: the API server would not have admitted it
                    continue
    return False


def _concrete(value: str | None) -> bool:
    return bool(value) and value != "any"


def _run_probe(
    ctx: ConformanceContext, pods: SlurmPods, login: tuple[str, str], label: str, placement: str
) -> GpuProbe:
    argv = probe_argv(placement)
    result = _exec(ctx, pods.namespace, login[0], login[1], argv)
    ctx.record(f"Slinky Slurm {label} result", _result_text(result))
    if result.exit_code is None:
        raise failure("INTERNAL", f"{label}: exec failed", result.error or "no exit status")
    if result.exit_code != 0:
        lines = [line.strip() for line in result.stderr.strip().split("\n")]
        detail = lines[-1] if lines and lines[-1] else ""
        try:
            aborted = parse_probe(result.stdout).probe_error
        except Exception:  # unreadable output: the exit code and stderr say what happened
            aborted = ""
        if aborted:
            detail = f"PROBE_ERROR={aborted}"
        raise failure("INTERNAL", f"{label}: exit code {result.exit_code}: {printable(detail) or 'unknown'}")
    try:
        return parse_probe(result.stdout)
    except Exception as exc:
        raise failure("INTERNAL", f"{label}: unreadable probe output", exc) from exc


def _record_verdict(
    ctx: ConformanceContext,
    allocated: GpuProbe,
    unallocated: GpuProbe | None,
    status: str,
    verdict: str | None,
) -> None:
    body = [
        f"Node:             {allocated.node or 'unknown'}",
        f"Allocated job:    {allocated.summary()}",
        f"Unallocated job:  {unallocated.summary() if unallocated is not None else status}",
        "Verdict:          PASS" if verdict is None else f"Verdict:          FAIL: {verdict}",
    ]
    ctx.record(ARTIFACT, "\n".join(body))


def run_slinky_slurm_gpu_access(ctx: ConformanceContext) -> None:
    """The check (module docstring)."""
    if not ctx.has_component(COMPONENT):
        raise CheckSkip(SKIP_NOT_IN_RECIPE)
    service, accelerator = ctx.criteria.get("service"), ctx.criteria.get("accelerator")
    if service == "kind":
        raise CheckSkip(SKIP_KIND)
    pods = _guards(ctx)
    if not requests_gpus(pods.nodeset_pods):
        if _concrete(service) and _concrete(accelerator):
            raise failure(
                "UNAVAILABLE",
                f"recipe criteria require service={service} accelerator={accelerator}, but no NodeSet pod "
                "has a positive nvidia.com/gpu request or limit",
            )
        raise CheckSkip(SKIP_NO_GPU_PODS)
    login = _login_pod(ctx, pods)

    allocated = _run_probe(ctx, pods, login, ALLOCATED_LABEL, "--gpus=1")
    try:
        evaluate_allocated(allocated)
    except Exception as exc:
        _record_verdict(ctx, allocated, None, "not run", str(exc))
        raise
    if ctx.remaining() <= 0:
        canceled = failure("TIMEOUT", "canceled before the unallocated Slurm GPU isolation job")
        _record_verdict(ctx, allocated, None, "not run (canceled)", str(canceled))
        raise canceled
    try:
        unallocated = _run_probe(ctx, pods, login, UNALLOCATED_LABEL, f"--nodelist={allocated.node}")
    except Exception as exc:
        _record_verdict(
            ctx,
            allocated,
            None,
            f"ran but returned no usable result (see the {UNALLOCATED_LABEL} result)",
            str(exc),
        )
        raise
    try:
        evaluate_unallocated(unallocated, allocated.node)
    except Exception as exc:
        _record_verdict(ctx, allocated, unallocated, "", str(exc))
        raise
    _record_verdict(ctx, allocated, unallocated, "", None)
