"""Building blocks of a snapshot document: readings, subtypes, measurements, the header.

Everything here is plain data in the wire shape :mod:`aicr_pytest.core.snapshot` loads
(``{"type": ..., "subtypes": [{"subtype": ..., "data": {...}}]}``); data keys are sorted, as AICR's
YAML writer sorts map keys. A collector that fails adds a one-line warning instead of its
measurement (:class:`Collected`), and the snapshot still succeeds, as in AICR.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from aicr_pytest.core.snapshot import API_VERSION, MEASUREMENT_TYPES, SNAPSHOT_KIND

Reading = bool | int | float | str
Data = dict[str, Reading]
Doc = dict[str, Any]

#: The order measurement types are written in (AICR's ``measurement.Types``).
TYPE_ORDER: Final = MEASUREMENT_TYPES

MSG_OMITTED: Final = "{what} omitted: {reason}"


def subtype(name: str, data: Mapping[str, Reading]) -> Doc:
    """``{"subtype": name, "data": {...}}`` with the keys sorted."""
    return {"subtype": name, "data": {k: data[k] for k in sorted(data)}}


@dataclass
class Collected:
    """Subtypes by measurement type (in collection order) and the warnings of what was omitted."""

    subtypes: dict[str, list[Doc]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add(self, type_name: str, name: str, data: Mapping[str, Reading]) -> None:
        if type_name not in TYPE_ORDER:
            raise ValueError(f"unknown measurement type {type_name!r}")
        self.subtypes.setdefault(type_name, []).append(subtype(name, data))

    def add_subtypes(self, type_name: str, subtypes: Iterable[Doc]) -> None:
        """Whole subtypes in wire shape (with ``context`` or ``items``), as given."""
        if type_name not in TYPE_ORDER:
            raise ValueError(f"unknown measurement type {type_name!r}")
        for doc in subtypes:
            self.subtypes.setdefault(type_name, []).append(doc)

    def omit(self, what: str, reason: str) -> None:
        self.warnings.append(MSG_OMITTED.format(what=what, reason=" ".join(str(reason).split())))

    def extend(self, other: Collected) -> None:
        for type_name, subs in other.subtypes.items():
            self.subtypes.setdefault(type_name, []).extend(subs)
        self.warnings.extend(other.warnings)

    def has(self, type_name: str, name: str) -> bool:
        return any(s["subtype"] == name for s in self.subtypes.get(type_name, []))

    def data(self, type_name: str, name: str) -> Data | None:
        for s in self.subtypes.get(type_name, []):
            if s["subtype"] == name and "data" in s:
                found: Data = s["data"]
                return found
        return None

    def measurements(self) -> list[Doc]:
        """One measurement per type that has subtypes, in :data:`TYPE_ORDER`."""
        return [{"type": t, "subtypes": list(self.subtypes[t])} for t in TYPE_ORDER if self.subtypes.get(t)]


def rfc3339(now: datetime.datetime | None = None) -> str:
    """UTC, second precision, ``Z`` suffix (Go's ``time.RFC3339`` of a UTC time)."""
    moment = (now or datetime.datetime.now(datetime.UTC)).astimezone(datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def snapshot_document(measurements: Iterable[Doc], *, timestamp: str, version: str, source_node: str) -> Doc:
    """The whole document: ``kind``, ``apiVersion``, ``metadata``, ``measurements``."""
    metadata: dict[str, str] = {"timestamp": timestamp}
    if version:
        metadata["version"] = version
    metadata["source-node"] = source_node
    return {
        "kind": SNAPSHOT_KIND,
        "apiVersion": API_VERSION,
        "metadata": metadata,
        "measurements": list(measurements),
    }


__all__ = [
    "MSG_OMITTED",
    "TYPE_ORDER",
    "Collected",
    "Data",
    "Doc",
    "Reading",
    "rfc3339",
    "snapshot_document",
    "subtype",
]
