"""The recipe model: AICR's ``kind: RecipeResult`` document, as ``aicr validate`` reads it.

A recipe carries readiness ``constraints`` (snapshot paths), ``componentRefs`` (what is
installed, with inline Helm ``overrides``), a ``deploymentOrder`` and a per-phase ``validation``
block.  Reading is lenient the way AICR's is: unknown fields are ignored, and ``criteria`` values
are not re-validated (unknown values pass through to the checks).

apiVersion handling: ``aicr.run/v1alpha2`` or empty is accepted.  The pre-v0.12 group
``aicr.nvidia.com/v1alpha1`` is *also* accepted (AICR rejects it) with a one-line warning, so
artifacts from older AICR releases still validate.  What today's ``aicr recipe`` (v1.x) writes is
accepted too (``docs/user/cli-reference.md``, "apiVersion gate"): ``aicr.run/v1`` for a default
recipe, and ``aicr.run/v1beta2`` for one that records ``metadata.selectedProfile`` or
``configuration.slurm.accounting`` — as there, ``v1beta2`` without either, or ``v1`` with the
accounting block, is refused.  Those fields are read leniently and do not change which checks run
(the profile's constraints and overrides are already in ``constraints``/``componentRefs``).  Any
other apiVersion, and any kind other than ``RecipeResult`` or empty, is a
:class:`~aicr_pytest.core.errors.UsageError`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from aicr_pytest.core.errors import UsageError

API_VERSION = "aicr.run/v1alpha2"
LEGACY_API_VERSION = "aicr.nvidia.com/v1alpha1"
#: what today's AICR (v1.x) writes: a default recipe, and a profiled or configured one
UPSTREAM_API_VERSION = "aicr.run/v1"
UPSTREAM_PROFILE_API_VERSION = "aicr.run/v1beta2"
KIND = "RecipeResult"

Phase = Literal["deployment", "conformance", "performance"]
#: AICR's phase order (``pkg/validator/phases.go``): the order phases run in.
PHASES: tuple[Phase, ...] = ("deployment", "conformance", "performance")

# Messages quoted from AICR, so users can grep them.
MSG_WRONG_KIND = (
    'recipe file has kind "{kind}", but "RecipeResult" is required; '
    'run "aicr recipe" to generate a hydrated RecipeResult first'
)
MSG_WRONG_API_VERSION = (
    'recipe file has apiVersion "{api_version}", which this aicr build does not support '
    '(expected "aicr.run/v1alpha2"); regenerate the recipe with a matching aicr version'
)
MSG_INVALID_PHASE = 'invalid phase "{phase}": must be one of: deployment, performance, conformance, all'
# Our own messages.
MSG_LEGACY_API_VERSION = (
    "recipe {source}: apiVersion aicr.nvidia.com/v1alpha1 is legacy (AICR rejects it); "
    "reading it as aicr.run/v1alpha2"
)
MSG_PROFILE_VERSION_EMPTY = (
    "recipe {source}: apiVersion aicr.run/v1beta2 requires metadata.selectedProfile or "
    "configuration.slurm.accounting"
)
MSG_CONFIGURATION_NEEDS_V1BETA2 = (
    "recipe {source}: configuration.slurm.accounting requires apiVersion aicr.run/v1beta2, not {api_version}"
)
MSG_OVERLAY = (
    'recipe {source}: kind "RecipeMetadata" is an overlay, not a recipe; run "aicr-pytest recipe" '
    "to produce a hydrated RecipeResult first"
)
MSG_NOT_A_MAPPING = "recipe {source}: expected a YAML mapping (a RecipeResult document), got {what}"
MSG_RESERVED_NAME = 'recipe {source}: componentRefs: the component name "deployer" is reserved'
MSG_ENABLED_NOT_BOOL = (
    'recipe {source}: component "{name}" overrides.enabled is {value!r}, not a boolean; '
    "treating the component as enabled"
)


def _scalar_to_text(value: object) -> object:
    """yaml.v3 decodes any scalar into a Go ``string`` field; mirror that for numbers/bools.

    Go keeps the scalar's source text; we only have the parsed value, so ``1.10`` reads as
    ``"1.1"`` here.  Quote such values in recipes (AICR's generator always does).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def _none_to_empty_list(value: object) -> object:
    return [] if value is None else value


def _none_to_empty_dict(value: object) -> object:
    return {} if value is None else value


Text = Annotated[str, BeforeValidator(_scalar_to_text)]
TextList = Annotated[list[Text], BeforeValidator(_none_to_empty_list)]


class _Model(BaseModel):
    """Base: unknown fields ignored (AICR decodes recipes non-strictly), immutable."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class Constraint(_Model):
    """A ``{name, value}`` pair; ``severity``/``remediation``/``unit`` are carried, not used."""

    name: Text
    value: Text
    severity: Text | None = None
    remediation: Text | None = None
    unit: Text | None = None

    @field_validator("name")
    @classmethod
    def _name_not_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("constraint name is empty")
        return v


ConstraintList = Annotated[list[Constraint], BeforeValidator(_none_to_empty_list)]


class ExpectedResource(_Model):
    kind: Text
    name: Text
    namespace: Text | None = None


class ComponentRef(_Model):
    """One installed component.  Inline Helm values live in ``overrides``."""

    name: Text
    namespace: Text | None = None
    chart: Text | None = None
    type: Text | None = None
    source: Text | None = None
    version: Text | None = None
    tag: Text | None = None
    values_file: Text | None = Field(default=None, alias="valuesFile")
    overrides: Annotated[dict[str, Any], BeforeValidator(_none_to_empty_dict)] = Field(default_factory=dict)
    patches: TextList = Field(default_factory=list)
    dependency_refs: TextList = Field(default_factory=list, alias="dependencyRefs")
    manifest_files: TextList = Field(default_factory=list, alias="manifestFiles")
    pre_manifest_files: TextList = Field(default_factory=list, alias="preManifestFiles")
    path: Text | None = None
    cleanup: bool = False
    expected_resources: Annotated[list[ExpectedResource], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list, alias="expectedResources"
    )
    health_check_asserts: Text | None = Field(default=None, alias="healthCheckAsserts")
    health_check_skip: bool = Field(default=False, alias="healthCheckSkip")

    @field_validator("name")
    @classmethod
    def _name_not_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("component name is empty")
        return v

    @property
    def enabled(self) -> bool:
        """Enabled unless ``overrides.enabled`` is the boolean ``false``."""
        return self.overrides.get("enabled", True) is not False


class ExcludedOverlay(_Model):
    name: Text
    reason: Text | None = None


def _legacy_excluded(value: object) -> object:
    # v0.11.1 wrote excludedOverlays as plain names.
    if isinstance(value, list):
        return [{"name": v} if isinstance(v, str) else v for v in value]
    return _none_to_empty_list(value)


class RecipeMetadata(_Model):
    version: Text | None = None
    applied_overlays: TextList = Field(default_factory=list, alias="appliedOverlays")
    excluded_overlays: Annotated[list[ExcludedOverlay], BeforeValidator(_legacy_excluded)] = Field(
        default_factory=list, alias="excludedOverlays"
    )
    constraint_warnings: Annotated[list[dict[str, Any]], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list, alias="constraintWarnings"
    )


class Criteria(_Model):
    """What the recipe was generated for.  Values pass through unvalidated (``any`` included)."""

    service: Text | None = None
    accelerator: Text | None = None
    intent: Text | None = None
    os: Text | None = None
    platform: Text | None = None
    nodes: int = 0

    def summary(self) -> str:
        """``service=eks accelerator=h100 intent=training os=ubuntu platform=kubeflow`` (unset skipped)."""
        parts = [
            f"{key}={value}"
            for key in ("service", "accelerator", "intent", "os", "platform")
            if (value := getattr(self, key))
        ]
        if self.nodes:
            parts.append(f"nodes={self.nodes}")
        return " ".join(parts)


class NodeSelection(_Model):
    selector: Annotated[dict[str, Text], BeforeValidator(_none_to_empty_dict)] = Field(default_factory=dict)
    max_nodes: int | None = Field(default=None, alias="maxNodes")
    exclude_nodes: TextList = Field(default_factory=list, alias="excludeNodes")


class ValidationPhase(_Model):
    """Only ``checks`` and ``constraints`` are consumed at validate time; the rest is carried."""

    checks: TextList = Field(default_factory=list)
    constraints: ConstraintList = Field(default_factory=list)
    timeout: Text | None = None
    node_selection: NodeSelection | None = Field(default=None, alias="nodeSelection")
    infrastructure: Text | None = None


class Validation(_Model):
    deployment: ValidationPhase | None = None
    conformance: ValidationPhase | None = None
    performance: ValidationPhase | None = None
    # ``readiness`` is schema-only upstream (never evaluated); keep it opaque.
    readiness: Any = None


class Recipe(_Model):
    """A ``RecipeResult`` document."""

    kind: Text = ""
    api_version: Text = Field(default="", alias="apiVersion")
    metadata: Annotated[RecipeMetadata, BeforeValidator(_none_to_empty_dict)] = Field(
        default_factory=RecipeMetadata
    )
    criteria: Annotated[Criteria, BeforeValidator(_none_to_empty_dict)] = Field(default_factory=Criteria)
    constraints: ConstraintList = Field(default_factory=list)
    component_refs: Annotated[list[ComponentRef], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list, alias="componentRefs"
    )
    deployment_order: TextList = Field(default_factory=list, alias="deploymentOrder")
    validation: Annotated[Validation, BeforeValidator(_none_to_empty_dict)] = Field(
        default_factory=Validation
    )
    #: Where the recipe came from (path, URL or ``cm://``); set by :func:`parse_recipe`.
    source: str = Field(default="", exclude=True)

    # -- validation phases ------------------------------------------------------------------

    def phase(self, phase: str) -> ValidationPhase | None:
        """The ``validation.<phase>`` block, or ``None`` when the recipe has none."""
        block: ValidationPhase | None = getattr(self.validation, _check_phase(phase))
        return block

    def phase_checks(self, phase: str) -> list[str]:
        """Check names declared for ``phase`` in recipe order, duplicates removed."""
        block = self.phase(phase)
        return list(dict.fromkeys(block.checks)) if block else []

    def phase_constraints(self, phase: str) -> list[Constraint]:
        block = self.phase(phase)
        return list(block.constraints) if block else []

    def phase_constraint(self, phase: str, name: str) -> Constraint | None:
        """The first ``validation.<phase>.constraints`` entry called ``name``."""
        return next((c for c in self.phase_constraints(phase) if c.name == name), None)

    def declared_phases(self) -> list[str]:
        """Phases that declare at least one check, in AICR's run order (values of :data:`PHASES`)."""
        return [p for p in PHASES if self.phase_checks(p)]

    # -- components -------------------------------------------------------------------------

    def component(self, name: str) -> ComponentRef | None:
        """The componentRef called ``name`` (first one wins), enabled or not."""
        return next((c for c in self.component_refs if c.name == name), None)

    def enabled_component(self, name: str) -> ComponentRef | None:
        """The componentRef called ``name`` if present *and* enabled."""
        ref = self.component(name)
        return ref if ref is not None and ref.enabled else None

    def enabled_components(self) -> list[ComponentRef]:
        return [c for c in self.component_refs if c.enabled]

    # -- display ----------------------------------------------------------------------------

    @property
    def display_name(self) -> str:
        """A short name built from the criteria, e.g. ``h100-eks-ubuntu-training-kubeflow``."""
        c = self.criteria
        parts = [v for v in (c.accelerator, c.service, c.os, c.intent, c.platform) if v and v != "any"]
        return "-".join(parts) if parts else "recipe"

    def header_line(self) -> str:
        """One line for a report header: name, criteria, component count."""
        crit = self.criteria.summary() or "no criteria"
        enabled = len(self.enabled_components())
        return f"recipe {self.display_name} ({crit}; {enabled} enabled components) from {self.source or '-'}"


def _check_phase(phase: str) -> Phase:
    for known in PHASES:
        if phase == known:
            return known
    raise UsageError(MSG_INVALID_PHASE.format(phase=phase))


def _describe(value: object) -> str:
    if value is None:
        return "an empty document"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__} scalar"


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "document"


