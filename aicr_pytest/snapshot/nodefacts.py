"""The node measurements (``OS``, ``GPU``, ``SystemD``, ``NetworkTopology``) from the agent's parsed log.

Fail closed per section: a section that is missing, truncated (no ``end`` line), ended with a
non-zero status or parses to nothing is omitted with a one-line warning naming why; the other
sections still make it into the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from aicr_pytest.snapshot.gpu import (
    DRIVER_MODULE,
    SmiParseError,
    gpu_hardware,
    parse_nvidia_smi_xml,
    parse_pci,
)
from aicr_pytest.snapshot.measure import Collected
from aicr_pytest.snapshot.network import TYPE as NETWORK
from aicr_pytest.snapshot.network import network_topology, parse_network_section
from aicr_pytest.snapshot.osfacts import (
    parse_cmdline,
    parse_modules,
    parse_os_release,
    parse_sysctl,
    parse_systemctl_show,
)
from aicr_pytest.snapshot.sections import AgentLog, Section

SYSTEMD_PREFIX: Final = "systemd:"
WHY_TRUNCATED: Final = "the agent's log ends inside this section (truncated)"
WHY_MISSING: Final = "the agent printed no {section} section"
WHY_FAILED: Final = "{detail} (exit status {rc})"
WHY_EMPTY: Final = "{what} is empty"
WHY_RELEASE_UNPRIVILEGED: Final = (
    "the host's /etc/os-release is mounted only with --privileged (the container's own would "
    "describe the image, not the node)"
)
WHY_SYSTEMD_UNPRIVILEGED: Final = "systemd is read through the host's PID 1 only with --privileged"
WHY_NO_SYSCTL: Final = "no file under /proc/sys could be read"
WHY_NO_SMI: Final = "nvidia-smi is not available on the node (no driver on the host, no GPU given to the pod)"


def _usable(out: Collected, section: Section | None, name: str, what: str) -> Section | None:
    """The section when it ended with status 0; otherwise record why ``what`` is omitted."""
    if section is None:
        out.omit(what, WHY_MISSING.format(section=name))
        return None
    if not section.complete:
        out.omit(what, WHY_TRUNCATED)
        return None
    if not section.ok:
        out.omit(what, WHY_FAILED.format(detail=section.detail() or "no output", rc=section.rc))
        return None
    return section


def _os(log: AgentLog, out: Collected) -> dict[str, bool] | None:
    """OS.grub, OS.sysctl, OS.kmod, OS.release (in that order); returns the modules when read."""
    cmdline = _usable(out, log.section("cmdline"), "cmdline", "OS.grub")
    if cmdline is not None:
        grub = parse_cmdline(cmdline.text)
        if grub:
            out.add("OS", "grub", grub)
        else:
            out.omit("OS.grub", WHY_EMPTY.format(what="/proc/cmdline"))

    sysctl = log.section("sysctl")
    if sysctl is None or not sysctl.complete:
        out.omit("OS.sysctl", WHY_MISSING.format(section="sysctl") if sysctl is None else WHY_TRUNCATED)
    else:
        readable = [(item.name, "\n".join(item.lines)) for item in sysctl.items if item.status == 0]
        values = parse_sysctl(readable)
        if values:
            out.add("OS", "sysctl", values)
        else:
            out.omit("OS.sysctl", WHY_NO_SYSCTL)

    modules: dict[str, bool] | None = None
    kmod = _usable(out, log.section("modules"), "modules", "OS.kmod")
    if kmod is not None:
        modules = parse_modules(kmod.text)
        if modules:
            out.add("OS", "kmod", modules)
        else:
            out.omit("OS.kmod", WHY_EMPTY.format(what="/proc/modules"))
            modules = None

    release = log.section("os-release")
    if release is not None and release.complete and not release.ok and log.privileged is False:
        out.omit("OS.release", WHY_RELEASE_UNPRIVILEGED)
    else:
        usable = _usable(out, release, "os-release", "OS.release")
        if usable is not None:
            data = parse_os_release(usable.text)
            if data:
                out.add("OS", "release", data)
            else:
                out.omit("OS.release", WHY_EMPTY.format(what="os-release"))
    return modules


def _gpu(log: AgentLog, out: Collected, modules: dict[str, bool] | None) -> None:
    pci = _usable(out, log.section("pci"), "pci", "GPU.hardware")
    if pci is not None:
        devices = parse_pci(pci.text)
        if devices:
            loaded = bool(modules and modules.get(DRIVER_MODULE))
            out.add("GPU", "hardware", gpu_hardware(devices, driver_loaded=loaded))
        else:
            out.omit("GPU.hardware", "no PCI device could be read from /sys/bus/pci/devices")

    smi = log.section("nvidia-smi")
    if smi is not None and smi.complete and smi.rc == 127:
        out.omit("GPU.smi", WHY_NO_SMI)
        return
    usable = _usable(out, smi, "nvidia-smi", "GPU.smi")
    if usable is None:
        return
    try:
        out.add("GPU", "smi", parse_nvidia_smi_xml(usable.text))
    except SmiParseError as err:
        out.omit("GPU.smi", str(err))


def _systemd(log: AgentLog, out: Collected) -> None:
    if log.privileged is False:
        out.omit("SystemD", WHY_SYSTEMD_UNPRIVILEGED)
        return
    for name, section in log.sections.items():
        if not name.startswith(SYSTEMD_PREFIX):
            continue
        unit = name[len(SYSTEMD_PREFIX) :]
        usable = _usable(out, section, name, f"SystemD.{unit}")
        if usable is None:
            continue
        props = parse_systemctl_show(usable.text)
        if props is not None:  # None: the unit is not installed on this node
            out.add("SystemD", unit, props)


def _network(log: AgentLog, out: Collected, node_labels: Mapping[str, str] | None) -> None:
    """``NetworkTopology`` when the node has an NVIDIA network PF (none: no measurement, no warning)."""
    section = _usable(out, log.section("network"), "network", NETWORK)
    if section is None:
        return
    modules = log.section("modules")
    modules_text = modules.text if modules is not None and modules.ok else None
    subtypes = network_topology(parse_network_section(section.text), modules_text, node_labels=node_labels)
    if subtypes:
        out.add_subtypes(NETWORK, subtypes)


def node_measurements(log: AgentLog, *, node_labels: Mapping[str, str] | None = None) -> Collected:
    """``OS``, ``GPU``, ``SystemD`` and ``NetworkTopology`` subtypes from what the agent printed,
    plus the warnings; ``node_labels`` (the agent's node) give ``NetworkTopology.identity`` its
    ``gpuType`` and ``nodeSelector``."""
    out = Collected()
    modules = _os(log, out)
    _gpu(log, out, modules)
    _systemd(log, out)
    _network(log, out, node_labels)
    return out


__all__ = ["SYSTEMD_PREFIX", "node_measurements"]
