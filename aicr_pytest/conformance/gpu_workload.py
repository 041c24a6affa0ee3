"""The behavioural GPU pods of dra-support and secure-accelerator-access.

Pure builders and decisions over plain pod/claim dicts:

* :func:`build_claim` -- the ``gpu-claim-<token>`` ResourceClaim (one ``gpu.nvidia.com`` device,
  ``exactly`` for v1/v1beta2, fields on the request for v1beta1);
* :func:`build_dra_pod`, :func:`build_device_plugin_pod` -- the ``gpu-alloc-test-<token>`` pod: the
  ``gpu-test`` container that must see exactly one GPU (:data:`GRANT_PROBE`) and the ``unauthorized``
  sibling that requests nothing and must see none (:data:`ABSENCE_PROBE`);
* :func:`build_probe_pod` -- the ``no-alloc-probe-<token>`` pod pinned to the GPU pod's node;
* :func:`parse_grant_output`, :func:`parse_absence_output`, :func:`container_exit_code` -- what the
  containers reported, read fail-closed (a line that is not there is not a pass);
* :func:`pattern_errors_dra`, :func:`pattern_errors_device_plugin`, :func:`isolation_verdict`,
  :func:`probe_verdict` -- the checks' verdicts, first failure wins, AICR's texts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.conformance.common import meta, spec, status
from aicr_pytest.core.allocmode import GPU_DEVICE_CLASS, GPU_RESOURCE, gpu_count

JSON = dict[str, Any]

CUDA_IMAGE: Final = "nvidia/cuda:12.9.0-base-ubuntu24.04"
BUSYBOX_IMAGE: Final = "busybox:1.37"
GRANTED_CONTAINER: Final = "gpu-test"
UNAUTHORIZED_CONTAINER: Final = "unauthorized"
PROBE_CONTAINER: Final = "isolation-test"
CLAIM_REF: Final = "gpu"

#: Runs in the granted container: nvidia-smi must list exactly one GPU (control devices don't count).
GRANT_PROBE: Final = """\
if ! uuids=$(nvidia-smi --query-gpu=uuid --format=csv,noheader); then
  echo "FAIL: nvidia-smi cannot enumerate GPUs - no usable GPU granted"
  exit 1
fi
count=$(printf '%s\\n' "$uuids" | grep -c .)
echo "granted GPU count: ${count}"
echo "granted GPU UUIDs: $(printf '%s' "$uuids" | tr '\\n' ' ')"
if [ "$count" -eq 1 ]; then
  echo "PASS: exactly one usable GPU visible"
  exit 0
fi
echo "FAIL: expected exactly 1 usable GPU, saw ${count}"
exit 1
"""

#: Runs in containers that were granted nothing: no NVIDIA device node may be visible.
ABSENCE_PROBE: Final = """\
if ls /dev/nvidia* >/dev/null 2>&1; then
  echo "FAIL: GPU visible without GPU allocation"
  exit 1
fi
echo "PASS: GPU isolated"
exit 0
"""

LINE_GRANT_PASS: Final = "PASS: exactly one usable GPU visible"
LINE_ABSENCE_PASS: Final = "PASS: GPU isolated"
_COUNT_RE = re.compile(r"^granted GPU count: (\d+)\s*$", re.MULTILINE)
_UUIDS_RE = re.compile(r"^granted GPU UUIDs: (.*)$", re.MULTILINE)


# --- builders --------------------------------------------------------------------------------------


def build_claim(name: str, namespace: str, api_version: str, labels: Mapping[str, str]) -> JSON:
    """The ResourceClaim for one whole ``gpu.nvidia.com`` GPU at the served ``resource.k8s.io`` version."""
    version = api_version.rpartition("/")[2]
    fields: JSON = {"deviceClassName": GPU_DEVICE_CLASS, "allocationMode": "ExactCount", "count": 1}
    request: JSON = (
        {"name": CLAIM_REF, **fields} if version == "v1beta1" else {"name": CLAIM_REF, "exactly": fields}
    )
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"devices": {"requests": [request]}},
    }


def _container(name: str, image: str, script: str, resources: JSON | None = None) -> JSON:
    shell = "bash" if image == CUDA_IMAGE else "sh"
    out: JSON = {"name": name, "image": image, "command": [shell, "-c", script]}
    if resources:
        out["resources"] = resources
    return out


def run_once_pod(name: str, namespace: str, labels: Mapping[str, str], pod_spec: JSON) -> JSON:
    """A run-once test pod (``restartPolicy: Never``) with ``pod_spec``'s fields."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"restartPolicy": "Never", **pod_spec},
    }


