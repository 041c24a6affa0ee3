"""nvidia-smi player: verify pods print what ``nvidia-smi`` would print on the node they run on.

``check-nvidia-smi`` creates one pod per GPU node (label ``app.kubernetes.io/name:
nvidia-smi-verify``, name prefix ``nvidia-smi-verify-``) whose container runs a small shell
script.  When such a pod is created, this player gives it a :class:`PodScript` whose log is
produced when the container starts, by interpreting that script line by line: ``echo``,
``set -e``, ``&&`` chains, ``nvidia-smi`` (the full table) and ``nvidia-smi --query-gpu=...
--format=csv[,noheader]``.  What nvidia-smi shows comes from the node the pod was bound to:

* GPUs installed = the node's allocatable ``nvidia.com/gpu``, else its ``gpu.nvidia.com``
  ResourceSlice devices (DRA-only nodes); GPUs visible to the container = what it was given
  (its ``nvidia.com/gpu`` limit, or the count of its ResourceClaim), capped by those installed;
* product and memory from the GFD labels (``nvidia.com/gpu.product``/``.memory``) or the
  ResourceSlice attributes; driver from ``nvidia.com/cuda.driver-version.full`` (default
  ``580.95.05``), CUDA version from the driver branch.

No GPU visible prints ``No devices were found`` and exits 6, as nvidia-smi does.

Faults (``profile.faults``):

* ``nvidia-smi-missing-gpu`` -- the last GPU node has lost one GPU (Xid 79 style: the device
  plugin still advertises all of them, nvidia-smi lists one fewer).
* ``driver-below-floor`` -- the last GPU node's host driver is :data:`BELOW_FLOOR_DRIVER` (an R535
  driver, below the ``>= 580.95.05`` floor GKE A4X Max recipes declare) while its GFD labels still say
  the cluster's driver: what nvidia-smi prints is what the host really runs.

A test that registers its own matching :class:`PodScript` (``fc.sim.script(...)``) before the
check runs overrides this player for the pods it matches.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aicr_pytest.testing.players.podscripts import script_each_pod
from aicr_pytest.testing.simulator import PodScript, Simulator, parse_quantity
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = [
    "BELOW_FLOOR_DRIVER",
    "FAULT_DRIVER_BELOW_FLOOR",
    "FAULT_MISSING_GPU",
    "VERIFY_LABEL",
    "install",
    "node_driver",
    "nvidia_smi_table",
    "run_verify_script",
]

FAULT_MISSING_GPU = "nvidia-smi-missing-gpu"
FAULT_DRIVER_BELOW_FLOOR = "driver-below-floor"
BELOW_FLOOR_DRIVER = "535.247.01"
VERIFY_LABEL = ("app.kubernetes.io/name", "nvidia-smi-verify")
VERIFY_PREFIX = "nvidia-smi-verify-"
DEFAULT_DRIVER = "580.95.05"
DEFAULT_PRODUCT = "NVIDIA H100 80GB HBM3"
DEFAULT_MEMORY_MIB = 81559
DRA_DRIVER = "gpu.nvidia.com"
# CUDA version the driver branch ships (what the table's "CUDA Version:" shows).
_CUDA_BY_BRANCH = {
    "580": "13.0",
    "575": "12.9",
    "570": "12.8",
    "565": "12.7",
    "560": "12.6",
    "555": "12.5",
    "550": "12.4",
    "545": "12.3",
    "535": "12.2",
}
# PCI bus ids of the 8 GPUs of a p5.48xlarge-like HGX board.
_BUS_IDS = ("53", "64", "75", "86", "97", "A8", "B9", "CA")
_WIDTH = 89  # inner width of the table
_CELLS = (41, 24, 22)
_NO_DEVICES = "No devices were found"


# -------------------------------------------------------------------------------- GPU model --
class Gpus:
    """What nvidia-smi sees in one container."""

    def __init__(self, count: int, product: str, memory_mib: int, driver: str, node: str) -> None:
        self.count = count
        self.product = product
        self.memory_mib = memory_mib
        self.driver = driver
        self.node = node

    @property
    def cuda(self) -> str:
        return _CUDA_BY_BRANCH.get(self.driver.split(".")[0], "13.0")

    def bus_id(self, index: int) -> str:
        bus = _BUS_IDS[index] if index < len(_BUS_IDS) else f"{0x18 + index:02X}"
        return f"00000000:{bus}:00.0"

    def uuid(self, index: int) -> str:
        seed = sum(ord(c) for c in self.node)
        return f"GPU-{seed:08x}-{index:04x}-4a1e-9c2d-{index:012x}"


def _cell(text: str, width: int, *, right: bool = False) -> str:
    return text.rjust(width)[:width] if right else text.ljust(width)[:width]


def _rule(char: str = "-", joints: bool = True) -> str:
    if not joints:
        return "+" + "-" * _WIDTH + "+"
    return "+" + "+".join(char * w for w in _CELLS) + "+"


def _spread(left: str, right: str) -> str:
    return left + right.rjust(_WIDTH - len(left))


def _full(text: str) -> str:
    return "|" + _cell(text, _WIDTH) + "|"


def _row(*cells: str) -> str:
    return "|" + "|".join(_cell(c, w) for c, w in zip(cells, _CELLS, strict=True)) + "|"


def nvidia_smi_table(gpus: Gpus, now: float) -> str:
    """The default ``nvidia-smi`` report for ``gpus`` (timestamp ``now``, epoch seconds)."""
    dt = datetime.fromtimestamp(now, tz=UTC)
    header = f"NVIDIA-SMI {gpus.driver}"
    header = f" {header:<33} Driver Version: {gpus.driver:<14} CUDA Version: {gpus.cuda:<9}"
    lines = [
        f"{dt:%a %b} {dt.day:2d} {dt:%H:%M:%S %Y}       ",
        _rule(joints=False),
        _full(header),
        _rule(),
        _row(" GPU  Name                 Persistence-M", " Bus-Id          Disp.A", " Volatile Uncorr. ECC"),
        _row(" Fan  Temp   Perf          Pwr:Usage/Cap", "           Memory-Usage", " GPU-Util  Compute M."),
        _row("", "", _cell("MIG M. ", 22, right=True)),
        "|" + "+".join("=" * w for w in _CELLS) + "|",
    ]
    for i in range(gpus.count):
        temp = 28 + (i * 3) % 7
        power = 68 + (i * 5) % 9
        lines.append(
            _row(
                f" {i:>3}  {gpus.product[:24]:<24}{'On':>9}  ",
                f"   {gpus.bus_id(i)} Off ",
                _cell("0 ", 22, right=True),
            )
        )
        lines.append(
            _row(
                f" N/A   {temp}C    P0{power:>15}W /  700W ",
                _cell(f"0MiB /  {gpus.memory_mib}MiB ", 24, right=True),
                _cell("0%      Default ", 22, right=True),
            )
        )
        lines.append(_row("", "", _cell("Disabled ", 22, right=True)))
        lines.append(_rule())
    lines += [
        "",
        _rule(joints=False),
        _full(" Processes:"),
        _full(_spread("  GPU   GI   CI              PID   Type   Process name", "GPU Memory ")),
        _full(_spread("        ID   ID", "Usage      ")),
        "|" + "=" * _WIDTH + "|",
        _full("  No running processes found"),
        _rule(joints=False),
    ]
    return "\n".join(lines) + "\n"


_QUERY_FIELDS: dict[str, Callable[[Gpus, int], str]] = {
    "index": lambda g, i: str(i),
    "name": lambda g, i: g.product,
    "driver_version": lambda g, i: g.driver,
    "memory.total": lambda g, i: f"{g.memory_mib} MiB",
    "uuid": lambda g, i: g.uuid(i),
    "pci.bus_id": lambda g, i: g.bus_id(i),
    "count": lambda g, i: str(g.count),
}


def _query(gpus: Gpus, args: list[str]) -> str:
    fields: list[str] = []
    fmt = ""
    for arg in args:
        if arg.startswith("--query-gpu="):
            fields = [f.strip() for f in arg.split("=", 1)[1].split(",") if f.strip()]
        elif arg.startswith("--format="):
            fmt = arg.split("=", 1)[1]
    out: list[str] = []
    if "noheader" not in fmt:
        out.append(", ".join(fields))
    for i in range(gpus.count):
        out.append(", ".join(_QUERY_FIELDS[f](gpus, i) if f in _QUERY_FIELDS else "[N/A]" for f in fields))
    return "\n".join(out) + "\n"


def _nvidia_smi(gpus: Gpus, args: list[str], now: float) -> tuple[str, int]:
    if gpus.count == 0:
        return _NO_DEVICES + "\n", 6
    if any(a.startswith("--query-gpu=") for a in args):
        return _query(gpus, args), 0
    return nvidia_smi_table(gpus, now), 0


def run_verify_script(script: str, gpus: Gpus, now: float) -> tuple[str, int]:
    """Interpret the verify container's ``/bin/sh -c`` script; returns (output, exit code)."""
    out: list[str] = []
    errexit = False
    code = 0
    for raw in script.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        for part in (p.strip() for p in line.split("&&")):
            words = shlex.split(part)
            if not words:
                continue
            if words[:2] == ["set", "-e"]:
                errexit, code = True, 0
            elif words[0] == "echo":
                out.append(" ".join(words[1:]) + "\n")
                code = 0
            elif words[0] == "nvidia-smi":
                text, code = _nvidia_smi(gpus, words[1:], now)
                out.append(text)
            else:
                out.append(f"/bin/sh: 1: {words[0]}: not found\n")
                code = 127
            if code != 0:
                break  # an && chain stops at the first failure
        if code != 0 and errexit:
            break
    return "".join(out), code


