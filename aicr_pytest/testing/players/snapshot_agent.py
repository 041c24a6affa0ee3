"""Snapshot-agent player: the agent pod runs the real ``collect.sh`` against its node's simulated host.

``aicr-pytest snapshot`` (and ``validate`` without ``--snapshot``) creates a Job whose pod (label
``app.kubernetes.io/name: aicr-pytest-snapshot-agent``) runs ``/bin/sh <script>`` from a ConfigMap.
When the simulated kubelet starts that pod's container, this player writes the host of the node the
pod was bound to (:mod:`.snapshot_host`: real-format ``/etc/os-release``, ``/proc/cmdline``,
``/proc/modules``, ``/proc/sys``, sysfs PCI devices, ``nvidia-smi -q -x`` XML, ``systemctl show``)
into a temporary directory and runs the pod's own script there with ``/bin/sh``, so the log is what
the script prints. What the pod may see follows its spec: the host's ``os-release`` only when the
pod mounts it, host commands (``nsenter`` into PID 1) only for a privileged pod with ``hostPID``,
the container's ``nvidia-smi`` only when the pod was given GPUs, the host name only with
``hostNetwork``.

Faults: ``snapshot-agent-log-truncated`` -- the log is cut in the middle of the ``sysctl`` section
(as a log that hit the kubelet's size limit).

:func:`agent_output` is also what the control-plane test controller plays the pod with.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aicr_pytest.testing.players.podscripts import script_each_pod
from aicr_pytest.testing.players.snapshot_host import node_host
from aicr_pytest.testing.simulator import PodScript, Simulator, parse_quantity
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = ["AGENT_LABEL", "FAULT_TRUNCATED", "agent_output", "install", "is_agent_pod", "pod_script"]

AGENT_LABEL = ("app.kubernetes.io/name", "aicr-pytest-snapshot-agent")
FAULT_TRUNCATED = "snapshot-agent-log-truncated"
HOST_OS_RELEASE = "/host/etc/os-release"
RUN_TIMEOUT_S = 60.0
#: ``read(namespace, name) -> ConfigMap data`` (``None`` when it does not exist).
ConfigMapReader = Callable[[str, str], Mapping[str, str] | None]


def is_agent_pod(pod: Mapping[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(AGENT_LABEL[0]) == AGENT_LABEL[1]


def _container(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return containers[0] or {}


def pod_script(pod: Mapping[str, Any], read_configmap: ConfigMapReader) -> str | None:
    """The script the pod's container runs (``/bin/sh <path>``, the path in a ConfigMap volume)."""
    spec = pod.get("spec") or {}
    container = _container(pod)
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    if len(argv) < 2:
        return None
    path = argv[1]
    volumes = {str(v.get("name")): v for v in spec.get("volumes") or []}
    ns = str((pod.get("metadata") or {}).get("namespace") or "")
    for mount in container.get("volumeMounts") or []:
        mount_path = str(mount.get("mountPath") or "").rstrip("/")
        if not path.startswith(mount_path + "/"):
            continue
        cm = (volumes.get(str(mount.get("name"))) or {}).get("configMap") or {}
        data = read_configmap(ns, str(cm.get("name") or "")) if cm else None
        if data is not None:
            return data.get(path[len(mount_path) + 1 :])
    return None


def _mounts_host_os_release(pod: Mapping[str, Any]) -> bool:
    volumes = {str(v.get("name")): v for v in (pod.get("spec") or {}).get("volumes") or []}
    for mount in _container(pod).get("volumeMounts") or []:
        host_path = ((volumes.get(str(mount.get("name"))) or {}).get("hostPath") or {}).get("path")
        if mount.get("mountPath") == HOST_OS_RELEASE and host_path == "/etc/os-release":
            return True
    return False


def _container_gpus(pod: Mapping[str, Any]) -> int:
    res = _container(pod).get("resources") or {}
    amount = (res.get("limits") or {}).get("nvidia.com/gpu") or (res.get("requests") or {}).get(
        "nvidia.com/gpu"
    )
    return int(parse_quantity(amount)) if amount else 0


