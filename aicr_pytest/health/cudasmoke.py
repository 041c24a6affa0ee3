"""``gpu-cuda-smoke``, the pure half: the per-node pod, its output protocol and the verdict.

The NVIDIA GPU operator's validator can report Ready while ``/dev/nvidia-uvm`` is missing
(gpu-operator #2685); ``nvidia-smi`` only exercises NVML, so only a CUDA kernel shows it.  One
run-scoped Pod per targeted GPU node (pinned with ``nodeName``, holding every allocatable
``nvidia.com/gpu``) runs a small CUDA sample image (:data:`DEFAULT_CUDA_SMOKE_IMAGE`): the script
(:func:`smoke_script`) checks the ``/dev/nvidia-uvm*`` devices, runs the sample's kernel on every GPU
it holds, one at a time (``CUDA_VISIBLE_DEVICES``), and prints one protocol line per finding:

``aicr-cuda-smoke uvm PATH ok|missing``, ``aicr-cuda-smoke gpu INDEX ok|fail [DETAIL]`` and last
``aicr-cuda-smoke end COUNT``.

:func:`parse_smoke` reads that log and fails closed: no end line, a line it cannot read, a GPU
reported twice or not at all, a count that is not the GPUs the pod holds -- each is a
:class:`SmokeOutputError` (inconclusive, naming the node), never a pass.
:func:`check_cuda_smoke` turns every node's result into the verdict with :func:`.common.conclude`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from aicr_pytest.core import defaults
from aicr_pytest.health.common import conclude, plural

DEFAULT_CUDA_SMOKE_IMAGE: Final = defaults.DEFAULT_CUDA_SMOKE_IMAGE  # ``--cuda-smoke-image`` changes it
#: the sample's binary in that image (it prints ``Test PASSED`` when the kernel's result is right)
SAMPLE_BINARY: Final = "/cuda-samples/vectorAdd"
SAMPLE_PASSED: Final = "Test PASSED"
GPU_RESOURCE: Final = "nvidia.com/gpu"
APP_LABEL: Final = ("app.kubernetes.io/name", "aicr-cuda-smoke")
NODE_ANNOTATION: Final = "aicr-pytest.nvidia.com/node"
CONTAINER: Final = "cuda-smoke"
POD_BASE: Final = "cuda-smoke"
PREFIX: Final = "aicr-cuda-smoke"
#: the devices CUDA needs besides the GPUs themselves
UVM_DEVICES: Final = ("/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
#: how long the pods may take to be scheduled, pull the image and run (one budget for all nodes)
BUDGET_S: Final = 300.0

MSG_UVM_MISSING: Final = "node {node}: {device} is missing in the CUDA pod {pod} (CUDA cannot run)"
MSG_KERNEL_FAILED: Final = "node {node} GPU {gpu}: the CUDA kernel failed{detail}"
MSG_GARBLED: Final = "node {node}: the CUDA smoke pod {pod} printed output that cannot be read ({why})"
MSG_NOT_STARTED: Final = "node {node}: the CUDA smoke pod {pod} never ran within {budget:.0f}s ({state})"
MSG_IMAGE_PULL: Final = "node {node}: the CUDA image {image} cannot be pulled for pod {pod} ({reason}: {why})"
MSG_VANISHED: Final = "node {node}: the CUDA smoke pod {pod} vanished before it finished"
MSG_CREATE_FAILED: Final = "node {node}: could not create the CUDA smoke pod: {err}"
MSG_NO_LOG: Final = "node {node}: the CUDA smoke pod {pod} printed no log ({why})"
MSG_NO_GPUS: Final = "node {node}: no allocatable nvidia.com/gpu to run a CUDA kernel on"
MSG_PASSED: Final = "CUDA smoke passed on {nodes}: {gpus}, a CUDA kernel ran on each; {devices} present"

_LINE: Final = re.compile(
    rf"^{PREFIX} (?:(?P<uvm>uvm) (?P<path>/dev/\S+) (?P<ustate>ok|missing)"
    r"|(?P<gpu>gpu) (?P<index>\d+) (?P<gstate>ok|fail)(?: (?P<detail>.*))?"
    r"|(?P<end>end) (?P<count>\d+))$"
)


class SmokeOutputError(ValueError):
    """The pod's log is not a complete smoke report; ``str()`` is the inconclusive line."""


@dataclass(frozen=True)
class SmokeResult:
    """One node's report: the devices missing and each GPU's kernel outcome (``None``: it passed)."""

    node: str
    pod: str
    missing: tuple[str, ...] = ()
    gpus: Mapping[int, str | None] = field(default_factory=dict)


def pod_base(node: str) -> str:
    """The pod's base name for ``node`` (the run scope adds the run suffix): DNS-1123, short, unique."""
    digest = hashlib.sha256(node.encode()).hexdigest()[:6]
    clean = "".join(c if c.isalnum() else "-" for c in node.lower()).strip("-")[:20].rstrip("-")
    return f"{POD_BASE}-{clean}-{digest}" if clean else f"{POD_BASE}-{digest}"


