"""Test controllers for the real control plane: they play what kwok cannot (what a container prints).

kwok binds no containers: it marks pods Running (and a Job's pods Succeeded). Checks that run
workload pods need those pods to print something and to end. A :class:`PodPlayer` watches the
apiserver (polling, as the admin) for the pods it knows, and for each one bound to a node and
Running: computes its output, scripts it as the pod's log (a kwok ``Logs`` object, so
``GET .../pods/<pod>/log`` returns it through the apiserver and kwok's kubelet endpoint), then patches
the pod's status to ``Succeeded``/``Failed`` with the exit code, as a kubelet would.

:class:`Poller` is the loop every test controller shares (the Trainer/JobSet controller of
:mod:`.controlplane_trainer` too).

Players:

* ``check-nvidia-smi`` verify pods (label ``app.kubernetes.io/name=nvidia-smi-verify``): the
  container's ``/bin/sh -c`` script is interpreted by
  :func:`aicr_pytest.testing.players.nvidia_smi.run_verify_script` against the GPUs the pod was given
  on the real node it was bound to (its ``nvidia.com/gpu`` limit, the node's GFD labels).
* the snapshot agent's pods (label ``app.kubernetes.io/name=aicr-pytest-snapshot-agent``):
  :class:`SnapshotAgent` runs the pod's own ``collect.sh`` (read from its ConfigMap) against the
  simulated host of the real node it was bound to
  (:func:`aicr_pytest.testing.players.snapshot_agent.agent_output`).
* workload-sandboxing's probe pods (label ``app.kubernetes.io/component=sandbox-probe``):
  :class:`SandboxProbe` prints what :func:`aicr_pytest.testing.players.sandbox.probe_log`
  says (the sandbox's own, or under ``sandbox-kernel-shared`` the node's ``kernelVersion``).
* the NCCL ``-net`` check's NET preflight pods (label
  ``app.kubernetes.io/component=nccl-nvreg-probe``): :class:`NvregProbe` prints the node's
  ``/proc/driver/nvidia/version`` and ``params`` as the probe's script does (:func:`nvreg_params`:
  ``GrdmaPciTopoCheckOverride`` is 1 unless the node's :data:`NVREG_OVERRIDE_ANNOTATION` says
  otherwise; under ``driver-r595`` the target node runs an R595 driver).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import urllib.error
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from aicr_pytest.testing.simulator.kubelet import image_id

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

__all__ = [
    "NVIDIA_SMI_SELECTOR",
    "NVREG_OVERRIDE_ANNOTATION",
    "NVREG_PROBE_SELECTOR",
    "SANDBOX_PROBE_SELECTOR",
    "SNAPSHOT_AGENT_SELECTOR",
    "NvidiaSmiVerify",
    "NvregProbe",
    "PodPlayer",
    "Poller",
    "SandboxProbe",
    "SnapshotAgent",
    "describe_error",
    "http_detail",
    "nvidia_smi_output",
    "nvreg_params",
    "nvreg_probe_output",
    "vanished",
]

log = logging.getLogger("tests.harness.controlplane_players")
Obj = dict[str, Any]
#: ``(pod, node) -> {container: (log text, exit code)}``, or ``None``: not a pod this player plays
Play = Callable[[Obj, Obj], dict[str, tuple[str, int]] | None]

NVIDIA_SMI_SELECTOR = "app.kubernetes.io/name=nvidia-smi-verify"
NVREG_PROBE_SELECTOR = "app.kubernetes.io/component=nccl-nvreg-probe"
SNAPSHOT_AGENT_SELECTOR = "app.kubernetes.io/name=aicr-pytest-snapshot-agent"
SANDBOX_PROBE_SELECTOR = "app.kubernetes.io/component=sandbox-probe"
#: Node annotation: the node driver's ``NVreg_GrdmaPciTopoCheckOverride`` value (default ``1``, as the
#: GPU Operator's kernelModuleConfig sets it on p6e-gb200 EKS nodes).
NVREG_OVERRIDE_ANNOTATION = "aicr.test/nvreg-grdma-pci-topo-check-override"  # the test kit's


def _quantity(value: Any) -> int:
    text = str(value or "0")
    return int(text) if re.fullmatch(r"\d+", text) else 0


def _script(container: Obj) -> str:
    argv = [str(x) for x in (container.get("command") or []) + (container.get("args") or [])]
    if len(argv) >= 3 and argv[1] == "-c":
        return argv[2]
    return " ".join(argv)


def nvidia_smi_output(pod: Obj, node: Obj, below_floor: bool = False) -> dict[str, tuple[str, int]]:
    """What each container of a verify pod prints on ``node`` (and its exit code); ``below_floor``:
    the node's host driver is the ``driver-below-floor`` fault's."""
    from aicr_pytest.testing.players import nvidia_smi as player

    labels = (node.get("metadata") or {}).get("labels") or {}
    installed = _quantity(((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu"))
    out: dict[str, tuple[str, int]] = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        res = container.get("resources") or {}
        requested = _quantity((res.get("limits") or {}).get("nvidia.com/gpu")) or _quantity(
            (res.get("requests") or {}).get("nvidia.com/gpu")
        )
        memory = str(labels.get("nvidia.com/gpu.memory") or "")
        gpus = player.Gpus(
            count=min(requested, installed),
            product=str(labels.get("nvidia.com/gpu.product") or player.DEFAULT_PRODUCT).replace("-", " "),
            memory_mib=int(memory) if memory.isdigit() else player.DEFAULT_MEMORY_MIB,
            driver=player.node_driver(labels, below_floor),
            node=str((node.get("metadata") or {}).get("name") or ""),
        )
        out[str(container.get("name"))] = player.run_verify_script(_script(container), gpus, time.time())
    return out


class NvidiaSmiVerify:
    """Plays the verify pods; under ``driver-below-floor`` the profile's last GPU node (``target``)
    runs the fault's old host driver."""

    def __init__(self, faults: Callable[[], tuple[str, ...]], target: Callable[[], str | None]) -> None:
        self.faults = faults
        self.target = target

    def __call__(self, pod: Obj, node: Obj) -> dict[str, tuple[str, int]]:
        from aicr_pytest.testing.players import nvidia_smi as player

        name = (node.get("metadata") or {}).get("name")
        below = player.FAULT_DRIVER_BELOW_FLOOR in self.faults() and name == self.target()
        return nvidia_smi_output(pod, node, below_floor=below)