# ---------------------------------------------------------------------------- cluster side --
def _is_verify_pod(pod: Obj) -> bool:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = str(meta.get("name", ""))
    return labels.get(VERIFY_LABEL[0]) == VERIFY_LABEL[1] or name.startswith(VERIFY_PREFIX)


def _dra_devices(sim: Simulator, node: str) -> list[Obj]:
    devices: list[Obj] = []
    try:
        rt = sim.rt("resource.k8s.io/v1", "ResourceSlice")
    except Exception:  # resource.k8s.io not served
        return devices
    for s in sim.store.iter_objects(rt):
        spec = s.get("spec") or {}
        if spec.get("driver") == DRA_DRIVER and spec.get("nodeName") == node:
            devices.extend(spec.get("devices") or [])
    return devices


def _claim_count(sim: Simulator, pod: Obj, installed: int) -> int:
    ns = (pod.get("metadata") or {}).get("namespace")
    total = 0
    for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = ref.get("resourceClaimName")
        claim = sim.store.peek(sim.rt("resource.k8s.io/v1", "ResourceClaim"), ns, str(name)) if name else None
        if claim is None:
            continue
        for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            exactly = req.get("exactly") or req
            if exactly.get("allocationMode") == "All":
                total += installed
            else:
                total += int(exactly.get("count") or 1)
    return total