def _one_line(err: ValidationError, source: str) -> str:
    errors = err.errors(include_url=False)
    first = errors[0]
    # Drop pydantic's internal validator names (e.g. "function-before[...]") from the location.
    loc = tuple(p for p in first["loc"] if isinstance(p, int) or not p.startswith("function-"))
    msg = first["msg"]
    if first["type"] == "missing":
        msg = "required field is missing"
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return f"recipe {source}: {_loc(loc)}: {msg}{more}"


def _accounting(data: dict[Any, Any]) -> object:
    configuration = data.get("configuration")
    slurm = configuration.get("slurm") if isinstance(configuration, dict) else None
    return slurm.get("accounting") if isinstance(slurm, dict) else None


def _check_upstream_header(data: dict[Any, Any], api_text: str, source: str) -> None:
    """Today's AICR's pairing of apiVersion and the profile/configuration fields (module docstring)."""
    accounting = _accounting(data)
    if api_text == UPSTREAM_PROFILE_API_VERSION:
        metadata = data.get("metadata")
        profile = metadata.get("selectedProfile") if isinstance(metadata, dict) else None
        if not profile and not accounting:
            raise UsageError(MSG_PROFILE_VERSION_EMPTY.format(source=source))
    elif accounting and api_text == UPSTREAM_API_VERSION:
        raise UsageError(MSG_CONFIGURATION_NEEDS_V1BETA2.format(source=source, api_version=api_text))


