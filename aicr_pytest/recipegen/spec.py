"""The documents recipe generation reads and writes, decoded the way AICR's Go structs decode them.

Overlays (``kind: RecipeMetadata``) and mixins (``kind: RecipeMixin``) are decoded into the
dataclasses below.  The decoding follows ``yaml.v3`` into typed Go structs:

* every scalar lands in a string field as its **source text** (``version: 1.10`` is ``"1.10"``,
  ``value: true`` is ``"true"``); ``null`` is the empty string;
* a list field distinguishes *absent or null* (``None``, inherits when merged) from an explicit
  ``[]`` (clears the inherited list) — the merge rules of ``validation.<phase>.checks`` and
  ``.constraints`` depend on it;
* ``overrides`` is ``map[string]any``: there the YAML 1.2 types are kept;
* overlays ignore unknown fields; mixins are decoded strictly (an unknown field is an error).

:func:`encode_result` writes a generated ``RecipeResult`` with AICR's field order and its
``omitempty`` rules, so the YAML/JSON output has the same shape as ``aicr recipe``'s.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from aicr_pytest.core import yamlio

try:  # the C loader when libyaml is there (same result, faster)
    _Base: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - libyaml missing
    _Base = yaml.SafeLoader


class _TextLoader(_Base):  # type: ignore[misc,valid-type]
    """Every plain scalar is a string (its source text), except the YAML null forms."""


_TextLoader.yaml_implicit_resolvers = {}
_TextLoader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", "\x00"]
)
_TextLoader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [None])
_TextLoader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])


def _construct_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


# Explicitly tagged scalars (``!!int 3``) keep their text too, as Go's string fields would.
for _tag in ("int", "float", "bool", "timestamp", "binary"):
    _TextLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _construct_text)


def load_text(body: bytes | str) -> Any:
    """Parse one YAML document with every non-null scalar kept as its source text."""
    return yamlio.load_with(body, _TextLoader)


def load_typed(body: bytes | str) -> Any:
    """Parse one YAML document with YAML 1.2 core-schema types (for ``map[string]any`` fields)."""
    return yamlio.load(body)


class DecodeError(ValueError):
    """A document does not decode into the expected structure; the message names the field."""


# --------------------------------------------------------------------------------------- types --


@dataclass
class Constraint:
    name: str = ""
    value: str = ""
    severity: str = ""
    remediation: str = ""
    unit: str = ""


@dataclass
class ExpectedResource:
    kind: str = ""
    name: str = ""
    namespace: str = ""


@dataclass
class ComponentRef:
    name: str = ""
    namespace: str = ""
    chart: str = ""
    type: str = ""
    source: str = ""
    version: str = ""
    tag: str = ""
    values_file: str = ""
    overrides: dict[str, Any] | None = None
    patches: list[str] = field(default_factory=list)
    dependency_refs: list[str] = field(default_factory=list)
    manifest_files: list[str] = field(default_factory=list)
    pre_manifest_files: list[str] = field(default_factory=list)
    path: str = ""
    cleanup: bool = False
    expected_resources: list[ExpectedResource] = field(default_factory=list)
    health_check_asserts: str = ""
    health_check_skip: bool = False

    @property
    def enabled(self) -> bool:
        """Enabled unless ``overrides.enabled`` is the boolean ``false`` (a non-bool counts as enabled)."""
        return not (self.overrides is not None and self.overrides.get("enabled", True) is False)


@dataclass
class NodeSelection:
    selector: dict[str, str] | None = None
    max_nodes: int = 0
    exclude_nodes: list[str] | None = None


@dataclass
class Phase:
    """``validation.<phase>``; ``None`` lists are *absent* (inherit), ``[]`` lists clear."""

    timeout: str = ""
    constraints: list[Constraint] | None = None
    checks: list[str] | None = None
    node_selection: NodeSelection | None = None
    infrastructure: str = ""


#: ``validation`` keys in Go struct order (the order they are written in).
PHASE_KEYS: tuple[str, ...] = ("readiness", "deployment", "performance", "conformance")


@dataclass
class Validation:
    readiness: Phase | None = None
    deployment: Phase | None = None
    performance: Phase | None = None
    conformance: Phase | None = None


@dataclass
class OverlayCriteria:
    """An overlay's ``spec.criteria`` as written (values not normalized; empty means any)."""

    service: str = ""
    accelerator: str = ""
    intent: str = ""
    os: str = ""
    platform: str = ""
    nodes: int = 0


