"""THE option table: every option and argument of aicr-pytest, declared once.

One :class:`Option` per option says how it is spelled on each entry point (plain ``pytest``,
``aicr-pytest validate`` and every other subcommand), its action, type, default, environment
variable, metavar and help, and which :class:`~aicr_pytest.core.settings.Settings` field it fills.
Generated from :data:`OPTIONS`:

* ``pytest_addoption`` (:func:`add_pytest_options`), under ``pytest`` dest ``aicr_<name>``;
* every subcommand's argparse arguments (:func:`add_argparse_options`, the only place the command
  line declares any), dest ``<name>``;
* the pytest arguments ``validate`` forwards (:func:`forwarded_args`);
* a run's :class:`Settings` (:func:`build_run_settings`): option value, else the environment
  variable, else the default;
* the evidence family's :class:`~aicr_pytest.evidence.settings.EvidenceSettings`
  (:func:`build_evidence_settings`), the same way, from the entries whose ``model`` is
  ``"evidence"`` (the family itself declares no option and never imports the plugin);
* the values the other subcommands run with (:func:`command_values`): a single-value flag given
  once, else its environment variable, else its default.  The families (snapshot, recipegen,
  evidence, nccl, inference) receive those values and declare no argument of their own.

An entry belongs either to a validation run (:data:`RUN`: pytest and ``validate``) or to other
subcommands (:data:`COMMANDS`); a name is unique per entry point.

A pytest spelling that another plugin owns when it is installed (``--html`` of pytest-html) is
declared in ``ceded_flags``: pytest then registers the option without it (two plugins cannot
register one flag), and ``validate`` always forwards a spelling that is never ceded.

Adding a flag is one entry here (plus, when checks read it, the ``Settings`` field it names; a test
keeps the table and the model in step).  The help of every run option ends the same way:
``(default: X; env AICR_Y)`` for whichever of the two it has; a subcommand's help is its own text.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from aicr_pytest import __version__
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.settings import (
    DEFAULT_DCGM_IMAGE,
    DEFAULT_NAMESPACE,
    DEFAULT_NVIDIA_SMI_IMAGE,
    DEFAULT_TIMEOUT,
    Settings,
    build_settings,
    parse_bool,
)
from aicr_pytest.evidence import settings as evidence_settings
from aicr_pytest.evidence.cncf import settings as cncf_settings

#: where an option is given: plain ``pytest``, and each ``aicr-pytest`` subcommand (``aicr-pytest``
#: itself for ``--version``)
EntryPoint = Literal[
    "pytest",
    "validate",
    "aicr-pytest",
    "simulate",
    "recipe",
    "snapshot",
    "evidence verify",
    "parse nccl",
    "parse aiperf",
    "cncf check",
    "parse dcgm",
    "history",
    "compare",
]
PYTEST: Final = "pytest"
VALIDATE: Final = "validate"
PROGRAM: Final = "aicr-pytest"
SIMULATE: Final = "simulate"
RECIPE: Final = "recipe"
SNAPSHOT: Final = "snapshot"
EVIDENCE_VERIFY: Final = "evidence verify"
PARSE_NCCL: Final = "parse nccl"
PARSE_AIPERF: Final = "parse aiperf"
CNCF_CHECK: Final = "cncf check"
PARSE_DCGM: Final = "parse dcgm"
HISTORY: Final = "history"
COMPARE: Final = "compare"
BOTH: Final[tuple[EntryPoint, ...]] = (PYTEST, VALIDATE)
#: the entry points of a validation run, whose options resolve through :func:`resolve`
RUN: Final[tuple[EntryPoint, ...]] = BOTH
#: every other subcommand: its options resolve through :func:`command_values`
COMMANDS: Final[tuple[EntryPoint, ...]] = (
    PROGRAM,
    SIMULATE,
    RECIPE,
    SNAPSHOT,
    EVIDENCE_VERIFY,
    PARSE_NCCL,
    PARSE_AIPERF,
    CNCF_CHECK,
    PARSE_DCGM,
    HISTORY,
    COMPARE,
)

#: ``store`` a value; ``store_true`` a switch; ``append`` a repeatable value; ``bool`` ``--x[=BOOL]``;
#: ``version`` prints ``default`` and exits
Action = Literal["store", "store_true", "append", "bool", "version"]

#: the settings object an option's ``setting`` names a field of: the run's :class:`Settings`, or
#: the evidence family's :class:`~aicr_pytest.evidence.settings.EvidenceSettings`
Model = Literal["run", "evidence"]

#: the pytest option group every entry goes to
PYTEST_GROUP = ("aicr", "aicr-pytest: validate a GPU Kubernetes cluster against a recipe")

#: ``aicr-pytest snapshot``'s ``--namespace`` default (``aicr snapshot``'s; validate's differs)
SNAPSHOT_NAMESPACE: Final = "default"

#: a single-value subcommand flag given twice (AICR's words)
MSG_REPEATED: Final = "flag --{flag} can only be specified once"
#: a subcommand's boolean environment variable that is not a boolean
MSG_BAD_ENV_BOOL: Final = 'invalid {name}="{value}" (use true or false)'


@functools.cache
def module_installed(module: str) -> bool:
    """Whether ``module`` can be imported here (checked once per process)."""
    return importlib.util.find_spec(module) is not None


@dataclass(frozen=True)
class Option:
    """One option, on every entry point that takes it."""

    #: the value's key: argparse dest under ``validate``, ``aicr_<name>`` under pytest
    name: str
    #: the long flag(s), on every entry point that takes the option
    flags: tuple[str, ...]
    help: str
    #: the field the value fills (of :class:`Settings`, or of the ``model`` named below;
    #: ``placement.<field>``: of the run's :class:`~aicr_pytest.core.settings.Placement`);
    #: ``None``: the entry point consumes it itself
    setting: str | None
    entry_points: tuple[EntryPoint, ...] = BOTH
    #: spellings that differ per entry point (pytest reserves lowercase short flags: ``-k``, ``-o``)
    pytest_flags: tuple[str, ...] | None = None
    validate_flags: tuple[str, ...] | None = None
    action: Action = "store"
    type: Callable[[str], Any] | None = None
    #: what the run uses when neither the flag nor the environment variable gives a value
    default: Any = None
    #: how the help shows the default when it is not a plain value (e.g. a lookup order)
    default_text: str | None = None
    env: str | None = None
    metavar: str | None = None
    required_by: tuple[EntryPoint, ...] = ()
    #: an internal channel between entry points: not listed in any ``--help``
    hidden: bool = False
    #: ``(flag, module)``: a pytest spelling left to the plugin ``module`` when it is installed
    ceded_flags: tuple[tuple[str, str], ...] = ()
    model: Model = "run"
    #: dotted key under an AICRConfig's ``spec.validate`` (``--config``): flag/env > config > default
    config_key: str | None = None
    #: a positional argument (``flags`` is then its name), with ``nargs`` when it takes several
    positional: bool = False
    nargs: str | None = None
    choices: tuple[str, ...] | None = None
    #: a single-value subcommand flag that may be given only once (:data:`MSG_REPEATED`)
    once: bool = False
    #: the ``--help`` group it is listed under (a subcommand's); ``None``: the parser's own list
    group: str | None = None

    def takes(self, entry_point: EntryPoint) -> bool:
        return entry_point in self.entry_points

    @property
    def run_option(self) -> bool:
        """An option of a validation run (plain pytest or ``validate``), not of another subcommand."""
        return any(ep in RUN for ep in self.entry_points)

    def flags_for(self, entry_point: EntryPoint) -> tuple[str, ...]:
        if self.positional:
            return (self.name,)
        override = self.pytest_flags if entry_point == PYTEST else self.validate_flags
        flags = override if override is not None else self.flags
        if entry_point == PYTEST and self.ceded_flags:
            owners = dict(self.ceded_flags)
            flags = tuple(f for f in flags if f not in owners or not module_installed(owners[f]))
        return flags

    def dest_for(self, entry_point: EntryPoint) -> str:
        return f"aicr_{self.name}" if entry_point == PYTEST else self.name

    def shown_default(self) -> str | None:
        """The default as the help states it (``None``: the help states none)."""
        if self.default_text is not None:
            return self.default_text
        if self.default is None or self.action in ("store_true", "append"):
            return None
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return str(self.default)

    def help_text(self) -> str:
        """The help line: a run option's ends ``(default: X; env AICR_Y)``; a subcommand's help is
        its own words (they state its default and env var where it has them)."""
        if not self.run_option:
            return self.help
        notes = []
        default = self.shown_default()
        if default is not None:
            notes.append(f"default: {default}")
        if self.env:
            notes.append(f"env {self.env}")
        return f"{self.help} ({'; '.join(notes)})" if notes else self.help

    def add_kwargs(self, entry_point: EntryPoint) -> dict[str, Any]:
        """Keyword arguments for ``add_argument``/``addoption``: the same on both parsers.

        The parser default is always ``None`` so that :func:`resolve` can tell "not given" from
        "given"; the declared default applies after the environment variable.
        """
        help_text = argparse.SUPPRESS if self.hidden else self.help_text()
        if self.action == "version":
            return {"action": "version", "version": self.default, "help": help_text}
        kwargs: dict[str, Any] = {} if self.positional else {"dest": self.dest_for(entry_point)}
        if not self.positional:
            # a subcommand's own default goes to argparse, unless the value still has an
            # environment variable or a repeat check to go through (:func:`command_values`)
            plain = entry_point in COMMANDS and not (self.env or self.once)
            kwargs["default"] = self.default if plain else None
        kwargs["help"] = help_text
        if self.action == "bool":
            kwargs.update(type=self.type or parse_bool, nargs="?", const=True)
            if self.once:
                kwargs["action"] = "append"
        else:
            kwargs["action"] = "append" if self.once else self.action
            if self.type is not None:
                kwargs["type"] = self.type
        if self.nargs is not None:
            kwargs["nargs"] = self.nargs
        if self.choices is not None:
            kwargs["choices"] = self.choices
        if self.metavar is not None and self.action != "store_true":
            kwargs["metavar"] = self.metavar
        if entry_point in self.required_by:
            kwargs["required"] = True
        return kwargs

    def long_flag(self, entry_point: EntryPoint) -> str:
        """The spelling :meth:`to_args` uses: the first long flag that is never ceded."""
        ceded = {flag for flag, _ in self.ceded_flags} if entry_point == PYTEST else set()
        flags = [f for f in self.flags_for(entry_point) if f not in ceded]
        return next((f for f in flags if f.startswith("--")), flags[0])

    def to_args(self, entry_point: EntryPoint, value: Any) -> list[str]:
        """The command-line arguments that give ``value`` on ``entry_point`` (``[]`` for none).

        Values are attached with ``=``, so one that starts with ``-`` is never read as a flag.
        """
        flag = self.long_flag(entry_point)
        if value is None:
            return []
        if self.action == "store_true":
            return [flag] if value else []
        if self.action == "append":
            return [f"{flag}={item}" for item in value]
        if self.action == "bool":
            return [f"{flag}={'true' if value else 'false'}"]
        return [f"{flag}={value}"]


#: ``--aks-gpu-pools``, ``--gke-gpu-pools``, ``--oke-addons`` (validate and snapshot): name, flag,
#: env, the provider command, what is read, the reading's key
PROVIDER_FLAGS: Final = (
    (
        "aks_gpu_pools",
        "aks-gpu-pools",
        "AICR_AKS_GPU_POOLS_PATH",
        "az aks nodepool list -o json",
        "GPU pools' driver mode",
        "gpu-driver",
    ),
    (
        "gke_gpu_pools",
        "gke-gpu-pools",
        "AICR_GKE_GPU_POOLS_PATH",
        "gcloud container node-pools list --cluster C --format=json",
        "GPU pools' driver installation",
        "gpu-driver-installation",
    ),
    (
        "oke_addons",
        "oke-addons",
        "AICR_OKE_ADDONS_PATH",
        "oci ce cluster list-addons --cluster-id OCID --all --output json",
        "NvidiaGpuPlugin add-on state",
        "nvidia-gpu-plugin",
    ),
)

OPTIONS: tuple[Option, ...] = (
    Option(
        "recipe",
        ("--recipe",),
        "recipe (RecipeResult) to validate against: a file, https:// URL or cm://namespace/name; "
        "activates the validator (`aicr-pytest validate` requires it unless --cncf-submission)",
        setting="recipe",
        pytest_flags=("--recipe", "--aicr-recipe"),
        validate_flags=("-r", "--recipe"),
        metavar="PATH|URL|cm://NS/NAME",
        # argparse does not enforce it: `aicr-pytest validate` does (or --config gives it), unless
        # --cncf-submission
        config_key="input.recipe",
    ),
    Option(
        "snapshot",
        ("--snapshot",),
        "cluster snapshot for readiness and snapshot constraints: a file, https:// URL or "
        "cm://namespace/name; `aicr-pytest validate` captures one when it is omitted",
        setting="snapshot",
        validate_flags=("-s", "--snapshot"),
        metavar="PATH|URL|cm://NS/NAME",
        config_key="input.snapshot",
    ),
    Option(
        "phase",
        ("--phase",),
        "deployment|conformance|performance|all; repeatable, run in the order given",
        setting="phases",
        action="append",
        default_text="all",
        metavar="PHASE",
        config_key="execution.phases",
    ),
    Option(
        "no_cluster",
        ("--no-cluster",),
        "offline: evaluate the snapshot only, skip behavioral checks (needs --snapshot)",
        setting="no_cluster",
        action="store_true",
        default=False,
        config_key="execution.noCluster",
    ),
    Option(
        "fail_fast",
        ("--fail-fast",),
        "skip later phases after a phase ends failed or other",
        setting="fail_fast",
        action="store_true",
        default=False,
        config_key="execution.failFast",
    ),
    Option(
        "fail_on_error",
        ("--fail-on-error",),
        "exit 8 when a phase fails; --fail-on-error=false reports only",
        setting=None,
        entry_points=(VALIDATE,),
        action="bool",
        default=True,
        metavar="BOOL",
        config_key="execution.failOnError",
    ),
    Option(
        "output",
        ("--output",),
        "CTRF report destination: a file path, cm://namespace/name (a ConfigMap, kept after the run), "
        "or - for stdout",
        setting=None,
        entry_points=(VALIDATE,),
        validate_flags=("-o", "--output"),
        default="-",
        metavar="PATH|cm://NS/NAME|-",
    ),
    Option(
        "ctrf_report",
        ("--ctrf-report",),
        "write a CTRF JSON report ('-' for stdout)",
        setting="ctrf_report",
        entry_points=(PYTEST,),
        metavar="PATH|-",
    ),
    Option(
        "data",
        ("--data",),
        "external data tree layered over the embedded recipes/ data",
        setting="data",
        metavar="DIR",
    ),
    Option(
        "node_selector",
        ("--node-selector",),
        "node selector for inner GPU workloads (repeatable)",
        setting="placement.node_selector",
        action="append",
        metavar="KEY=VALUE",
        config_key="agent.nodeSelector",
    ),
    Option(
        "toleration",
        ("--toleration",),
        "toleration for inner GPU workloads (repeatable; '*' tolerates all)",
        setting="placement.tolerations",
        action="append",
        metavar="KEY=VALUE:EFFECT",
        config_key="agent.tolerations",
    ),
    Option(
        "kubeconfig",
        ("--kubeconfig",),
        "kubeconfig path",
        setting="kubeconfig",
        validate_flags=("-k", "--kubeconfig"),
        default_text="KUBECONFIG, then in-cluster config, then ~/.kube/config",
        metavar="PATH",
    ),
    Option(
        "kube_context",
        ("--kube-context",),
        "kubeconfig context",
        setting="kube_context",
        metavar="NAME",
    ),
    Option(
        "no_cleanup",
        ("--no-cleanup",),
        "keep the objects a run creates and print kubectl commands to inspect/delete them",
        setting="no_cleanup",
        action="store_true",
        default=False,
        config_key="execution.noCleanup",
    ),
    Option(
        "allow_fake_nodes",
        ("--allow-fake-nodes",),
        "accept pods on nodes KWOK marks as fake (kwok.x-k8s.io/node=fake) as having run; without it a "
        "check whose pod ran there is other (no proof of execution)",
        setting="allow_fake_nodes",
        action="store_true",
        default=False,
        config_key="execution.allowFakeNodes",
    ),
    Option(
        "nvidia_smi_image",
        ("--nvidia-smi-image",),
        "CUDA image for check-nvidia-smi",
        setting="nvidia_smi_image",
        default=DEFAULT_NVIDIA_SMI_IMAGE,
        env="AICR_NVIDIA_SMI_IMAGE",
        metavar="IMAGE",
    ),
    # --- node health (gpu-inventory, gpu-diagnostics, gpu-health): read by checks/deployment/
    # test_node_health.py; the knobs are validated up front by aicr_pytest.health.hooks ---------
    Option(
        "node_health",
        ("--node-health",),
        "add the node-health checks (gpu-inventory, gpu-diagnostics, gpu-health) to the deployment "
        "phase; an aicr-pytest extension (a recipe may also name them; AICR's aicr rejects that recipe)",
        setting="node_health",
        action="store_true",
        default=False,
        config_key="execution.nodeHealth",
    ),
    # --- NCCL bad-node isolation: read by checks/performance/test_nccl_all_reduce.py; refused up
    # front (aicr_pytest.core.inputs) when the run selects no NCCL check -------------------------
    Option(
        "isolate_bad_nodes",
        ("--isolate-bad-nodes",),
        "when an NCCL all-reduce check misses its floor or a worker fails, rerun it on node subsets "
        "(at most ceil(log2 n)+1 rounds) and name the suspect nodes; opt-in: reruns cost GPU time",
        setting="isolate_bad_nodes",
        action="store_true",
        default=False,
        config_key="execution.isolateBadNodes",
    ),
    Option(
        "dcgm_image",
        ("--dcgm-image",),
        "DCGM image for gpu-diagnostics' dcgmi diag pods, for air-gapped clusters",
        setting="dcgm_image",
        default=DEFAULT_DCGM_IMAGE,
        env="AICR_DCGM_IMAGE",
        metavar="IMAGE",
    ),
    Option(
        "dcgm_diag_level",
        ("--dcgm-diag-level",),
        "dcgmi diag run level for gpu-diagnostics: 1 (seconds) to 4 (hours), or quick, medium, long, xlong",
        setting="dcgm_diag_level",
        default="1",
        env="AICR_DCGM_DIAG_LEVEL",
        metavar="LEVEL",
    ),
    Option(
        "gpu_health_window",
        ("--gpu-health-window",),
        "seconds (or a Go duration: 30s, 2m) between gpu-health's two DCGM exporter scrapes, at most 1h",
        setting="gpu_health_window",
        default_text="60s",
        env="AICR_GPU_HEALTH_WINDOW",
        metavar="DURATION",
    ),
    Option(
        "gpu_health_threshold",
        ("--gpu-health-threshold",),
        "a gpu-health threshold KEY=VALUE (repeatable): ecc_dbe_max, remapped_rows_max, "
        "nvlink_errors_max (new errors allowed over the window, default 0), xid_ignore (XID codes), "
        "xid_window_only (true: only an XID raised during the window fails), required (DCGM fields)",
        setting="gpu_health_thresholds",
        action="append",
        metavar="KEY=VALUE",
    ),
    Option(
        "evidence_dir",
        ("--evidence-dir",),
        "write evidence files here: plots, logs and the CNCF evidence markdown (one file per "
        "conformance check plus index.md; with --cncf-submission, one per feature)",
        setting="evidence_dir",
        metavar="DIR",
    ),
    # --- CNCF AI-conformance evidence: read by plugin/cncf_wiring.py ---------------------
    Option(
        "cncf_submission",
        ("--cncf-submission",),
        "collect CNCF AI-conformance submission evidence (one file per feature) into --evidence-dir "
        "instead of running the phases",
        setting=None,
        action="store_true",
        default=False,
    ),
    Option(
        "feature",
        ("--feature",),
        "with --cncf-submission: collect only this feature (repeatable; name, alias, CNCF requirement "
        "id or all)",
        setting=None,
        default_text="every feature",
        # pytest-xdist owns -f (--looponfail) under plain pytest
        validate_flags=("-f", "--feature"),
        action="append",
        metavar="FEATURE",
    ),
    Option(
        "cncf_should",
        ("--cncf-should",),
        "add the CNCF SHOULD checks (gpu-sharing, driver-runtime-management, workload-sandboxing, "
        "high-performance-networking) to the conformance phase, and with --cncf-submission to the "
        "features collected; an aicr-pytest extension",
        setting="cncf_should",
        action="store_true",
        default=False,
        config_key="execution.cncfShould",
    ),
    # --- CNCF submission kit: the checklist template and PRODUCT.yaml's metadata -----------
    Option(
        "cncf_checklist",
        ("--cncf-checklist",),
        "with --cncf-submission: the program's checklist template (KubernetesAIConformance-1.xx.yaml) "
        "to fill into PRODUCT.yaml, with results/junit.xml and results/e2e.log, in --evidence-dir",
        setting=None,
        metavar="FILE",
        config_key="cncf.checklist",
    ),
    *(
        Option(
            f"cncf_{field}",
            (flag,),
            f"with --cncf-checklist: PRODUCT.yaml's metadata.{key}",
            setting=None,
            metavar=metavar,
            config_key=f"cncf.{key}",
        )
        for field, flag, key, metavar in cncf_settings.METADATA_OPTIONS
    ),
    Option(
        "html",
        ("--html",),
        "write a self-contained HTML report of the run (one page, opens offline)",
        setting="html",
        # pytest-html owns --html when it is installed; --aicr-html always works
        pytest_flags=("--html", "--aicr-html"),
        ceded_flags=(("--html", "pytest_html"),),
        metavar="PATH",
    ),
    # --- run history and baselines (report.history, report.baseline) ----------------------------
    Option(
        "history",
        ("--history",),
        "record the run (CTRF, recipe and cluster identity, every measured value) in this SQLite "
        "history database, or cm://NAMESPACE/NAME (a ring of ConfigMaps); read it with `aicr-pytest history`",
        setting="history",
        pytest_flags=("--aicr-history",),
        metavar="PATH|cm://NS/NAME",
        config_key="output.history",
    ),
    Option(
        "normalize_gates",
        ("--normalize-gates",),
        "aicr-pytest's own, not AICR's: scale the inference throughput floor to the GPUs the benchmark "
        "used against the recipe's calibrated node size, and the NCCL floor by fabric class and GPUs "
        "per node (CTRF shows the raw and the normalized verdict)",
        setting="normalize_gates",
        pytest_flags=("--aicr-normalize-gates",),
        action="store_true",
        default=False,
        config_key="execution.normalizeGates",
    ),
    Option(
        "history_keep",
        ("--history-keep",),
        "with --history cm://NAMESPACE/NAME: keep the N newest runs (the oldest are deleted)",
        setting="history_keep",
        pytest_flags=("--aicr-history-keep",),
        type=int,
        default=20,
        metavar="N",
        config_key="output.historyKeep",
    ),
    Option(
        "baseline",
        ("--baseline",),
        "compare every measured value with a previous run: its CTRF report, or 'auto' (the last "
        "passing run of this recipe on this cluster in --history)",
        setting="baseline",
        pytest_flags=("--aicr-baseline",),
        metavar="PATH|auto",
        config_key="output.baseline",
    ),
    Option(
        "max_regression",
        ("--max-regression",),
        "with --baseline: a value more than PCT percent worse than the baseline fails its check "
        "(off: regressions are only reported)",
        setting="max_regression",
        pytest_flags=("--aicr-max-regression",),
        type=float,
        metavar="PCT",
        config_key="output.maxRegression",
    ),
    Option(
        "simulate",
        ("--simulate",),
        "run against a SIMULATED cluster started in-process with this profile",
        setting=None,
        entry_points=(VALIDATE,),
        metavar="PROFILE",
    ),
    Option(
        "fault",
        ("--fault",),
        "with --simulate: inject a simulated fault (repeatable)",
        setting=None,
        entry_points=(VALIDATE,),
        action="append",
        metavar="NAME",
    ),
    # --- recipe evidence bundles: fill EvidenceSettings ---------------------------------
    Option(
        "emit_attestation",
        ("--emit-attestation",),
        "write a recipe evidence bundle (pointer.yaml + summary-bundle/) to DIR; minimized unless --full",
        setting="out_dir",
        model="evidence",
        metavar="DIR",
    ),
    Option(
        "full",
        ("--full",),
        "evidence: publish the raw snapshot and CTRF (no minimization, no redaction block)",
        setting="full",
        model="evidence",
        action="store_true",
        default=False,
    ),
    Option(
        "bom",
        ("--bom",),
        "evidence: embed this CycloneDX JSON file (at most 8 MiB) instead of the generated BOM",
        setting="bom",
        model="evidence",
        metavar="PATH",
    ),
    Option(
        "push",
        ("--push",),
        "evidence: push the bundle to this OCI reference and sign it keyless "
        "(tag optional: derived when absent)",
        setting="push",
        model="evidence",
        metavar="OCI_REF",
    ),
    Option(
        "identity_token",
        ("--identity-token",),
        "evidence: OIDC identity token for keyless signing",
        setting="identity_token",
        model="evidence",
        env="COSIGN_IDENTITY_TOKEN",
        metavar="TOKEN",
    ),
    Option(
        "oidc_device_flow",
        ("--oidc-device-flow",),
        "evidence: get the OIDC token with the device-code flow instead of a browser",
        setting="oidc_device_flow",
        model="evidence",
        action="store_true",
        default=False,
        env="AICR_OIDC_DEVICE_FLOW",
    ),
    Option(
        "plain_http",
        ("--plain-http",),
        "evidence: talk HTTP to the registry (local test registries only)",
        setting="plain_http",
        model="evidence",
        action="store_true",
        default=False,
    ),
    Option(
        "insecure_tls",
        ("--insecure-tls",),
        "evidence: do not verify the registry's TLS certificate (self-signed registries)",
        setting="insecure_tls",
        model="evidence",
        action="store_true",
        default=False,
    ),
    Option(
        "no_sign",
        ("--no-sign",),
        "evidence: with --push, push the bundle unsigned (no OIDC)",
        setting="no_sign",
        model="evidence",
        action="store_true",
        default=False,
    ),
    Option(
        "predicate_version",
        ("--predicate-version",),
        "evidence: the recipe-evidence predicate type to write: 1 (v1) or 3 (v3, today's AICR: the "
        "recipe digest leaves out metadata.version)",
        setting="predicate_version",
        model="evidence",
        default="1",
        metavar="N",
    ),
    Option(
        "allow_mutable_validator_tags",
        ("--allow-mutable-validator-tags",),
        "evidence: emit even when a validator image is a mutable tag (AICR's opt-out; no env var or "
        "config key by design; aicr-pytest runs no validator image, so its own runs never need it)",
        setting="allow_mutable_validator_tags",
        model="evidence",
        action="store_true",
        default=False,
    ),
    Option(
        "assume_yes",
        ("--yes", "--assume-yes"),
        "evidence: skip the identity-disclosure confirmation before keyless signing",
        setting="assume_yes",
        model="evidence",
        action="store_true",
        default=False,
        env="AICR_ASSUME_YES",
    ),
    # --- `aicr validate` drop-in flags: same names, aliases, env vars and defaults -------------
    Option(
        "config",
        ("--config",),
        "AICRConfig file (kind AICRConfig) whose spec.validate gives defaults; a flag or its env var wins",
        setting=None,
        metavar="PATH",
    ),
    Option(
        "namespace",
        ("--namespace",),
        "namespace for the run's shared objects and the snapshot agent",
        setting="placement.namespace",
        # pytest owns -n (xdist's --numprocesses): under plain pytest the flag is --namespace only
        validate_flags=("-n", "--namespace"),
        default=DEFAULT_NAMESPACE,
        env="AICR_NAMESPACE",
        metavar="NAME",
        config_key="agent.namespace",
    ),
    Option(
        "image",
        ("--image",),
        "snapshot agent image (when --snapshot is omitted); aicr-pytest runs no validator container, "
        "so this is the only image it sets",
        setting="image",
        default_text="--nvidia-smi-image",
        env="AICR_VALIDATOR_IMAGE",
        metavar="IMAGE",
        config_key="agent.image",
    ),
    Option(
        "image_pull_secret",
        ("--image-pull-secret",),
        "image pull secret added to every pod the run creates (repeatable)",
        setting="placement.image_pull_secrets",
        action="append",
        metavar="NAME",
        config_key="agent.imagePullSecrets",
    ),
    Option(
        "job_name",
        ("--job-name",),
        "snapshot agent Job name prefix (the run id is appended); checks run in-process, no validator Job",
        setting="job_name",
        default_text="aicr-snapshot",
        metavar="NAME",
        config_key="agent.jobName",
    ),
    Option(
        "service_account_name",
        ("--service-account-name",),
        "accepted for aicr compatibility, no effect: checks run in-process as your kubeconfig identity",
        setting="service_account_name",
        metavar="NAME",
        config_key="agent.serviceAccountName",
    ),
    Option(
        "timeout",
        ("--timeout",),
        "Go duration (5m, 90s, 1h30m): how long to wait for the snapshot agent; "
        "given explicitly, it also bounds the whole run (exit 5)",
        setting="timeout_s",
        # pytest-timeout owns --timeout when it is installed; --aicr-timeout always works
        pytest_flags=("--timeout", "--aicr-timeout"),
        ceded_flags=(("--timeout", "pytest_timeout"),),
        default=DEFAULT_TIMEOUT,
        metavar="DURATION",
        config_key="execution.timeout",
    ),
    Option(
        "require_gpu",
        ("--require-gpu",),
        "the snapshot agent requests an nvidia.com/gpu, and a snapshot without a GPU fails the pre-flight",
        setting="require_gpu",
        action="store_true",
        default=False,
        env="AICR_REQUIRE_GPU",
        config_key="agent.requireGpu",
    ),
    # --- provider data folded into the snapshot validate captures (snapshot.providers) -----------
    *(
        Option(
            name,
            (f"--{flag}",),
            f"`{command}` output: its {reading} becomes K8s.{flag}.{key} in the captured snapshot "
            "(ignored, with a warning, with --snapshot)",
            setting=None,
            entry_points=(VALIDATE,),
            env=env,
            metavar="FILE",
        )
        for name, flag, env, command, reading, key in PROVIDER_FLAGS
    ),
    Option(
        "skip_check",
        ("--skip-check",),
        "report this recipe check as skipped instead of running it (repeatable; CTRF extra.skipReason)",
        setting="skip_checks",
        action="append",
        metavar="NAME",
        config_key="execution.skipChecks",
    ),
    Option(
        "debug",
        ("--debug",),
        "debug logging (aicr_pytest logger) and full tracebacks",
        setting="debug",
        # pytest owns --debug (its own trace file): under plain pytest the flag is --aicr-debug
        pytest_flags=("--aicr-debug",),
        action="store_true",
        default=False,
        env="AICR_DEBUG",
    ),
    Option(
        "log_json",
        ("--log-json",),
        "log lines as JSON objects on stderr (wins over --debug's text format)",
        setting="log_json",
        action="store_true",
        default=False,
        env="AICR_LOG_JSON",
    ),
    Option(
        "no_bundled_checks",
        ("--no-bundled-checks",),
        "collect only the given paths, not the checks bundled with aicr-pytest",
        setting=None,
        entry_points=(PYTEST,),
        action="store_true",
        default=False,
    ),
    Option(
        "check_kubeconfig",
        ("--aicr-check-kubeconfig",),
        "set by `aicr-pytest validate`: a named kubeconfig or context is loaded before any check runs",
        setting="check_kubeconfig",
        entry_points=(PYTEST,),
        action="store_true",
        default=False,
        hidden=True,
    ),
    Option(
        "simulated",
        ("--aicr-simulated",),
        "set by `aicr-pytest validate --simulate`: the simulator profile the cluster runs",
        setting="simulated",
        entry_points=(PYTEST,),
        metavar="PROFILE",
        hidden=True,
    ),
    # validate: what follows ``--`` goes to pytest unchanged
    Option(
        "pytest_args",
        ("pytest_args",),
        "after --: extra pytest arguments",
        setting=None,
        entry_points=(VALIDATE,),
        positional=True,
        nargs=argparse.REMAINDER,
    ),
    # --- the other subcommands: each entry names the one it belongs to ---------------------------
    Option(
        "version",
        ("--version",),
        "show program's version number and exit",
        setting=None,
        entry_points=(PROGRAM,),
        action="version",
        default=f"aicr-pytest {__version__}",
    ),
    # simulate
    Option(
        "profile",
        ("--profile",),
        "cluster profile, e.g. h100-eks-training (see --list)",
        setting=None,
        entry_points=(SIMULATE,),
    ),
    Option(
        "list",
        ("--list",),
        "list the cluster profiles and faults, then exit",
        setting=None,
        entry_points=(SIMULATE,),
        action="store_true",
        default=False,
    ),
    Option(
        "fault",
        ("--fault",),
        "inject a fault (repeatable)",
        setting=None,
        entry_points=(SIMULATE,),
        action="append",
        metavar="NAME",
    ),
    Option(
        "kubeconfig",
        ("--kubeconfig",),
        "where to write the kubeconfig (default: a temp file)",
        setting=None,
        entry_points=(SIMULATE,),
    ),
    Option(
        "duration",
        ("--for",),
        "serve for SECONDS, then exit",
        setting=None,
        entry_points=(SIMULATE,),
        type=float,
    ),
    # recipe: single-value flags may be given once
    *(
        Option(name, flags, text, setting=None, entry_points=(RECIPE,), once=True, group="criteria", **kw)
        for name, flags, text, kw in (
            ("service", ("--service",), "Kubernetes service: eks, gke, aks, oke, ...", {"metavar": "S"}),
            ("accelerator", ("--accelerator", "--gpu"), "GPU: h100, gb200, ...", {"metavar": "A"}),
            ("intent", ("--intent",), "workload intent: training or inference", {"metavar": "I"}),
            ("os", ("--os",), "GPU node OS: ubuntu, cos, ol, ...", {"metavar": "OS"}),
            ("platform", ("--platform",), "platform: kubeflow, dynamo, ...", {"metavar": "P"}),
            ("nodes", ("--nodes",), "number of GPU nodes (0: any)", {"metavar": "N", "type": int}),
            ("criteria", ("--criteria",), "a RecipeCriteria file (flags override it)", {"metavar": "FILE"}),
            (
                "snapshot",
                ("-s", "--snapshot"),
                "detect criteria from a snapshot (file, https:// URL or cm://ns/name) and leave out "
                "overlays whose constraints it fails",
                {"metavar": "SRC"},
            ),
        )
    ),
    Option(
        "data",
        ("--data",),
        "data tree layered over the embedded one",
        setting=None,
        entry_points=(RECIPE,),
        once=True,
        group="data and output",
        metavar="DIR",
    ),
    Option(
        "no_embedded_data",
        ("--no-embedded-data",),
        "use only the --data tree (no embedded overlays or values)",
        setting=None,
        entry_points=(RECIPE,),
        action="store_true",
        default=False,
        group="data and output",
    ),
    Option(
        "format",
        ("--format",),
        "yaml (default) or json",
        setting=None,
        entry_points=(RECIPE,),
        once=True,
        group="data and output",
        metavar="FMT",
    ),
    Option(
        "output",
        ("-o", "--output"),
        "FILE, - (stdout, default) or cm://ns/name",
        setting=None,
        entry_points=(RECIPE,),
        once=True,
        group="data and output",
        metavar="DEST",
    ),
    Option(
        "kubeconfig",
        ("-k", "--kubeconfig"),
        "kubeconfig for cm:// (default: KUBECONFIG, in-cluster, ~/.kube/config)",
        setting=None,
        entry_points=(RECIPE,),
        group="data and output",
    ),
    Option(
        "kube_context",
        ("--kube-context",),
        "kubeconfig context for cm://",
        setting=None,
        entry_points=(RECIPE,),
        group="data and output",
    ),
    # snapshot: single-value flags may be given once
    Option(
        "kubeconfig",
        ("-k", "--kubeconfig"),
        "kubeconfig path (default: KUBECONFIG, in-cluster, ~/.kube/config)",
        setting=None,
        entry_points=(SNAPSHOT,),
        group="agent",
    ),
    Option(
        "kube_context",
        ("--kube-context",),
        "kubeconfig context",
        setting=None,
        entry_points=(SNAPSHOT,),
        group="agent",
    ),
    Option(
        "namespace",
        ("-n", "--namespace"),
        f"namespace the agent runs in (env AICR_NAMESPACE, default {SNAPSHOT_NAMESPACE})",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        default=SNAPSHOT_NAMESPACE,
        env="AICR_NAMESPACE",
        group="agent",
    ),
    Option(
        "node_selector",
        ("--node-selector",),
        "where the agent runs (repeatable; default: nodes labelled nvidia.com/gpu.present=true)",
        setting=None,
        entry_points=(SNAPSHOT,),
        action="append",
        metavar="KEY=VALUE",
        group="agent",
    ),
    Option(
        "toleration",
        ("--toleration",),
        "agent toleration (repeatable; key:Effect, * for all; default: tolerate every taint)",
        setting=None,
        entry_points=(SNAPSHOT,),
        action="append",
        metavar="KEY=VALUE:EFFECT",
        group="agent",
    ),
    Option(
        "image",
        ("--image",),
        "agent image: any image with /bin/sh (env AICR_NVIDIA_SMI_IMAGE, default: the CUDA image "
        "check-nvidia-smi uses)",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        default=DEFAULT_NVIDIA_SMI_IMAGE,
        env="AICR_NVIDIA_SMI_IMAGE",
        group="agent",
    ),
    Option(
        "privileged",
        ("--privileged",),
        "host namespaces + host os-release for OS.release/SystemD/host nvidia-smi (default true); "
        "--privileged=false for PSS-restricted namespaces",
        setting=None,
        entry_points=(SNAPSHOT,),
        action="bool",
        once=True,
        default=True,
        metavar="BOOL",
        group="agent",
    ),
    Option(
        "require_gpu",
        ("--require-gpu",),
        "fail (exit 8) when no GPU is found; also requests one nvidia.com/gpu (env AICR_REQUIRE_GPU)",
        setting=None,
        entry_points=(SNAPSHOT,),
        action="bool",
        once=True,
        default=False,
        env="AICR_REQUIRE_GPU",
        metavar="BOOL",
        group="agent",
    ),
    Option(
        "timeout",
        ("--timeout",),
        f"wait for the agent (default {DEFAULT_TIMEOUT})",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        default=DEFAULT_TIMEOUT,
        metavar="DURATION",
        group="agent",
    ),
    Option(
        "no_cleanup",
        ("--no-cleanup",),
        "keep the agent's Job and ConfigMap",
        setting=None,
        entry_points=(SNAPSHOT,),
        action="store_true",
        default=False,
        group="agent",
    ),
    # provider data, as for validate (snapshot.providers); the readings join the K8s measurement
    *(
        Option(
            name,
            (f"--{flag}",),
            f"`{command}` output: its {reading} joins K8s.{flag} (env {env})",
            setting=None,
            entry_points=(SNAPSHOT,),
            once=True,
            env=env,
            metavar="FILE",
            group="agent",
        )
        for name, flag, env, command, reading, _ in PROVIDER_FLAGS
    ),
    Option(
        "runtime_class",
        ("--runtime-class",),
        "runtimeClassName of the agent pod (nvidia-smi through the runtime without taking a GPU; "
        "not with --require-gpu; env AICR_RUNTIME_CLASS)",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        env="AICR_RUNTIME_CLASS",
        metavar="NAME",
        group="agent",
    ),
    Option(
        "requests",
        ("--requests",),
        "agent container requests, name=quantity,... (cpu=500m,memory=1Gi); other keys keep "
        "cpu=100m,memory=64Mi (env AICR_REQUESTS)",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        env="AICR_REQUESTS",
        metavar="LIST",
        group="agent",
    ),
    Option(
        "limits",
        ("--limits",),
        "agent container limits, name=quantity,...; other keys keep cpu=1,memory=256Mi; an explicit "
        "nvidia.com/gpu wins over --require-gpu's 1 (env AICR_LIMITS)",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        env="AICR_LIMITS",
        metavar="LIST",
        group="agent",
    ),
    Option(
        "image_pull_secret",
        ("--image-pull-secret",),
        "image pull secret of the agent pod (repeatable)",
        setting=None,
        entry_points=(SNAPSHOT,),
        action="append",
        metavar="NAME",
        group="agent",
    ),
    Option(
        "job_name",
        ("--job-name",),
        "the agent Job's name prefix; the run id is appended (default aicr-snapshot)",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        metavar="NAME",
        group="agent",
    ),
    Option(
        "service_account_name",
        ("--service-account-name",),
        "an existing service account for the agent pod (default: the namespace's default; the agent "
        "mounts no token and creates no account)",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        metavar="NAME",
        group="agent",
    ),
    Option(
        "max_nodes_per_entry",
        ("--max-nodes-per-entry",),
        "node names per NodeTopology taint/label entry (default 0: unlimited)",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        type=int,
        default=0,
        metavar="N",
        group="output",
    ),
    Option(
        "format",
        ("--format",),
        "yaml (default) or json",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        default="yaml",
        metavar="FMT",
        group="output",
    ),
    Option(
        "output",
        ("-o", "--output"),
        "FILE, - (stdout, default) or cm://namespace/name",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        metavar="DEST",
        group="output",
    ),
    Option(
        "template",
        ("--template",),
        "render the snapshot through this Jinja2 template instead (YAML format; a file or stdout)",
        setting=None,
        entry_points=(SNAPSHOT,),
        once=True,
        metavar="FILE",
        group="output",
    ),
    # evidence verify
    Option(
        "input",
        ("input",),
        "pointer.yaml, a bundle directory, or an OCI reference (oci://… or registry/repo@sha256:…)",
        setting=None,
        entry_points=(EVIDENCE_VERIFY,),
        positional=True,
    ),
    Option(
        "output",
        ("-o", "--output"),
        "write the report to this file (default: stdout)",
        setting=None,
        entry_points=(EVIDENCE_VERIFY,),
    ),
    Option(
        "format",
        ("-t", "--format"),
        "text (Markdown) or json",
        setting=None,
        entry_points=(EVIDENCE_VERIFY,),
        choices=("text", "json"),
        default="text",
    ),
    Option(
        "expected_issuer",
        ("--expected-issuer",),
        "require exactly this OIDC issuer in the signing certificate",
        setting=None,
        entry_points=(EVIDENCE_VERIFY,),
    ),
    Option(
        "expected_identity_regexp",
        ("--expected-identity-regexp",),
        "require a certificate identity (SAN) matching this regular expression",
        setting=None,
        entry_points=(EVIDENCE_VERIFY,),
    ),
    Option(
        "bundle",
        ("--bundle",),
        "OCI reference to use when the pointer has no bundle.oci",
        setting=None,
        entry_points=(EVIDENCE_VERIFY,),
        metavar="OCI_REF",
    ),
    *(
        Option(name, (flag,), text, None, (EVIDENCE_VERIFY,), action="store_true", default=False)
        for name, flag, text in (
            ("registry_plain_http", "--registry-plain-http", "talk HTTP to the registry (tests only)"),
            (
                "registry_insecure_tls",
                "--registry-insecure-tls",
                "do not verify the registry's TLS certificate",
            ),
            (
                "allow_unpinned_tag",
                "--allow-unpinned-tag",
                "accept a tag-only OCI reference (one-off debugging)",
            ),
            (
                "update_trust_root",
                "--update-trust-root",
                "refresh Sigstore's trusted root over the network (TUF) before verifying",
            ),
        )
    ),
    # parse nccl | parse aiperf
    Option("logfile", ("logfile",), "", setting=None, entry_points=(PARSE_NCCL,), positional=True),
    Option(
        "variant",
        ("--variant",),
        "",
        setting=None,
        entry_points=(PARSE_NCCL,),
        choices=("default", "net", "nvls"),
        default="default",
    ),
    Option("file", ("file",), "", setting=None, entry_points=(PARSE_AIPERF, PARSE_DCGM), positional=True),
    Option(
        "format",
        ("--format",),
        "",
        setting=None,
        entry_points=(PARSE_NCCL, PARSE_AIPERF),
        choices=("text", "json"),
        default="text",
    ),
    # history | compare (report.historycmd)
    Option(
        "target",
        ("target",),
        "the history (--history of the runs): an SQLite file or cm://NAMESPACE/NAME",
        setting=None,
        entry_points=(HISTORY,),
        positional=True,
    ),
    Option("json", ("--json",), "print JSON", setting=None, entry_points=(HISTORY,), action="store_true"),
    Option(
        "kubeconfig",
        ("--kubeconfig",),
        "kubeconfig for a cm://NAMESPACE/NAME history",
        setting=None,
        entry_points=(HISTORY,),
        metavar="PATH",
    ),
    Option(
        "context",
        ("--context",),
        "kubeconfig context for a cm://NAMESPACE/NAME history",
        setting=None,
        entry_points=(HISTORY,),
        metavar="NAME",
    ),
    Option(
        "check",
        ("--check",),
        "only the runs and values of this check",
        setting=None,
        entry_points=(HISTORY,),
        metavar="NAME",
    ),
    Option(
        "last",
        ("--last",),
        "only the N newest runs",
        setting=None,
        entry_points=(HISTORY,),
        type=int,
        metavar="N",
    ),
    Option(
        "plot",
        ("--plot",),
        "draw the trend of a measured value (of --check) as SVG",
        setting=None,
        entry_points=(HISTORY,),
        metavar="PATH.svg",
    ),
    Option("a", ("a",), "the earlier CTRF report", setting=None, entry_points=(COMPARE,), positional=True),
    Option("b", ("b",), "the later CTRF report", setting=None, entry_points=(COMPARE,), positional=True),
    Option(
        "max_regression",
        ("--max-regression",),
        "exit 1 when a value is more than PCT percent worse in B",
        setting=None,
        entry_points=(COMPARE,),
        type=float,
        metavar="PCT",
    ),
    # cncf check
    Option(
        "product",
        ("product",),
        "the filled checklist (PRODUCT.yaml) to check",
        setting=None,
        entry_points=(CNCF_CHECK,),
        positional=True,
    ),
    Option(
        "checklist",
        ("--checklist",),
        "the program's template it was filled from: id, description and level must be unchanged",
        setting=None,
        entry_points=(CNCF_CHECK,),
        once=True,
        metavar="FILE",
    ),
    # parse dcgm (node health: a saved `dcgmi diag -j` document; FILE is the option above)
    Option(
        "json",
        ("--json",),
        "print the analysis as JSON instead of the per-GPU table",
        setting=None,
        entry_points=(PARSE_DCGM,),
        action="store_true",
        default=False,
    ),
)


def table(options: Sequence[Option] | None = None) -> Sequence[Option]:
    """``options``, or :data:`OPTIONS` as it is now (read at call time, so a test can extend it)."""
    return OPTIONS if options is None else options


def entries(entry_point: EntryPoint, options: Sequence[Option] | None = None) -> list[Option]:
    """The options ``entry_point`` takes, in table order."""
    return [opt for opt in table(options) if opt.takes(entry_point)]


def by_name(
    options: Sequence[Option] | None = None, entry_point: EntryPoint | None = None
) -> dict[str, Option]:
    """``{name: option}`` of ``entry_point`` (``None``: the run options, pytest's and validate's)."""
    return {
        opt.name: opt
        for opt in table(options)
        if (opt.takes(entry_point) if entry_point is not None else opt.run_option)
    }


class _AddOption(Protocol):
    def addoption(self, *opts: str, **attrs: Any) -> None: ...


def add_pytest_options(group: _AddOption, options: Sequence[Option] | None = None) -> None:
    """Every pytest entry, on a pytest ``OptionGroup`` (or anything with ``addoption``)."""
    for opt in table(options):
        if opt.takes(PYTEST):
            group.addoption(*opt.flags_for(PYTEST), **opt.add_kwargs(PYTEST))


def add_argparse_options(
    parser: argparse.ArgumentParser,
    options: Sequence[Option] | None = None,
    entry_point: EntryPoint = VALIDATE,
) -> None:
    """Every entry of ``entry_point`` (a subcommand, or ``aicr-pytest`` itself), on its argparse
    parser, each under its ``group``: the one place the command line's arguments are declared."""
    groups: dict[str, Any] = {}
    for opt in entries(entry_point, options):
        target: Any = parser
        if opt.group is not None:
            if opt.group not in groups:
                groups[opt.group] = parser.add_argument_group(opt.group)
            target = groups[opt.group]
        target.add_argument(*opt.flags_for(entry_point), **opt.add_kwargs(entry_point))


