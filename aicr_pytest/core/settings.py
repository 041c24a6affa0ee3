"""Validated run options: one object, built once in ``pytest_configure``.

Both entry points (plain ``pytest --recipe ...`` and ``aicr-pytest validate``) end up here, so
flag validation and its messages live in one place.  How each option is spelled, its default and
its environment variable are declared once, in :mod:`aicr_pytest.plugin.options`; this module is
the pytest-free model the check families receive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from aicr_pytest.core.catalog import parse_phases
from aicr_pytest.core.defaults import (
    DEFAULT_CUDA_SMOKE_IMAGE,
    DEFAULT_DCGM_IMAGE,
    DEFAULT_NAMESPACE,
    DEFAULT_NVIDIA_SMI_IMAGE,
    DEFAULT_TIMEOUT_S,
)
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.goduration import parse_positive_go_duration

TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class Toleration(BaseModel):
    """A Kubernetes toleration as given by ``--toleration``."""

    model_config = ConfigDict(frozen=True)

    key: str | None = None
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = None
    effect: str | None = None

    def to_k8s(self) -> dict[str, str]:
        out: dict[str, str] = {"operator": self.operator}
        if self.key is not None:
            out["key"] = self.key
        if self.value is not None:
            out["value"] = self.value
        if self.effect is not None:
            out["effect"] = self.effect
        return out


MSG_BAD_TIMEOUT = (
    'invalid value "{value}" for flag --timeout: parse error (a Go duration such as 5m, 90s, 1h30m)'
)


def parse_timeout(value: str) -> float:
    """``--timeout``: a positive Go duration (``5m``), in seconds; anything else is a UsageError."""
    try:
        return parse_positive_go_duration(value)
    except ValueError:
        raise UsageError(MSG_BAD_TIMEOUT.format(value=value)) from None


MSG_BAD_DURATION = 'invalid value "{value}" for flag {flag}: parse error (a Go duration such as 10s, 1m, 1h)'


def parse_duration_flag(value: str, flag: str) -> float:
    """A positive Go duration flag (``--reach-timeout``, ``--stale-after``) in seconds; else one line."""
    try:
        return parse_positive_go_duration(value)
    except ValueError:
        raise UsageError(MSG_BAD_DURATION.format(value=value, flag=flag)) from None


def parse_node_selector(values: Sequence[str] | None) -> dict[str, str] | None:
    """``--node-selector key=value`` (repeatable; later duplicates of a key win)."""
    if not values:
        return None
    result: dict[str, str] = {}
    for raw in values:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip():
            raise UsageError(f'invalid node-selector: invalid format "{raw}", expected key=value')
        result[key.strip()] = value.strip()
    return result


def parse_toleration(raw: str) -> Toleration:
    """``--toleration key=value:Effect`` | ``key:Effect`` | ``*`` (tolerate everything)."""
    if raw.strip() == "*":
        return Toleration(operator="Exists")
    parts = raw.split(":")
    if len(parts) != 2 or not parts[0]:
        raise UsageError(
            f'invalid toleration: invalid format "{raw}", expected key=value:Effect, key:Effect or *'
        )
    spec, effect = parts
    if effect not in TOLERATION_EFFECTS:
        raise UsageError(
            f'invalid toleration: invalid effect "{effect}" in "{raw}", '
            f"must be one of: {', '.join(TOLERATION_EFFECTS)}"
        )
    key, sep, value = spec.partition("=")
    if sep:
        if not key:
            raise UsageError(f'invalid toleration: empty key in "{raw}"')
        return Toleration(key=key, operator="Equal", value=value, effect=effect)
    return Toleration(key=spec, operator="Exists", effect=effect)


class Placement(BaseModel):
    """Where the pods a run creates go and what they carry, as one value from the flags to every
    consumer (the snapshot agent, the checks' inner workloads, the run scope, CNCF evidence).

    ``--node-selector`` (``None``: not given), ``--toleration`` (``None``: not given; inner pods then
    tolerate everything), ``--image-pull-secret`` and ``-n/--namespace``.
    """

    model_config = ConfigDict(frozen=True)

    node_selector: dict[str, str] | None = None
    tolerations: tuple[Toleration, ...] | None = None
    image_pull_secrets: tuple[str, ...] = ()
    namespace: str = DEFAULT_NAMESPACE

    def tolerations_k8s(self) -> tuple[dict[str, str], ...] | None:
        """The tolerations in Kubernetes form (``None``: none given)."""
        return None if self.tolerations is None else tuple(t.to_k8s() for t in self.tolerations)


def build_placement(
    *,
    node_selector: Sequence[str] | None = None,
    tolerations: Sequence[str] | None = None,
    image_pull_secrets: Sequence[str] | None = None,
    namespace: str | None = None,
) -> Placement:
    """:class:`Placement` from the flags' strings (repeated ``--toleration``, ``--node-selector``);
    a bad toleration, then a bad selector, is a :class:`UsageError`.  Empty pull-secret names are
    dropped; a blank namespace is the default one."""
    parsed = tuple(parse_toleration(t) for t in tolerations) if tolerations else None
    return Placement(
        node_selector=parse_node_selector(node_selector),
        tolerations=parsed,
        image_pull_secrets=tuple(v for v in (image_pull_secrets or ()) if v),
        namespace=namespace if namespace is not None and namespace.strip() else DEFAULT_NAMESPACE,
    )


#: the prefix of an option's ``setting`` that names a :class:`Placement` field
PLACEMENT_PREFIX = "placement."


class Settings(BaseModel):
    """Everything a run needs to know from the command line.

    One field per option of :data:`aicr_pytest.plugin.options.OPTIONS` that declares a
    ``setting`` (a test keeps the two in step), plus :data:`DERIVED_FIELDS`; the options whose
    setting is ``placement.<field>`` fill :attr:`placement` together.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid")

    recipe: str | None = None
    snapshot: str | None = None
    phases: tuple[str, ...] = ("deployment", "conformance", "performance")
    phases_explicit: bool = False
    no_cluster: bool = False
    fail_fast: bool = False
    data: Path | None = None
    #: ``--node-selector``, ``--toleration``, ``--image-pull-secret``, ``-n/--namespace``
    placement: Placement = Placement()
    kubeconfig: str | None = None
    kube_context: str | None = None
    no_cleanup: bool = False
    #: ``--allow-fake-nodes``: pods on KWOK fake nodes count as having run (proof of execution)
    allow_fake_nodes: bool = False
    ctrf_report: str | None = None
    nvidia_smi_image: str = DEFAULT_NVIDIA_SMI_IMAGE
    # --- node health: raw knob values, validated up front by aicr_pytest.health.hooks ---------
    #: ``--node-health`` (or ``-m health``): add the node-health checks to the deployment phase
    node_health: bool = False
    #: ``--isolate-bad-nodes``: an NCCL check that fails reruns on node subsets to name the bad nodes
    isolate_bad_nodes: bool = False
    #: ``--label-bad-nodes`` / ``--taint-bad-nodes``: mark the nodes the node-health checks judged
    label_bad_nodes: bool = False
    taint_bad_nodes: bool = False
    #: ``--cncf-should`` (or ``-m cncf-should``): add the CNCF SHOULD checks to the conformance phase
    cncf_should: bool = False
    dcgm_image: str = DEFAULT_DCGM_IMAGE
    #: ``--cuda-smoke-image``: the CUDA sample image of gpu-cuda-smoke's pods
    cuda_smoke_image: str = DEFAULT_CUDA_SMOKE_IMAGE
    dcgm_diag_level: str = "1"
    gpu_health_window: str | None = None
    gpu_health_thresholds: tuple[str, ...] = ()
    evidence_dir: Path | None = None
    #: ``--html``: where the HTML report of the run goes
    html: str | None = None
    #: ``--history``: the run history every run is recorded into (SQLite file; ``None``: no history)
    history: str | None = None
    #: ``--history-keep``: how many runs a ``cm://`` history keeps (the oldest beyond are deleted)
    history_keep: int = 20
    #: ``--baseline``: a previous CTRF report, or ``auto`` (the last passing run in ``--history``)
    baseline: str | None = None
    #: ``--normalize-gates``: inference/NCCL floors scaled to the node shape (aicr-pytest's own)
    normalize_gates: bool = False
    #: ``--max-regression``: percent worse than the baseline that fails a check (``None``: off)
    max_regression: float | None = None
    #: ``--metrics-file`` / ``--pushgateway``: the run's Prometheus metrics (aicr_pytest.report.metrics)
    metrics_file: str | None = None
    pushgateway: str | None = None
    #: the simulator profile when ``aicr-pytest validate --simulate`` started the cluster
    simulated: str | None = None
    # --- `aicr validate` drop-in flags (see aicr_pytest.core.runflags) ---------------
    #: ``--image``: the snapshot agent's image (``None``: ``--nvidia-smi-image``)
    image: str | None = None
    #: ``--job-name``: the snapshot agent Job's name prefix (``None``: the agent's own base)
    job_name: str | None = None
    #: ``--service-account-name``: accepted; the checks run in-process (no validator pod)
    service_account_name: str | None = None
    #: ``--timeout``: seconds (Go duration parsed)
    timeout_s: float = DEFAULT_TIMEOUT_S
    #: ``--reach-timeout``: seconds the one reachability request may take (kube.reach)
    reach_timeout_s: float = 10.0
    #: ``--clean-stale``: delete what earlier runs left, idle over ``stale_after_s`` (kube.stale)
    clean_stale: bool = False
    #: ``--stale-after``: seconds after which an earlier run's leftovers count as stale
    stale_after_s: float = 3600.0
    #: ``--require-gpu``: a snapshot without a GPU measurement fails the pre-flight
    require_gpu: bool = False
    #: ``--skip-check``: catalog checks reported skipped instead of run
    skip_checks: tuple[str, ...] = ()
    #: ``--debug`` / ``--log-json``: logging of the ``aicr_pytest`` logger (core.logsetup)
    debug: bool = False
    log_json: bool = False
    #: set by ``aicr-pytest validate``: load a named kubeconfig/context before any check runs
    check_kubeconfig: bool = False

    @property
    def active(self) -> bool:
        """The validator is active only when a recipe was given."""
        return self.recipe is not None


#: fields computed from other options' values, not set by an option of their own
DERIVED_FIELDS: frozenset[str] = frozenset({"phases_explicit"})


def build_settings(raw: Mapping[str, Any]) -> Settings:
    """Validate raw option values, keyed by :class:`Settings` field; one clear :class:`UsageError`.

    ``raw`` holds what the command line (or an environment variable, or the option's default)
    gave: ``phases``, ``node_selector`` and ``tolerations`` as the repeated strings, ``data`` and
    ``evidence_dir`` as strings; the :class:`Placement` fields keyed ``placement.<field>``.  Every
    other field is passed to :class:`Settings` as it is.
    """
    values = dict(raw)
    phase: Sequence[str] | None = values.pop("phases", None)
    phases = parse_phases(phase)
    if values.get("recipe") is None and (values.get("snapshot") or values.get("no_cluster") or phase):
        raise UsageError("--recipe is required")
    if values.get("no_cluster") and not values.get("snapshot"):
        raise UsageError("--no-cluster requires --snapshot; cannot capture a snapshot without cluster access")
    data: str | None = values.pop("data", None)
    data_path: Path | None = None
    if data is not None:
        data_path = Path(data).expanduser()
        if not data_path.is_dir():
            raise UsageError(f"--data {data}: not a directory")
        data_path = data_path.resolve()
    placed = [key for key in values if key.startswith(PLACEMENT_PREFIX)]
    placement = build_placement(**{key[len(PLACEMENT_PREFIX) :]: values.pop(key) for key in placed})
    evidence_dir = values.pop("evidence_dir", None)
    timeout = values.pop("timeout_s", None)
    timeout_s = parse_timeout(timeout) if isinstance(timeout, str) else timeout
    for key, flag in (("reach_timeout_s", "--reach-timeout"), ("stale_after_s", "--stale-after")):
        if isinstance(values.get(key), str):
            values[key] = parse_duration_flag(values[key], flag)
    values["skip_checks"] = tuple(v for v in (values.get("skip_checks") or ()) if v)
    values["gpu_health_thresholds"] = tuple(values.get("gpu_health_thresholds") or ())
    return Settings(
        timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
        **values,
        phases=tuple(phases),
        phases_explicit=bool(phase),
        data=data_path,
        placement=placement,
        evidence_dir=Path(evidence_dir) if evidence_dir else None,
    )
