"""What a simulated node's host shows the snapshot agent: files and commands in their real formats.

:func:`node_host` derives a :class:`NodeHost` from a Node object (``status.nodeInfo``, GFD labels,
allocatable, instance type) and :meth:`NodeHost.materialize` writes it as a directory tree the
real ``collect.sh`` reads with ``AICR_ROOT`` pointing at it:

* ``host/etc/os-release`` (when the pod mounts it) -- freedesktop.org format for the node's
  ``osImage`` (Ubuntu 22.04/24.04, Amazon Linux 2023, Container-Optimized OS, else a generic one);
* ``proc/cmdline``, ``proc/modules`` (the ``nvidia*`` modules when the node has a driver) and a
  ``proc/sys`` tree (kernel, vm, fs; ``net/`` and ``dev/cdrom/`` too, which the agent skips);
* ``sys/bus/pci/devices/<address>/{vendor,device,class}`` -- the node's GPUs (from the GFD product,
  or from the instance type when no operator labels it), NVSwitches, NICs and NVMe drives; each a
  link to its directory under ``sys/devices/pci<domain>:<bus>/`` as in sysfs. A ConnectX node
  (:data:`INSTANCE_CONNECTX`) has one ConnectX PF per GPU behind that GPU's PCIe switch, with its
  ``numa_node``, ``sriov_totalvfs``, ``vpd`` (identifier string, part number), ``net/<ifname>`` and
  ``infiniband/mlx5_<i>/{board_id,ports/1/link_layer}``, and the RDMA modules;
* ``sys/class/dmi/id/product_name`` -- the instance type (as on EC2), when the node has one;
* host commands (``nvidia-smi -q -x`` with one ``<gpu>`` per GPU, ``systemctl show --all`` for
  ``containerd.service``/``kubelet.service``, a not-installed ``docker.service``) as small scripts,
  and the container's own ``nvidia-smi`` when the pod was given GPUs.
"""

from __future__ import annotations

import re
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = ["PRODUCTS", "NodeHost", "node_host", "nvidia_smi_xml", "os_release_text", "systemctl_show"]

Obj = dict[str, Any]

#: GPU product (GFD label, dashes) -> (PCI device id, nvidia-smi product name, architecture, memory MiB)
PRODUCTS: Mapping[str, tuple[str, str, str, int]] = {
    "NVIDIA-H100-80GB-HBM3": ("2330", "NVIDIA H100 80GB HBM3", "Hopper", 81559),
    "NVIDIA-H200": ("2335", "NVIDIA H200", "Hopper", 143771),
    "NVIDIA-GB200": ("2941", "NVIDIA GB200", "Blackwell", 189471),
    "NVIDIA-GB300": ("31c2", "NVIDIA GB300", "Blackwell", 284208),
    "NVIDIA-B200": ("2901", "NVIDIA B200", "Blackwell", 183359),
    "NVIDIA-A100-SXM4-80GB": ("20b2", "NVIDIA A100-SXM4-80GB", "Ampere", 81920),
    "NVIDIA-L40S": ("26b9", "NVIDIA L40S", "Ada Lovelace", 46068),
}
#: Instance type -> (GPUs, GFD product): the hardware is there even when no operator labels it.
INSTANCE_GPUS: Mapping[str, tuple[int, str]] = {
    "p5.48xlarge": (8, "NVIDIA-H100-80GB-HBM3"),
    "p5e.48xlarge": (8, "NVIDIA-H200"),
    "a3-megagpu-8g": (8, "NVIDIA-H100-80GB-HBM3"),
    "p6e-gb200.36xlarge": (4, "NVIDIA-GB200"),
    "p6e-gb300r.36xlarge": (4, "NVIDIA-GB300"),
}
#: Instance type -> ConnectX PFs: one per GPU, behind the GPU's PCIe switch (RoCE, Ethernet link layer).
INSTANCE_CONNECTX: Mapping[str, int] = {"p6e-gb300r.36xlarge": 4}
#: (PCI device id, PSID, VPD identifier string, VPD part number) of the simulated ConnectX-8 PF
CONNECTX: Final = (
    "0x1023",
    "MT_0000001119",
    "NVIDIA ConnectX-8 SuperNIC, 800GbE, OSFP",
    "900-9X81E-00EX-ST0",
)
_GPU_BUSES = ("53", "64", "75", "86", "97", "a8", "b9", "ca")
DEFAULT_DRIVER = "580.95.05"
_CUDA = {"580": "13.0", "575": "12.9", "570": "12.8", "565": "12.7", "560": "12.6", "550": "12.4"}

