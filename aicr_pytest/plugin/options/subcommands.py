"""Rows: the subcommands other than ``validate`` and ``snapshot`` (``simulate``, ``recipe``,
``evidence verify``, ``parse``, ``cncf check``) and ``aicr-pytest --version``."""

from __future__ import annotations

from aicr_pytest.core.version import __version__
from aicr_pytest.plugin.options.inputs import DATA, FAULT, KUBE_CONTEXT, KUBECONFIG, SNAPSHOT_OPTION
from aicr_pytest.plugin.options.outputs import OUTPUT
from aicr_pytest.plugin.options.spec import (
    CNCF_CHECK,
    EVIDENCE_VERIFY,
    PARSE_AIPERF,
    PARSE_DCGM,
    PARSE_NCCL,
    PROGRAM,
    RECIPE,
    SIMULATE,
    Option,
)

FORMAT = Option(
    "format",
    ("--format",),
    "yaml (default) or json",
    setting=None,
    entry_points=(RECIPE,),
    once=True,
    group="data and output",
    metavar="FMT",
)

#: the rows, in the order the help lists them
ROWS: tuple[Option, ...] = (
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
    FAULT.on(
        SIMULATE,
        help="inject a fault (repeatable)",
        action="append",
        metavar="NAME",
    ),
    KUBECONFIG.on(
        SIMULATE,
        help="where to write the kubeconfig (default: a temp file)",
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
        )
    ),
    SNAPSHOT_OPTION.on(
        RECIPE,
        flags=("-s", "--snapshot"),
        help="detect criteria from a snapshot (file, https:// URL or cm://ns/name) and leave out "
        "overlays whose constraints it fails",
        once=True,
        group="criteria",
        metavar="SRC",
    ),
    DATA.on(
        RECIPE,
        help="data tree layered over the embedded one",
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
    FORMAT,
    OUTPUT.on(
        RECIPE,
        flags=("-o", "--output"),
        help="FILE, - (stdout, default) or cm://ns/name",
        once=True,
        group="data and output",
        metavar="DEST",
    ),
    KUBECONFIG.on(
        RECIPE,
        flags=("-k", "--kubeconfig"),
        help="kubeconfig for cm:// (default: KUBECONFIG, in-cluster, ~/.kube/config)",
        group="data and output",
    ),
    KUBE_CONTEXT.on(
        RECIPE,
        help="kubeconfig context for cm://",
        group="data and output",
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
    OUTPUT.on(
        EVIDENCE_VERIFY,
        flags=("-o", "--output"),
        help="write the report to this file (default: stdout)",
    ),
    FORMAT.on(
        EVIDENCE_VERIFY,
        flags=("-t", "--format"),
        help="text (Markdown) or json",
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
    FORMAT.on(
        PARSE_NCCL,
        PARSE_AIPERF,
        help="",
        choices=("text", "json"),
        default="text",
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
