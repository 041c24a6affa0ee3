"""NCCL variant resolution (section 1 of a run): which variant, with which runtime, against which threshold.

:func:`resolve_variant` turns the check's own constraint, the ``nccl-benchmark-profile`` /
``nccl-benchmark-runtime-ref`` constraints, ``AICR_NCCL_FABRIC``, the applicability matrix and the
threshold into one :class:`VariantPlan`.  It raises :class:`~aicr_pytest.core.errors.CheckSkip`
(not applicable), :class:`NcclCheckFailure` (the recipe asks for something invalid: fails the
check) or :class:`~aicr_pytest.core.errors.UsageError` (exit 2).  :func:`prevalidate` runs the same
resolution at session start (the ``pytest_aicr_prevalidate`` hook in :mod:`.hooks`).

Also here: the check names, the constraint names and the object names every other module of the
family shares, and :class:`NcclCheckFailure`, the base of the family's failures.

Deliberate differences from AICR, each tested:

* The comparator is honoured: ``>=`` passes at ≥ 0.9 × value, ``<=`` at ≤ 1.1 × value; ``==``, a
  bare number or any other comparator is a usage error before the benchmark (AICR ignores it).
* ``AICR_NCCL_FABRIC`` is read for the ``-net`` check only.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import yaml

from aicr_pytest.core import constraints as constraint_language
from aicr_pytest.core import ctrfextra, yamlio
from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.errors import CheckFailed, CheckSkip, UsageError
from aicr_pytest.nccl import nvreg
from aicr_pytest.nccl.runtimeimage import resolve_runtime_image

Variant = Literal["default", "net", "nvls"]
Fabric = Literal["efa", "roce"]

CHECK_DEFAULT = "nccl-all-reduce-bw"
CHECK_NET = "nccl-all-reduce-bw-net"
CHECK_NVLS = "nccl-all-reduce-bw-nvls"
#: check name (= the constraint it reads) → variant
CHECK_VARIANTS: dict[str, Variant] = {CHECK_DEFAULT: "default", CHECK_NET: "net", CHECK_NVLS: "nvls"}
VARIANT_CHECKS: dict[Variant, str] = {v: k for k, v in CHECK_VARIANTS.items()}

PROFILE_CONSTRAINT = "nccl-benchmark-profile"
RUNTIME_REF_CONSTRAINT = "nccl-benchmark-runtime-ref"
#: the CTRF ``extra`` key of :attr:`VariantPlan.runtime_source`
EXTRA_RUNTIME_SOURCE = ctrfextra.KEY_RUNTIME_SOURCE
RUNTIME_CONSTRAINT = "nccl-benchmark-runtime"
FABRIC_ENV = "AICR_NCCL_FABRIC"

#: Applicability matrix: variant → service → accelerators.
SUPPORTED_COMBINATIONS: dict[Variant, dict[str, frozenset[str]]] = {
    "default": {
        "eks": frozenset({"h100", "h200"}),
        "gke": frozenset({"h100"}),
        "aks": frozenset({"h100"}),
        "any": frozenset({"b200", "gb200"}),
    },
    "net": {"eks": frozenset({"gb200"})},
    "nvls": {"eks": frozenset({"gb200"}), "oke": frozenset({"gb200"})},
}
#: With ``AICR_NCCL_FABRIC=roce`` the -net check is keyed on the service only.
ROCE_NET_SERVICES = frozenset({"eks"})
#: Every ``{accelerator}/{service}`` pair some variant implements, sorted.
KNOWN_PROFILES: tuple[str, ...] = tuple(
    sorted(
        {
            f"{acc}/{svc}"
            for combos in SUPPORTED_COMBINATIONS.values()
            for svc, accs in combos.items()
            for acc in accs
        }
    )
)

#: Relative location of a private runtime inside ``--data`` (always ``runtime.yaml``).
DATA_RUNTIME_PATH = "validators/performance/testdata/{accelerator}/{service}/runtime.yaml"
#: Our templates, relative to ``runtimes/nccl`` (same layout as AICR's testdata).
ROCE_CLAIM_TEMPLATE = "roce/{service}/roce-claim.yaml"

TRAINER_API_VERSION = "trainer.kubeflow.org/v1alpha1"
NODE_JOB = "node"
LAUNCHER_JOB = "launcher"

# --- skip reasons -----------------------------------------------------------
MSG_SKIP_NO_CONSTRAINT = "no {check} constraint in recipe"
MSG_SKIP_NO_CRITERIA = "skipped - requires Service + Accelerator"
MSG_SKIP_NOT_IMPLEMENTED = "skipped - requires Service + Accelerator to be implemented"
MSG_SKIP_PROFILE_LACKS_VARIANT = (
    "skipped - benchmark profile {profile} does not implement the {check} NCCL variant"
)
MSG_SKIP_TOO_FEW_NODES = "skipped - requires at least 2 GPU nodes for EW fabric test"

# --- profile: check failures -----------------------------------------------------
MSG_PROFILE_MALFORMED = (
    'invalid nccl-benchmark-profile="{raw}": must be "{{accelerator}}/{{service}}" (e.g. "gb200/eks")'
)
MSG_PROFILE_UNKNOWN = 'unknown nccl-benchmark-profile="{raw}": available profiles: {profiles}'

# --- fabric: usage error --------------------------------------------------
MSG_FABRIC_UNSUPPORTED = 'unsupported AICR_NCCL_FABRIC="{value}" (expected "efa" or "roce")'

# --- runtime ref, stage 1: usage errors, before any cluster object ---------------
MSG_DECLARE_AT_MOST_ONE = "declare at most one {name} constraint (found {count})"
MSG_REF_AND_INLINE = (
    "nccl-benchmark-runtime-ref and an inline nccl-benchmark-runtime are both set — supply one"
)
MSG_REF_AND_PROFILE = (
    "nccl-benchmark-runtime-ref and nccl-benchmark-profile are mutually exclusive — "
    "supply a runtime or borrow an embedded profile, not both"
)
MSG_REF_MALFORMED = (
    'invalid nccl-benchmark-runtime-ref="{ref}": must be "{{accelerator}}/{{service}}" (e.g. "gb200/mycloud")'
)
MSG_REF_NO_DATA = 'nccl-benchmark-runtime-ref="{ref}" is set but no --data source is available to resolve it'
MSG_REF_UNRESOLVED = (
    'failed to resolve nccl-benchmark-runtime-ref="{ref}": expected "{relpath}" in the --data tree: {cause}'
)
MSG_REF_EMPTY = 'nccl-benchmark-runtime-ref="{ref}" resolved to an empty file ("{relpath}")'
REF_CAUSE_MISSING = "no such file"
REF_CAUSE_NOT_FILE = "not a regular file"
REF_CAUSE_TOO_LARGE = "larger than {limit} KiB"
MAX_RUNTIME_BYTES = 1 << 20

# --- private runtime, stage 2: check failures ------------------------------------
MSG_RUNTIME_AND_PROFILE = (
    "nccl-benchmark-runtime (or nccl-benchmark-runtime-ref) and nccl-benchmark-profile are mutually "
    "exclusive: supply a runtime or borrow an embedded profile, not both"
)
MSG_RUNTIME_NOT_YAML = "invalid nccl-benchmark-runtime: not parseable as YAML"
MSG_RUNTIME_WRONG_KIND = (
    "invalid nccl-benchmark-runtime: must be a trainer.kubeflow.org/v1alpha1 TrainingRuntime "
    '(got apiVersion="{api}" kind="{kind}")'
)
MSG_RUNTIME_NO_NODE_JOB = (
    'invalid nccl-benchmark-runtime: must declare a "node" replicatedJob '
    "(spec.template.spec.replicatedJobs) — the NCCL worker cohort"
)
MSG_RUNTIME_NO_POD_SPEC = (
    'invalid nccl-benchmark-runtime: "node" replicatedJob must define the worker pod spec at '
    "template.spec.template.spec"
)
MSG_RUNTIME_MULTI_DOC = (
    "invalid nccl-benchmark-runtime: must be a single trainer.kubeflow.org/v1alpha1 TrainingRuntime document "
    "(found {count} documents)"
)
MSG_RUNTIME_BAD_SELECTOR = 'invalid nccl-benchmark-runtime: "node" replicatedJob has a malformed nodeSelector'
MSG_RUNTIME_RENDER = "failed to render recipe-supplied nccl-benchmark-runtime"

# --- threshold: usage errors (our comparator rule; AICR's for the number) ------------------------
MSG_THRESHOLD_NO_VALUE = '{check}: invalid threshold: no numeric value found in "{raw}"'
MSG_THRESHOLD_FORMAT = '{check}: invalid threshold format "{raw}" (expected e.g. ">= 300" or ">= 300 GB/s")'
MSG_THRESHOLD_BARE = (
    '{check}: constraint "{raw}" has no comparator; a bandwidth gate needs a direction — write ">= {value}" '
    '(a floor, passes at >= 90% of it) or "<= {value}" (a ceiling, passes at <= 110% of it)'
)
MSG_THRESHOLD_EQUALS = (
    '{check}: constraint "{raw}" uses "{op}", which a measured bandwidth can never meet exactly; '
    'use ">=" (a floor) or "<=" (a ceiling)'
)
MSG_THRESHOLD_COMPARATOR = (
    '{check}: constraint "{raw}" uses unsupported comparator "{op}"; NCCL bandwidth gates take ">=" '
    '(a floor, 10% tolerance) or "<=" (a ceiling, 10% tolerance)'
)


class NcclCheckFailure(CheckFailed):
    """The check fails (CTRF ``failed``) with ``str(exc)`` as its message."""


class HasNameValue(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str: ...


class HasCriteria(Protocol):
    @property
    def service(self) -> str | None: ...
    @property
    def accelerator(self) -> str | None: ...


ConstraintsArg = Mapping[str, str] | Iterable[tuple[str, str]] | Iterable[HasNameValue]


@dataclass(frozen=True)
class Criteria:
    """``criteria.service`` / ``criteria.accelerator`` of the recipe (any object with both works)."""

    service: str | None
    accelerator: str | None


def constraint_pairs(constraints: ConstraintsArg) -> list[tuple[str, str]]:
    """Normalise constraints (a mapping, ``(name, value)`` pairs or recipe ``Constraint`` objects)."""
    if isinstance(constraints, Mapping):
        return [(str(k), "" if v is None else str(v)) for k, v in constraints.items()]
    out: list[tuple[str, str]] = []
    for item in constraints:
        if isinstance(item, tuple):
            name, value = item
        else:
            name, value = item.name, item.value
        out.append((str(name), "" if value is None else str(value)))
    return out


def _first(pairs: Sequence[tuple[str, str]], name: str) -> str | None:
    """AICR ``findPerformanceConstraint``: the first entry with that exact name."""
    return next((v for n, v in pairs if n == name), None)


@dataclass(frozen=True)
class Threshold:
    """A parsed bandwidth constraint: ``>=`` floor or ``<=`` ceiling, 10 % tolerance either way."""

    raw: str
    comparator: Literal[">=", "<="]
    value: float

    @property
    def effective(self) -> float:
        """The bound actually compared: 0.9 × value for ``>=``, 1.1 × value for ``<=``."""
        factor = (
            constraint_language.TOLERANCE_LOW
            if self.comparator == ">="
            else constraint_language.TOLERANCE_HIGH
        )
        return self.value * factor

    def passes(self, measured_gbps: float) -> bool:
        if not math.isfinite(measured_gbps):
            return False
        return constraint_language.threshold_passes(self.comparator, self.value, measured_gbps)


_THRESHOLD_RE = re.compile(r"^(?P<op>[<>=!]*)\s*(?P<num>[^\s]*)\s*(?P<unit>.*?)\s*$")
_NUMBER_RE = re.compile(r"^[+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")


def parse_threshold(check: str, raw: str) -> Threshold:
    """Parse ``">= 300"`` (optionally ``GB/s``).  Anything but ``>=``/``<=`` is a :class:`UsageError`."""
    text = (raw or "").strip()
    m = _THRESHOLD_RE.match(text)
    op = m.group("op") if m else ""
    num = m.group("num") if m else ""
    unit = m.group("unit") if m else ""
    if not num:
        raise UsageError(MSG_THRESHOLD_NO_VALUE.format(check=check, raw=raw))
    if num.lower().endswith("gb/s") and not unit:
        num, unit = num[:-4], num[-4:]
    if not _NUMBER_RE.match(num) or (unit and unit.lower() != "gb/s"):
        raise UsageError(MSG_THRESHOLD_FORMAT.format(check=check, raw=raw))
    value = float(num)
    shown = num
    if op == "":
        raise UsageError(MSG_THRESHOLD_BARE.format(check=check, raw=raw, value=shown))
    if op in ("==", "="):
        raise UsageError(MSG_THRESHOLD_EQUALS.format(check=check, raw=raw, op=op))
    if op not in (">=", "<="):
        raise UsageError(MSG_THRESHOLD_COMPARATOR.format(check=check, raw=raw, op=op))
    return Threshold(raw=text, comparator=op, value=value)  # type: ignore[arg-type]


def parse_profile(raw: str | None) -> tuple[str, str] | None:
    """``nccl-benchmark-profile``: ``(accelerator, service)``, ``None`` when absent/blank."""
    if raw is None or not raw.strip():
        return None
    parts = raw.split("/")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise NcclCheckFailure(MSG_PROFILE_MALFORMED.format(raw=raw))
    acc, svc = (p.strip().lower() for p in parts)
    if f"{acc}/{svc}" not in KNOWN_PROFILES:
        raise NcclCheckFailure(MSG_PROFILE_UNKNOWN.format(raw=raw, profiles=", ".join(KNOWN_PROFILES)))
    return acc, svc


def parse_fabric(env: Mapping[str, str]) -> Fabric:
    """``AICR_NCCL_FABRIC``: unset/``efa`` → efa, ``roce`` → roce (trimmed, case-insensitive)."""
    raw = env.get(FABRIC_ENV)
    value = (raw or "").strip().lower()
    if value in ("", "efa"):
        return "efa"
    if value == "roce":
        return "roce"
    raise UsageError(MSG_FABRIC_UNSUPPORTED.format(value=raw))


def combination_supported(variant: Variant, fabric: Fabric, accelerator: str, service: str) -> bool:
    """The applicability matrix, with the RoCE override for -net."""
    if variant == "net" and fabric == "roce":
        return service in ROCE_NET_SERVICES
    return accelerator in SUPPORTED_COMBINATIONS[variant].get(service, frozenset())


def template_path(variant: Variant, fabric: Fabric, accelerator: str, service: str) -> str:
    """Runtime template relative to ``runtimes/nccl`` (AICR ``templatePath``, fabric scoped to -net)."""
    suffix = "" if variant == "default" else f"-{variant}"
    if variant == "net" and fabric == "roce":
        return f"roce/{service}/runtime-net.yaml"
    return f"{accelerator}/{service}/runtime{suffix}.yaml"


@dataclass(frozen=True)
class PrivateRuntime:
    """A recipe-supplied TrainingRuntime (``nccl-benchmark-runtime-ref`` or inline carrier)."""

    text: str
    source: str  #: ``--data`` relative path, or ``inline`` for an inline ``nccl-benchmark-runtime``
    ref: str | None = None
    node_selector: Mapping[str, str] | None = None


@dataclass(frozen=True)
class VariantPlan:
    """Everything the check needs to run one NCCL variant, decided before touching the cluster."""

    check: str
    variant: Variant
    threshold: Threshold
    criteria_accelerator: str  #: keys GPU node identification (GFD product), always the recipe's own
    criteria_service: str
    target_accelerator: str  #: profile or criteria: keys template, plumbing, preflights
    target_service: str
    profile: str | None = None
    fabric: Fabric = "efa"
    runtime_template: str | None = None  #: relative to runtimes/nccl; None for a private runtime
    claim_template: str | None = None  #: the RoCE ResourceClaimTemplate, -net with fabric roce only
    private_runtime: PrivateRuntime | None = None
    runtime_image: str | None = None  #: ``AICR_NCCL_RUNTIME_IMAGE`` (embedded runtimes only)

    @property
    def embedded(self) -> bool:
        return self.private_runtime is None

    @property
    def runtime_source(self) -> str:
        """AICR's CTRF ``extra.runtimeSource``: the recipe's own runtime, or the embedded fixture.

        AICR's third code, ``delivered-artifact`` (a runtime derived from the ClusterTrainingRuntime
        the recipe ships), never applies: this benchmark does not derive one.
        """
        if self.private_runtime is not None:
            return ctrfextra.RUNTIME_RECIPE_SUPPLIED
        return ctrfextra.RUNTIME_CLUSTER_CAPABILITY

    @property
    def service_steps(self) -> bool:
        """EFA/GKE/AKS discovery, preflights, NVLS provisioning, platform scheduling defaults."""
        return self.embedded

    @property
    def requires_node_selector(self) -> bool:
        return self.embedded and self.target_service == "any"

    @property
    def narrows_instance_type(self) -> bool:
        return self.embedded and self.target_service == "eks"

    @property
    def provisions_compute_domain(self) -> bool:
        return self.embedded and self.variant == "nvls"

    @property
    def preflight(self) -> Literal["nvreg", "tcpxo"] | None:
        """The Grace-Blackwell NET preflight (-net over EFA, :func:`.nvreg.applies`) or TCPXO (h100/gke)."""
        if not self.embedded:
            return None
        if self.fabric == "efa" and nvreg.applies(self.variant, self.target_accelerator, self.target_service):
            return "nvreg"
        if self.variant == "default" and (self.target_accelerator, self.target_service) == ("h100", "gke"):
            return "tcpxo"
        return None

    def sizing_selector(self, node_selector: Mapping[str, str] | None) -> dict[str, str] | None:
        """The selector that replaces automatic node filters: ``--node-selector``, else (private
        runtime only) the runtime's own worker ``nodeSelector``."""
        if node_selector:
            return dict(node_selector)
        if self.private_runtime is not None and self.private_runtime.node_selector:
            return dict(self.private_runtime.node_selector)
        return None