def node_driver(labels: Mapping[str, Any], below_floor: bool) -> str:
    """The host driver nvidia-smi prints on a node: :data:`BELOW_FLOOR_DRIVER` under
    ``driver-below-floor``, else its GFD ``cuda.driver-version.full`` label (default
    :data:`DEFAULT_DRIVER`)."""
    if below_floor:
        return BELOW_FLOOR_DRIVER
    return str(labels.get("nvidia.com/cuda.driver-version.full") or DEFAULT_DRIVER)


def visible_gpus(
    sim: Simulator, pod: Obj, missing: Mapping[str, int], below_floor: frozenset[str] = frozenset()
) -> Gpus:
    """The GPUs nvidia-smi lists inside ``pod`` on the node it is bound to."""
    node_name = str((pod.get("spec") or {}).get("nodeName") or "")
    node = sim.store.peek(sim.rt("v1", "Node"), None, node_name) or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    devices = _dra_devices(sim, node_name)
    advertised = int(parse_quantity(allocatable.get("nvidia.com/gpu", 0))) or len(devices)
    installed = max(0, advertised - missing.get(node_name, 0))
    requested = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        amount = (res.get("limits") or {}).get("nvidia.com/gpu") or (res.get("requests") or {}).get(
            "nvidia.com/gpu"
        )
        requested += int(parse_quantity(amount)) if amount else 0
    requested += _claim_count(sim, pod, installed)
    product = str(labels.get("nvidia.com/gpu.product") or "").replace("-", " ")
    if not product and devices:
        attrs = devices[0].get("attributes") or {}
        product = str((attrs.get("productName") or {}).get("string") or "")
    memory = labels.get("nvidia.com/gpu.memory")
    driver = node_driver(labels, node_name in below_floor)
    return Gpus(
        count=min(requested, installed),
        product=product or DEFAULT_PRODUCT,
        memory_mib=int(memory) if memory and re.fullmatch(r"\d+", str(memory)) else DEFAULT_MEMORY_MIB,
        driver=driver,
        node=node_name,
    )