_OS_RELEASES: dict[str, str] = {
    "ubuntu-24.04": (
        'PRETTY_NAME="{pretty}"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nVERSION="{version} (Noble Numbat)"\n'
        'VERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\nHOME_URL="https://www.ubuntu.com/"\n'
        'SUPPORT_URL="https://help.ubuntu.com/"\nBUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"\n'
        'PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"\n'
        "UBUNTU_CODENAME=noble\nLOGO=ubuntu-logo\n"
    ),
    "ubuntu-22.04": (
        'PRETTY_NAME="{pretty}"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nVERSION="{version} (Jammy Jellyfish)"\n'
        'VERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\nHOME_URL="https://www.ubuntu.com/"\n'
        'SUPPORT_URL="https://help.ubuntu.com/"\nBUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"\n'
        'PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"\n'
        "UBUNTU_CODENAME=jammy\n"
    ),
    "amzn-2023": (
        'NAME="Amazon Linux"\nVERSION="2023"\nID="amzn"\nID_LIKE="fedora"\nVERSION_ID="2023"\n'
        'PLATFORM_ID="platform:al2023"\nPRETTY_NAME="{pretty}"\nANSI_COLOR="0;33"\n'
        'CPE_NAME="cpe:2.3:o:amazon:amazon_linux:2023"\nHOME_URL="https://aws.amazon.com/linux/amazon-linux-2023/"\n'
        'DOCUMENTATION_URL="https://docs.aws.amazon.com/linux/"\nSUPPORT_END="2029-06-30"\n'
    ),
    "cos": (
        'NAME="Container-Optimized OS"\nID=cos\nPRETTY_NAME="Container-Optimized OS from Google"\n'
        'HOME_URL="https://cloud.google.com/container-optimized-os/docs"\n'
        'BUG_REPORT_URL="https://cloud.google.com/container-optimized-os/docs/resources/support-policy#contact_us"\n'
        "GOOGLE_METRICS_PRODUCT_ID=26\nKERNEL_COMMIT_ID=0c1f7b0b3c8d\nGOOGLE_CRASH_ID=Lakitu\n"
        "VERSION=117\nVERSION_ID=117\nBUILD_ID=18613.164.4\n"
    ),
}


def os_release_text(os_image: str) -> str:
    """``/etc/os-release`` of a node whose ``status.nodeInfo.osImage`` is ``os_image``."""
    m = re.match(r"Ubuntu (\d+\.\d+)(\.\d+)?( LTS)?", os_image)
    if m and f"ubuntu-{m.group(1)}" in _OS_RELEASES:
        version = m.group(1) + (m.group(2) or "") + (m.group(3) or "")
        return _OS_RELEASES[f"ubuntu-{m.group(1)}"].format(pretty=os_image, version=version)
    if os_image.startswith("Amazon Linux 2023"):
        return _OS_RELEASES["amzn-2023"].format(pretty=os_image)
    if os_image.startswith("Container-Optimized OS"):
        return _OS_RELEASES["cos"]
    ident = re.sub(r"[^a-z0-9]+", "", os_image.split(" ")[0].lower()) or "linux"
    return f'NAME="{os_image.split(" ")[0]}"\nID={ident}\nPRETTY_NAME="{os_image}"\n'


@dataclass
class Gpu:
    index: int
    bus: str
    product: str
    name: str
    architecture: str
    memory_mib: int
    device_id: str

    @property
    def bus_id(self) -> str:
        return f"00000000:{self.bus.upper()}:00.0"