def _ref_relpath(ref: str) -> str:
    parts = ref.split("/")
    if len(parts) != 2:
        raise UsageError(MSG_REF_MALFORMED.format(ref=ref))
    segs = [p.strip() for p in parts]
    for seg in segs:
        if not seg or seg in (".", "..") or "\\" in seg or "\x00" in seg:
            raise UsageError(MSG_REF_MALFORMED.format(ref=ref))
    return DATA_RUNTIME_PATH.format(accelerator=segs[0], service=segs[1])


def resolve_runtime_ref(constraints: ConstraintsArg, data: DataTree | None) -> PrivateRuntime | None:
    """Stage 1 of ``nccl-benchmark-runtime-ref``: run once before any cluster object.

    Returns the private runtime (from the ref or an inline ``nccl-benchmark-runtime``) or ``None``.
    Every problem is a :class:`UsageError` (exit 2).  The file must stay inside ``--data``:
    ``..`` segments, absolute paths and symlinks leaving the directory are refused.
    """
    pairs = constraint_pairs(constraints)
    for name in (RUNTIME_REF_CONSTRAINT, RUNTIME_CONSTRAINT):
        count = sum(1 for n, _ in pairs if n == name)
        if count > 1:
            raise UsageError(MSG_DECLARE_AT_MOST_ONE.format(name=name, count=count))
    ref = (_first(pairs, RUNTIME_REF_CONSTRAINT) or "").strip()
    inline = _first(pairs, RUNTIME_CONSTRAINT) or ""
    if not ref:
        if inline.strip():
            return _private_runtime(inline, source="inline", ref=None)
        return None
    if inline.strip():
        raise UsageError(MSG_REF_AND_INLINE)
    if (_first(pairs, PROFILE_CONSTRAINT) or "").strip():
        raise UsageError(MSG_REF_AND_PROFILE)
    relpath = _ref_relpath(ref)
    if data is None or data.external_root is None:
        raise UsageError(MSG_REF_NO_DATA.format(ref=ref))
    text = _read_data_runtime(data, ref, relpath)
    if not text.strip():
        raise UsageError(MSG_REF_EMPTY.format(ref=ref, relpath=relpath))
    return _private_runtime(text, source=relpath, ref=ref)


