"""The built-in check catalog and recipe-driven check selection.

The catalog is data, and the one place a check is named: every check AICR's ``aicr validate``
knows, with its phase, its timeout, a description and, as plain strings (core imports no other
package of aicr-pytest), where the rest of aicr-pytest finds it: the bundled test that runs it,
the family entry point a family dispatches to by name, the family's hooks module, its opt-in group
and the CNCF feature it evidences (the one place a feature is named, too).  Everything else derives
from these rows: which bundled file to import, which checks a bundled test function is parametrized
with (every conformance check is one parametrized test), ``aicr_pytest.conformance.CHECKS``, the
hook modules registered before a run, the groups' member lists and marker docs, the CNCF features
and the checklist's requirement → check map.
Catalog order is the execution and report order within a phase (as in AICR).

Every lookup reads :data:`CATALOG` when it is used, so a test adds a row by replacing the tuple
(``monkeypatch.setattr(catalog, "CATALOG", (*catalog.CATALOG, row))``).

Selection differs from AICR on purpose: AICR silently drops a declared check name that is not in
the catalog or that belongs to another phase, so users lose coverage without knowing.  We reject
both as usage errors (exit 2) and list the valid names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from aicr_pytest.core.errors import UsageError

PHASES: tuple[str, ...] = ("deployment", "conformance", "performance")

PHASE_DESCRIPTIONS: Mapping[str, str] = {
    "deployment": "deployment phase: are the components the recipe asks for installed and healthy?",
    "conformance": "conformance phase: does the cluster support DRA, gang scheduling, autoscaling, ...?",
    "performance": "performance phase: does the cluster hit the recipe's bandwidth/throughput thresholds?",
}


@dataclass(frozen=True)
class CncfFeature:
    """The CNCF AI-conformance feature a check evidences: the one place a feature is named.

    ``requirement``: the checklist template's requirement id (``secure_accelerator_access``);
    ``name``: the ``--feature`` spelling and evidence name, when it is not the check's own name;
    ``aliases``: further ``--feature`` spellings.
    """

    requirement: str
    name: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckSpec:
    """One catalog row.

    ``test``: the bundled test that runs the check, ``"<path under checks/>::<function>"``; a test
    function several rows name is parametrized once per row.  ``None``: no bundled test (only a
    user's test marked ``@pytest.mark.check(name)`` implements it).
    ``entry``: ``"<module>:<function>"`` of the family function the check runs, where the family
    dispatches by name (the conformance checks).
    ``hooks``: the family's hooks module (``pytest_aicr_prevalidate`` …), registered when the check
    is selected.
    ``cncf``: the CNCF AI-conformance feature whose evidence the check produces (:class:`CncfFeature`:
    the checklist requirement id, the ``--feature`` name and aliases); the feature's prose and
    evidence file are keyed by the requirement id (:mod:`aicr_pytest.evidence.cncf.features`).
    ``group``: an opt-in group of aicr-pytest extensions AICR's catalog does not have (``health``:
    the node-health checks; ``cncf-should``: the CNCF SHOULD checks); such a check runs only when the
    recipe names it or the group's flag asks for it (``--node-health``, ``--cncf-should``), and
    carries the group's marker (``-m health``, ``-m cncf-should``).
    """

    name: str
    phase: str
    timeout_s: int
    description: str
    test: str | None = None
    entry: str | None = None
    hooks: str | None = None
    cncf: CncfFeature | None = None
    group: str | None = None

    @property
    def cncf_feature(self) -> str | None:
        """The ``--feature`` name of the CNCF feature the check evidences (``None``: none)."""
        return None if self.cncf is None else self.cncf.name or self.name


#: the node-health group (``--node-health``, marker ``health``)
HEALTH: str = "health"
#: the CNCF SHOULD group (``--cncf-should``, marker ``cncf-should``): the SHOULD requirements of the
#: CNCF AI-conformance checklist that a cluster shows
CNCF_SHOULD: str = "cncf-should"


@dataclass(frozen=True)
class Group:
    """An opt-in group: what its checks are, the flag that asks for them and the
    :class:`~aicr_pytest.core.settings.Settings` field that flag sets."""

    title: str
    flag: str
    setting: str


#: the opt-in groups; a group's members are the rows that name it (:func:`names_in_group`)
GROUPS: Mapping[str, Group] = {
    HEALTH: Group("node-health checks", "--node-health", "node_health"),
    CNCF_SHOULD: Group("CNCF SHOULD checks", "--cncf-should", "cncf_should"),
}


def _m(minutes: int) -> int:
    return minutes * 60


_DEPLOYMENT = "deployment/test_deployment.py::"
_NODE_HEALTH = "deployment/test_node_health.py::"
_HEALTH_HOOKS = "aicr_pytest.health.hooks"
#: every conformance check: one parametrized test (the family function is the row's ``entry``)
_CONFORMANCE = "conformance/test_conformance.py::test_conformance"
_NCCL = "performance/test_nccl_all_reduce.py::test_nccl_all_reduce_bw"
_NCCL_HOOKS = "aicr_pytest.nccl.hooks"
_CRE = "performance/test_cre.py::"


def _conformance(module: str, function: str) -> str:
    return f"aicr_pytest.conformance.{module}:{function}"


CATALOG: tuple[CheckSpec, ...] = (
    CheckSpec(
        "operator-health",
        "deployment",
        _m(2),
        "GPU operator pods are running",
        test=_DEPLOYMENT + "test_operator_health",
    ),
    CheckSpec(
        "expected-resources",
        "deployment",
        _m(8),
        "component namespaces, expected resources, readiness signals and health checks",
        test=_DEPLOYMENT + "test_expected_resources",
    ),
    CheckSpec(
        "gpu-operator-version",
        "deployment",
        _m(2),
        "running GPU operator version meets the recipe",
        test=_DEPLOYMENT + "test_gpu_operator_version",
    ),
    CheckSpec(
        "check-nvidia-smi",
        "deployment",
        _m(10),
        "nvidia-smi runs on every GPU node",
        test=_DEPLOYMENT + "test_check_nvidia_smi",
    ),
    CheckSpec(  # upstream AICR v1.x
        "gke-gpu-nic-networks",
        "deployment",
        _m(2),
        "GKE GPU NIC networks for GPUDirect TCPXO (skipped unless the recipe declares gke-nccl-tcpxo)",
        test="deployment/test_gke_gpu_nics.py::test_gke_gpu_nic_networks",
    ),
    CheckSpec(  # upstream AICR main (code, not yet in its catalog)
        "gke-gpu-nic-topology",
        "deployment",
        _m(2),
        "no gVNIC displaces a GPU NIC on GKE a3-megagpu-8g nodes (skipped unless the recipe declares "
        "gke-nccl-tcpxo)",
        test="deployment/test_gke_gpu_nics.py::test_gke_gpu_nic_topology",
    ),
    # node health: aicr-pytest extensions AICR's catalog does not have; they run only when asked for
    # (`--node-health`, or the recipe names them)
    CheckSpec(
        "gpu-inventory",
        "deployment",
        _m(2),
        "every targeted GPU node hands out the GPUs it advertises; the nodes match",
        test=_NODE_HEALTH + "test_gpu_inventory",
        hooks=_HEALTH_HOOKS,
        group=HEALTH,
    ),
    CheckSpec(
        "gpu-diagnostics",
        "deployment",
        _m(5),
        "dcgmi diag on every targeted GPU node, in parallel (the level's own time budget)",
        test=_NODE_HEALTH + "test_gpu_diagnostics",
        hooks=_HEALTH_HOOKS,
        group=HEALTH,
    ),
    CheckSpec(
        "gpu-health",
        "deployment",
        _m(5),
        "no XID, uncorrectable ECC, row-remap or NVLink errors in the DCGM exporter over a window",
        test=_NODE_HEALTH + "test_gpu_health",
        hooks=_HEALTH_HOOKS,
        group=HEALTH,
    ),
    CheckSpec(
        "gpu-cuda-smoke",
        "deployment",
        _m(5),
        "a CUDA kernel runs on every GPU of every targeted GPU node, and /dev/nvidia-uvm* are present",
        test=_NODE_HEALTH + "test_gpu_cuda_smoke",
        hooks=_HEALTH_HOOKS,
        group=HEALTH,
    ),
    CheckSpec(
        "dra-support",
        "conformance",
        _m(5),
        "Dynamic Resource Allocation support",
        test=_CONFORMANCE,
        entry=_conformance("dra_support", "run_dra_support"),
        cncf=CncfFeature("dra_support", aliases=("dra",)),
    ),
    CheckSpec(
        "gang-scheduling",
        "conformance",
        _m(10),
        "gang scheduling with the KAI scheduler",
        test=_CONFORMANCE,
        entry=_conformance("gang_scheduling", "run_gang_scheduling"),
        cncf=CncfFeature("gang_scheduling", aliases=("gang",)),
    ),
    CheckSpec(
        "accelerator-metrics",
        "conformance",
        _m(5),
        "accelerator metrics from the DCGM exporter",
        test=_CONFORMANCE,
        entry=_conformance("accelerator_metrics", "run_accelerator_metrics"),
        cncf=CncfFeature("accelerator_metrics", aliases=("metrics",)),
    ),
    CheckSpec(
        "ai-service-metrics",
        "conformance",
        _m(5),
        "AI service metrics via Prometheus",
        test=_CONFORMANCE,
        entry=_conformance("ai_service_metrics", "run_ai_service_metrics"),
        cncf=CncfFeature("ai_service_metrics", aliases=("service-metrics",)),
    ),
    CheckSpec(
        "inference-gateway",
        "conformance",
        _m(5),
        "inference gateway is operational",
        test=_CONFORMANCE,
        entry=_conformance("inference_gateway", "run_inference_gateway"),
        cncf=CncfFeature("ai_inference", aliases=("gateway",)),
    ),
    CheckSpec(
        "pod-autoscaling",
        "conformance",
        _m(10),
        "HPA-driven pod autoscaling with GPU metrics",
        test=_CONFORMANCE,
        entry=_conformance("pod_autoscaling", "run_pod_autoscaling"),
        cncf=CncfFeature("pod_autoscaling", aliases=("hpa",)),
    ),
    CheckSpec(
        "cluster-autoscaling",
        "conformance",
        _m(10),
        "cluster autoscaling",
        test=_CONFORMANCE,
        entry=_conformance("cluster_autoscaling", "run_cluster_autoscaling"),
        cncf=CncfFeature("cluster_autoscaling"),
    ),
    CheckSpec(
        "robust-controller",
        "conformance",
        _m(5),
        "AI operator controller and webhooks",
        test=_CONFORMANCE,
        entry=_conformance("robust_controller", "run_robust_controller"),
        cncf=CncfFeature("robust_controller", "robust-operator", ("operator",)),
    ),
    CheckSpec(
        "secure-accelerator-access",
        "conformance",
        _m(10),
        "GPU access via DRA or device plugin only",
        test=_CONFORMANCE,
        entry=_conformance("secure_access", "run_secure_accelerator_access"),
        cncf=CncfFeature("secure_accelerator_access", "secure-access", ("secure",)),
    ),
    CheckSpec(
        "slinky-slurm-health",
        "conformance",
        _m(5),
        "Slinky Slurm controller and job submission",
        test=_CONFORMANCE,
        entry=_conformance("slinky", "run_slinky_slurm_health"),
    ),
    CheckSpec(
        "slinky-slurm-imex-channel",
        "conformance",
        _m(5),
        "IMEX channels for concurrent Slurm jobs",
        test=_CONFORMANCE,
        entry=_conformance("slinky", "run_slinky_slurm_imex_channel"),
    ),
    CheckSpec(  # upstream AICR v1.x
        "slinky-slurm-gpu-access",
        "conformance",
        _m(5),
        "Slurm GPU access and isolation for Slinky Slurm jobs",
        test=_CONFORMANCE,
        entry=_conformance("slinky_gpu_access", "run_slinky_slurm_gpu_access"),
    ),
    CheckSpec(
        "gpu-operator-health",
        "conformance",
        _m(2),
        "GPU operator health (diagnostic)",
        test=_CONFORMANCE,
        entry=_conformance("gpu_operator_health", "run_gpu_operator_health"),
    ),
    CheckSpec(
        "platform-health",
        "conformance",
        _m(5),
        "platform component health (diagnostic)",
        test=_CONFORMANCE,
        entry=_conformance("platform_health", "run_platform_health"),
    ),
    # CNCF SHOULD requirements: aicr-pytest extensions; they run only when asked for
    # (`--cncf-should`, or the recipe names them)
    CheckSpec(
        "gpu-sharing",
        "conformance",
        _m(2),
        "GPUs can be shared: MIG or time-slicing resources, or DRA partitions (CNCF SHOULD)",
        test=_CONFORMANCE,
        entry=_conformance("gpu_sharing", "run_gpu_sharing"),
        cncf=CncfFeature("gpu_sharing", aliases=("sharing",)),
        group=CNCF_SHOULD,
    ),
    CheckSpec(
        "driver-runtime-management",
        "conformance",
        _m(2),
        "one GPU driver and one container-runtime version across the GPU nodes (CNCF SHOULD)",
        test=_CONFORMANCE,
        entry=_conformance("driver_runtime", "run_driver_runtime_management"),
        cncf=CncfFeature("driver_runtime_management", aliases=("driver-runtime",)),
        group=CNCF_SHOULD,
    ),
    CheckSpec(
        "workload-sandboxing",
        "conformance",
        _m(5),
        "a sandboxed RuntimeClass (gVisor, Kata) runs a pod on a kernel of its own (CNCF SHOULD)",
        test=_CONFORMANCE,
        entry=_conformance("workload_sandboxing", "run_workload_sandboxing"),
        cncf=CncfFeature("workload_sandboxing", aliases=("sandboxing",)),
        group=CNCF_SHOULD,
    ),
    CheckSpec(
        "high-performance-networking",
        "conformance",
        _m(2),
        "RDMA-capable NICs are exposed to pods: DRA devices or extended resources (CNCF SHOULD)",
        test=_CONFORMANCE,
        entry=_conformance("hp_networking", "run_high_performance_networking"),
        cncf=CncfFeature("high_performance_networking", aliases=("rdma",)),
        group=CNCF_SHOULD,
    ),
    CheckSpec(
        "nccl-all-reduce-bw",
        "performance",
        _m(30),
        "NCCL all-reduce bus bandwidth",
        test=_NCCL,
        hooks=_NCCL_HOOKS,
    ),
    CheckSpec(
        "nccl-all-reduce-bw-net",
        "performance",
        _m(30),
        "NCCL all-reduce bandwidth over NET",
        test=_NCCL,
        hooks=_NCCL_HOOKS,
    ),
    CheckSpec(
        "nccl-all-reduce-bw-nvls",
        "performance",
        _m(30),
        "NCCL all-reduce bandwidth over NVLS",
        test=_NCCL,
        hooks=_NCCL_HOOKS,
    ),
    CheckSpec(  # upstream AICR v1.x
        "nccl-cre-all-reduce-bw",
        "performance",
        _m(30),
        "NCCL all-reduce bus bandwidth through an NVCRE Certification",
        test=_CRE + "test_nccl_cre_all_reduce_bw",
    ),
    CheckSpec(  # upstream AICR v1.x
        "cre-training-goodput",
        "performance",
        _m(30),
        "NeMo training goodput through an NVCRE Certification",
        test=_CRE + "test_cre_training_goodput",
    ),
    CheckSpec(
        "inference-perf",
        "performance",
        _m(65),
        "Dynamo + vLLM inference throughput and TTFT",
        test="performance/test_inference_perf.py::test_inference_perf",
        hooks="aicr_pytest.inference.hooks",
    ),
)

_V = TypeVar("_V")


class _Derived(Mapping[str, _V]):
    """A read-only mapping built from the current :data:`CATALOG` (rebuilt when it is replaced)."""

    def __init__(self, build: Callable[[Sequence[CheckSpec]], dict[str, _V]]) -> None:
        self._build = build
        self._rows: tuple[CheckSpec, ...] | None = None
        self._data: dict[str, _V] = {}

    def _current(self) -> dict[str, _V]:
        if self._rows is not CATALOG:
            self._rows, self._data = CATALOG, self._build(CATALOG)
        return self._data

    def __getitem__(self, key: str) -> _V:
        return self._current()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())


BY_NAME: Mapping[str, CheckSpec] = _Derived(lambda rows: {c.name: c for c in rows})
CATALOG_INDEX: Mapping[str, int] = _Derived(lambda rows: {c.name: i for i, c in enumerate(rows)})


def bundled_file(spec: CheckSpec) -> str | None:
    """The file (relative to the bundled ``checks/``) of ``spec``'s bundled test."""
    return spec.test.partition("::")[0] if spec.test else None


