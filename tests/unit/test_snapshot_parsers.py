"""The snapshot family's parsers on the formats nodes really print (fixtures written for this project).

Rules of AICR's collectors (what each measurement holds and how they read it).
"""

from __future__ import annotations

import pytest

from aicr_pytest.snapshot.gpu import (
    PciDevice,
    SmiParseError,
    gpu_hardware,
    has_gpu,
    parse_nvidia_smi_xml,
    parse_pci,
    sku_for_device,
)
from aicr_pytest.snapshot.osfacts import (
    parse_cmdline,
    parse_modules,
    parse_os_release,
    parse_sysctl,
    parse_systemctl_show,
    sysctl_entries,
)
from aicr_pytest.snapshot.sections import parse_agent_log

# --- the agent's log protocol -----------------------------------------------------------------------


def test_sections_items_and_status() -> None:
    log = parse_agent_log(
        "some runtime noise\n"
        "==AICR== begin 1 node=ip-10-0-4-17.ec2.internal privileged=true\n"
        "==AICR== section cmdline\n"
        "|BOOT_IMAGE=/boot/vmlinuz ro\n"
        "==AICR== end cmdline rc=0\n"
        "==AICR== section nvidia-smi\n"
        "|nvidia-smi is not available on the host or in the container\n"
        "==AICR== end nvidia-smi rc=127\n"
        "==AICR== section sysctl\n"
        "==AICR== item /proc/sys/kernel/osrelease\n"
        "|6.8.0-1021-aws\n"
        "==AICR== status 0\n"
        "==AICR== item /proc/sys/vm/compact_memory\n"
        "==AICR== status 1\n"
        "==AICR== end sysctl rc=0\n"
        "==AICR== done\n"
    )
    assert log.begun and log.done and log.protocol == "1"
    assert log.node == "ip-10-0-4-17.ec2.internal" and log.privileged is True
    cmdline = log.section("cmdline")
    assert cmdline is not None and cmdline.ok and cmdline.text == "BOOT_IMAGE=/boot/vmlinuz ro\n"
    smi = log.section("nvidia-smi")
    assert smi is not None and smi.complete and smi.rc == 127 and "not available" in smi.detail()
    sysctl = log.section("sysctl")
    assert sysctl is not None
    assert [(i.name, i.status, i.lines) for i in sysctl.items] == [
        ("/proc/sys/kernel/osrelease", 0, ["6.8.0-1021-aws"]),
        ("/proc/sys/vm/compact_memory", 1, []),
    ]


def test_content_cannot_pose_as_a_marker_and_truncation_is_incomplete() -> None:
    log = parse_agent_log(
        "==AICR== begin 1 node=n privileged=false\n"
        "==AICR== section os-release\n"
        "|==AICR== end os-release rc=0\n"
        "|ID=ubuntu\n"
        "==AICR== end os-release rc=0\n"
        "==AICR== section sysctl\n"
        "==AICR== item /proc/sys/kernel/ostype\n"
        "|Linux\n"
        "==AICR== status 0\n"
        "==AICR== item /proc/sys/kernel/panic\n"
        "|-1\n"  # the log ends here: no status, no end
    )
    release = log.section("os-release")
    assert release is not None and release.ok
    assert release.lines == ["==AICR== end os-release rc=0", "ID=ubuntu"]
    assert log.privileged is False and not log.done
    sysctl = log.section("sysctl")
    assert sysctl is not None and not sysctl.complete
    assert [i.name for i in sysctl.items] == ["/proc/sys/kernel/ostype"]  # the unfinished item is dropped


def test_an_end_line_for_another_section_does_not_close_the_open_one() -> None:
    log = parse_agent_log("==AICR== begin 1\n==AICR== section a\n|x\n==AICR== end b rc=0\n")
    section = log.section("a")
    assert section is not None and not section.complete
    assert log.node == "" and log.privileged is None


# --- OS.grub -------------------------------------------------------------------------------------------

