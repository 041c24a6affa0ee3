"""The real ``collect.sh``, run by real POSIX shells against a simulated node host, read back by the parsers.

The pod is the real agent manifest (:func:`aicr_pytest.snapshot.agent.agent_job`); the host is
:mod:`aicr_pytest.testing.players.snapshot_host` (real-format files); what the script may see follows
the pod spec (privileged + hostPID: host commands; the os-release mount; GPUs given to the pod).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.snapshot.agent import agent_job, collector_script
from aicr_pytest.snapshot.measure import Collected
from aicr_pytest.snapshot.nodefacts import node_measurements
from aicr_pytest.snapshot.sections import parse_agent_log
from aicr_pytest.testing.players.snapshot_agent import agent_output, truncate_in_sysctl
from aicr_pytest.testing.players.snapshot_host import node_host
from aicr_pytest.testing.simulator import NodeProfile

SHELLS: list[tuple[str, ...]] = [("/bin/sh",)]
if shutil.which("busybox"):
    SHELLS.append(("busybox", "sh"))
if shutil.which("bash"):
    SHELLS.append(("bash", "--posix"))


def h100_node(**kw: Any) -> dict[str, Any]:
    return NodeProfile(name_prefix="h100", **kw).build(0)


def agent_pod(*, privileged: bool = True, require_gpu: bool = False) -> dict[str, Any]:
    job = agent_job(
        "aicr-snapshot-a1b2c3d4",
        configmap="aicr-snapshot-agent-a1b2c3d4",
        image="nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04",
        privileged=privileged,
        node_selector=None,
        tolerations=None,
        require_gpu=require_gpu,
        active_deadline_seconds=300,
    )
    pod = {"metadata": {"name": "aicr-snapshot-a1b2c3d4-x7k2p", "namespace": "default"}}
    pod["spec"] = {**job["spec"]["template"]["spec"], "nodeName": "h100-0"}
    return pod


def run(
    pod: dict[str, Any], node: dict[str, Any], shell: tuple[str, ...] = ("/bin/sh",)
) -> tuple[str, Collected]:
    text, code = agent_output(pod, node, collector_script(), shell=shell)
    assert code == 0, text
    return text, node_measurements(parse_agent_log(text))


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: " ".join(s))
def test_privileged_agent_on_an_h100_node(shell: tuple[str, ...]) -> None:
    text, got = run(agent_pod(), h100_node(), shell)
    log = parse_agent_log(text)
    assert log.begun and log.done and log.node == "h100-0" and log.privileged is True
    assert got.warnings == []
    assert got.data("OS", "release") == {
        "PRETTY_NAME": "Ubuntu 24.04.2 LTS",
        "NAME": "Ubuntu",
        "VERSION_ID": "24.04",
        "VERSION": "24.04.2 LTS (Noble Numbat)",
        "VERSION_CODENAME": "noble",
        "ID": "ubuntu",
        "ID_LIKE": "debian",
        "HOME_URL": "https://www.ubuntu.com/",
        "SUPPORT_URL": "https://help.ubuntu.com/",
        "BUG_REPORT_URL": "https://bugs.launchpad.net/ubuntu/",
        "PRIVACY_POLICY_URL": "https://www.ubuntu.com/legal/terms-and-policies/privacy-policy",
        "UBUNTU_CODENAME": "noble",
        "LOGO": "ubuntu-logo",
    }
    sysctl = got.data("OS", "sysctl") or {}
    assert sysctl["/proc/sys/kernel/osrelease"] == "6.8.0-1021-aws"
    assert sysctl["/proc/sys/kernel/hostname"] == "h100-0"  # host UTS namespace (hostNetwork)
    assert sysctl["/proc/sys/kernel/printk"] == "4\t4\t1\t7"
    assert not [k for k in sysctl if k.startswith(("/proc/sys/net/", "/proc/sys/dev/cdrom/"))]
    assert (got.data("OS", "kmod") or {}).get("nvidia") is True
    assert (got.data("OS", "grub") or {})["BOOT_IMAGE"] == "/boot/vmlinuz-6.8.0-1021-aws"
    assert got.data("GPU", "hardware") == {
        "gpu-present": True,
        "gpu-count": 8,
        "driver-loaded": True,
        "detection-source": "sysfs",
        "model": "h100",
    }
    smi = got.data("GPU", "smi") or {}
    assert (smi["gpu-count"], smi["driver"], smi["gpu.model"]) == (8, "580.95.05", "NVIDIA H100 80GB HBM3")
    assert [s["subtype"] for s in got.subtypes["SystemD"]] == ["containerd.service", "kubelet.service"]
    kubelet = got.data("SystemD", "kubelet.service") or {}
    assert kubelet["ActiveState"] == "active" and "Environment" not in kubelet and "Id" not in kubelet
    assert "s3cr3t" not in text  # the kubelet's Environment= never leaves the node


def test_unprivileged_agent_reads_no_host_os_release_and_no_systemd() -> None:
    _, got = run(agent_pod(privileged=False), h100_node())
    assert got.data("OS", "release") is None and "SystemD" not in got.subtypes
    assert got.data("GPU", "smi") is None  # no GPU given to the pod: the runtime injected no nvidia-smi
    assert got.warnings == [
        "OS.release omitted: the host's /etc/os-release is mounted only with --privileged (the container's "
        "own would describe the image, not the node)",
        "GPU.smi omitted: nvidia-smi is not available on the node (no driver on the host, no GPU given to "
        "the pod)",
        "SystemD omitted: systemd is read through the host's PID 1 only with --privileged",
    ]
    sysctl = got.data("OS", "sysctl") or {}
    assert sysctl["/proc/sys/kernel/hostname"] == "aicr-snapshot-a1b2c3d4-x7k2p"  # the pod's own UTS
    assert (got.data("GPU", "hardware") or {})["gpu-count"] == 8  # sysfs shows every device anyway


def test_unprivileged_agent_with_a_gpu_sees_that_gpu_only() -> None:
    _, got = run(agent_pod(privileged=False, require_gpu=True), h100_node())
    assert (got.data("GPU", "smi") or {})["gpu-count"] == 1
    assert (got.data("GPU", "hardware") or {})["gpu-count"] == 8


def test_a_node_without_driver_still_shows_its_gpus_on_the_pci_bus() -> None:
    node = h100_node(gpu_product=None, gpus_per_node=0)  # what gpu-operator-missing leaves: p5.48xlarge
    _, got = run(agent_pod(), node)
    assert got.data("GPU", "hardware") == {
        "gpu-present": True,
        "gpu-count": 8,
        "driver-loaded": False,
        "detection-source": "sysfs",
        "model": "h100",
    }
    assert "nvidia" not in (got.data("OS", "kmod") or {})
    assert got.warnings == [
        "GPU.smi omitted: nvidia-smi is not available on the node (no driver on the host, no GPU given to "
        "the pod)"
    ]


def test_host_nvidia_smi_from_a_driver_container(monkeypatch: pytest.MonkeyPatch) -> None:
    """GPU Operator's driver container: nvidia-smi lives under /run/nvidia/driver on the host."""
    from aicr_pytest.testing.players import snapshot_host

    assert node_host(h100_node()).gpus  # the host has a driver and GPUs: only the path differs
    original = snapshot_host.NodeHost.materialize

    def materialize(self: Any, root: Path, **kw: Any) -> None:
        original(self, root, **kw)
        xml = (root / "share" / "host-smi.xml").read_text()
        (root / "host-bin" / "nvidia-smi").write_text(
            '#!/bin/sh\necho "nvidia-smi: not found" >&2\nexit 127\n'
        )
        (root / "driver-smi.xml").write_text(xml)
        (root / "host-bin" / "chroot").write_text(
            '#!/bin/sh\n[ "$1" = /run/nvidia/driver ] && [ "$2" = nvidia-smi ] && '
            f"exec /bin/cat {root}/driver-smi.xml\nexit 125\n"
        )

    monkeypatch.setattr(snapshot_host.NodeHost, "materialize", materialize)
    _, got = run(agent_pod(), h100_node())
    assert (got.data("GPU", "smi") or {})["gpu-count"] == 8 and got.warnings == []


