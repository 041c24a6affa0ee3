"""The one object a conformance check function receives: :class:`ConformanceContext`.

Every check is a plain function ``run_<check>(ctx) -> None`` (``conformance/<check>.py``). It reads
the cluster through ``ctx.cluster``, creates objects through ``ctx.run`` (run-scoped names, labels
and cleanup), records evidence with ``ctx.record(label, data, equivalent)`` (AICR's ``--- label ---``
blocks, printed through ``ctx.emit`` and kept as structured data), waits on ``ctx.clock`` within
``ctx.deadline``, and raises to report anything but a pass (:mod:`aicr_pytest.conformance.common`).

Nothing here imports pytest: the bundled pytest checks build a context from their fixtures, and
the CNCF evidence collector builds one outside pytest (:meth:`ConformanceContext.create`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aicr_pytest.conformance.common import inner_tolerations
from aicr_pytest.core import components
from aicr_pytest.core.allocmode import normalize_policy
from aicr_pytest.core.artifacts import Artifact, ArtifactRecorder
from aicr_pytest.core.clock import SYSTEM_CLOCK, Clock
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.run import RunScope

Emit = Callable[[str], None]


@dataclass
class ConformanceContext:
    """What a conformance check knows and uses (see the module docstring).

    * ``check`` -- the catalog name (``dra-support``...);
    * ``cluster``, ``run`` -- the facade and the run scope (objects the check creates go through it);
    * ``artifacts`` -- the evidence recorder; ``emit`` -- plain stdout lines (progress notes);
    * ``component_refs`` -- the recipe's componentRefs as dicts, enabled *and* disabled (use
      :meth:`has_component`/:meth:`component` for AICR's "present and enabled");
    * ``allocation_policy`` -- the resolved GPU allocation policy (``unspecified`` without a recipe);
    * ``tolerations`` -- ``--toleration`` in Kubernetes form, ``None`` when not given (inner pods then
      tolerate everything: :meth:`inner_tolerations`);
    * ``clock``, ``timeout_s``, ``started`` -- time; ``deadline`` = ``started + timeout_s``;
    * ``env`` -- the environment the check may read (``AICR_*`` knobs), never ``os.environ`` directly;
    * ``criteria`` -- the recipe's criteria (``service``, ``accelerator``...; only the keys it sets).
    """

    check: str
    cluster: Cluster
    run: RunScope
    artifacts: ArtifactRecorder
    emit: Emit
    component_refs: tuple[dict[str, Any], ...] = ()
    allocation_policy: str = "unspecified"
    tolerations: tuple[dict[str, str], ...] | None = None
    clock: Clock = SYSTEM_CLOCK
    timeout_s: float = 300.0
    started: float = field(default=-1.0)
    env: Mapping[str, str] = field(default_factory=dict)
    criteria: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.clock.time()
        self.allocation_policy = normalize_policy(self.allocation_policy)

    @classmethod
    def create(
        cls,
        check: str,
        cluster: Cluster,
        run: RunScope,
        emit: Emit,
        *,
        component_refs: Iterable[Mapping[str, Any] | Any] = (),
        allocation_policy: str | None = None,
        tolerations: Sequence[Mapping[str, str]] | None = None,
        clock: Clock = SYSTEM_CLOCK,
        timeout_s: float = 300.0,
        env: Mapping[str, str] | None = None,
        secrets: Sequence[str] = (),
        criteria: Mapping[str, object] | None = None,
    ) -> ConformanceContext:
        """Build a context from plain values (component refs as dicts or recipe models)."""
        return cls(
            check=check,
            cluster=cluster,
            run=run,
            artifacts=ArtifactRecorder(emit=emit, secrets=tuple(secrets)),
            emit=emit,
            component_refs=tuple(components.ref_dict(r) for r in component_refs),
            allocation_policy=allocation_policy or "unspecified",
            tolerations=None if tolerations is None else tuple(dict(t) for t in tolerations),
            clock=clock,
            timeout_s=float(timeout_s),
            env=dict(env or {}),
            criteria={str(k): str(v) for k, v in (criteria or {}).items() if v is not None and v != ""},
        )

    # -- evidence -------------------------------------------------------------------------------------
    def record(self, label: str, data: object, equivalent: str | None = None) -> Artifact:
        """Record one evidence artifact (printed as AICR's block and kept as structured data)."""
        return self.artifacts.record(label, data, equivalent)

    def artifacts_json(self) -> list[dict[str, Any]]:
        """The artifacts as CTRF ``extra["aicr.artifacts"]`` carries them."""
        return self.artifacts.to_json()

    # -- time -----------------------------------------------------------------------------------------
    @property
    def deadline(self) -> float:
        return self.started + self.timeout_s

    def remaining(self) -> float:
        """Seconds until the check's deadline (negative once it passed)."""
        return self.deadline - self.clock.time()

    def bounded(self, seconds: float) -> float:
        """``seconds``, cut to what is left before the deadline (never negative)."""
        return max(0.0, min(seconds, self.remaining()))

    # -- recipe ---------------------------------------------------------------------------------------
    @property
    def has_recipe(self) -> bool:
        """Whether the run has any componentRefs (AICR's scoping differs for standalone runs)."""
        return bool(self.component_refs)

    def component(self, name: str) -> dict[str, Any] | None:
        """The enabled ref called ``name``, or ``None`` (absent or ``overrides.enabled: false``)."""
        return components.enabled_ref(self.component_refs, name)

    def has_component(self, name: str) -> bool:
        """AICR's ``recipeHasComponent``: present and enabled."""
        return self.component(name) is not None

    def component_namespace(self, name: str, default: str) -> str:
        """The enabled ref's namespace (trimmed), else ``default``."""
        return components.ref_namespace(self.component(name), default)

    def enabled_refs(self) -> list[dict[str, Any]]:
        return components.enabled_refs(self.component_refs)

    # -- inner pods -----------------------------------------------------------------------------------
    def inner_tolerations(self) -> list[dict[str, str]]:
        """Tolerations for the check's inner test pods (``--toleration``, else tolerate all)."""
        return inner_tolerations(self.tolerations)


class _Toleration(Protocol):
    def to_k8s(self) -> dict[str, str]: ...


class CheckInfo(Protocol):
    """What :func:`context_for_check` reads of the plugin's ``aicr_check`` fixture (no plugin import)."""

    @property
    def name(self) -> str: ...

    @property
    def timeout_s(self) -> float: ...

    @property
    def tolerations(self) -> Sequence[_Toleration] | None: ...

    def emit(self, line: str) -> None: ...


def context_for_check(
    check: CheckInfo,
    cluster: Cluster,
    run: RunScope,
    *,
    component_refs: Iterable[Mapping[str, Any] | Any],
    allocation_policy: str,
    clock: Clock,
    env: Mapping[str, str] | None = None,
    criteria: Mapping[str, object] | None = None,
) -> ConformanceContext:
    """The context of a bundled pytest check, from its fixtures (``aicr_check``, ``aicr_cluster``,
    ``aicr_run``, ``aicr_recipe.component_refs``, ``aicr_allocation_policy.mode``, ``aicr_clock``;
    ``criteria``: the recipe's criteria, e.g. ``aicr_recipe.criteria.model_dump()``; unset ones are
    dropped)."""
    tolerations = None if check.tolerations is None else [t.to_k8s() for t in check.tolerations]
    return ConformanceContext.create(
        check.name,
        cluster,
        run,
        check.emit,
        component_refs=component_refs,
        allocation_policy=allocation_policy,
        tolerations=tolerations,
        clock=clock,
        timeout_s=check.timeout_s,
        env=env,
        criteria=criteria,
    )


__all__ = ["CheckInfo", "ConformanceContext", "Emit", "context_for_check"]