@dataclass
class Spec:
    """``spec`` of an overlay (``RecipeMetadataSpec``); also the spec being merged."""

    base: str = ""
    criteria: OverlayCriteria | None = None
    mixins: list[str] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    component_refs: list[ComponentRef] = field(default_factory=list)
    validation: Validation | None = None


@dataclass
class Overlay:
    """A ``RecipeMetadata`` document: ``base.yaml`` or an overlay."""

    name: str
    spec: Spec
    source: str  # data-root-relative path, for messages
    kind: str = ""


@dataclass
class Mixin:
    """A ``RecipeMixin``: constraints and componentRefs only."""

    name: str
    constraints: list[Constraint]
    component_refs: list[ComponentRef]
    source: str


# ------------------------------------------------------------------------------------ decoding --


class _Decoder:
    """Walks the text tree (and, for ``overrides``, the typed tree) of one document."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict

    # -- scalars -------------------------------------------------------------------------------
    @staticmethod
    def text(value: Any, where: str) -> str:
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        raise DecodeError(f"{where}: expected a string, got {_what(value)}")

    @staticmethod
    def boolean(value: Any, where: str) -> bool:
        if value is None:
            return False
        if isinstance(value, str) and value in ("true", "True", "TRUE", "false", "False", "FALSE"):
            return value.lower() == "true"
        raise DecodeError(f"{where}: expected true or false, got {_shown(value)}")

    @staticmethod
    def integer(value: Any, where: str) -> int:
        if value is None:
            return 0
        if isinstance(value, str):
            text = value.strip()
            try:
                if re.fullmatch(r"[-+]?[0-9]+", text):
                    return int(text, 10)
                if re.fullmatch(r"0o[0-7]+", text):
                    return int(text[2:], 8)
                if re.fullmatch(r"0x[0-9a-fA-F]+", text):
                    return int(text[2:], 16)
            except ValueError:  # pragma: no cover - the patterns guarantee digits
                pass
        raise DecodeError(f"{where}: expected an integer, got {_shown(value)}")

    def text_list(self, value: Any, where: str) -> list[str] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            raise DecodeError(f"{where}: expected a list, got {_what(value)}")
        return [self.text(v, f"{where}[{i}]") for i, v in enumerate(value)]

    # -- structures ----------------------------------------------------------------------------
    def mapping(self, value: Any, where: str, known: tuple[str, ...]) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise DecodeError(f"{where}: expected a mapping, got {_what(value)}")
        if self.strict:
            for key in value:
                if key not in known:
                    raise DecodeError(f"{where}: field {key} not found in type")
        return value

    def constraint(self, value: Any, where: str) -> Constraint:
        m = self.mapping(value, where, ("name", "value", "severity", "remediation", "unit"))
        return Constraint(*(self.text(m.get(k), f"{where}.{k}") for k in Constraint.__dataclass_fields__))

    def constraints(self, value: Any, where: str) -> list[Constraint] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            raise DecodeError(f"{where}: expected a list, got {_what(value)}")
        return [self.constraint(v, f"{where}[{i}]") for i, v in enumerate(value)]

    def component_ref(self, value: Any, typed: Any, where: str) -> ComponentRef:
        m = self.mapping(value, where, _REF_KEYS)
        typed_map = typed if isinstance(typed, dict) else {}
        overrides = typed_map.get("overrides") if "overrides" in m else None
        if overrides is not None and not isinstance(overrides, dict):
            raise DecodeError(f"{where}.overrides: expected a mapping, got {_what(overrides)}")
        resources_raw = m.get("expectedResources")
        if resources_raw is not None and not isinstance(resources_raw, list):
            raise DecodeError(f"{where}.expectedResources: expected a list, got {_what(resources_raw)}")
        resources = []
        for i, item in enumerate(resources_raw or []):
            rm = self.mapping(item, f"{where}.expectedResources[{i}]", ("kind", "name", "namespace"))
            resources.append(
                ExpectedResource(
                    *(
                        self.text(rm.get(k), f"{where}.expectedResources[{i}].{k}")
                        for k in ("kind", "name", "namespace")
                    )
                )
            )
        t = self.text
        return ComponentRef(
            name=t(m.get("name"), f"{where}.name"),
            namespace=t(m.get("namespace"), f"{where}.namespace"),
            chart=t(m.get("chart"), f"{where}.chart"),
            type=t(m.get("type"), f"{where}.type"),
            source=t(m.get("source"), f"{where}.source"),
            version=t(m.get("version"), f"{where}.version"),
            tag=t(m.get("tag"), f"{where}.tag"),
            values_file=t(m.get("valuesFile"), f"{where}.valuesFile"),
            overrides=_string_keys(overrides) if overrides is not None else None,
            patches=self.text_list(m.get("patches"), f"{where}.patches") or [],
            dependency_refs=self.text_list(m.get("dependencyRefs"), f"{where}.dependencyRefs") or [],
            manifest_files=self.text_list(m.get("manifestFiles"), f"{where}.manifestFiles") or [],
            pre_manifest_files=self.text_list(m.get("preManifestFiles"), f"{where}.preManifestFiles") or [],
            path=t(m.get("path"), f"{where}.path"),
            cleanup=self.boolean(m.get("cleanup"), f"{where}.cleanup"),
            expected_resources=resources,
            health_check_asserts=t(m.get("healthCheckAsserts"), f"{where}.healthCheckAsserts"),
            health_check_skip=self.boolean(m.get("healthCheckSkip"), f"{where}.healthCheckSkip"),
        )

    def component_refs(self, value: Any, typed: Any, where: str) -> list[ComponentRef]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise DecodeError(f"{where}: expected a list, got {_what(value)}")
        typed_list = typed if isinstance(typed, list) and len(typed) == len(value) else [None] * len(value)
        return [
            self.component_ref(v, tv, f"{where}[{i}]")
            for i, (v, tv) in enumerate(zip(value, typed_list, strict=True))
        ]

    def phase(self, value: Any, where: str) -> Phase | None:
        if value is None:
            return None
        m = self.mapping(
            value, where, ("timeout", "constraints", "checks", "nodeSelection", "infrastructure")
        )
        ns_raw = m.get("nodeSelection")
        node_selection = None
        if ns_raw is not None:
            nm = self.mapping(ns_raw, f"{where}.nodeSelection", ("selector", "maxNodes", "excludeNodes"))
            selector_raw = nm.get("selector")
            selector = None
            if selector_raw is not None:
                sm = self.mapping(selector_raw, f"{where}.nodeSelection.selector", ())
                selector = {
                    str(k): self.text(v, f"{where}.nodeSelection.selector.{k}") for k, v in sm.items()
                }
            node_selection = NodeSelection(
                selector=selector,
                max_nodes=self.integer(nm.get("maxNodes"), f"{where}.nodeSelection.maxNodes"),
                exclude_nodes=self.text_list(nm.get("excludeNodes"), f"{where}.nodeSelection.excludeNodes"),
            )
        return Phase(
            timeout=self.text(m.get("timeout"), f"{where}.timeout"),
            constraints=self.constraints(m.get("constraints"), f"{where}.constraints"),
            checks=self.text_list(m.get("checks"), f"{where}.checks"),
            node_selection=node_selection,
            infrastructure=self.text(m.get("infrastructure"), f"{where}.infrastructure"),
        )

    def validation(self, value: Any, where: str) -> Validation | None:
        if value is None:
            return None
        m = self.mapping(value, where, PHASE_KEYS)
        return Validation(**{k: self.phase(m.get(k), f"{where}.{k}") for k in PHASE_KEYS})

    def criteria(self, value: Any, where: str) -> OverlayCriteria | None:
        if value is None:
            return None
        m = self.mapping(value, where, ("service", "accelerator", "intent", "os", "platform", "nodes"))
        t = self.text
        return OverlayCriteria(
            service=t(m.get("service"), f"{where}.service"),
            accelerator=t(m.get("accelerator"), f"{where}.accelerator"),
            intent=t(m.get("intent"), f"{where}.intent"),
            os=t(m.get("os"), f"{where}.os"),
            platform=t(m.get("platform"), f"{where}.platform"),
            nodes=self.integer(m.get("nodes"), f"{where}.nodes"),
        )


_REF_KEYS: tuple[str, ...] = (
    "name",
    "namespace",
    "chart",
    "type",
    "source",
    "version",
    "tag",
    "valuesFile",
    "overrides",
    "patches",
    "dependencyRefs",
    "manifestFiles",
    "preManifestFiles",
    "path",
    "cleanup",
    "expectedResources",
    "healthCheckAsserts",
    "healthCheckSkip",
)


def _what(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"the scalar {value!r}"


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else _what(value)


def _sub(mapping: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``mapping[key]`` when it is a mapping, else an empty one."""
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