def _read_data_runtime(data: DataTree, ref: str, relpath: str) -> str:
    def fail(cause: str) -> UsageError:
        return UsageError(MSG_REF_UNRESOLVED.format(ref=ref, relpath=relpath, cause=cause))

    try:
        path = data.resolve_external(relpath)
    except UsageError as exc:  # escapes the --data directory
        raise fail(str(exc)) from None
    if path is None:
        raise fail(REF_CAUSE_MISSING)
    if not path.is_file():
        raise fail(REF_CAUSE_NOT_FILE)
    try:
        with path.open("rb") as fh:
            body = fh.read(MAX_RUNTIME_BYTES + 1)
    except OSError as exc:
        raise fail(exc.strerror or str(exc)) from None
    if len(body) > MAX_RUNTIME_BYTES:
        raise fail(REF_CAUSE_TOO_LARGE.format(limit=MAX_RUNTIME_BYTES >> 10))
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise fail("not UTF-8 text") from None


def _private_runtime(text: str, *, source: str, ref: str | None) -> PrivateRuntime:
    # The nodeSelector is read leniently here; validate_private_runtime reports shape errors.
    selector: dict[str, str] | None = None
    try:
        doc = yamlio.load(text)
        pod = _node_pod_spec(doc) if isinstance(doc, dict) else None
        raw_sel = pod.get("nodeSelector") if isinstance(pod, dict) else None
        if isinstance(raw_sel, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in raw_sel.items()
        ):
            selector = dict(raw_sel) or None
    except yaml.YAMLError:
        selector = None
    return PrivateRuntime(text=text, source=source, ref=ref, node_selector=selector)


