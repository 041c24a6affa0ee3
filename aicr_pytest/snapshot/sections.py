"""The agent's log protocol (``collect.sh``), read back into sections.

The agent prints::

    ==AICR== begin 1 node=<node> privileged=<true|false>
    ==AICR== section <name>
    |<content line>
    ==AICR== end <name> rc=<exit status>
    ==AICR== section sysctl
    ==AICR== item /proc/sys/<path>
    |<content line>
    ==AICR== status <0|1>
    ==AICR== end sysctl rc=0
    ==AICR== done

Every content line starts with ``|``, so no file content is ever taken for a marker. Lines that are
neither (what a container runtime or a shell might add) are ignored. Fail closed: a section without
its ``end`` line (a truncated log) is marked incomplete, an item without its ``status`` line is
dropped, and the readers in :mod:`.node` omit what is incomplete or failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

MARK: Final = "==AICR== "
PROTOCOL: Final = "1"

_BEGIN = re.compile(r"begin (\S+)(?: node=(\S*))?(?: privileged=(\S*))?\s*$")
_END = re.compile(r"end (.+) rc=(-?\d+)\s*$")


@dataclass
class Item:
    """One file of a multi-file section (``sysctl``): its content lines and read status."""

    name: str
    status: int | None = None
    lines: list[str] = field(default_factory=list)


@dataclass
class Section:
    """One collector's output: content lines (``|`` stripped), exit status, items."""

    name: str
    rc: int | None = None
    lines: list[str] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.rc is not None

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + ("\n" if self.lines else "")

    def detail(self, limit: int = 160) -> str:
        """The first non-empty content line (the command's error message, usually), shortened."""
        first = next((ln.strip() for ln in self.lines if ln.strip()), "")
        return first if len(first) <= limit else first[: limit - 3] + "..."


@dataclass
class AgentLog:
    """Everything the agent printed, by section name (first occurrence wins)."""

    begun: bool = False
    done: bool = False
    protocol: str = ""
    node: str = ""
    privileged: bool | None = None
    sections: dict[str, Section] = field(default_factory=dict)

    def section(self, name: str) -> Section | None:
        return self.sections.get(name)


def parse_agent_log(text: str) -> AgentLog:
    """Read the agent's log (see the module docstring); never raises on malformed input."""
    out = AgentLog()
    current: Section | None = None
    item: Item | None = None
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith("|"):
            if item is not None:
                item.lines.append(line[1:])
            elif current is not None:
                current.lines.append(line[1:])
            continue
        if not line.startswith(MARK):
            continue
        body = line[len(MARK) :]
        if body.startswith("begin "):
            m = _BEGIN.match(body)
            if m is not None and not out.begun:
                out.begun = True
                out.protocol = m.group(1)
                out.node = m.group(2) or ""
                flag = m.group(3)
                out.privileged = None if flag is None else flag == "true"
            continue
        if body.startswith("section "):
            item = None
            name = body[len("section ") :].strip()
            current = Section(name) if name and name not in out.sections else None
            if current is not None:
                out.sections[name] = current
            continue
        if body.startswith("item ") and current is not None:
            item = Item(body[len("item ") :].strip())
            continue
        if body.startswith("status ") and current is not None and item is not None:
            status = body[len("status ") :].strip()
            if status.lstrip("-").isdigit():
                item.status = int(status)
                current.items.append(item)
            item = None
            continue
        if body.startswith("end "):
            m = _END.match(body)
            if m is not None and current is not None and m.group(1).strip() == current.name:
                current.rc = int(m.group(2))
            current, item = None, None
            continue
        if body.strip() == "done":
            out.done = True
            current, item = None, None
    return out


__all__ = ["MARK", "PROTOCOL", "AgentLog", "Item", "Section", "parse_agent_log"]