def _string_keys(value: Any) -> Any:
    """Go decodes ``overrides`` into ``map[string]any``: keys become text, values keep their types."""
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else _key_text(k)): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    return value


def _key_text(key: object) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return "" if key is None else str(key)


def decode_overlay(text_doc: Any, typed_doc: Any, source: str) -> tuple[str, str, Overlay]:
    """``(kind, name, overlay)`` from the two parses of one ``RecipeMetadata`` file (lenient)."""
    d = _Decoder(strict=False)
    m = d.mapping(text_doc, "document", ())
    typed = typed_doc if isinstance(typed_doc, dict) else {}
    kind = d.text(m.get("kind"), "kind")
    meta = d.mapping(m.get("metadata"), "metadata", ())
    name = d.text(meta.get("name"), "metadata.name")
    sm = d.mapping(m.get("spec"), "spec", ())
    typed_spec = _sub(typed, "spec")
    spec = Spec(
        base=d.text(sm.get("base"), "spec.base"),
        criteria=d.criteria(sm.get("criteria"), "spec.criteria"),
        mixins=d.text_list(sm.get("mixins"), "spec.mixins") or [],
        constraints=d.constraints(sm.get("constraints"), "spec.constraints") or [],
        component_refs=d.component_refs(
            sm.get("componentRefs"), typed_spec.get("componentRefs"), "spec.componentRefs"
        ),
        validation=d.validation(sm.get("validation"), "spec.validation"),
    )
    return kind, name, Overlay(name=name, spec=spec, source=source, kind=kind)