def _gpu_xml(gpu: Gpu, driver: str, node: str) -> str:
    seed = sum(ord(c) for c in node) * 131 + gpu.index
    uuid = f"GPU-{seed & 0xFFFFFFFF:08x}-5b2c-{gpu.index:04x}-9d3e-{seed * 7919 & 0xFFFFFFFFFFFF:012x}"
    return f"""	<gpu id="{gpu.bus_id}">
		<product_name>{gpu.name}</product_name>
		<product_brand>NVIDIA</product_brand>
		<product_architecture>{gpu.architecture}</product_architecture>
		<display_mode>Disabled</display_mode>
		<display_active>Disabled</display_active>
		<persistence_mode>Enabled</persistence_mode>
		<addressing_mode>HMM</addressing_mode>
		<mig_mode>
			<current_mig>Disabled</current_mig>
			<pending_mig>Disabled</pending_mig>
		</mig_mode>
		<mig_devices>
			None
		</mig_devices>
		<accounting_mode>Disabled</accounting_mode>
		<accounting_mode_buffer_size>4000</accounting_mode_buffer_size>
		<serial>{1650000000000 + seed}</serial>
		<uuid>{uuid}</uuid>
		<minor_number>{gpu.index}</minor_number>
		<vbios_version>96.00.99.00.{gpu.index + 1:02d}</vbios_version>
		<multigpu_board>No</multigpu_board>
		<board_id>0x{int(gpu.bus, 16) << 8:x}</board_id>
		<gpu_part_number>{gpu.device_id.upper()}-885-A1</gpu_part_number>
		<module_id>{gpu.index + 1}</module_id>
		<gsp_firmware_version>{driver}</gsp_firmware_version>
		<pci>
			<pci_bus>{gpu.bus.upper()}</pci_bus>
			<pci_device>00</pci_device>
			<pci_domain>0000</pci_domain>
			<pci_base_class>3</pci_base_class>
			<pci_sub_class>2</pci_sub_class>
			<pci_device_id>{gpu.device_id.upper()}10DE</pci_device_id>
			<pci_bus_id>{gpu.bus_id}</pci_bus_id>
			<pci_sub_system_id>16C110DE</pci_sub_system_id>
		</pci>
		<performance_state>P0</performance_state>
		<fb_memory_usage>
			<total>{gpu.memory_mib} MiB</total>
			<reserved>551 MiB</reserved>
			<used>0 MiB</used>
			<free>{gpu.memory_mib - 551} MiB</free>
		</fb_memory_usage>
		<compute_mode>Default</compute_mode>
		<ecc_mode>
			<current_ecc>Enabled</current_ecc>
			<pending_ecc>Enabled</pending_ecc>
		</ecc_mode>
		<temperature>
			<gpu_temp>{29 + gpu.index % 5} C</gpu_temp>
		</temperature>
		<processes>
		</processes>
	</gpu>
"""


def nvidia_smi_xml(gpus: list[Gpu], driver: str, node: str) -> str:
    """``nvidia-smi -q -x`` for ``gpus`` (the DOCTYPE and element names of the driver's report)."""
    cuda = _CUDA.get(driver.split(".")[0], "13.0")
    body = "".join(_gpu_xml(g, driver, node) for g in gpus)
    return (
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">\n<nvidia_smi_log>\n'
        f"\t<timestamp>Tue Jul 14 08:12:45 2026</timestamp>\n\t<driver_version>{driver}</driver_version>\n"
        f"\t<cuda_version>{cuda}</cuda_version>\n\t<attached_gpus>{len(gpus)}</attached_gpus>\n"
        f"{body}</nvidia_smi_log>\n"
    )


