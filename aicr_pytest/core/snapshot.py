"""AICR snapshot model, loader and ``Type.Subtype.Key`` addressing.

A snapshot (``aicr snapshot`` output) looks like::

    kind: Snapshot                      # optional; not checked upstream
    apiVersion: aicr.run/v1alpha2       # optional (or today's aicr.run/v1); any other value is rejected
    metadata: {timestamp: ..., version: ..., source-node: ...}
    measurements:
      - type: K8s
        subtypes:
          - subtype: server
            data: {version: v1.33.5-eks-3025e55}
            context: {}                 # optional
            items: []                   # optional [{context: {...}, data: {...}}]

Values are addressed with the constraint-path grammar of AICR (``Type.Subtype.Key``, the key may
contain dots; ``Type.Subtype[0].Key`` / ``Type.Subtype[k=v].Key`` select an entry of ``items``).
Resolution takes the **first** measurement of the type, then the first subtype of that name inside it,
then ``data[Key]``, exactly like AICR.  Values are rendered as Go's ``fmt.Sprintf("%v", v)`` would.

Deliberate differences from AICR (documented for users):

* a ``null`` value (Go renders ``<nil>``) and a list/map value are reported as *not found*, so a
  constraint on them fails closed instead of comparing against placeholder text;
* a snapshot whose ``kind`` is present but is not ``Snapshot`` is rejected (AICR ignores ``kind``), as
  is a snapshot without any measurement (AICR would fail later, at the first constraint).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from aicr_pytest.core import blockyaml
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.gofmt import format_go_float, go_bool

__all__ = [
    "API_VERSION",
    "MEASUREMENT_TYPES",
    "SNAPSHOT_KIND",
    "AmbiguousMatch",
    "ItemEntry",
    "ItemSelector",
    "Measurement",
    "PathError",
    "Snapshot",
    "SnapshotLookupError",
    "SnapshotPath",
    "Subtype",
    "ValueNotFound",
    "format_go_float",
    "format_value",
    "load_snapshot_text",
    "parse_path",
    "parse_snapshot",
]

SNAPSHOT_KIND: Final = "Snapshot"
API_VERSION: Final = "aicr.run/v1alpha2"
#: what today's AICR (v1.x) writes for a snapshot (``docs/user/cli-reference.md``, "apiVersion gate")
UPSTREAM_API_VERSION: Final = "aicr.run/v1"

#: ``measurement.Types`` in AICR order; matching is exact and case-sensitive.
MEASUREMENT_TYPES: Final[tuple[str, ...]] = (
    "K8s",
    "GPU",
    "OS",
    "SystemD",
    "NodeTopology",
    "NetworkTopology",
)
_TYPE_SET: Final = frozenset(MEASUREMENT_TYPES)

# --- user-facing messages (the quoted phrases are AICR's) -------------------------------------------

MSG_UNSUPPORTED_API_VERSION: Final = (
    'snapshot file has apiVersion "{api_version}", which this aicr build does not support '
    '(expected "aicr.run/v1alpha2"); recapture the snapshot with a matching aicr version'
)
MSG_NOT_A_MAPPING: Final = "snapshot {source}: expected a mapping at the top level, got {got}"
MSG_WRONG_KIND: Final = 'snapshot {source}: kind is "{kind}", expected "Snapshot"'
MSG_NO_MEASUREMENTS: Final = "snapshot {source}: no measurements"
MSG_MALFORMED: Final = "snapshot {source}: malformed {where}: {problem}"
MSG_BAD_METADATA: Final = "snapshot {source}: metadata must be a map of strings"

PATH_EMPTY: Final = "constraint path cannot be empty"
PATH_FORMAT: Final = "expected format {Type}.{Subtype}.{Key}"
PATH_INVALID_TYPE: Final = "invalid measurement type"
PATH_SUBTYPE_BEFORE_BRACKET_EMPTY: Final = "subtype before '[' is empty"
PATH_UNCLOSED_BRACKET: Final = "unclosed bracket in item selector"
PATH_EMPTY_SELECTOR: Final = "empty item selector"
PATH_PREDICATE_EMPTY_SIDE: Final = "item selector predicate needs a non-empty key and value (key=value)"
PATH_BAD_INDEX: Final = "item selector index must be a non-negative integer"
PATH_MISSING_KEY_AFTER_SELECTOR: Final = "missing key after item selector"
PATH_EXPECTED_DOT_AFTER_SELECTOR: Final = "expected '.' after item selector"
PATH_SUBTYPE_OR_KEY_EMPTY: Final = "subtype or key is empty"

NOT_FOUND_TYPE: Final = "measurement type not found in snapshot"
NOT_FOUND_SUBTYPE: Final = "subtype not found in measurement"
NOT_FOUND_KEY: Final = "key not found in subtype"
NOT_FOUND_NO_ITEMS: Final = "subtype has no items"
NOT_FOUND_INDEX: Final = "item index out of range"
NOT_FOUND_PREDICATE: Final = "no item matches selector"
NOT_FOUND_ITEM_KEY: Final = "key not found in item"
NOT_FOUND_NULL: Final = "value is null"
NOT_FOUND_NOT_SCALAR: Final = "value is not a scalar"
CONFLICT_PREDICATE: Final = "more than one item matches selector"


# --- exceptions ------------------------------------------------------------------------------------------


class SnapshotLookupError(Exception):
    """Base class for every failure of :meth:`Snapshot.lookup`."""


class PathError(SnapshotLookupError, UsageError):
    """The constraint path does not follow the ``Type.Subtype.Key`` grammar (AICR INVALID_REQUEST)."""


class ValueNotFound(SnapshotLookupError):
    """The path is well formed but the snapshot holds no usable value there (AICR NOT_FOUND)."""


class AmbiguousMatch(SnapshotLookupError):
    """A ``[key=value]`` selector matched more than one item (AICR CONFLICT)."""


# --- Go-compatible rendering ---------------------------------------------------------------------------


def format_value(value: bool | int | float | str, *, json_numbers: bool = False) -> str:
    """Render a scalar reading as AICR's ``Reading.String()`` (Go ``%v``).

    Strings as-is, bools ``true``/``false``, ints in decimal, floats via :func:`format_go_float`.
    With ``json_numbers`` (a snapshot read from JSON, where Go decodes every number to float64),
    ints are rendered as float64 too (``12345678`` → ``1.2345678e+07``).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return go_bool(value)
    if isinstance(value, int):
        return format_go_float(float(value)) if json_numbers else str(value)
    return format_go_float(value)