def decode_criteria(value: Any, where: str) -> OverlayCriteria:
    """A criteria mapping (``RecipeCriteria.spec``) as written; unknown keys are ignored."""
    return _Decoder(strict=False).criteria(value, where) or OverlayCriteria()


def decode_mixin(text_doc: Any, typed_doc: Any, source: str) -> tuple[str, Mixin]:
    """``(kind, mixin)`` from one ``RecipeMixin`` file; unknown fields are errors."""
    d = _Decoder(strict=True)
    m = d.mapping(text_doc, "document", ("kind", "apiVersion", "metadata", "spec"))
    typed = typed_doc if isinstance(typed_doc, dict) else {}
    kind = d.text(m.get("kind"), "kind")
    d.text(m.get("apiVersion"), "apiVersion")
    meta = d.mapping(m.get("metadata"), "metadata", ("name",))
    sm = d.mapping(m.get("spec"), "spec", ("constraints", "componentRefs"))
    typed_spec = _sub(typed, "spec")
    mixin = Mixin(
        name=d.text(meta.get("name"), "metadata.name"),
        constraints=d.constraints(sm.get("constraints"), "spec.constraints") or [],
        component_refs=d.component_refs(
            sm.get("componentRefs"), typed_spec.get("componentRefs"), "spec.componentRefs"
        ),
        source=source,
    )
    return kind, mixin