def _node_pod_spec(runtime: Mapping[str, Any]) -> dict[str, Any] | None:
    jobs = _dig(runtime, "spec", "template", "spec", "replicatedJobs")
    if not isinstance(jobs, list):
        return None
    for job in jobs:
        if isinstance(job, dict) and job.get("name") == NODE_JOB:
            pod = _dig(job, "template", "spec", "template", "spec")
            return pod if isinstance(pod, dict) else None
    return None


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def validate_private_runtime(text: str) -> dict[str, Any]:
    """Stage 2 shape rules on the raw text: raises :class:`NcclCheckFailure` (fails, never skips)."""
    try:
        docs = [d for d in yamlio.load_all(text) if d is not None]
    except yaml.YAMLError:
        raise NcclCheckFailure(MSG_RUNTIME_NOT_YAML) from None
    if len(docs) > 1:
        raise NcclCheckFailure(MSG_RUNTIME_MULTI_DOC.format(count=len(docs)))
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise NcclCheckFailure(MSG_RUNTIME_NOT_YAML)
    doc: dict[str, Any] = docs[0]
    api, kind = doc.get("apiVersion"), doc.get("kind")
    if api != TRAINER_API_VERSION or kind != "TrainingRuntime":
        raise NcclCheckFailure(
            MSG_RUNTIME_WRONG_KIND.format(api="" if api is None else api, kind="" if kind is None else kind)
        )
    jobs = _dig(doc, "spec", "template", "spec", "replicatedJobs")
    node_job = None
    if isinstance(jobs, list):
        node_job = next((j for j in jobs if isinstance(j, dict) and j.get("name") == NODE_JOB), None)
    if node_job is None:
        raise NcclCheckFailure(MSG_RUNTIME_NO_NODE_JOB)
    pod = _dig(node_job, "template", "spec", "template", "spec")
    if not isinstance(pod, dict):
        raise NcclCheckFailure(MSG_RUNTIME_NO_POD_SPEC)
    sel = pod.get("nodeSelector")
    if sel is not None and not (
        isinstance(sel, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in sel.items())
    ):
        raise NcclCheckFailure(MSG_RUNTIME_BAD_SELECTOR)
    return doc