# --- models ----------------------------------------------------------------------------------------------

#: What may appear as a ``data``/``context`` value.  Only scalars are addressable; null and
#: nested values load (AICR tolerates them) but a lookup reports them as not found.
DataValue = bool | int | float | str | None | list[Any] | dict[str, Any]

_MODEL_CONFIG = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class ItemEntry(BaseModel):
    """One entry of ``Subtype.items`` (e.g. one NIC of ``NetworkTopology.pfs``)."""

    model_config = _MODEL_CONFIG

    context: dict[str, DataValue] = Field(default_factory=dict)
    data: dict[str, DataValue] = Field(default_factory=dict)


class Subtype(BaseModel):
    """A named group of readings inside a measurement (``server``, ``sysctl``, ``pfs``…)."""

    model_config = _MODEL_CONFIG

    subtype: str
    data: dict[str, DataValue] = Field(default_factory=dict)
    context: dict[str, DataValue] = Field(default_factory=dict)
    items: list[ItemEntry] = Field(default_factory=list)

    @property
    def name(self) -> str:
        return self.subtype


class Measurement(BaseModel):
    """A measurement type (``K8s``, ``OS``…) with its subtypes."""

    model_config = _MODEL_CONFIG

    type: str
    subtypes: list[Subtype] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ItemSelector:
    """``[3]`` (``index``) or ``[key=value]`` (``key``/``value``) after a subtype name."""

    raw: str
    index: int | None = None
    key: str | None = None
    value: str | None = None


@dataclass(frozen=True, slots=True)
class SnapshotPath:
    """A parsed constraint path."""

    type: str
    subtype: str
    key: str
    selector: ItemSelector | None = None

    def __str__(self) -> str:
        sel = f"[{self.selector.raw}]" if self.selector is not None else ""
        return f"{self.type}.{self.subtype}{sel}.{self.key}"


_INDEX_RE: Final = re.compile(r"[+-]?[0-9]+")
_MAX_INT: Final = 2**63 - 1


def _path_error(path: str, problem: str) -> PathError:
    return PathError(f"invalid constraint path {path!r}: {problem}")