# ------------------------------------------------------------------------------------ encoding --


def _omit_empty(pairs: list[tuple[str, Any, bool]]) -> dict[str, Any]:
    """Build a mapping in field order; ``(key, value, always)`` — ``always`` skips omitempty."""
    out: dict[str, Any] = {}
    for key, value, always in pairs:
        if always or value not in ("", None, [], {}, 0, False):
            out[key] = value
    return out


def sorted_map(value: Any) -> Any:
    """Go marshals ``map[string]any`` with sorted keys (YAML and JSON alike)."""
    if isinstance(value, Mapping):
        return {k: sorted_map(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_map(v) for v in value]
    return value


def encode_constraint(c: Constraint) -> dict[str, Any]:
    return _omit_empty(
        [
            ("name", c.name, True),
            ("value", c.value, True),
            ("severity", c.severity, False),
            ("remediation", c.remediation, False),
            ("unit", c.unit, False),
        ]
    )


def encode_component_ref(ref: ComponentRef) -> dict[str, Any]:
    resources = [
        _omit_empty([("kind", r.kind, True), ("name", r.name, True), ("namespace", r.namespace, False)])
        for r in ref.expected_resources
    ]
    return _omit_empty(
        [
            ("name", ref.name, True),
            ("namespace", ref.namespace, False),
            ("chart", ref.chart, False),
            ("type", ref.type, True),
            ("source", ref.source, True),
            ("version", ref.version, False),
            ("tag", ref.tag, False),
            ("valuesFile", ref.values_file, False),
            ("overrides", sorted_map(copy.deepcopy(ref.overrides)) if ref.overrides else None, False),
            ("patches", list(ref.patches), False),
            ("dependencyRefs", list(ref.dependency_refs), False),
            ("manifestFiles", list(ref.manifest_files), False),
            ("preManifestFiles", list(ref.pre_manifest_files), False),
            ("path", ref.path, False),
            ("cleanup", ref.cleanup, False),
            ("expectedResources", resources, False),
            ("healthCheckAsserts", ref.health_check_asserts, False),
            ("healthCheckSkip", ref.health_check_skip, False),
        ]
    )


def encode_phase(p: Phase) -> dict[str, Any]:
    node_selection = None
    if p.node_selection is not None:
        ns = p.node_selection
        node_selection = _omit_empty(
            [
                ("selector", dict(sorted((ns.selector or {}).items())), False),
                ("maxNodes", ns.max_nodes, False),
                ("excludeNodes", list(ns.exclude_nodes or []), False),
            ]
        )
    return _omit_empty(
        [
            ("timeout", p.timeout, False),
            ("constraints", [encode_constraint(c) for c in p.constraints or []], False),
            ("checks", list(p.checks or []), False),
            ("nodeSelection", node_selection, node_selection is not None),
            ("infrastructure", p.infrastructure, False),
        ]
    )


def encode_validation(v: Validation | None) -> dict[str, Any] | None:
    if v is None:
        return None
    out: dict[str, Any] = {}
    for key in PHASE_KEYS:
        phase: Phase | None = getattr(v, key)
        if phase is not None:
            out[key] = encode_phase(phase)
    return out


__all__ = [
    "PHASE_KEYS",
    "ComponentRef",
    "Constraint",
    "DecodeError",
    "ExpectedResource",
    "Mixin",
    "NodeSelection",
    "Overlay",
    "OverlayCriteria",
    "Phase",
    "Spec",
    "Validation",
    "decode_criteria",
    "decode_mixin",
    "decode_overlay",
    "encode_component_ref",
    "encode_constraint",
    "encode_phase",
    "encode_validation",
    "load_text",
    "load_typed",
    "sorted_map",
]
