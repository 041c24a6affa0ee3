"""``OS.*`` and ``SystemD.*`` from the texts a node shows (pure parsers, real formats).

Each parser follows the rules of AICR's collectors (``pkg/collector/os``,
``pkg/collector/systemd``):

* ``OS.grub`` -- ``/proc/cmdline`` split on spaces; ``key=value`` (first ``=``), a bare ``key`` reads
  ``""``; ``root`` is left out (it names the boot disk);
* ``OS.sysctl`` -- every readable file under ``/proc/sys`` except ``/proc/sys/net`` and
  ``/proc/sys/dev/cdrom/*``, keyed by its full path; lines are trimmed, empty and ``#`` lines dropped;
  a file of several ``key value`` lines becomes ``<path>/<key>`` entries, any other content is kept
  whole (lines joined with ``\\n``);
* ``OS.kmod`` -- the first field of each ``/proc/modules`` line, read ``true``;
* ``OS.release`` -- ``/etc/os-release`` ``KEY=value`` lines, quotes trimmed, empty values dropped;
* ``SystemD.<unit>`` -- ``systemctl show`` properties minus ``AllowedCPUs``, ``AllowedMemoryNodes``,
  ``Asserts``, ``BPFProgram``, ``BusName``, ``Id`` and anything with ``Credential`` in its name, as
  AICR filters them; we also leave out ``Environment`` (it can carry secrets). A unit that is not
  installed (``LoadState=not-found``) has no subtype.

AICR reads units over D-Bus, so its readings are typed (``true``/``false``, numbers); ``systemctl
show`` prints text (``yes``/``no``), and so do ours.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

#: AICR's ``defaults.FileParserMaxSize``: bigger files are not read.
MAX_FILE_BYTES: Final = 1 << 20
GRUB_FILTERED: Final = frozenset({"root"})
SYSCTL_EXCLUDED_PREFIXES: Final = ("/proc/sys/net/", "/proc/sys/dev/cdrom/")
SYSTEMD_FILTERED: Final = frozenset(
    {"AllowedCPUs", "AllowedMemoryNodes", "Asserts", "BPFProgram", "BusName", "Id", "Environment"}
)
SYSTEMD_FILTERED_SUBSTRING: Final = "Credential"
DEFAULT_UNITS: Final = ("containerd.service", "docker.service", "kubelet.service")
REPLACEMENT_CHAR: Final = "\ufffd"


def _lines(text: str, *, delimiter: str = "\n") -> list[str]:
    """AICR's file parser: split, trim each part, drop empty parts and ``#`` comments."""
    out: list[str] = []
    for part in text.split(delimiter):
        clean = part.strip()
        if clean and not clean.startswith("#"):
            out.append(clean)
    return out


def parse_cmdline(text: str) -> dict[str, str]:
    """``OS.grub`` from ``/proc/cmdline``."""
    params: dict[str, str] = {}
    for part in _lines(text, delimiter=" "):
        key, sep, value = part.partition("=")
        params[key.strip()] = value.strip() if sep else ""
    return {k: v for k, v in params.items() if k not in GRUB_FILTERED}


def _is_text(content: str) -> bool:
    return REPLACEMENT_CHAR not in content and len(content.encode("utf-8")) <= MAX_FILE_BYTES


def sysctl_entries(path: str, content: str) -> dict[str, str]:
    """The ``OS.sysctl`` entries one file contributes (see the module docstring); ``{}`` if excluded."""
    if not path.startswith("/proc/sys/") or path.startswith(SYSCTL_EXCLUDED_PREFIXES):
        return {}
    if not _is_text(content):
        return {}
    lines = _lines(content)
    if len(lines) > 1:
        pairs: dict[str, str] = {}
        for line in lines:
            fields = line.split()
            if len(fields) < 2:
                break
            pairs[f"{path}/{fields[0]}"] = " ".join(fields[1:])
        else:
            return pairs
    return {path: "\n".join(lines)}


def parse_sysctl(files: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``OS.sysctl`` from ``(path, content)`` pairs of readable files."""
    out: dict[str, str] = {}
    for path, content in files:
        out.update(sysctl_entries(path, content))
    return out


def parse_modules(text: str) -> dict[str, bool]:
    """``OS.kmod`` from ``/proc/modules`` (``nvidia 104071168 14 nvidia_uvm,... Live 0x0`` lines)."""
    return {line.split()[0]: True for line in _lines(text)}


def parse_os_release(text: str) -> dict[str, str]:
    """``OS.release`` from ``/etc/os-release`` (freedesktop.org format)."""
    out: dict[str, str] = {}
    for line in _lines(text):
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip().strip("\"'")
        if value:
            out[key.strip()] = value
    return out


def parse_systemctl_show(text: str) -> dict[str, str] | None:
    """``SystemD.<unit>`` from ``systemctl show <unit>``; ``None`` when the unit is not installed."""
    props: dict[str, str] = {}
    for raw in text.splitlines():
        key, sep, value = raw.partition("=")
        if sep and key and " " not in key:
            props[key] = value
    if not props or props.get("LoadState") == "not-found":
        return None
    return {
        k: v for k, v in props.items() if k not in SYSTEMD_FILTERED and SYSTEMD_FILTERED_SUBSTRING not in k
    }


__all__ = [
    "DEFAULT_UNITS",
    "MAX_FILE_BYTES",
    "SYSTEMD_FILTERED",
    "parse_cmdline",
    "parse_modules",
    "parse_os_release",
    "parse_sysctl",
    "parse_systemctl_show",
    "sysctl_entries",
]