def on_nodes(nodes: Sequence[str]) -> JSON:
    """Required node affinity to ``nodes``: one ``matchFields`` term per node, OR-ed (a
    ``metadata.name`` field selector takes a single value)."""
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]} for n in nodes]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def build_dra_pod(
    name: str,
    namespace: str,
    claim_name: str,
    tolerations: Sequence[Mapping[str, str]],
    labels: Mapping[str, str],
) -> JSON:
    """The DRA GPU test pod: ``gpu-test`` references the claim, ``unauthorized`` nothing; no node pinning."""
    return run_once_pod(
        name,
        namespace,
        labels,
        {
            "tolerations": [dict(t) for t in tolerations],
            "resourceClaims": [{"name": CLAIM_REF, "resourceClaimName": claim_name}],
            "containers": [
                _container(GRANTED_CONTAINER, CUDA_IMAGE, GRANT_PROBE, {"claims": [{"name": CLAIM_REF}]}),
                _container(UNAUTHORIZED_CONTAINER, CUDA_IMAGE, ABSENCE_PROBE),
            ],
        },
    )


def build_device_plugin_pod(
    name: str,
    namespace: str,
    nodes: Sequence[str],
    tolerations: Sequence[Mapping[str, str]],
    labels: Mapping[str, str],
) -> JSON:
    """The device-plugin GPU test pod: ``gpu-test`` limits ``nvidia.com/gpu: 1``; required node affinity
    to the device-plugin nodes (:func:`on_nodes`)."""
    return run_once_pod(
        name,
        namespace,
        labels,
        {
            "tolerations": [dict(t) for t in tolerations],
            "affinity": on_nodes(nodes),
            "containers": [
                _container(GRANTED_CONTAINER, CUDA_IMAGE, GRANT_PROBE, {"limits": {GPU_RESOURCE: "1"}}),
                _container(UNAUTHORIZED_CONTAINER, CUDA_IMAGE, ABSENCE_PROBE),
            ],
        },
    )


def build_probe_pod(name: str, namespace: str, node: str, labels: Mapping[str, str]) -> JSON:
    """The no-allocation probe: on ``node`` (bypassing the scheduler), tolerating everything, no GPU."""
    return run_once_pod(
        name,
        namespace,
        labels,
        {
            "nodeName": node,
            "tolerations": [{"operator": "Exists"}],
            "containers": [_container(PROBE_CONTAINER, BUSYBOX_IMAGE, ABSENCE_PROBE)],
        },
    )


# --- what the containers reported --------------------------------------------------------------------


@dataclass(frozen=True)
class GrantOutput:
    """The granted container's report; ``None`` fields were not in the output."""

    count: int | None
    uuids: tuple[str, ...]
    passed: bool

    @property
    def ok(self) -> bool:
        """Exactly one GPU and the PASS line: anything else (garbage, a missing line) is not a pass."""
        return self.passed and self.count == 1 and len(self.uuids) == 1


def parse_grant_output(text: str) -> GrantOutput:
    counts = _COUNT_RE.findall(text)
    uuid_lines = _UUIDS_RE.findall(text)
    count = int(counts[-1]) if len(counts) == 1 else None  # two reports: ambiguous, not a pass
    uuids = tuple(uuid_lines[-1].split()) if len(uuid_lines) == 1 else ()
    lines = [line.strip() for line in text.splitlines()]
    passed = LINE_GRANT_PASS in lines and not any(line.startswith("FAIL:") for line in lines)
    return GrantOutput(count, uuids, passed)


def parse_absence_output(text: str) -> bool:
    """Whether an absence probe reported isolation (its PASS line, and no FAIL line)."""
    lines = [line.strip() for line in text.splitlines()]
    return LINE_ABSENCE_PASS in lines and not any(line.startswith("FAIL:") for line in lines)