def values_from(
    namespace: Any, entry_point: EntryPoint, options: Sequence[Option] | None = None
) -> dict[str, Any]:
    """``{name: value as parsed}`` for the entry point's options (``None``: not given)."""
    return {
        opt.name: getattr(namespace, opt.dest_for(entry_point), None)
        for opt in table(options)
        if opt.takes(entry_point)
    }


def resolve(
    opt: Option,
    value: Any,
    environ: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Any:
    """The option's value for this run: the flag, else its environment variable, else the
    ``--config`` value (``config`` keyed by ``spec.validate`` path), else its default.

    For an option with an environment variable an empty flag value counts as not given; a switch's
    environment variable that is not a boolean is a :class:`UsageError`.  A switch given on the
    command line (``store_true``) counts as given only when true, so a config ``true`` is kept.
    """
    env = os.environ if environ is None else environ
    if opt.action == "store_true" and value is False:
        value = None
    if value is not None and not (opt.env and value == ""):
        return value
    if opt.env and env.get(opt.env):
        raw = env[opt.env]
        if opt.action in ("store_true", "bool"):
            try:
                return parse_bool(raw)
            except argparse.ArgumentTypeError:
                raise UsageError(f"{opt.env}={raw!r}: invalid boolean value (use true or false)") from None
        return opt.type(raw) if opt.type is not None else raw
    if config and opt.config_key and opt.config_key in config:
        return config[opt.config_key]
    return opt.default


def _single(opt: Option, entry_point: EntryPoint, value: Any) -> Any:
    """The one value of a flag that may be given once (``None``: not given)."""
    if not value:
        return None
    if len(value) > 1:
        raise UsageError(MSG_REPEATED.format(flag=opt.long_flag(entry_point).lstrip("-")))
    return value[0]


def _command_env(opt: Option, environ: Mapping[str, str]) -> Any:
    """A subcommand option's environment variable (``None``: unset or empty)."""
    raw = environ.get(opt.env) if opt.env else None
    if not raw or (opt.action == "bool" and not raw.strip()):
        return None
    if opt.action == "bool":
        try:
            return parse_bool(raw)
        except argparse.ArgumentTypeError:
            raise UsageError(MSG_BAD_ENV_BOOL.format(name=opt.env, value=raw)) from None
    return opt.type(raw) if opt.type is not None else raw


def command_values(
    namespace: Any,
    entry_point: EntryPoint,
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``{name: value}`` of a subcommand as parsed: a flag given once is unwrapped (given twice, a
    :class:`UsageError`; every flag is checked before anything else); an option not given takes
    its environment variable, else its default.  An empty flag value is kept (the subcommand
    judges it)."""
    env = os.environ if environ is None else environ
    opts = entries(entry_point, options)
    values = values_from(namespace, entry_point, opts)
    for opt in opts:
        if opt.once:
            values[opt.name] = _single(opt, entry_point, values[opt.name])
    for opt in opts:
        if values[opt.name] is None and not opt.positional:
            from_env = _command_env(opt, env)
            values[opt.name] = from_env if from_env is not None else opt.default
    return values


def config_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``spec.validate`` values of ``--config`` (``{}`` without one; raises UsageError)."""
    path = values.get("config")
    if not path:
        return {}
    from aicr_pytest.core.aicrconfig import load_validate_config

    return load_validate_config(str(path))


def resolved(
    values: Mapping[str, Any],
    entry_point: EntryPoint,
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every option of ``entry_point`` resolved (see :func:`resolve`)."""
    return {
        opt.name: resolve(opt, values.get(opt.name), environ, config)
        for opt in table(options)
        if opt.takes(entry_point)
    }


def setting_values(
    values: Mapping[str, Any],
    model: Model,
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``{field: resolved value}`` of ``model``'s fields, from pytest option values."""
    return {
        opt.setting: resolve(opt, values.get(opt.name), environ, config)
        for opt in table(options)
        if opt.setting is not None and opt.model == model and opt.takes(PYTEST)
    }


def build_run_settings(
    values: Mapping[str, Any],
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The run's :class:`Settings` from pytest option values and ``--config`` (raises ``UsageError``)."""
    return build_settings(setting_values(values, "run", options, environ, config_values(values)))


def build_evidence_settings(
    values: Mapping[str, Any],
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
) -> evidence_settings.EvidenceSettings:
    """The evidence options of a run, from pytest option values (raises ``UsageError``)."""
    return evidence_settings.build_evidence_settings(setting_values(values, "evidence", options, environ))


def forwarded_args(values: Mapping[str, Any], options: Sequence[Option] | None = None) -> list[str]:
    """pytest arguments for the options both entry points take, as ``validate`` was given them.

    An empty value counts as not given (``--data ''`` means no data tree), except for an option
    ``validate`` requires: pytest then sees it and reports it.
    """
    args: list[str] = []
    for opt in table(options):
        if opt.takes(VALIDATE) and opt.takes(PYTEST):
            value = values.get(opt.name)
            if value == "" and VALIDATE not in opt.required_by:
                continue
            args += opt.to_args(PYTEST, value)
    return args


__all__ = [
    "BOTH",
    "CNCF_CHECK",
    "COMMANDS",
    "COMPARE",
    "EVIDENCE_VERIFY",
    "HISTORY",
    "MSG_BAD_ENV_BOOL",
    "MSG_REPEATED",
    "OPTIONS",
    "PARSE_AIPERF",
    "PARSE_DCGM",
    "PARSE_NCCL",
    "PROGRAM",
    "PYTEST",
    "PYTEST_GROUP",
    "RECIPE",
    "RUN",
    "SIMULATE",
    "SNAPSHOT",
    "SNAPSHOT_NAMESPACE",
    "VALIDATE",
    "Action",
    "EntryPoint",
    "Model",
    "Option",
    "add_argparse_options",
    "add_pytest_options",
    "build_evidence_settings",
    "build_run_settings",
    "by_name",
    "command_values",
    "config_values",
    "entries",
    "forwarded_args",
    "module_installed",
    "parse_bool",
    "resolve",
    "resolved",
    "setting_values",
    "table",
    "values_from",
]