def names_of_test(test: str) -> list[str]:
    """The checks (catalog order) whose bundled test is ``test`` (``"<file>::<function>"``)."""
    return [c.name for c in CATALOG if c.test == test]


def names_in_file(path: str) -> frozenset[str]:
    """The checks whose bundled test lives in ``path`` (relative to the bundled ``checks/``)."""
    return frozenset(c.name for c in CATALOG if bundled_file(c) == path)


def hook_modules(names: Iterable[str]) -> list[str]:
    """The family hooks modules of the checks ``names``, each once, in catalog order."""
    wanted = set(names)
    modules: list[str] = []
    for spec in CATALOG:
        if spec.name in wanted and spec.hooks and spec.hooks not in modules:
            modules.append(spec.hooks)
    return modules


def check_of_feature(feature: str) -> str:
    """The one check whose row names CNCF feature ``feature`` (``LookupError`` unless exactly one)."""
    names = [c.name for c in CATALOG if c.cncf_feature == feature]
    if len(names) != 1:
        raise LookupError(f"CNCF feature {feature!r} is evidenced by {len(names)} catalog checks, not 1")
    return names[0]


def cncf_rows() -> list[CheckSpec]:
    """The checks that evidence a CNCF feature, in catalog order."""
    return [c for c in CATALOG if c.cncf is not None]


