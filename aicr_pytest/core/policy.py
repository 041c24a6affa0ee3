"""GPU allocation policy: how the recipe says whole GPUs are advertised.

The policy is read from the *hydrated* values of two enabled components:

* ``nvidia-dra-driver-gpu``: ``resources.gpus.enabled`` (the switch) and
  ``gpuResourcesEnabledOverride`` (the chart install-guard waiver, default false);
* ``gpu-operator`` — or ``gpu-operator-ocp`` when ``gpu-operator`` is absent or disabled:
  ``devicePlugin.enabled`` (absent means true).

Five configurations are invalid; each raises :class:`UsageError` whose message is the upstream
text with the ``[INVALID_REQUEST] `` prefix, exactly as ``aicr validate`` prints it.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.gofmt import go_type_name
from aicr_pytest.core.recipe import ComponentRef, Recipe

PolicyMode = Literal[
    "device-plugin-extended-resource",
    "dra-resource-claim",
    "dra-extended-resource",
    "unspecified",
]
DEVICE_PLUGIN: PolicyMode = "device-plugin-extended-resource"
DRA_RESOURCE_CLAIM: PolicyMode = "dra-resource-claim"
DRA_EXTENDED_RESOURCE: PolicyMode = "dra-extended-resource"  # reserved (KEP-5004), never produced
UNSPECIFIED: PolicyMode = "unspecified"

DRA_COMPONENT = "nvidia-dra-driver-gpu"
GPU_OPERATOR = "gpu-operator"
GPU_OPERATOR_OCP = "gpu-operator-ocp"
GPUS_ENABLED_PATH = "resources.gpus.enabled"
WAIVER_PATH = "gpuResourcesEnabledOverride"
DEVICE_PLUGIN_PATH = "devicePlugin.enabled"

#: How AICR renders an ``INVALID_REQUEST`` error to users; we print the same.
INVALID_REQUEST_PREFIX = "[INVALID_REQUEST] "

# Exact upstream texts.  ``{op}`` is gpu-operator or gpu-operator-ocp.
E1_GPUS_ENABLED_UNSET = (
    'invalid GPU allocation configuration: component "nvidia-dra-driver-gpu" is enabled but '
    '"resources.gpus.enabled" is not set — the upstream chart\'s declared default (true) would diverge '
    "from the resolved allocation policy at deploy time; pin the value explicitly in the recipe (issue #1327)"
)
E2_WAIVER_MISSING = (
    "invalid GPU allocation configuration: nvidia-dra-driver-gpu resources.gpus.enabled=true requires "
    "gpuResourcesEnabledOverride=true — the upstream chart install guard rejects this combination; "
    "set both in the recipe overlay (issue #1327)"
)
E3_DUAL_ADVERTISEMENT = (
    "invalid GPU allocation configuration: dual advertisement — nvidia-dra-driver-gpu "
    "resources.gpus.enabled=true and {op} devicePlugin.enabled=true both advertise whole GPUs, risking "
    "GPU over-admission; exactly one advertiser is required. For the production default set "
    "resources.gpus.enabled=false (with gpuResourcesEnabledOverride=false); for the experimental DRA "
    "opt-in flip all three values together: resources.gpus.enabled=true, gpuResourcesEnabledOverride=true, "
    "and {op} devicePlugin.enabled=false (issue #1327)"
)
E4_NO_ADVERTISER = (
    "invalid GPU allocation configuration: no whole-GPU advertiser — nvidia-dra-driver-gpu "
    "resources.gpus.enabled is false/absent, and the device plugin is unavailable "
    "(gpu-operator/gpu-operator-ocp absent or disabled in the recipe, or devicePlugin.enabled=false); "
    "enable exactly one mechanism in the recipe overlay (issue #1327)"
)
E5_INERT_WAIVER = (
    "invalid GPU allocation configuration: nvidia-dra-driver-gpu gpuResourcesEnabledOverride=true with "
    "resources.gpus.enabled=false is an inert waiver that disarms the upstream chart's install-guard "
    "tripwire protecting the device-plugin default; set gpuResourcesEnabledOverride=false for the "
    "production default, or — for the experimental DRA opt-in — flip all three values together: "
    "resources.gpus.enabled=true, gpuResourcesEnabledOverride=true, and {op} devicePlugin.enabled=false "
    "(issue #1327)"
)
MSG_SEGMENT_NOT_MAP = (
    'component "{component}" value "{path}": segment "{prefix}" is not a map — cannot resolve the GPU '
    "allocation policy from a malformed value"
)
MSG_NOT_BOOL = (
    'component "{component}" value "{path}" must be a boolean, got {go_type} — cannot resolve the GPU '
    "allocation policy from a malformed value"
)
# Our own messages.
MSG_BOTH_OPERATORS = (
    "recipe enables both gpu-operator and gpu-operator-ocp; using gpu-operator for the GPU allocation policy"
)
MSG_VALUES_FILE_MISSING = (
    'component "{component}": values file {path!r} not found in the data directory {roots}'
)
MSG_VALUES_FILE_FALLBACK = (
    'component "{component}": values file {path!r} is not in aicr-pytest\'s embedded data; hydrating from '
    "the component's base values and recipe overrides (pass --data <AICR recipes dir> for exact hydration)"
)
MSG_VALUES_NOT_MAPPING = 'component "{component}": values file {path!r} is not a YAML mapping'


class AllocationPolicy(BaseModel):
    """The resolved policy plus the inputs that decided it."""

    model_config = ConfigDict(frozen=True)

    mode: PolicyMode
    reason: str
    #: The GPU operator component the decision used (``None`` when none is enabled).
    operator: str | None = None
    dra_enabled: bool = False
    gpus_enabled: bool = False
    waiver: bool = False
    device_plugin_enabled: bool = False
    warnings: list[str] = Field(default_factory=list)


class _Absent:
    """A missing key or an explicit ``null`` along a value path."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