def nvreg_params(node: Obj) -> str:
    """The NVIDIA driver's ``/proc/driver/nvidia/params`` on ``node`` (the lines around the override)."""
    from aicr_pytest.testing.players import nvreg_probe

    value = str(((node.get("metadata") or {}).get("annotations") or {}).get(NVREG_OVERRIDE_ANNOTATION, "1"))
    return nvreg_probe.nvidia_params(value)


def nvreg_probe_output(pod: Obj, node: Obj, r595: bool = False) -> dict[str, tuple[str, int]]:
    """What the NET preflight's probe prints on ``node``: its driver's version and params files, each
    with its read marker, exit 0 (``r595``: the node runs the ``driver-r595`` fault's driver)."""
    from aicr_pytest.testing.players import nvreg_probe

    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return {str(containers[0].get("name") or "probe"): (nvreg_probe.probe_output(node, r595), 0)}


class NvregProbe:
    """Plays the NET preflight's probe pods; under ``driver-r595`` the profile's last GPU node
    (``target``) runs an R595 driver."""

    def __init__(self, faults: Callable[[], tuple[str, ...]], target: Callable[[], str | None]) -> None:
        self.faults = faults
        self.target = target

    def __call__(self, pod: Obj, node: Obj) -> dict[str, tuple[str, int]]:
        from aicr_pytest.testing.players import nvreg_probe

        name = (node.get("metadata") or {}).get("name")
        r595 = nvreg_probe.FAULT_DRIVER_R595 in self.faults() and name == self.target()
        return nvreg_probe_output(pod, node, r595=r595)


class SandboxProbe:
    """Plays workload-sandboxing's isolation probe inside the sandbox (``faults``: the session's)."""

    def __init__(self, faults: Callable[[], tuple[str, ...]]) -> None:
        self.faults = faults

    def __call__(self, pod: Obj, node: Obj) -> dict[str, tuple[str, int]]:
        from aicr_pytest.testing.players import sandbox

        log = sandbox.probe_log(node, sandbox.FAULT_SHARED_KERNEL in self.faults())
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        return {str(c.get("name") or "probe"): (log, 0) for c in containers}


class SnapshotAgent:
    """Plays a snapshot agent pod: its ConfigMap's script, run against its node's simulated host."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp

    def _configmap(self, namespace: str, name: str) -> dict[str, str] | None:
        try:
            found = self.cp.get(f"/api/v1/namespaces/{quote(namespace)}/configmaps/{quote(name)}")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise
        return {str(k): str(v) for k, v in (found.get("data") or {}).items()}

    def __call__(self, pod: Obj, node: Obj) -> dict[str, tuple[str, int]] | None:
        from aicr_pytest.testing.players.snapshot_agent import agent_output, pod_script

        containers = (pod.get("spec") or {}).get("containers") or [{}]
        name = str(containers[0].get("name") or "collector")
        script = pod_script(pod, self._configmap)
        if script is None:
            return {name: ("/bin/sh: 0: cannot open the collector script: No such file\n", 2)}
        return {name: agent_output(pod, node, script)}


def http_detail(e: urllib.error.HTTPError) -> str:
    """``<code> <reason> <body>`` of an apiserver error, for a test controller's ``errors``."""
    try:
        body = e.read().decode(errors="replace")
    except Exception:  # pragma: no cover - the body was consumed already
        body = ""
    return f"{e.code} {e.reason} {body}".strip()