def is_overlay(data: object) -> bool:
    """A ``RecipeMetadata`` document (an overlay), which a recipe builder turns into a recipe."""
    return isinstance(data, dict) and str(_scalar_to_text(data.get("kind") or "")) == "RecipeMetadata"


def parse_recipe(data: object, source: str) -> tuple[Recipe, list[str]]:
    """Validate a decoded YAML document as a recipe.

    Returns the recipe and warnings (one line each).  Raises :class:`UsageError` with one line
    for anything that is not a readable ``RecipeResult``.  A ``source`` URL is kept redacted
    (:func:`~aicr_pytest.core.redact.redact_url`): it reaches every report.
    """
    from aicr_pytest.core.redact import redact_url

    source = redact_url(source)
    if not isinstance(data, dict):
        raise UsageError(MSG_NOT_A_MAPPING.format(source=source, what=_describe(data)))
    warnings: list[str] = []
    kind = data.get("kind")
    kind_text = "" if kind is None else str(_scalar_to_text(kind))
    if kind_text == "RecipeMetadata":
        raise UsageError(MSG_OVERLAY.format(source=source))
    if kind_text not in ("", KIND):
        raise UsageError(MSG_WRONG_KIND.format(kind=kind_text))
    api = data.get("apiVersion")
    api_text = "" if api is None else str(_scalar_to_text(api))
    if api_text == LEGACY_API_VERSION:
        warnings.append(MSG_LEGACY_API_VERSION.format(source=source))
    elif api_text not in ("", API_VERSION, UPSTREAM_API_VERSION, UPSTREAM_PROFILE_API_VERSION):
        raise UsageError(MSG_WRONG_API_VERSION.format(api_version=api_text))
    _check_upstream_header(data, api_text, source)
    try:
        recipe = Recipe.model_validate({**data, "kind": kind_text, "apiVersion": api_text, "source": source})
    except ValidationError as err:
        raise UsageError(_one_line(err, source)) from None
    for ref in recipe.component_refs:
        if ref.name == "deployer":
            raise UsageError(MSG_RESERVED_NAME.format(source=source))
        enabled = ref.overrides.get("enabled", True)
        if not isinstance(enabled, bool):
            warnings.append(MSG_ENABLED_NOT_BOOL.format(source=source, name=ref.name, value=enabled))
    return recipe, warnings


__all__ = [
    "API_VERSION",
    "KIND",
    "LEGACY_API_VERSION",
    "PHASES",
    "ComponentRef",
    "Constraint",
    "Criteria",
    "ExpectedResource",
    "Phase",
    "Recipe",
    "RecipeMetadata",
    "Validation",
    "ValidationPhase",
    "is_overlay",
    "parse_recipe",
]