def names_in_phase(phase: str) -> list[str]:
    return [c.name for c in CATALOG if c.phase == phase]


def nccl_all_reduce_checks() -> list[str]:
    """The NCCL all-reduce checks (the bundled ``test_nccl_all_reduce_bw``), in catalog order:
    the checks ``--isolate-bad-nodes`` acts on."""
    return names_of_test(_NCCL)


def names_in_group(group: str) -> list[str]:
    """The checks of opt-in group ``group``, in catalog order."""
    return [c.name for c in CATALOG if c.group == group]


def group_marker_doc(group: str) -> str:
    """The ``-m <group>`` marker's description: the group's members, from the rows."""
    spec = GROUPS[group]
    return (
        f"{spec.title} ({', '.join(names_in_group(group))}); `-m {group}` runs them "
        f"(as {spec.flag} does) and nothing else"
    )


def parse_phases(values: Sequence[str] | None) -> list[str]:
    """Validate ``--phase`` values (repeatable) the way ``aicr validate`` does.

    Returns phases in the order given (explicit phases run in command-line order); duplicates are
    dropped; ``all`` alone (or nothing) means every phase in the default order.
    """
    if not values:
        return list(PHASES)
    seen: list[str] = []
    for raw in values:
        for value in raw.split(","):
            value = value.strip()
            if value not in (*PHASES, "all"):
                raise UsageError(
                    f'invalid phase "{value}": must be one of: deployment, performance, conformance, all'
                )
            if value not in seen:
                seen.append(value)
    if "all" in seen:
        if len(seen) > 1:
            raise UsageError('phase "all" cannot be combined with other phases')
        return list(PHASES)
    return seen