def _env(pod: Mapping[str, Any], node_name: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in _container(pod).get("env") or []:
        name = str(item.get("name") or "")
        if "value" in item:
            env[name] = str(item["value"])
        elif ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath") == "spec.nodeName":
            env[name] = node_name
    return env


def agent_output(
    pod: Mapping[str, Any], node: Mapping[str, Any], script: str, *, shell: Sequence[str] = ("/bin/sh",)
) -> tuple[str, int]:
    """Run ``script`` as the agent pod would on ``node``; returns (its log, its exit code).

    ``shell`` is the interpreter (a POSIX ``sh``: dash, ``busybox sh``, ``bash --posix``...)."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    node_name = str((node.get("metadata") or {}).get("name") or "")
    privileged = bool((_container(pod).get("securityContext") or {}).get("privileged"))
    host = node_host(node)
    with tempfile.TemporaryDirectory(prefix="aicr-agent-") as tmp:
        root = Path(tmp)
        host.materialize(
            root,
            hostname=node_name if spec.get("hostNetwork") else str(meta.get("name") or ""),
            mount_os_release=_mounts_host_os_release(pod),
            container_gpus=_container_gpus(pod),
        )
        (root / "collect.sh").write_text(script)
        env = {
            "PATH": f"{root / 'ctr-bin'}:/usr/bin:/bin",
            "HOME": "/",
            "LC_ALL": "C",
            **_env(pod, node_name),
            "AICR_ROOT": str(root),
        }
        if privileged and spec.get("hostPID"):
            env["AICR_HOST_EXEC"] = str(root / "hostexec")
        else:  # nsenter into PID 1 fails without host PID and privileges
            env["AICR_HOST_EXEC"] = "false"
        try:
            proc = subprocess.run(
                [*shell, str(root / "collect.sh")],
                env=env,
                cwd=str(root),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=RUN_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return "collect.sh did not finish\n", 137
        text = proc.stdout.decode("utf-8", "replace").replace(str(root), "")
        return text, proc.returncode


def truncate_in_sysctl(text: str) -> str:
    """The log cut halfway through the ``sysctl`` section (no ``end`` line, no ``done``)."""
    start = text.find("==AICR== section sysctl")
    end = text.find("==AICR== end sysctl", start)
    if start < 0 or end < 0:
        return text[: len(text) // 2]
    return text[: start + (end - start) // 2]


class _AgentLogs(Mapping[str, str]):
    """The agent container's log, computed when the simulated kubelet starts it (see module docs)."""

    def __init__(self, sim: Simulator, script: PodScript, namespace: str, name: str, truncate: bool) -> None:
        self._sim = sim
        self._script = script
        self._ns = namespace
        self._name = name
        self._truncate = truncate
        self._cache: dict[str, str] = {}

    def _pod(self) -> Obj:
        return self._sim.store.peek(self._sim.rt("v1", "Pod"), self._ns, self._name) or {}

    def _read_configmap(self, namespace: str, name: str) -> Mapping[str, str] | None:
        cm = self._sim.store.peek(self._sim.rt("v1", "ConfigMap"), namespace, name)
        return None if cm is None else dict(cm.get("data") or {})

    def __getitem__(self, container: str) -> str:
        if container not in self._cache:
            pod = self._pod()
            if str(_container(pod).get("name")) != container:
                raise KeyError(container)
            node_name = str((pod.get("spec") or {}).get("nodeName") or "")
            node = self._sim.store.peek(self._sim.rt("v1", "Node"), None, node_name) or {}
            script = pod_script(pod, self._read_configmap)
            if script is None:
                text, code = f"/bin/sh: 0: cannot open {_container(pod).get('command')}: No such file\n", 2
            else:
                text, code = agent_output(pod, node, script)
            if self._truncate:
                text = truncate_in_sysctl(text)
            self._cache[container] = text
            if code:
                self._script.exit_code = max(self._script.exit_code, code)
        return self._cache[container]

    def __iter__(self) -> Iterator[str]:
        return iter([str(_container(self._pod()).get("name"))])

    def __len__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:  # identity: comparing must not run the script
        return self is other

    __hash__ = object.__hash__


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Play every snapshot-agent pod (and the ``snapshot-agent-log-truncated`` fault)."""
    truncate = FAULT_TRUNCATED in profile.faults

    def build(sim: Simulator, pod: Obj) -> PodScript:
        meta = pod.get("metadata") or {}
        script = PodScript(start_after=2.0, run_for=1.0, times=1)
        ns, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        script.logs = _AgentLogs(sim, script, ns, name, truncate)
        return script

    script_each_pod(fc, is_agent_pod, build)