EKS_CMDLINE = (
    "BOOT_IMAGE=/boot/vmlinuz-6.8.0-1021-aws root=PARTUUID=5a7c3e1b-7f11-4d2a-9d55-0c3f2a9b8e01 ro "
    "console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295 panic=-1  iommu=pt "
    "systemd.unified_cgroup_hierarchy=1\n"
)


def test_grub_from_a_real_cmdline() -> None:
    assert parse_cmdline(EKS_CMDLINE) == {
        "BOOT_IMAGE": "/boot/vmlinuz-6.8.0-1021-aws",
        "ro": "",
        "console": "ttyS0",  # the last of a repeated key
        "nvme_core.io_timeout": "4294967295",
        "panic": "-1",
        "iommu": "pt",
        "systemd.unified_cgroup_hierarchy": "1",
    }  # root= names the boot disk: left out


def test_grub_splits_values_at_the_first_equals_sign() -> None:
    assert parse_cmdline("dyndbg=module=nvidia +p\n") == {"dyndbg": "module=nvidia", "+p": ""}


# --- OS.sysctl -----------------------------------------------------------------------------------------


def test_sysctl_single_line_values_keep_inner_whitespace() -> None:
    assert sysctl_entries("/proc/sys/kernel/osrelease", "6.8.0-1021-aws\n") == {
        "/proc/sys/kernel/osrelease": "6.8.0-1021-aws"
    }
    assert sysctl_entries("/proc/sys/kernel/printk", "4\t4\t1\t7\n") == {
        "/proc/sys/kernel/printk": "4\t4\t1\t7"
    }


def test_sysctl_key_value_files_become_path_keys_and_others_stay_whole() -> None:
    kv = "enabled 1\ninterpreter /usr/bin/qemu-aarch64-static\noffset 0\n"
    assert sysctl_entries("/proc/sys/fs/binfmt_misc/qemu-aarch64", kv) == {
        "/proc/sys/fs/binfmt_misc/qemu-aarch64/enabled": "1",
        "/proc/sys/fs/binfmt_misc/qemu-aarch64/interpreter": "/usr/bin/qemu-aarch64-static",
        "/proc/sys/fs/binfmt_misc/qemu-aarch64/offset": "0",
    }
    mixed = "enabled\ninterpreter /usr/bin/python3.12\nflags: \noffset 0\nmagic cb0d0d0a\n"
    assert sysctl_entries("/proc/sys/fs/binfmt_misc/python3.12", mixed) == {
        "/proc/sys/fs/binfmt_misc/python3.12": "enabled\ninterpreter /usr/bin/python3.12\nflags:\noffset 0\n"
        "magic cb0d0d0a"
    }


def test_sysctl_excludes_net_cdrom_binary_and_files_outside_proc_sys() -> None:
    files = [
        ("/proc/sys/net/ipv4/ip_forward", "1\n"),
        ("/proc/sys/dev/cdrom/info", "CD-ROM information\n"),
        ("/proc/sys/kernel/random/uuid", "\ufffd\ufffd\n"),  # undecodable bytes: not text
        ("/etc/sysctl.conf", "vm.swappiness = 10\n"),
        ("/proc/sys/vm/swappiness", "60\n"),
        ("/proc/sys/kernel/core_pattern", "\n"),
    ]
    assert parse_sysctl(files) == {"/proc/sys/vm/swappiness": "60", "/proc/sys/kernel/core_pattern": ""}


# --- OS.kmod -------------------------------------------------------------------------------------------

PROC_MODULES = """\
nvidia_uvm 4956160 8 - Live 0x0000000000000000 (OE)
nvidia_modeset 1638400 1 nvidia_drm, Live 0x0000000000000000 (OE)
nvidia 104071168 110 nvidia_peermem,nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (OE)
efa 167936 0 - Live 0x0000000000000000 (OE)
ib_core 462848 3 efa,ib_uverbs,nvidia_peermem, Live 0x0000000000000000
overlay 212992 42 - Live 0x0000000000000000
"""