def smoke_script(gpus: int) -> str:
    """The container's script: the uvm devices, the kernel on each of ``gpus`` GPUs, the end line.

    It exits non-zero when anything failed (the verdict reads the lines, not the exit code)."""
    devices = " ".join(UVM_DEVICES)
    return "\n".join(
        [
            "rc=0",
            f"for d in {devices}; do",
            f'  if [ -c "$d" ]; then echo "{PREFIX} uvm $d ok"',
            f'  else echo "{PREFIX} uvm $d missing"; rc=1; fi',
            "done",
            "i=0",
            f"while [ $i -lt {gpus} ]; do",
            f"  out=$(CUDA_VISIBLE_DEVICES=$i {SAMPLE_BINARY} 2>&1); code=$?",
            f'  if [ $code -eq 0 ] && printf "%s" "$out" | grep -q "{SAMPLE_PASSED}"; then',
            f'    echo "{PREFIX} gpu $i ok"',
            "  else",
            '    why=$(printf "%s" "$out" | tail -n 1 | tr -d "\\r")',
            f'    echo "{PREFIX} gpu $i fail exit $code: $why"; rc=1',
            "  fi",
            "  i=$((i+1))",
            "done",
            f'echo "{PREFIX} end {gpus}"',
            "exit $rc",
        ]
    )


def smoke_pod(
    node: str,
    gpus: int,
    *,
    name: str,
    image: str,
    tolerations: Sequence[Mapping[str, Any]] | None,
    active_deadline_seconds: int,
) -> dict[str, Any]:
    """The smoke Pod for ``node`` holding its ``gpus`` GPUs (``tolerations=None``: tolerate all)."""
    count = str(gpus)
    container = {
        "name": CONTAINER,
        "image": image,
        "command": ["/bin/sh", "-c"],
        "args": [smoke_script(gpus)],
        "resources": {"limits": {GPU_RESOURCE: count}, "requests": {GPU_RESOURCE: count}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {APP_LABEL[0]: APP_LABEL[1]},
            "annotations": {NODE_ANNOTATION: node},
        },
        "spec": {
            "restartPolicy": "Never",
            "nodeName": node,
            "activeDeadlineSeconds": active_deadline_seconds,
            "containers": [container],
            "tolerations": [dict(t) for t in tolerations]
            if tolerations is not None
            else [{"operator": "Exists"}],
        },
    }


def parse_smoke(text: str, node: str, pod: str, gpus: int) -> SmokeResult:
    """The node's :class:`SmokeResult` from the pod's log, or :class:`SmokeOutputError` (fail closed).

    Lines without the protocol prefix (the sample's own chatter, a shell warning) are ignored; a
    prefixed line that does not parse is an error, as is a report without its end line, with a GPU
    twice or missing, or for another number of GPUs than the pod holds."""

    def garbled(why: str) -> SmokeOutputError:
        return SmokeOutputError(MSG_GARBLED.format(node=node, pod=pod, why=why))

    devices: dict[str, bool] = {}
    results: dict[int, str | None] = {}
    end: int | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith(PREFIX):
            continue
        if end is not None:
            raise garbled("a line after the end line")
        m = _LINE.match(line)
        if m is None:
            raise garbled(f"unreadable line {line[:80]!r}")
        if m["uvm"]:
            devices[m["path"]] = m["ustate"] == "ok"
        elif m["gpu"]:
            index = int(m["index"])
            if index in results:
                raise garbled(f"GPU {index} reported twice")
            results[index] = None if m["gstate"] == "ok" else (m["detail"] or "").strip()
        else:
            end = int(m["count"])
    if end is None:
        raise garbled("no end line: the script did not finish")
    if end != gpus:
        raise garbled(f"it ran on {plural(end, 'GPU')} but holds {gpus}")
    if sorted(results) != list(range(gpus)):
        raise garbled(f"GPUs reported {sorted(results)}, expected 0 to {gpus - 1}")
    unchecked = [d for d in UVM_DEVICES if d not in devices]
    if unchecked:
        raise garbled(f"{', '.join(unchecked)} not checked")
    missing = tuple(d for d in UVM_DEVICES if not devices[d])
    return SmokeResult(node=node, pod=pod, missing=missing, gpus=results)


def failure_lines(result: SmokeResult) -> list[str]:
    """One line per missing device, then one per GPU whose kernel failed (node and GPU named)."""
    lines = [MSG_UVM_MISSING.format(node=result.node, device=d, pod=result.pod) for d in result.missing]
    for index in sorted(result.gpus):
        detail = result.gpus[index]
        if detail is not None:
            lines.append(
                MSG_KERNEL_FAILED.format(node=result.node, gpu=index, detail=f": {detail}" if detail else "")
            )
    return lines


def check_cuda_smoke(results: Sequence[SmokeResult], inconclusive: Sequence[str] = ()) -> str:
    """The ``gpu-cuda-smoke`` verdict: pass message, or raise (failures first, see :func:`.common.conclude`).

    No node judged at all is inconclusive, never a pass."""
    failures = [line for r in sorted(results, key=lambda r: r.node) for line in failure_lines(r)]
    unsure = list(inconclusive)
    if not results and not unsure:
        unsure.append("no GPU node was smoke-tested")
    passed = MSG_PASSED.format(
        nodes=plural(len(results), "node"),
        gpus=plural(sum(len(r.gpus) for r in results), "GPU"),
        devices=" and ".join(UVM_DEVICES),
    )
    return conclude(failures, unsure, passed)


__all__ = [
    "APP_LABEL",
    "BUDGET_S",
    "CONTAINER",
    "DEFAULT_CUDA_SMOKE_IMAGE",
    "MSG_CREATE_FAILED",
    "MSG_GARBLED",
    "MSG_IMAGE_PULL",
    "MSG_KERNEL_FAILED",
    "MSG_NOT_STARTED",
    "MSG_NO_GPUS",
    "MSG_NO_LOG",
    "MSG_PASSED",
    "MSG_UVM_MISSING",
    "MSG_VANISHED",
    "PREFIX",
    "UVM_DEVICES",
    "SmokeOutputError",
    "SmokeResult",
    "check_cuda_smoke",
    "failure_lines",
    "parse_smoke",
    "pod_base",
    "smoke_pod",
    "smoke_script",
]