@lru_cache(maxsize=4096)
def parse_path(path: str) -> SnapshotPath:
    """Parse ``Type.Subtype.Key`` / ``Type.Subtype[sel].Key``; raises :class:`PathError`.

    The first dot ends the type, the next dot ends the subtype (unless a ``[`` comes first, which
    starts an item selector), and everything after is the key — so ``OS.sysctl./proc/sys/kernel/x``
    has key ``/proc/sys/kernel/x``.  Types are exact and case-sensitive (:data:`MEASUREMENT_TYPES`).
    """
    if path == "":
        raise PathError(PATH_EMPTY)
    type_name, dot, rest = path.partition(".")
    if not dot:
        raise _path_error(path, PATH_FORMAT)
    if type_name not in _TYPE_SET:
        raise _path_error(path, f"{PATH_INVALID_TYPE} {type_name!r} (valid: {', '.join(MEASUREMENT_TYPES)})")
    bracket = rest.find("[")
    first_dot = rest.find(".")
    if bracket != -1 and (first_dot == -1 or bracket < first_dot):
        return _parse_selector_path(path, type_name, rest, bracket)
    subtype, dot, key = rest.partition(".")
    if not dot and subtype:
        raise _path_error(path, PATH_FORMAT)
    if not subtype or not key:
        raise _path_error(path, PATH_SUBTYPE_OR_KEY_EMPTY)
    return SnapshotPath(type_name, subtype, key)


def _parse_selector_path(path: str, type_name: str, rest: str, bracket: int) -> SnapshotPath:
    subtype = rest[:bracket]
    if not subtype:
        raise _path_error(path, PATH_SUBTYPE_BEFORE_BRACKET_EMPTY)
    close = rest.find("]", bracket + 1)
    if close == -1:
        raise _path_error(path, PATH_UNCLOSED_BRACKET)
    raw = rest[bracket + 1 : close]
    if raw == "":
        raise _path_error(path, PATH_EMPTY_SELECTOR)
    if "=" in raw:
        sel_key, _, sel_value = raw.partition("=")
        if not sel_key or not sel_value:
            raise _path_error(path, PATH_PREDICATE_EMPTY_SIDE)
        selector = ItemSelector(raw=raw, key=sel_key, value=sel_value)
    else:
        if not _INDEX_RE.fullmatch(raw) or not 0 <= int(raw) <= _MAX_INT:
            raise _path_error(path, PATH_BAD_INDEX)
        selector = ItemSelector(raw=raw, index=int(raw))
    after = rest[close + 1 :]
    if after == "":
        raise _path_error(path, PATH_MISSING_KEY_AFTER_SELECTOR)
    if not after.startswith("."):
        raise _path_error(path, PATH_EXPECTED_DOT_AFTER_SELECTOR)
    key = after[1:]
    if key == "":
        raise _path_error(path, PATH_MISSING_KEY_AFTER_SELECTOR)
    return SnapshotPath(type_name, subtype, key, selector)


class Snapshot(BaseModel):
    """A parsed AICR snapshot.  Build it with :func:`parse_snapshot`; resolve values with :meth:`lookup`."""

    model_config = _MODEL_CONFIG

    kind: str | None = None
    api_version: str | None = Field(default=None, alias="apiVersion")
    metadata: dict[str, str] = Field(default_factory=dict)
    fingerprint: dict[str, Any] | None = None
    measurements: list[Measurement] = Field(default_factory=list)

    # Lookup state, built once in model_post_init (one private attribute: pydantic serves those
    # through __getattr__, so lookups fetch it once and work on plain objects).
    _state: _LookupState = PrivateAttr(default=None)  # type: ignore[assignment]

    def model_post_init(self, context: Any, /) -> None:
        by_type: dict[str, dict[str, Subtype]] = {}
        for measurement in self.measurements:
            if measurement.type in by_type:
                continue  # AICR only ever looks at the first measurement of a type
            by_name: dict[str, Subtype] = {}
            for subtype in measurement.subtypes:
                by_name.setdefault(subtype.subtype, subtype)
            by_type[measurement.type] = by_name
        self._state = _LookupState(by_type)

    @property
    def json_numbers(self) -> bool:
        """True when the snapshot was read from JSON (integers render like Go float64s)."""
        return self._state.json_numbers

    @property
    def source_node(self) -> str | None:
        return self.metadata.get("source-node")

    def types(self) -> list[str]:
        """Measurement types present, in snapshot order (first occurrence)."""
        return list(self._state.by_type)

    def subtype(self, type_name: str, subtype: str) -> Subtype | None:
        """The subtype AICR would resolve for ``type_name.subtype``, or ``None``."""
        return self._state.by_type.get(type_name, {}).get(subtype)

    def get(self, path: str | SnapshotPath, default: str | None = None) -> str | None:
        """Like :meth:`lookup` but returns ``default`` when the value is not found or ambiguous."""
        try:
            return self.lookup(path)
        except (ValueNotFound, AmbiguousMatch):
            return default

    def lookup(self, path: str | SnapshotPath) -> str:
        """Resolve a constraint path to its Go-rendered string value.

        Raises :class:`PathError` (bad grammar), :class:`ValueNotFound` (missing type/subtype/key/item,
        null or non-scalar value) or :class:`AmbiguousMatch` (``[k=v]`` matched several items).
        """
        p = parse_path(path) if isinstance(path, str) else path
        return self._state.lookup(p)