def log_readable(text: str) -> bool:
    """``False`` for the ``failed to read logs: …`` placeholder :func:`~.common.pod_log` returns."""
    return not text.startswith("failed to read logs:")


def container_status(pod: Mapping[str, Any], container: str) -> Mapping[str, Any] | None:
    for cs in status(pod).get("containerStatuses") or []:
        if isinstance(cs, Mapping) and cs.get("name") == container:
            return cs
    return None


def container_exit_code(pod: Mapping[str, Any], container: str) -> int | None:
    """The terminated exit code of ``container``; ``None`` when it has no terminated state (or it
    is not an integer: read fail-closed, never as 0)."""
    cs = container_status(pod, container)
    term = ((cs or {}).get("state") or {}).get("terminated")
    if not isinstance(term, Mapping):
        return None
    code = term.get("exitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


# --- verdicts ------------------------------------------------------------------------------------------


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in spec(pod).get("containers") or [] if isinstance(c, Mapping)]


def gpu_limit(container: Mapping[str, Any]) -> int:
    return gpu_count((container.get("resources") or {}).get("limits"))


def host_device_volume(pod: Mapping[str, Any]) -> str | None:
    """A hostPath volume that reaches ``/dev/nvidia*``, or ``None``."""
    for vol in spec(pod).get("volumes") or []:
        path = str(((vol or {}).get("hostPath") or {}).get("path") or "")
        if "/dev/nvidia" in path:
            return path
    return None


def pattern_errors_dra(pod: Mapping[str, Any]) -> str | None:
    """The DRA test pod's allocation pattern, first problem or ``None``."""
    if not spec(pod).get("resourceClaims"):
        return "pod does not use DRA resourceClaims"
    containers = _containers(pod)
    if not containers:
        return "pod has no containers"
    granted, others = containers[0], containers[1:]
    if not (granted.get("resources") or {}).get("claims"):
        return f"granted container {granted.get('name')} does not reference the ResourceClaim"
    for c in others:
        if (c.get("resources") or {}).get("claims"):
            return f"unauthorized container {c.get('name')} unexpectedly references a ResourceClaim"
    if any(gpu_limit(c) for c in containers):
        return (
            "DRA test pod unexpectedly requests nvidia.com/gpu in limits — must allocate via its "
            "ResourceClaim only"
        )
    path = host_device_volume(pod)
    if path is not None:
        return f"pod has hostPath volume to {path}"
    return None


def pattern_errors_device_plugin(pod: Mapping[str, Any]) -> str | None:
    """The device-plugin test pod's pattern."""
    if spec(pod).get("resourceClaims"):
        return "device plugin test pod unexpectedly uses DRA resourceClaims"
    containers = _containers(pod)
    if not containers or gpu_limit(containers[0]) < 1:
        return "device plugin test pod does not request nvidia.com/gpu in resources.limits"
    for c in containers[1:]:
        if gpu_limit(c):
            name = c.get("name")
            return f"unauthorized container {name} unexpectedly requests nvidia.com/gpu in resources.limits"
    path = host_device_volume(pod)
    if path is not None:
        return f"pod has hostPath volume to {path}"
    return None


def isolation_verdict(pod: Mapping[str, Any], mechanism: str, logs: Mapping[str, str]) -> str | None:
    """Completion and container-level isolation of the GPU test pod, or ``None`` when both hold.

    ``mechanism`` is ``DRA`` or ``device plugin``; ``logs`` maps container name to its log (or the
    ``failed to read logs`` placeholder). Beyond AICR, a readable log must agree with the exit code:
    a granted container that exited 0 without reporting exactly one GPU, or an unauthorized one
    that exited 0 without its isolation line, fails (fail closed on the output).
    """
    unauthorized = UNAUTHORIZED_CONTAINER
    code = container_exit_code(pod, unauthorized)
    if code is not None and code != 0:
        return (
            f"GPU devices visible in unauthorized container {unauthorized} (exit code {code}) — "
            "container-level isolation broken"
        )
    phase = str(status(pod).get("phase") or "Pending")
    if phase != "Succeeded":
        return f"{mechanism} test pod phase={phase} (want Succeeded), GPU allocation may have failed"
    if code is None:
        return (
            f"unauthorized container {unauthorized} has no terminated status — cannot verify "
            "container-level isolation"
        )
    return output_contradiction(pod, logs)