def _invalid(message: str) -> UsageError:
    return UsageError(INVALID_REQUEST_PREFIX + message)


def merge_values(dst: dict[str, Any], src: dict[str, Any]) -> dict[str, Any]:
    """Merge ``src`` into ``dst`` in place (AICR ``mergeValues``) and return ``dst``.

    Maps merge recursively, scalars and lists replace, and a ``null`` in ``src`` deletes the key.
    """
    for key, value in src.items():
        if value is None:
            dst.pop(key, None)
        elif isinstance(value, dict) and isinstance(dst.get(key), dict):
            merge_values(dst[key], value)
        else:
            dst[key] = copy.deepcopy(value)
    return dst


def _load_values(data: DataTree, component: str, relpath: str) -> dict[str, Any]:
    doc = data.load_yaml(relpath)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise UsageError(MSG_VALUES_NOT_MAPPING.format(component=component, path=relpath))
    return doc


def hydrate_values(ref: ComponentRef, data: DataTree, warnings: list[str] | None = None) -> dict[str, Any]:
    """Fully hydrated Helm values of ``ref``.

    base ``components/<name>/values.yaml`` (only when a ``valuesFile`` is set; may be missing) →
    ``valuesFile`` (must exist) → ``overrides``.  All files go through the data tree.

    A ``valuesFile`` missing from the data tree is an error when ``--data`` is given.  With only
    our embedded data (which holds just the base files the policy needs), it is a warning and the
    base values stand in for it.
    """
    if not ref.values_file and not ref.overrides:
        return {}
    values: dict[str, Any] = {}
    if ref.values_file:
        base = f"components/{ref.name}/values.yaml"
        if ref.values_file != base and data.find(base) is not None:
            values = _load_values(data, ref.name, base)
        if data.find(ref.values_file) is not None:
            merge_values(values, _load_values(data, ref.name, ref.values_file))
        elif data.external_root is not None:
            roots = " or ".join(str(r) for r in data.roots)
            raise UsageError(
                MSG_VALUES_FILE_MISSING.format(component=ref.name, path=ref.values_file, roots=roots)
            )
        elif warnings is not None:
            warnings.append(MSG_VALUES_FILE_FALLBACK.format(component=ref.name, path=ref.values_file))
    return merge_values(values, ref.overrides)