def systemctl_show(unit: str, *, kubelet_version: str) -> str:
    """``systemctl show --all <unit>`` of the node's units (a not-installed unit: ``not-found``)."""
    if unit == "containerd.service":
        main = (
            "Type=notify\nExitType=main\nRestart=always\nNotifyAccess=main\nRestartUSec=5s\n"
            "TimeoutStartUSec=infinity\nTimeoutStopUSec=1min 30s\nMainPID=1873\nControlPID=0\n"
            "ExecMainStartTimestamp=Tue 2026-07-14 06:01:12 UTC\nExecMainPID=1873\n"
            "ExecStartPre={ path=/sbin/modprobe ; argv[]=/sbin/modprobe overlay ; ignore_errors=yes ; "
            "start_time=[Tue 2026-07-14 06:01:12 UTC] ; stop_time=[Tue 2026-07-14 06:01:12 UTC] ; "
            "pid=1869 ; code=exited ; status=0 }\n"
            "ExecStart={ path=/usr/bin/containerd ; argv[]=/usr/bin/containerd ; ignore_errors=no ; "
            "start_time=[Tue 2026-07-14 06:01:12 UTC] ; stop_time=[n/a] ; pid=1873 ; code=(null) ; "
            "status=0/0 }\nDelegate=yes\nKillMode=process\nLimitNOFILE=infinity\nLimitNPROC=infinity\n"
            "LimitCORE=infinity\nTasksMax=infinity\nOOMScoreAdjust=-999\n"
            "Description=containerd container runtime\nDocumentation=https://containerd.io\n"
            "FragmentPath=/usr/lib/systemd/system/containerd.service\n"
        )
        name = "containerd.service"
    elif unit == "kubelet.service":
        main = (
            "Type=simple\nExitType=main\nRestart=always\nNotifyAccess=none\nRestartUSec=5s\n"
            "TimeoutStartUSec=1min 30s\nTimeoutStopUSec=1min 30s\nMainPID=2261\nControlPID=0\n"
            "ExecMainStartTimestamp=Tue 2026-07-14 06:01:20 UTC\nExecMainPID=2261\n"
            "ExecStart={ path=/usr/bin/kubelet ; argv[]=/usr/bin/kubelet --config /etc/kubernetes/kubelet/"
            "config.json --kubeconfig /var/lib/kubelet/kubeconfig --container-runtime-endpoint "
            "unix:///run/containerd/containerd.sock --node-ip=10.0.0.1 ; ignore_errors=no ; "
            "start_time=[Tue 2026-07-14 06:01:20 UTC] ; stop_time=[n/a] ; pid=2261 ; code=(null) ; "
            "status=0/0 }\nEnvironment=NODEADM_TOKEN=s3cr3t-bootstrap-token AWS_REGION=us-east-1\n"
            "KillMode=process\nLimitNOFILE=1048576\nTasksMax=infinity\n"
            f"Description=Kubernetes Kubelet ({kubelet_version})\n"
            "Documentation=https://github.com/kubernetes/kubernetes\n"
            "FragmentPath=/etc/systemd/system/kubelet.service\n"
        )
        name = "kubelet.service"
    else:
        return (
            f"Id={unit}\nNames={unit}\nLoadState=not-found\nActiveState=inactive\nFreezerState=running\n"
            f'SubState=dead\nLoadError=org.freedesktop.systemd1.NoSuchUnit "Unit {unit} not found."\n'
            "StateChangeTimestampMonotonic=0\nCanStart=no\nCanStop=yes\nCanReload=no\n"
        )
    return (
        f"{main}Id={name}\nNames={name}\nLoadState=loaded\nActiveState=active\nFreezerState=running\n"
        "SubState=running\nUnitFileState=enabled\nUnitFilePreset=enabled\n"
        "ActiveEnterTimestamp=Tue 2026-07-14 06:01:13 UTC\nCPUAccounting=yes\nMemoryAccounting=yes\n"
        "IOAccounting=no\nTasksAccounting=yes\nAllowedCPUs=\nAllowedMemoryNodes=\n"
        "LoadCredential=\nSetCredentialEncrypted=\nBusName=\nBPFProgram=\nCanStart=yes\nCanStop=yes\n"
        "CanReload=no\nWantedBy=multi-user.target\nAfter=network.target local-fs.target\n"
        "Slice=system.slice\nControlGroup=/system.slice/" + name + "\n"
    )


_MODULES_BASE = (
    "overlay 212992 42 - Live 0x0000000000000000\n"
    "br_netfilter 32768 0 - Live 0x0000000000000000\n"
    "bridge 421888 1 br_netfilter, Live 0x0000000000000000\n"
    "nvme 61440 4 - Live 0x0000000000000000\n"
    "nvme_core 212992 6 nvme, Live 0x0000000000000000\n"
    "ena 184320 0 - Live 0x0000000000000000\n"
)
_MODULES_EFA = (
    "efa 167936 0 - Live 0x0000000000000000 (OE)\n"
    "ib_uverbs 200704 2 nvidia_peermem,efa, Live 0x0000000000000000\n"
    "ib_core 462848 3 efa,ib_uverbs,nvidia_peermem, Live 0x0000000000000000\n"
)
_MODULES_NVIDIA = (
    "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\n"
    "nvidia_uvm 4956160 8 - Live 0x0000000000000000 (OE)\n"
    "nvidia_drm 131072 0 - Live 0x0000000000000000 (OE)\n"
    "nvidia_modeset 1638400 1 nvidia_drm, Live 0x0000000000000000 (OE)\n"
    "nvidia 104071168 110 nvidia_peermem,nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (OE)\n"
)