def output_contradiction(pod: Mapping[str, Any], logs: Mapping[str, str]) -> str | None:
    """A Succeeded GPU test pod whose readable output says otherwise (or lacks the exit codes)."""
    granted_code = container_exit_code(pod, GRANTED_CONTAINER)
    if granted_code != 0:
        return (
            f"granted container {GRANTED_CONTAINER} has no successful terminated status "
            f"(exit code {granted_code})"
        )
    grant_log = logs.get(GRANTED_CONTAINER, "")
    if log_readable(grant_log):
        report = parse_grant_output(grant_log)
        if not report.ok:
            seen = "no GPU count" if report.count is None else f"{report.count} GPU(s)"
            return (
                f"granted container {GRANTED_CONTAINER} exited 0 but its output does not report exactly one "
                f"usable GPU ({seen}, PASS line {'present' if report.passed else 'missing'})"
            )
    absence_log = logs.get(UNAUTHORIZED_CONTAINER, "")
    if log_readable(absence_log) and not parse_absence_output(absence_log):
        return (
            f"unauthorized container {UNAUTHORIZED_CONTAINER} exited 0 but its output does not report "
            "GPU isolation"
        )
    return None


def probe_verdict(pod: Mapping[str, Any], log: str) -> str | None:
    """The no-allocation probe's verdict, or ``None`` when it proved isolation."""
    phase = str(status(pod).get("phase") or "Pending")
    if phase != "Succeeded":
        code = container_exit_code(pod, PROBE_CONTAINER)
        code = -1 if code is None else code
        if code == 1:
            return (
                "GPU devices visible without any GPU allocation — isolation broken "
                f"(container exit code {code})"
            )
        return f"no-allocation probe pod failed with exit code {code} — cannot verify isolation"
    path = host_device_volume(pod)
    if path is not None:
        return f"no-allocation probe pod has hostPath volume to {path} — isolation broken"
    if container_exit_code(pod, PROBE_CONTAINER) != 0:
        return "no-allocation probe pod has no successful terminated status — cannot verify isolation"
    if log_readable(log) and not parse_absence_output(log):
        return "no-allocation probe pod exited 0 but its output does not report GPU isolation"
    return None


def pod_status_lines(pod: Mapping[str, Any]) -> str:
    """The ``Pod status`` artifact: name, phase, node, pod IP, claims and per-container exits."""
    st = status(pod)
    lines = [
        f"Name: {meta(pod).get('name')}",
        f"Phase: {st.get('phase') or 'Pending'}",
        f"Node: {spec(pod).get('nodeName') or ''}",
        f"PodIP: {st.get('podIP') or ''}",
        f"ResourceClaims: {len(spec(pod).get('resourceClaims') or [])}",
    ]
    for c in _containers(pod):
        code = container_exit_code(pod, str(c.get("name")))
        lines.append(f"Container {c.get('name')}: exit code {'none' if code is None else code}")
    return "\n".join(lines)


def claim_allocation_count(claim: Mapping[str, Any]) -> int:
    results = ((status(claim).get("allocation") or {}).get("devices") or {}).get("results") or []
    return len(results) if isinstance(results, list) else 0


__all__ = [
    "ABSENCE_PROBE",
    "BUSYBOX_IMAGE",
    "CLAIM_REF",
    "CUDA_IMAGE",
    "GRANTED_CONTAINER",
    "GRANT_PROBE",
    "LINE_ABSENCE_PASS",
    "LINE_GRANT_PASS",
    "PROBE_CONTAINER",
    "UNAUTHORIZED_CONTAINER",
    "GrantOutput",
    "build_claim",
    "build_device_plugin_pod",
    "build_dra_pod",
    "build_probe_pod",
    "claim_allocation_count",
    "container_exit_code",
    "container_status",
    "host_device_volume",
    "isolation_verdict",
    "log_readable",
    "output_contradiction",
    "parse_absence_output",
    "parse_grant_output",
    "pattern_errors_device_plugin",
    "pattern_errors_dra",
    "pod_status_lines",
    "probe_verdict",
]