def _criteria_values(criteria: HasCriteria | Mapping[str, Any] | None) -> tuple[str, str] | None:
    if criteria is None:
        return None
    if isinstance(criteria, Mapping):
        svc, acc = criteria.get("service"), criteria.get("accelerator")
    else:
        svc, acc = criteria.service, criteria.accelerator
    svc_s = str(svc or "").strip().lower()
    acc_s = str(acc or "").strip().lower()
    if not svc_s or not acc_s:
        return None
    return svc_s, acc_s


def resolve_variant(
    check_name: str,
    criteria: HasCriteria | Mapping[str, Any] | None,
    constraints: ConstraintsArg,
    env: Mapping[str, str],
    *,
    data: DataTree | None = None,
    private_runtime: PrivateRuntime | None = None,
) -> VariantPlan:
    """Decide how (and whether) ``check_name`` runs, in AICR's order of decisions.

    ``private_runtime`` is the result of :func:`resolve_runtime_ref` when the caller already ran
    stage 1 at session start; otherwise stage 1 runs here against ``data``.

    Raises :class:`CheckSkip` (constraint absent, no criteria, not applicable, profile lacks the
    variant), :class:`NcclCheckFailure` (malformed/unknown profile, invalid private runtime) or
    :class:`UsageError` (runtime-ref resolution, ``AICR_NCCL_FABRIC``, threshold comparator).
    """
    if check_name not in CHECK_VARIANTS:
        raise UsageError(f"unknown NCCL check {check_name!r} (expected one of {', '.join(CHECK_VARIANTS)})")
    variant = CHECK_VARIANTS[check_name]
    pairs = constraint_pairs(constraints)
    if private_runtime is None:
        private_runtime = resolve_runtime_ref(pairs, data)

    raw_threshold = _first(pairs, check_name)
    if raw_threshold is None:
        raise CheckSkip(MSG_SKIP_NO_CONSTRAINT.format(check=check_name))
    crit = _criteria_values(criteria)
    if crit is None:
        raise CheckSkip(MSG_SKIP_NO_CRITERIA)
    service, accelerator = crit

    profile = parse_profile(_first(pairs, PROFILE_CONSTRAINT))

    if private_runtime is not None:
        if profile is not None:
            raise NcclCheckFailure(MSG_RUNTIME_AND_PROFILE)
        validate_private_runtime(private_runtime.text)
        return VariantPlan(
            check=check_name,
            variant=variant,
            threshold=parse_threshold(check_name, raw_threshold),
            criteria_accelerator=accelerator,
            criteria_service=service,
            target_accelerator=accelerator,
            target_service=service,
            private_runtime=private_runtime,
        )

    fabric: Fabric = parse_fabric(env) if variant == "net" else "efa"
    runtime_image = resolve_runtime_image(env)  # upstream: before applicability, embedded runtimes only
    target_acc, target_svc = profile if profile is not None else (accelerator, service)
    if not combination_supported(variant, fabric, target_acc, target_svc):
        if profile is not None:
            raise CheckSkip(
                MSG_SKIP_PROFILE_LACKS_VARIANT.format(profile=f"{target_acc}/{target_svc}", check=check_name)
            )
        raise CheckSkip(MSG_SKIP_NOT_IMPLEMENTED)
    threshold = parse_threshold(check_name, raw_threshold)
    claim = ROCE_CLAIM_TEMPLATE.format(service=target_svc) if variant == "net" and fabric == "roce" else None
    return VariantPlan(
        check=check_name,
        variant=variant,
        threshold=threshold,
        criteria_accelerator=accelerator,
        criteria_service=service,
        target_accelerator=target_acc,
        target_service=target_svc,
        profile=f"{target_acc}/{target_svc}" if profile is not None else None,
        fabric=fabric,
        runtime_template=template_path(variant, fabric, target_acc, target_svc),
        claim_template=claim,
        runtime_image=runtime_image,
    )