def test_kmod_from_proc_modules() -> None:
    assert parse_modules(PROC_MODULES) == dict.fromkeys(
        ["nvidia_uvm", "nvidia_modeset", "nvidia", "efa", "ib_core", "overlay"], True
    )


# --- OS.release ----------------------------------------------------------------------------------------

UBUNTU_2404 = """\
PRETTY_NAME="Ubuntu 24.04.2 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.2 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
# a comment
UBUNTU_CODENAME=noble
LOGO=
"""


def test_os_release_trims_quotes_and_drops_empty_values_and_comments() -> None:
    assert parse_os_release(UBUNTU_2404) == {
        "PRETTY_NAME": "Ubuntu 24.04.2 LTS",
        "NAME": "Ubuntu",
        "VERSION_ID": "24.04",
        "VERSION": "24.04.2 LTS (Noble Numbat)",
        "VERSION_CODENAME": "noble",
        "ID": "ubuntu",
        "ID_LIKE": "debian",
        "UBUNTU_CODENAME": "noble",
    }
    assert parse_os_release("ID='amzn'\nVERSION_ID=\"2023\"\nJUNK\n") == {"ID": "amzn", "VERSION_ID": "2023"}


# --- SystemD -------------------------------------------------------------------------------------------

CONTAINERD_SHOW = """\
Type=notify
Restart=always
MainPID=1873
ExecStart={ path=/usr/bin/containerd ; argv[]=/usr/bin/containerd ; pid=1873 }
Environment=HTTPS_PROXY=http://user:p4ss@proxy.corp:3128
Id=containerd.service
Names=containerd.service
LoadState=loaded
ActiveState=active
SubState=running
AllowedCPUs=
BusName=
LoadCredential=
SetCredentialEncrypted=
Delegate=yes
"""


def test_systemctl_show_keeps_properties_minus_aicrs_filter_and_environment() -> None:
    props = parse_systemctl_show(CONTAINERD_SHOW)
    assert props == {
        "Type": "notify",
        "Restart": "always",
        "MainPID": "1873",
        "ExecStart": "{ path=/usr/bin/containerd ; argv[]=/usr/bin/containerd ; pid=1873 }",
        "Names": "containerd.service",
        "LoadState": "loaded",
        "ActiveState": "active",
        "SubState": "running",
        "Delegate": "yes",
    }
    assert "p4ss" not in str(props)


def test_a_unit_that_is_not_installed_has_no_subtype() -> None:
    text = (
        "Names=docker.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n"
        'LoadError=org.freedesktop.systemd1.NoSuchUnit "Unit docker.service not found."\n'
    )
    assert parse_systemctl_show(text) is None
    assert parse_systemctl_show("Failed to connect to bus: No such file or directory\n") is None


# --- GPU.hardware --------------------------------------------------------------------------------------

P5_PCI = """\
0000:00:00.0 0x8086 0x1237 0x060000
0000:0a:00.0 0x10de 0x22a3 0x068000
0000:53:00.0 0x10de 0x2330 0x030200
0000:64:00.0 0x10de 0x2330 0x030200
0000:30:00.0 0x1d0f 0xefa1 0x020000
0000:d0:00.0 0x1d0f 0xcd01 0x010802
garbage line
0000:ff:00.0 0xzzzz 0x2330 0x030200
"""


def test_gpus_are_nvidia_display_or_3d_functions_not_nvswitches() -> None:
    devices = parse_pci(P5_PCI)
    assert len(devices) == 6  # two malformed lines skipped
    assert [d.address for d in devices if d.is_nvidia_gpu] == ["0000:53:00.0", "0000:64:00.0"]
    assert gpu_hardware(devices, driver_loaded=True) == {
        "gpu-present": True,
        "gpu-count": 2,
        "driver-loaded": True,
        "detection-source": "sysfs",
        "model": "h100",
    }