def test_a_truncated_log_omits_sysctl_but_keeps_the_rest() -> None:
    text, code = agent_output(agent_pod(), h100_node(), collector_script())
    got = node_measurements(parse_agent_log(truncate_in_sysctl(text)))
    assert code == 0
    assert "OS.sysctl omitted: the agent's log ends inside this section (truncated)" in got.warnings
    assert got.data("OS", "release") is not None and got.data("GPU", "hardware") is not None


def test_the_collector_on_this_machines_own_proc_and_sys() -> None:
    """Real files, not fixtures: this machine's /proc and /sys, read unprivileged (no host commands)."""
    env = {"PATH": "/usr/bin:/bin", "AICR_HOST_EXEC": "false", "NODE_NAME": "this-host"}
    out = subprocess.run(
        ["/bin/sh", "-c", collector_script()],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    log = parse_agent_log(out)
    assert log.begun and log.done and log.node == "this-host"
    got = node_measurements(log)
    sysctl = got.data("OS", "sysctl") or {}
    assert sysctl["/proc/sys/kernel/osrelease"] == Path("/proc/sys/kernel/osrelease").read_text().strip()
    section = log.section("sysctl")
    assert section is not None and section.complete
    unreadable = {i.name for i in section.items if i.status != 0}
    readable = {i.name for i in section.items if i.status == 0}
    assert not unreadable & set(sysctl)  # write-only files (vm/drop_caches...) leave no key
    assert all(
        name in sysctl or any(k.startswith(name + "/") for k in sysctl)
        for name in readable
        - {n for n in readable if n.startswith(("/proc/sys/net/", "/proc/sys/dev/cdrom/"))}
    )
    assert (got.data("OS", "grub") or {}) == parse_cmdline_text()
    assert got.data("GPU", "hardware") is not None or any("GPU.hardware" in w for w in got.warnings)


def parse_cmdline_text() -> dict[str, str]:
    from aicr_pytest.snapshot.osfacts import parse_cmdline

    return parse_cmdline(Path("/proc/cmdline").read_text())


def gb300_node() -> dict[str, Any]:
    return NodeProfile(
        name_prefix="gb300", instance_type="p6e-gb300r.36xlarge", gpu_product="NVIDIA-GB300", gpus_per_node=4
    ).build(0)


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: " ".join(s))
def test_the_network_section_on_a_connectx_node(shell: tuple[str, ...]) -> None:
    text, _ = run(agent_pod(), gb300_node(), shell)
    section = parse_agent_log(text).section("network")
    assert section is not None and section.ok
    lines = section.lines
    assert lines[:3] == [
        "gpu 0000:53:00.0",
        "path /sys/devices/pci0000:50/0000:50:01.0/0000:51:00.0/0000:52:00.0/0000:53:00.0",
        "numa 0",
    ]
    assert "path /sys/devices/pci0000:50/0000:50:01.0/0000:51:00.0/0000:52:01.0/0000:54:00.0" in lines
    assert {"device 0x1023", "psid MT_0000001119", "link_layer Ethernet", "net enp84s0np0"} <= set(lines)
    assert any(ln.startswith("vpd 8228") for ln in lines) and lines[-1] == "product p6e-gb300r.36xlarge"
    got = node_measurements(parse_agent_log(text), node_labels={"kubernetes.io/hostname": "gb300-0"})
    assert got.warnings == []
    identity, caps, pfs, modules = got.subtypes["NetworkTopology"]
    assert identity["data"] == {"pf-count": 4, "rail-count": 4}
    assert caps["data"] == {"ib": False, "rdma": True, "sriov": True}
    assert [i["context"]["connectedGPU"] for i in pfs["items"]] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert modules["data"] == {"thirdParty.0": "nvidia_peermem"}


def test_a_node_without_nvidia_nics_has_no_network_topology_and_no_warning() -> None:
    _, got = run(agent_pod(), h100_node())  # EFA NICs only
    assert "NetworkTopology" not in got.subtypes and got.warnings == []


def test_an_unusable_network_section_is_omitted_with_a_warning() -> None:
    begin = "==AICR== begin 1 node=n privileged=true\n"
    failed = begin + "==AICR== section network\n|no /sys/bus/pci/devices\n==AICR== end network rc=2\n"
    cut = begin + "==AICR== section network\n|pf 0000:03:00.0\n"
    for log, why in (
        (failed, "no /sys/bus/pci/devices (exit status 2)"),
        (cut, "the agent's log ends inside this section (truncated)"),
        (begin, "the agent printed no network section"),
    ):
        got = node_measurements(parse_agent_log(log))
        assert "NetworkTopology" not in got.subtypes
        assert f"NetworkTopology omitted: {why}" in got.warnings