class _LookupState:
    """Index and caches behind :meth:`Snapshot.lookup` (plain object: fast attribute access)."""

    __slots__ = ("by_type", "json_numbers", "predicates")

    def __init__(self, by_type: dict[str, dict[str, Subtype]]) -> None:
        self.by_type = by_type
        self.json_numbers = False
        # (type, subtype, key) -> rendered value -> indices of matching items; built on first use
        self.predicates: dict[tuple[str, str, str], dict[str, list[int]]] = {}

    def lookup(self, p: SnapshotPath) -> str:
        subtypes = self.by_type.get(p.type)
        if subtypes is None:
            raise ValueNotFound(f"{NOT_FOUND_TYPE}: type={p.type}")
        st = subtypes.get(p.subtype)
        if st is None:
            raise ValueNotFound(f"{NOT_FOUND_SUBTYPE}: type={p.type} subtype={p.subtype}")
        if p.selector is None:
            data = st.data
            if p.key not in data:
                raise ValueNotFound(f"{NOT_FOUND_KEY}: type={p.type} subtype={p.subtype} key={p.key}")
            return self.render(data[p.key], p)
        item = self.select_item(st, p)
        if p.key in item.data:
            return self.render(item.data[p.key], p)
        if p.key in item.context:
            return self.render(item.context[p.key], p)
        raise ValueNotFound(f"{NOT_FOUND_ITEM_KEY}: {p}")

    def render(self, value: DataValue, p: SnapshotPath) -> str:
        if value is None:
            raise ValueNotFound(f"{NOT_FOUND_NULL}: {p}")
        if isinstance(value, list | dict):
            raise ValueNotFound(f"{NOT_FOUND_NOT_SCALAR}: {p}")
        return format_value(value, json_numbers=self.json_numbers)

    def select_item(self, st: Subtype, p: SnapshotPath) -> ItemEntry:
        sel = p.selector
        assert sel is not None
        items = st.items
        if not items:
            raise ValueNotFound(f"{NOT_FOUND_NO_ITEMS}: {p}")
        if sel.index is not None:
            if sel.index >= len(items):
                raise ValueNotFound(f"{NOT_FOUND_INDEX}: {p} (subtype has {len(items)} items)")
            return items[sel.index]
        assert sel.key is not None and sel.value is not None
        cache_key = (p.type, p.subtype, sel.key)
        by_value = self.predicates.get(cache_key)
        if by_value is None:
            by_value = {}
            k = sel.key
            json_numbers = self.json_numbers
            for i, item in enumerate(items):
                # data[k] when the item has it, otherwise context[k]
                raw = item.data[k] if k in item.data else item.context.get(k)
                if raw is None or isinstance(raw, list | dict):
                    continue
                by_value.setdefault(format_value(raw, json_numbers=json_numbers), []).append(i)
            self.predicates[cache_key] = by_value
        matches = by_value.get(sel.value)
        if not matches:
            raise ValueNotFound(f"{NOT_FOUND_PREDICATE}: {p}")
        if len(matches) > 1:
            raise AmbiguousMatch(f"{CONFLICT_PREDICATE}: {p} ({len(matches)} items)")
        return items[matches[0]]


# --- loading ---------------------------------------------------------------------------------------------


def _type_name(data: object) -> str:
    if data is None:
        return "null"
    if isinstance(data, list):
        return "a list"
    if isinstance(data, str):
        return "a string"
    return type(data).__name__


def _go_key(key: object) -> object:
    if isinstance(key, bool | int | float):
        return format_value(key)
    return key