class HasPerformanceBlock(Protocol):
    """What :func:`prevalidate` reads from a recipe (:class:`aicr_pytest.core.recipe.Recipe` fits)."""

    @property
    def criteria(self) -> Any: ...
    def phase_checks(self, phase: str) -> list[str]: ...
    def phase_constraints(self, phase: str) -> Sequence[HasNameValue]: ...


def prevalidate(recipe: HasPerformanceBlock, settings: object, data: DataTree | None) -> None:
    """Session-start validation of the NCCL inputs only the checks understand (exit 2, nothing created).

    Runs :func:`resolve_runtime_ref` once (malformed ref, missing ``--data``, missing/escaping
    file), then the same :func:`resolve_variant` each declared NCCL check runs, so an unsupported
    ``AICR_NCCL_FABRIC`` for ``-net`` or a ``==``/bare/unknown comparator is a
    :class:`UsageError` here rather than after node discovery.  Outcomes that are the check's own
    business (skips, invalid profile or private runtime: the check fails) are left to the check.
    ``settings`` is accepted for the prevalidator signature; the environment is read from
    ``os.environ`` as the check does.
    """
    parse_fabric(os.environ)  # the guide: any value but efa/roce is rejected, whichever NCCL check runs
    constraints = constraint_pairs(recipe.phase_constraints("performance"))
    private = resolve_runtime_ref(constraints, data)
    if private is None:  # AICR_NCCL_RUNTIME_IMAGE: read for the embedded runtimes only
        resolve_runtime_image(os.environ)
    for check in recipe.phase_checks("performance"):
        if check not in CHECK_VARIANTS:
            continue
        try:
            resolve_variant(
                check, recipe.criteria, constraints, os.environ, data=data, private_runtime=private
            )
        except (CheckSkip, NcclCheckFailure):
            continue