def vanished(cp: ControlPlane, path: str) -> bool:
    """Whether the object at ``path`` is gone or being deleted.

    A test controller reads an object, then writes it (or something inside its namespace). A 404 on
    the write is a race with the test's own clean-up when the object is gone by now; it is a bug in
    the controller (a wrong path) when the object is still there. Only the first is forgiven.
    """
    try:
        found = cp.get(path)
    except urllib.error.HTTPError as e:
        return e.code in (404, 410)
    return bool(((found or {}).get("metadata") or {}).get("deletionTimestamp"))


def describe_error(e: BaseException) -> str:
    """``<type>: <message>``, with the URL of an HTTP error (which request failed, not only its status)."""
    text = f"{type(e).__name__}: {e}"
    url = getattr(e, "url", None) if isinstance(e, urllib.error.HTTPError) else None
    return f"{text} ({url})" if url else text


class Poller(ABC):
    """A test controller: ``tick()`` every ``interval`` seconds on a daemon thread until ``stop()``.

    An exception in ``tick`` is recorded in :attr:`errors` (a test asserts there are none) and the
    controller keeps going.
    """

    name = "poller"

    def __init__(self, cp: ControlPlane, *, interval: float = 0.2) -> None:
        self.cp = cp
        self.interval = interval
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self) -> Poller:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception as e:  # keep playing; a test sees what went wrong in `errors`
                self.errors.append(f"{self.name}: {describe_error(e)}")
                log.warning("%s: %s", self.name, e)
            self._stop.wait(self.interval)

    @abstractmethod
    def tick(self) -> None:
        """Implemented by each concrete subclass."""


class PodPlayer(Poller):
    """Plays pods matching ``selector`` (all namespaces) with ``play``; a daemon thread until ``stop()``."""

    def __init__(self, cp: ControlPlane, selector: str, play: Play, *, interval: float = 0.2) -> None:
        self.name = f"pod-player {selector}"
        super().__init__(cp, interval=interval)
        self.selector = selector
        self.play = play
        self.played: dict[str, str] = {}  # uid -> "ns/name"

    def tick(self) -> None:
        pods = self.cp.get(f"/api/v1/pods?labelSelector={quote(self.selector)}")["items"]
        for pod in pods:
            meta, status = pod["metadata"], pod.get("status") or {}
            uid = str(meta.get("uid"))
            if uid in self.played or meta.get("deletionTimestamp"):
                continue
            node_name = (pod.get("spec") or {}).get("nodeName")
            if status.get("phase") != "Running" or not node_name:
                continue
            pod_path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
            try:
                node = self.cp.get(f"/api/v1/nodes/{node_name}")
                outputs = self.play(pod, node)
                if outputs is not None:
                    self._finish(pod, outputs)
            except urllib.error.HTTPError as e:
                # the test deleted the pod (or its namespace, or its node) while we played it; a write
                # into a namespace being deleted is a 403 (the apiserver refuses new content there)
                if e.code in (404, 410):
                    raced = vanished(self.cp, pod_path) or vanished(self.cp, f"/api/v1/nodes/{node_name}")
                else:
                    raced = e.code == 403 and vanished(self.cp, f"/api/v1/namespaces/{meta['namespace']}")
                if not raced:
                    raise
            self.played[uid] = f"{meta['namespace']}/{meta['name']}"

    def _finish(self, pod: Obj, outputs: dict[str, tuple[str, int]]) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        self.cp.set_pod_logs(ns, name, {c: text for c, (text, _) in outputs.items()})
        # kwok reads Logs objects through an informer: wait until the log is served before the pod
        # ends, so a check that reads the log right after the phase change finds it.
        first = next(iter(outputs), "")
        deadline = time.monotonic() + 5
        while first and time.monotonic() < deadline:
            with contextlib.suppress(urllib.error.HTTPError, OSError):
                self.cp.get_text(f"/api/v1/namespaces/{ns}/pods/{name}/log?container={first}")
                break
            time.sleep(0.05)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        codes = [code for _, code in outputs.values()]
        failed = any(codes)
        images = {c.get("name"): c.get("image") for c in (pod.get("spec") or {}).get("containers") or []}
        statuses = [
            {
                "name": c,
                "image": images.get(c, ""),
                "imageID": image_id(str(images.get(c) or "")),  # what a kubelet reports once pulled
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Error" if code else "Completed",
                        "startedAt": now,
                        "finishedAt": now,
                    }
                },
            }
            for c, (_, code) in outputs.items()
        ]
        body = {
            "status": {
                "phase": "Failed" if failed else "Succeeded",
                "containerStatuses": statuses,
                "conditions": [
                    {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": now},
                    {
                        "type": "ContainersReady",
                        "status": "False",
                        "reason": "PodCompleted",
                        "lastTransitionTime": now,
                    },
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                ],
            }
        }
        self.cp.request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/pods/{name}/status",
            body,
            content_type="application/strategic-merge-patch+json",
        )
