"""Rows: ``aicr-pytest snapshot`` (the drop-in ``aicr snapshot``): single-value flags may be given
once.  Most are a run option's row on another entry point (:meth:`Option.on`)."""

from __future__ import annotations

from aicr_pytest.core.defaults import DEFAULT_NVIDIA_SMI_IMAGE, DEFAULT_TIMEOUT
from aicr_pytest.plugin.options.execution import (
    IMAGE,
    IMAGE_PULL_SECRET,
    JOB_NAME,
    NO_CLEANUP,
    NODE_SELECTOR,
    REQUIRE_GPU,
    SERVICE_ACCOUNT_NAME,
    TIMEOUT,
    TOLERATION,
)
from aicr_pytest.plugin.options.inputs import KUBE_CONTEXT, KUBECONFIG, NAMESPACE, PROVIDER_FLAGS, PROVIDERS
from aicr_pytest.plugin.options.outputs import OUTPUT
from aicr_pytest.plugin.options.spec import SNAPSHOT, SNAPSHOT_NAMESPACE, Option
from aicr_pytest.plugin.options.subcommands import FORMAT

#: the rows, in the order the help lists them
ROWS: tuple[Option, ...] = (
    # snapshot: single-value flags may be given once
    KUBECONFIG.on(
        SNAPSHOT,
        flags=("-k", "--kubeconfig"),
        help="kubeconfig path (default: KUBECONFIG, in-cluster, ~/.kube/config)",
        group="agent",
    ),
    KUBE_CONTEXT.on(
        SNAPSHOT,
        group="agent",
    ),
    NAMESPACE.on(
        SNAPSHOT,
        flags=("-n", "--namespace"),
        help=f"namespace the agent runs in (env AICR_NAMESPACE, default {SNAPSHOT_NAMESPACE})",
        once=True,
        default=SNAPSHOT_NAMESPACE,
        env="AICR_NAMESPACE",
        group="agent",
    ),
    NODE_SELECTOR.on(
        SNAPSHOT,
        help="where the agent runs (repeatable; default: nodes labelled nvidia.com/gpu.present=true)",
        action="append",
        metavar="KEY=VALUE",
        group="agent",
    ),
    TOLERATION.on(
        SNAPSHOT,
        help="agent toleration (repeatable; key:Effect, * for all; default: tolerate every taint)",
        action="append",
        metavar="KEY=VALUE:EFFECT",
        group="agent",
    ),
    IMAGE.on(
        SNAPSHOT,
        help="agent image: any image with /bin/sh (env AICR_NVIDIA_SMI_IMAGE, default: the CUDA image "
        "check-nvidia-smi uses)",
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
    REQUIRE_GPU.on(
        SNAPSHOT,
        help="fail (exit 8) when no GPU is found; also requests one nvidia.com/gpu (env AICR_REQUIRE_GPU)",
        action="bool",
        once=True,
        default=False,
        env="AICR_REQUIRE_GPU",
        metavar="BOOL",
        group="agent",
    ),
    TIMEOUT.on(
        SNAPSHOT,
        help=f"wait for the agent (default {DEFAULT_TIMEOUT})",
        once=True,
        default=DEFAULT_TIMEOUT,
        metavar="DURATION",
        group="agent",
    ),
    NO_CLEANUP.on(
        SNAPSHOT,
        help="keep the agent's Job and ConfigMap",
        action="store_true",
        default=False,
        group="agent",
    ),
    # provider data, as for validate (snapshot.providers); the readings join the K8s measurement
    *(
        row.on(
            SNAPSHOT,
            help=f"`{command}` output: its {reading} joins K8s.{flag} (env {env})",
            once=True,
            env=env,
            metavar="FILE",
            group="agent",
        )
        for row, (_, flag, env, command, reading, _) in zip(PROVIDERS, PROVIDER_FLAGS, strict=True)
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
    IMAGE_PULL_SECRET.on(
        SNAPSHOT,
        help="image pull secret of the agent pod (repeatable)",
        action="append",
        metavar="NAME",
        group="agent",
    ),
    JOB_NAME.on(
        SNAPSHOT,
        help="the agent Job's name prefix; the run id is appended (default aicr-snapshot)",
        once=True,
        metavar="NAME",
        group="agent",
    ),
    SERVICE_ACCOUNT_NAME.on(
        SNAPSHOT,
        help="an existing service account for the agent pod (default: the namespace's default; the agent "
        "mounts no token and creates no account)",
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
    FORMAT.on(
        SNAPSHOT,
        once=True,
        default="yaml",
        metavar="FMT",
        group="output",
    ),
    OUTPUT.on(
        SNAPSHOT,
        flags=("-o", "--output"),
        help="FILE, - (stdout, default) or cm://namespace/name",
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
)