@dataclass(frozen=True)
class SelectedCheck:
    spec: CheckSpec
    order: int  # position in the run: phase order, then catalog order


def select_checks(
    declared: Mapping[str, Sequence[str]],
    phases: Sequence[str],
    catalog: Iterable[CheckSpec] | None = None,
) -> list[SelectedCheck]:
    """catalog ∩ ``validation.<phase>.checks``, ordered by phase then catalog order.

    ``declared`` maps each phase the recipe declares to its check names.  Every declared name is
    validated (also for phases not selected with ``--phase``): an unknown name or a name listed
    under the wrong phase is a :class:`UsageError` listing the valid names.
    """
    entries = list(CATALOG if catalog is None else catalog)
    by_name = {c.name: c for c in entries}
    problems: list[str] = []
    for phase in PHASES:
        for name in declared.get(phase, ()):
            spec = by_name.get(name)
            if spec is None:
                problems.append(f'unknown check "{name}" in validation.{phase}.checks')
            elif spec.phase != phase:
                problems.append(
                    f'check "{name}" is listed under validation.{phase}.checks but belongs to the '
                    f"{spec.phase} phase"
                )
    for phase in declared:
        if phase not in PHASES:
            problems.append(
                f'invalid validation phase "{phase}" (valid: deployment, conformance, performance)'
            )
    if problems:
        valid = "; ".join(
            f"{phase}: {', '.join(c.name for c in entries if c.phase == phase)}" for phase in PHASES
        )
        raise UsageError(f"{'; '.join(problems)} (valid checks — {valid})")

    selected: list[SelectedCheck] = []
    for phase in phases:
        wanted = set(declared.get(phase, ()))
        for spec in entries:
            if spec.phase == phase and spec.name in wanted:
                selected.append(SelectedCheck(spec, len(selected)))
    return selected