def lookup_value(values: dict[str, Any], path: str, component: str) -> object:
    """Walk the dot ``path``: :data:`ABSENT` for a missing key or ``null``; a bool otherwise.

    A non-map intermediate or a non-bool leaf is a malformed value (``[INVALID_REQUEST]``).
    """
    segments = path.split(".")
    current: object = values
    for i, segment in enumerate(segments):
        if not isinstance(current, dict):
            prefix = ".".join(segments[:i])
            raise _invalid(MSG_SEGMENT_NOT_MAP.format(component=component, path=path, prefix=prefix))
        if segment not in current or current[segment] is None:
            return ABSENT
        current = current[segment]
    if not isinstance(current, bool):
        raise _invalid(MSG_NOT_BOOL.format(component=component, path=path, go_type=go_type_name(current)))
    return current


def resolve_allocation_policy(recipe: Recipe | None, data: DataTree) -> AllocationPolicy:
    """Decide the policy in AICR's order.  Raises :class:`UsageError` (E1–E5 etc.)."""
    if recipe is None:
        return AllocationPolicy(mode=UNSPECIFIED, reason="no recipe")
    warnings: list[str] = []

    gpus = False
    waiver = False
    dra = recipe.enabled_component(DRA_COMPONENT)
    if dra is not None:
        dra_values = hydrate_values(dra, data, warnings)
        found = lookup_value(dra_values, GPUS_ENABLED_PATH, DRA_COMPONENT)
        if found is ABSENT:
            raise _invalid(E1_GPUS_ENABLED_UNSET)
        gpus = found is True
        waiver = lookup_value(dra_values, WAIVER_PATH, DRA_COMPONENT) is True

    operator = recipe.enabled_component(GPU_OPERATOR)
    if operator is not None and recipe.enabled_component(GPU_OPERATOR_OCP) is not None:
        warnings.append(MSG_BOTH_OPERATORS)
    if operator is None:
        operator = recipe.enabled_component(GPU_OPERATOR_OCP)
    op_name = operator.name if operator is not None else GPU_OPERATOR
    device_plugin = False
    if operator is not None:
        dp = lookup_value(hydrate_values(operator, data, warnings), DEVICE_PLUGIN_PATH, op_name)
        device_plugin = True if dp is ABSENT else dp is True

    facts: dict[str, Any] = {
        "operator": operator.name if operator is not None else None,
        "dra_enabled": dra is not None,
        "gpus_enabled": gpus,
        "waiver": waiver,
        "device_plugin_enabled": device_plugin,
        "warnings": warnings,
    }
    if gpus:
        if not waiver:
            raise _invalid(E2_WAIVER_MISSING)
        if device_plugin:
            raise _invalid(E3_DUAL_ADVERTISEMENT.format(op=op_name))
        reason = f"{DRA_COMPONENT} resources.gpus.enabled=true with gpuResourcesEnabledOverride=true" + (
            f" and {op_name} devicePlugin.enabled=false" if operator is not None else " and no GPU operator"
        )
        return AllocationPolicy(mode=DRA_RESOURCE_CLAIM, reason=reason, **facts)
    if not device_plugin:
        raise _invalid(E4_NO_ADVERTISER)
    if dra is not None and waiver:
        raise _invalid(E5_INERT_WAIVER.format(op=op_name))
    dra_part = (
        f"{DRA_COMPONENT} resources.gpus.enabled=false"
        if dra is not None
        else f"{DRA_COMPONENT} absent/disabled"
    )
    reason = f"{dra_part} and {op_name} devicePlugin.enabled=true"
    return AllocationPolicy(mode=DEVICE_PLUGIN, reason=reason, **facts)


__all__ = [
    "ABSENT",
    "DEVICE_PLUGIN",
    "DRA_RESOURCE_CLAIM",
    "E1_GPUS_ENABLED_UNSET",
    "E2_WAIVER_MISSING",
    "E3_DUAL_ADVERTISEMENT",
    "E4_NO_ADVERTISER",
    "E5_INERT_WAIVER",
    "INVALID_REQUEST_PREFIX",
    "UNSPECIFIED",
    "AllocationPolicy",
    "PolicyMode",
    "hydrate_values",
    "lookup_value",
    "merge_values",
    "resolve_allocation_policy",
]
