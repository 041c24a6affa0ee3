"""Rows: what a validation run validates and against which cluster.

The recipe and snapshot, the data tree and ``--config``, cluster access (kubeconfig, context,
namespace), the simulator, provider data, and the channels ``validate`` sets for pytest.  Rows a
subcommand shares (``--kubeconfig`` ...) are named constants; the subcommand rows use them with
:meth:`~aicr_pytest.plugin.options.spec.Option.on`.
"""

from __future__ import annotations

import argparse
from typing import Final

from aicr_pytest.core.defaults import DEFAULT_NAMESPACE
from aicr_pytest.plugin.options.spec import PYTEST, VALIDATE, Option

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

#: the provider rows, one per :data:`PROVIDER_FLAGS` entry, in its order
PROVIDERS: Final[tuple[Option, ...]] = tuple(
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
)

SNAPSHOT_OPTION = Option(
    "snapshot",
    ("--snapshot",),
    "cluster snapshot for readiness and snapshot constraints: a file, https:// URL or "
    "cm://namespace/name; `aicr-pytest validate` captures one when it is omitted",
    setting="snapshot",
    # the design card's spelling, kept plain under pytest like --recipe
    pytest_flags=("--snapshot",),
    validate_flags=("-s", "--snapshot"),
    metavar="PATH|URL|cm://NS/NAME",
    config_key="input.snapshot",
)

DATA = Option(
    "data",
    ("--data",),
    "external data tree layered over the embedded recipes/ data",
    setting="data",
    metavar="DIR",
)

KUBECONFIG = Option(
    "kubeconfig",
    ("--kubeconfig",),
    "kubeconfig path",
    setting="kubeconfig",
    validate_flags=("-k", "--kubeconfig"),
    default_text="KUBECONFIG, then in-cluster config, then ~/.kube/config",
    metavar="PATH",
)

KUBE_CONTEXT = Option(
    "kube_context",
    ("--kube-context",),
    "kubeconfig context",
    setting="kube_context",
    metavar="NAME",
)

NAMESPACE = Option(
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
)

FAULT = Option(
    "fault",
    ("--fault",),
    "with --simulate: inject a simulated fault (repeatable)",
    setting=None,
    entry_points=(VALIDATE,),
    action="append",
    metavar="NAME",
)

RECIPE_OPTION = Option(
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
)

#: the rows, in the order the help lists them
ROWS: tuple[Option, ...] = (
    RECIPE_OPTION,
    SNAPSHOT_OPTION,
    DATA,
    # --- `aicr validate` drop-in flags: same names, aliases, env vars and defaults -------------
    Option(
        "config",
        ("--config",),
        "AICRConfig file (kind AICRConfig) whose spec.validate gives defaults; a flag or its env var wins",
        setting=None,
        metavar="PATH",
    ),
    KUBECONFIG,
    KUBE_CONTEXT,
    NAMESPACE,
    Option(
        "simulate",
        ("--simulate",),
        "run against a SIMULATED cluster started in-process with this profile",
        setting=None,
        entry_points=(VALIDATE,),
        metavar="PROFILE",
    ),
    FAULT,
    # --- provider data folded into the snapshot validate captures (snapshot.providers) -----------
    *PROVIDERS,
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
)
