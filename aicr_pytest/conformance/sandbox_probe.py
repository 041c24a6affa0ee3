"""workload-sandboxing's isolation probe and its subtests (pure: no cluster, no pytest).

The CNCF program's ``TestWorkloadSandboxing`` (kubernetes-sigs/ai-conformance ``test/``) reports five
subtests on one probe pod run under the sandboxed RuntimeClass; this module names them as the suite
does (Go subtest names, ``TestWorkloadSandboxing/<Subtest>``) and judges each from what the probe
printed:

* ``SchedulingAndExecution`` -- the probe ran to its completion marker;
* ``ProcessIsolation`` -- no host daemon (kubelet, containerd, dockerd, crio, journald) among the
  processes the pod sees;
* ``KernelAndMemoryIsolation`` -- neither ``/dev/mem`` nor ``/dev/kmem`` is readable and the kernel
  release the pod sees differs from its node's ``status.nodeInfo.kernelVersion`` (a sandbox has a
  kernel of its own; the same release means the node's kernel is shared);
* ``FilesystemIsolation`` -- none of the node's kubelet paths is visible;
* ``NetworkIsolation`` -- no host bridge or CNI interface is visible.

The probe prints one ``key=value`` line per finding (:data:`PROBE_SCRIPT`); :func:`parse_probe`
reads them back, :func:`subtests` turns them into :class:`Subtest` verdicts in the suite's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SUITE_TEST: Final = "TestWorkloadSandboxing"
SCHEDULING: Final = "SchedulingAndExecution"
PROCESS: Final = "ProcessIsolation"
KERNEL: Final = "KernelAndMemoryIsolation"
FILESYSTEM: Final = "FilesystemIsolation"
NETWORK: Final = "NetworkIsolation"
#: the suite's subtests, in its order
SUBTESTS: Final = (SCHEDULING, PROCESS, KERNEL, FILESYSTEM, NETWORK)

DONE: Final = "probe=done"
PROBE_SCRIPT: Final = r"""echo "kernel-release=$(uname -r 2>/dev/null)"
pids=0; leak=""
for c in /proc/[0-9]*/comm; do
  [ -r "$c" ] || continue; pids=$((pids+1)); read -r n < "$c" || continue
  case "$n" in kubelet|containerd|containerd-shim*|dockerd|crio|systemd-journal) leak="$leak $n";; esac
done
echo "pid-count=$pids"
if [ -z "$leak" ]; then echo "pid=pass"; else echo "pid=fail$leak"; fi
mem=pass
for d in /dev/mem /dev/kmem; do head -c 1 "$d" >/dev/null 2>&1 && mem="fail $d"; done
echo "memory=$mem"
fs=pass
for p in /etc/kubernetes /var/lib/kubelet /var/log/pods; do [ -d "$p" ] && fs="fail $p"; done
echo "filesystem=$fs"
ifs=$(awk -F: 'NR > 2 { gsub(/ /, "", $1); printf "%s ", $1 }' /proc/net/dev 2>/dev/null)
net=pass
for i in $ifs; do case "$i" in docker0|cbr0|cni0|flannel*|br-*|bond*|dummy*) net="fail $i";; esac; done
echo "interfaces=$ifs"
echo "network=$net"
echo "probe=done"
"""

MSG_NOT_DONE: Final = "the probe under RuntimeClass {rc} did not finish its isolation probe: {log}"
MSG_PID: Final = "the probe under RuntimeClass {rc} sees the node's processes ({found}): no PID isolation"
MSG_MEMORY: Final = "the probe under RuntimeClass {rc} can read {found}: no kernel memory isolation"
MSG_FS: Final = "the probe under RuntimeClass {rc} sees the node's path {found}: no filesystem isolation"
MSG_NET: Final = "the probe under RuntimeClass {rc} sees the node's interface {found}: no network isolation"
MSG_UNREPORTED: Final = "the probe under RuntimeClass {rc} reported no {key} finding"


@dataclass(frozen=True)
class ProbeOutput:
    """What the probe printed: ``key=value`` findings and whether it reached its end."""

    findings: dict[str, str]
    done: bool

    @property
    def kernel(self) -> str:
        return self.findings.get("kernel-release", "")


@dataclass(frozen=True)
class Subtest:
    """One of the suite's subtests: its name, verdict (``passed``/``failed``/``other``) and line."""

    name: str
    status: str
    line: str

    @property
    def full_name(self) -> str:
        return f"{SUITE_TEST}/{self.name}"

    def result_line(self) -> str:
        word = {"passed": "PASS", "failed": "FAIL"}.get(self.status, "OTHER")
        return f"RESULT: {self.full_name}: {word} - {self.line}"


def parse_probe(log: str) -> ProbeOutput:
    """The probe's findings (the last value of each key wins); a log read error finds nothing."""
    if log.startswith("failed to read logs"):
        return ProbeOutput({}, False)
    findings: dict[str, str] = {}
    done = False
    for raw in log.splitlines():
        line = raw.strip()
        if line == DONE:
            done = True
        elif "=" in line:
            key, _, value = line.partition("=")
            findings[key.strip()] = value.strip()
    return ProbeOutput(findings, done)


def _finding(rc: str, name: str, out: ProbeOutput, key: str, message: str) -> Subtest:
    value = out.findings.get(key)
    if value is None:
        return Subtest(name, "failed", MSG_UNREPORTED.format(rc=rc, key=key))
    if value == "pass":
        return Subtest(name, "passed", f"{key} isolation holds")
    found = value.removeprefix("fail").strip() or "unnamed"
    return Subtest(name, "failed", message.format(rc=rc, found=found))


def subtests(rc: str, out: ProbeOutput, log_tail: str, kernel: Subtest) -> list[Subtest]:
    """The five subtests in the suite's order; ``kernel`` is the kernel-identity verdict
    (:func:`~aicr_pytest.conformance.workload_sandboxing.kernel_subtest`), refined here by the
    probe's ``/dev/mem`` finding."""
    if not out.done:
        first = Subtest(SCHEDULING, "failed", MSG_NOT_DONE.format(rc=rc, log=log_tail))
    else:
        first = Subtest(SCHEDULING, "passed", f"the probe ran to its end under RuntimeClass {rc}")
    memory = _finding(rc, KERNEL, out, "memory", MSG_MEMORY)
    return [
        first,
        _finding(rc, PROCESS, out, "pid", MSG_PID),
        memory if memory.status != "passed" else kernel,
        _finding(rc, FILESYSTEM, out, "filesystem", MSG_FS),
        _finding(rc, NETWORK, out, "network", MSG_NET),
    ]


__all__ = [
    "DONE",
    "FILESYSTEM",
    "KERNEL",
    "NETWORK",
    "PROBE_SCRIPT",
    "PROCESS",
    "SCHEDULING",
    "SUBTESTS",
    "SUITE_TEST",
    "ProbeOutput",
    "Subtest",
    "parse_probe",
    "subtests",
]