_MODULES_MLX = (
    "mlx5_ib 487424 0 - Live 0x0000000000000000\n"
    "rdma_ucm 28672 0 - Live 0x0000000000000000\n"
    "rdma_cm 126976 1 rdma_ucm, Live 0x0000000000000000\n"
    "iw_cm 53248 1 rdma_cm, Live 0x0000000000000000\n"
    "ib_cm 131072 1 rdma_cm, Live 0x0000000000000000\n"
    "ib_uverbs 200704 2 rdma_ucm,mlx5_ib, Live 0x0000000000000000\n"
    "ib_core 462848 7 rdma_ucm,rdma_cm,iw_cm,ib_cm,mlx5_ib,ib_uverbs,nvidia_peermem, "
    "Live 0x0000000000000000\n"
    "mlx5_core 2457600 1 mlx5_ib, Live 0x0000000000000000\n"
)


def vpd_bytes(model: str, part_number: str, serial: str) -> bytes:
    """PCI VPD: the identifier string, a read-only resource (``PN``, ``SN``, ``RV``) and the end tag."""
    ident = model.encode("ascii")
    fields = b""
    for keyword, value in ((b"PN", part_number.encode()), (b"SN", serial.encode()), (b"RV", b"\x00")):
        fields += keyword + bytes([len(value)]) + value
    return (
        bytes([0x82, len(ident) & 0xFF, len(ident) >> 8])
        + ident
        + bytes([0x90, len(fields) & 0xFF, len(fields) >> 8])
        + fields
        + b"\x78"
    )