def test_model_only_for_one_known_sku() -> None:
    mixed = [PciDevice("a", "10de", "2330", "030200"), PciDevice("b", "10de", "2335", "030000")]
    assert "model" not in gpu_hardware(mixed, driver_loaded=False)
    unknown = [PciDevice("a", "10de", "ffff", "030200")]
    data = gpu_hardware(unknown, driver_loaded=False)
    assert data["gpu-count"] == 1 and "model" not in data
    none = gpu_hardware([PciDevice("a", "8086", "1237", "060000")], driver_loaded=False)
    assert none == {"gpu-present": False, "gpu-count": 0, "driver-loaded": False, "detection-source": "sysfs"}
    assert sku_for_device("0x2941") == "gb200" and sku_for_device("0X2335") == "h200"


# --- GPU.smi -------------------------------------------------------------------------------------------

SMI_XML = """\
<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">
<nvidia_smi_log>
	<timestamp>Wed Jul 15 09:41:02 2026</timestamp>
	<driver_version>580.95.05</driver_version>
	<cuda_version>13.0</cuda_version>
	<attached_gpus>2</attached_gpus>
	<gpu id="00000000:53:00.0">
		<product_name>NVIDIA H100 80GB HBM3</product_name>
		<product_brand>NVIDIA</product_brand>
		<product_architecture>Hopper</product_architecture>
		<display_mode>Disabled</display_mode>
		<display_active>Disabled</display_active>
		<persistence_mode>Enabled</persistence_mode>
		<addressing_mode>HMM</addressing_mode>
		<mig_mode>
			<current_mig>Disabled</current_mig>
			<pending_mig>Disabled</pending_mig>
		</mig_mode>
		<vbios_version>96.00.99.00.01</vbios_version>
		<gsp_firmware_version>580.95.05</gsp_firmware_version>
		<fb_memory_usage>
			<total>81559 MiB</total>
		</fb_memory_usage>
	</gpu>
	<gpu id="00000000:64:00.0">
		<product_name>NVIDIA H100 80GB HBM3</product_name>
	</gpu>
</nvidia_smi_log>
"""


def test_smi_facts_of_the_first_gpu() -> None:
    assert parse_nvidia_smi_xml(SMI_XML) == {
        "driver": "580.95.05",
        "cuda-version": "13.0",
        "gpu-count": 2,
        "gpu.model": "NVIDIA H100 80GB HBM3",
        "gpu.product-architecture": "Hopper",
        "gpu.display-mode": "Disabled",
        "gpu.display-active": "Disabled",
        "gpu.persistence-mode": "Enabled",
        "gpu.addressing-mode": "HMM",
        "gpu.vbios-version": "96.00.99.00.01",
        "gpu.gsp-firmware-version": "580.95.05",
    }


def test_smi_fields_a_driver_does_not_print_are_left_out() -> None:
    text = "<nvidia_smi_log><driver_version>535.230.02</driver_version><gpu><product_name>Tesla T4"
    text += "</product_name></gpu></nvidia_smi_log>"
    assert parse_nvidia_smi_xml(text) == {"gpu-count": 1, "driver": "535.230.02", "gpu.model": "Tesla T4"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Failed to initialize NVML: Driver/library version mismatch\n", "no valid XML"),
        ("<nvidia_smi_log><gpu></nvidia_smi_log>", "no valid XML"),
        ("<log><gpu/></log>", "expected <nvidia_smi_log>"),
        ('<!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log>&a;</nvidia_smi_log>', "entities"),
    ],
)
def test_smi_output_that_is_not_the_report_fails(text: str, message: str) -> None:
    with pytest.raises(SmiParseError, match=message):
        parse_nvidia_smi_xml(text)


def test_has_gpu_needs_a_positive_integer_count() -> None:
    assert has_gpu({"gpu-count": 0}, {"gpu-count": 8})
    assert not has_gpu(None, {"gpu-count": 0}, {"gpu-count": True}, {"gpu-count": "8"})