def _container_script(pod: Obj, container: str) -> str:
    for c in (pod.get("spec") or {}).get("containers") or []:
        if c.get("name") == container:
            argv = [str(x) for x in (c.get("command") or []) + (c.get("args") or [])]
            if len(argv) >= 3 and argv[1] == "-c":
                return argv[2]
            return " ".join(shlex.quote(a) for a in argv)
    return ""


class _VerifyLogs(Mapping[str, str]):
    """The pod's container logs, computed when the simulated kubelet starts the containers.

    Reading a log runs the container's script against the node the pod was bound to, and sets
    the script's exit code (read later, when the container exits).
    """

    def __init__(
        self,
        sim: Simulator,
        script: PodScript,
        namespace: str,
        name: str,
        missing: Mapping[str, int],
        below_floor: frozenset[str] = frozenset(),
    ):
        self._below_floor = below_floor
        self._sim = sim
        self._script = script
        self._ns = namespace
        self._name = name
        self._missing = missing
        self._cache: dict[str, str] = {}

    def _pod(self) -> Obj:
        return self._sim.store.peek(self._sim.rt("v1", "Pod"), self._ns, self._name) or {}

    def _names(self) -> list[str]:
        return [str(c.get("name")) for c in (self._pod().get("spec") or {}).get("containers") or []]

    def __getitem__(self, container: str) -> str:
        if container not in self._cache:
            pod = self._pod()
            script = _container_script(pod, container)
            if not script:
                raise KeyError(container)
            gpus = visible_gpus(self._sim, pod, self._missing, self._below_floor)
            text, code = run_verify_script(script, gpus, self._sim.clock.time())
            self._cache[container] = text
            if code:
                self._script.exit_code = max(self._script.exit_code, code)
        return self._cache[container]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __eq__(self, other: object) -> bool:  # identity: comparing must not run the script
        return self is other

    __hash__ = object.__hash__


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Register the verify-pod behaviour (and the ``nvidia-smi-missing-gpu`` and
    ``driver-below-floor`` faults)."""
    missing: dict[str, int] = {}
    nodes = profile.gpu_node_names()
    if FAULT_MISSING_GPU in profile.faults and nodes:
        missing[nodes[-1]] = 1
    below_floor = frozenset(nodes[-1:]) if FAULT_DRIVER_BELOW_FLOOR in profile.faults else frozenset()

    def build(sim: Simulator, pod: Obj) -> PodScript:
        meta = pod.get("metadata") or {}
        script = PodScript(start_after=2.0, run_for=1.0, times=1)
        ns, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        script.logs = _VerifyLogs(sim, script, ns, name, missing, below_floor)
        return script

    script_each_pod(fc, _is_verify_pod, build)