@dataclass
class NodeHost:
    """One simulated node's host (see the module docstring)."""

    name: str
    kernel: str
    os_image: str
    kubelet_version: str
    gpus: list[Gpu] = field(default_factory=list)
    driver: str | None = DEFAULT_DRIVER
    efa: int = 0
    hugepages_2mi: int = 0
    #: ConnectX PFs, one per GPU behind its switch (:data:`INSTANCE_CONNECTX`)
    connectx: int = 0
    #: DMI product name (the instance type)
    product: str = ""

    def sysctl(self, hostname: str) -> dict[str, str]:
        """``/proc/sys`` files (relative path -> content) as the host shows them."""
        return {
            "kernel/osrelease": f"{self.kernel}\n",
            "kernel/ostype": "Linux\n",
            "kernel/hostname": f"{hostname}\n",
            "kernel/pid_max": "4194304\n",
            "kernel/threads-max": "8251536\n",
            "kernel/numa_balancing": "0\n",
            "kernel/panic": "-1\n",
            "kernel/printk": "4\t4\t1\t7\n",
            "kernel/randomize_va_space": "2\n",
            "kernel/sem": "32000\t1024000000\t500\t32000\n",
            "kernel/shmmax": "18446744073692774399\n",
            "vm/swappiness": "60\n",
            "vm/max_map_count": "1048576\n",
            "vm/overcommit_memory": "1\n",
            "vm/nr_hugepages": f"{self.hugepages_2mi}\n",
            "fs/file-max": "9223372036854775807\n",
            "fs/inotify/max_user_watches": "524288\n",
            "fs/inotify/max_user_instances": "8192\n",
            "fs/binfmt_misc/status": "enabled\n",
            "fs/binfmt_misc/python3.12": (
                "enabled\ninterpreter /usr/bin/python3.12\nflags: \noffset 0\nmagic cb0d0d0a\n"
            ),
            "net/ipv4/ip_forward": "1\n",
            "net/core/somaxconn": "4096\n",
            "dev/cdrom/info": "CD-ROM information, Id: cdrom.c 3.20 2003/12/17\n\ndrive name:\t\n",
        }

    def cmdline(self) -> str:
        return (
            f"BOOT_IMAGE=/boot/vmlinuz-{self.kernel} root=PARTUUID=5a7c3e1b-7f11-4d2a-9d55-0c3f2a9b8e01 "
            "ro console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295 panic=-1 iommu=pt\n"
        )

    def modules(self) -> str:
        text = (_MODULES_NVIDIA if self.driver else "") + (_MODULES_EFA if self.efa else "")
        return text + (_MODULES_MLX if self.connectx else "") + _MODULES_BASE

    def pci(self) -> list[tuple[str, str, str, str]]:
        """``(address, vendor, device, class)`` in sysfs notation."""
        out = [("0000:00:00.0", "0x8086", "0x1237", "0x060000")]
        out += [(f"0000:{g.bus}:00.0", "0x10de", f"0x{g.device_id}", "0x030200") for g in self.gpus]
        if self.gpus:  # NVSwitches: NVIDIA bridges, not GPUs
            out += [(f"0000:{0x0A + i:02x}:00.0", "0x10de", "0x22a3", "0x068000") for i in range(4)]
        out += [(f"0000:{0x30 + i:02x}:00.0", "0x1d0f", "0xefa1", "0x020000") for i in range(self.efa)]
        out += [(f"0000:{0xD0 + i:02x}:00.0", "0x1d0f", "0xcd01", "0x010802") for i in range(2)]
        out += [(self._nic_address(i), "0x15b3", CONNECTX[0], "0x020000") for i in range(self._nics())]
        return out

    def _nics(self) -> int:
        return min(self.connectx, len(self.gpus))

    def _nic_address(self, i: int) -> str:
        return f"0000:{int(self.gpus[i].bus, 16) + 1:02x}:00.0"

    def _bridges(self, address: str) -> list[str]:
        """The sysfs directories above ``address``: ``pci<domain>:<bus>`` then its bridges."""
        for i in range(self._nics()):
            bus = int(self.gpus[i].bus, 16)
            if address in (f"0000:{self.gpus[i].bus}:00.0", self._nic_address(i)):
                port = "00.0" if address.endswith(f"{self.gpus[i].bus}:00.0") else "01.0"
                return [
                    f"pci0000:{bus - 3:02x}",
                    f"0000:{bus - 3:02x}:01.0",
                    f"0000:{bus - 2:02x}:00.0",
                    f"0000:{bus - 1:02x}:{port}",
                ]
        return ["pci0000:00"]

    def _write_nic(self, d: Path, i: int) -> None:
        bus = int(self.gpus[i].bus, 16) + 1
        numa = str(i * 2 // max(1, self._nics()))
        (d / "numa_node").write_text(numa + "\n")
        (d / "sriov_totalvfs").write_text("16\n")
        (d / "vpd").write_bytes(vpd_bytes(CONNECTX[2], CONNECTX[3], f"MT25{bus:02X}{i:04d}"))
        (d / "net" / f"enp{bus}s0np0").mkdir(parents=True)
        rdma = d / "infiniband" / f"mlx5_{i}"
        (rdma / "ports" / "1").mkdir(parents=True)
        (rdma / "board_id").write_text(CONNECTX[1] + "\n")
        (rdma / "ports" / "1" / "link_layer").write_text("Ethernet\n")

    def materialize(
        self,
        root: Path,
        *,
        hostname: str,
        mount_os_release: bool,
        container_gpus: int,
    ) -> None:
        """Write the tree ``collect.sh`` reads with ``AICR_ROOT=root`` (module docstring)."""
        (root / "proc").mkdir(parents=True)
        (root / "proc" / "cmdline").write_text(self.cmdline())
        (root / "proc" / "modules").write_text(self.modules())
        for rel, content in self.sysctl(hostname).items():
            path = root / "proc" / "sys" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
        bus_dir = root / "sys" / "bus" / "pci" / "devices"
        bus_dir.mkdir(parents=True)
        nics = {self._nic_address(i): i for i in range(self._nics())}
        gpus = {f"0000:{g.bus}:00.0": g.index for g in self.gpus[: self._nics()]}
        for address, vendor, device, pci_class in self.pci():
            d = root / "sys" / "devices" / Path(*self._bridges(address)) / address
            d.mkdir(parents=True)
            (bus_dir / address).symlink_to(d)
            for name, value in (("vendor", vendor), ("device", device), ("class", pci_class)):
                (d / name).write_text(value + "\n")
            if address in nics:
                self._write_nic(d, nics[address])
            if address in gpus:
                (d / "numa_node").write_text(f"{gpus[address] * 2 // self._nics()}\n")
        if self.product:
            dmi = root / "sys" / "class" / "dmi" / "id"
            dmi.mkdir(parents=True)
            (dmi / "product_name").write_text(self.product + "\n")
        if mount_os_release:
            (root / "host" / "etc").mkdir(parents=True)
            (root / "host" / "etc" / "os-release").write_text(os_release_text(self.os_image))
        share = root / "share"
        share.mkdir()
        host_bin = root / "host-bin"
        host_bin.mkdir()
        for unit in ("containerd.service", "docker.service", "kubelet.service"):
            text = systemctl_show(unit, kubelet_version=self.kubelet_version)
            (share / f"{unit}.show").write_text(text)
        shows = shlex.quote(str(share))
        _script(
            host_bin / "systemctl",
            f'[ "$1" = show ] || exit 1\nfor u; do :; done\nexec /bin/cat {shows}/"$u.show"\n',
        )
        missing = 'echo "$(basename "$0"): command not found" >&2\nexit 127\n'
        if self.driver and self.gpus:
            (share / "host-smi.xml").write_text(nvidia_smi_xml(self.gpus, self.driver, self.name))
            _script(host_bin / "nvidia-smi", f"exec /bin/cat {shlex.quote(str(share / 'host-smi.xml'))}\n")
        else:
            _script(host_bin / "nvidia-smi", missing)
        _script(host_bin / "chroot", "echo \"chroot: cannot change root directory to '$1'\" >&2\nexit 125\n")
        _script(
            root / "hostexec",
            f'PATH={shlex.quote(str(host_bin))}\nexport PATH\nexec "$@"\n',
        )
        ctr_bin = root / "ctr-bin"
        ctr_bin.mkdir()
        visible = self.gpus[:container_gpus] if self.driver else []
        if visible and self.driver:
            (share / "ctr-smi.xml").write_text(nvidia_smi_xml(visible, self.driver, self.name))
            _script(ctr_bin / "nvidia-smi", f"exec /bin/cat {shlex.quote(str(share / 'ctr-smi.xml'))}\n")
        else:  # no GPU given to the pod: the runtime injected nothing
            _script(ctr_bin / "nvidia-smi", missing)


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _int(value: Any) -> int:
    text = str(value or "0")
    return int(text) if text.isdigit() else 0


def _mebibytes(value: Any) -> int:
    m = re.fullmatch(r"(\d+)(Gi|Mi)", str(value or ""))
    if not m:
        return 0
    return int(m.group(1)) * (1024 if m.group(2) == "Gi" else 1)


def node_host(node: Mapping[str, Any]) -> NodeHost:
    """The host behind a Node object (module docstring)."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    capacity = status.get("capacity") or status.get("allocatable") or {}
    instance = str(labels.get("node.kubernetes.io/instance-type") or "")
    count = _int(capacity.get("nvidia.com/gpu")) or _int(labels.get("nvidia.com/gpu.count"))
    product = str(labels.get("nvidia.com/gpu.product") or "")
    if instance in INSTANCE_GPUS:
        hw_count, hw_product = INSTANCE_GPUS[instance]
        count, product = count or hw_count, product or hw_product
    gpus: list[Gpu] = []
    if count and product in PRODUCTS:
        device, name, arch, memory = PRODUCTS[product]
        memory = _int(labels.get("nvidia.com/gpu.memory")) or memory
        for i in range(count):
            bus = _GPU_BUSES[i] if i < len(_GPU_BUSES) else f"{0xE0 + i:02x}"
            gpus.append(Gpu(i, bus, product, name, arch, memory, device))
    driver_label = labels.get("nvidia.com/cuda.driver-version.full")
    parts = [labels.get(f"nvidia.com/cuda.driver.{p}") for p in ("major", "minor", "rev")]
    if not driver_label and all(parts):
        driver_label = ".".join(str(p) for p in parts)
    has_driver = bool(driver_label) or bool(count and _int(capacity.get("nvidia.com/gpu")))
    return NodeHost(
        name=str(meta.get("name") or ""),
        kernel=str(info.get("kernelVersion") or "6.8.0-1021-aws"),
        os_image=str(info.get("osImage") or "Ubuntu 24.04.2 LTS"),
        kubelet_version=str(info.get("kubeletVersion") or ""),
        gpus=gpus,
        driver=str(driver_label or DEFAULT_DRIVER) if has_driver else None,
        efa=min(4, _int(capacity.get("vpc.amazonaws.com/efa"))),
        hugepages_2mi=_mebibytes(capacity.get("hugepages-2Mi")) // 2,
        connectx=INSTANCE_CONNECTX.get(instance, 0),
        product=instance,
    )