def _stringify_keys(obj: object) -> object:
    """Turn non-string mapping keys into text (yaml.v3 decodes ``1:`` into a ``map[string]…`` key)."""
    if isinstance(obj, dict):
        return {_go_key(k): _stringify_keys(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_stringify_keys(v) for v in obj]
    return obj


def _normalize_metadata(source: str, raw: object) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise UsageError(MSG_BAD_METADATA.format(source=source))
    out: dict[str, str] = {}
    for k, v in raw.items():
        if v is None:
            continue  # yaml.v3 leaves a null string field empty
        if not isinstance(v, str | bool | int | float):
            raise UsageError(MSG_BAD_METADATA.format(source=source))
        out[str(_go_key(k))] = format_value(v)
    return out


def _describe_error(err: ValidationError) -> tuple[str, str]:
    first = err.errors(include_url=False)[0]
    where = ""
    loc = list(first["loc"])
    problem = str(first["msg"]).rstrip(".").lower().replace("\n", " ")
    for i, part in enumerate(loc):
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
        if part in ("data", "context") and i + 1 < len(loc) and i > 0:
            where += f".{loc[i + 1]}"
            if i + 2 < len(loc):  # failed every member of the value union
                problem = "unsupported value type (expected a scalar)"
            break
    return where, problem


def parse_snapshot(data: object, source: str, *, json_numbers: bool = False) -> Snapshot:
    """Validate decoded snapshot data (from YAML or JSON) into a :class:`Snapshot`.

    ``source`` names the input in messages.  ``json_numbers=True`` means the document was JSON, so
    integer readings render like Go float64s (see :func:`format_value`).  Every problem raises
    :class:`UsageError` with one line: not a mapping, ``kind`` other than ``Snapshot``, an unsupported
    ``apiVersion`` (only ``aicr.run/v1alpha2``, today's ``aicr.run/v1``, or none), missing/empty
    ``measurements``, or a malformed measurement/subtype.  Unknown fields are ignored.
    """
    from aicr_pytest.core.redact import redact_url

    source = redact_url(source)
    if not isinstance(data, Mapping):
        raise UsageError(MSG_NOT_A_MAPPING.format(source=source, got=_type_name(data)))
    kind = data.get("kind")
    if kind not in (None, "", SNAPSHOT_KIND):
        raise UsageError(MSG_WRONG_KIND.format(source=source, kind=kind))
    api_version = data.get("apiVersion")
    if api_version not in (None, "", API_VERSION, UPSTREAM_API_VERSION):
        raise UsageError(f"snapshot {source}: " + MSG_UNSUPPORTED_API_VERSION.format(api_version=api_version))
    measurements = data.get("measurements")
    if measurements is None or measurements == []:
        raise UsageError(MSG_NO_MEASUREMENTS.format(source=source))
    if not isinstance(measurements, list):
        raise UsageError(
            MSG_MALFORMED.format(
                source=source,
                where="measurements",
                problem=f"expected a list, got {_type_name(measurements)}",
            )
        )
    fingerprint = data.get("fingerprint")
    payload: dict[str, Any] = {
        "kind": kind or None,
        "apiVersion": api_version or None,
        "metadata": _normalize_metadata(source, data.get("metadata")),
        "fingerprint": fingerprint if isinstance(fingerprint, Mapping) else None,
    }
    try:
        snap = Snapshot.model_validate({**payload, "measurements": measurements})
    except ValidationError:
        try:  # maybe only non-string keys (``1: x``); AICR accepts those as text
            snap = Snapshot.model_validate({**payload, "measurements": _stringify_keys(measurements)})
        except ValidationError as err:
            where, problem = _describe_error(err)
            raise UsageError(MSG_MALFORMED.format(source=source, where=where, problem=problem)) from None
    snap._state.json_numbers = json_numbers
    return snap


def load_snapshot_text(text: str | bytes, source: str, *, format: str | None = None) -> Snapshot:
    """Decode snapshot text and :func:`parse_snapshot` it.

    ``format`` is ``"json"`` or ``"yaml"`` (AICR picks it from the file extension) or ``None`` to
    sniff.  JSON-looking text is decoded with :mod:`json`, YAML with :func:`aicr_pytest.core.blockyaml.load`
    (the same values as :func:`aicr_pytest.core.yamlio.load`, several times faster on machine-written
    snapshots); only ``format="json"`` switches on Go's JSON number rendering.
    """
    if format not in (None, "json", "yaml"):
        raise UsageError(f"snapshot {source}: unknown format {format!r} (expected json or yaml)")
    stripped = text.lstrip()
    looks_json = stripped[:1] in ("{", b"{")
    data: object
    if format == "json" or looks_json:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            if format == "json":
                raise UsageError(f"snapshot {source}: invalid JSON: {err}") from None
            data = _load_yaml(text, source)
    else:
        data = _load_yaml(text, source)
    return parse_snapshot(data, source, json_numbers=format == "json")


def _load_yaml(text: str | bytes, source: str) -> object:
    import yaml  # local: only needed for the error type

    try:
        return blockyaml.load(text)
    except yaml.YAMLError as err:
        problem = " ".join(str(err).split())
        raise UsageError(f"snapshot {source}: invalid YAML: {problem}") from None
