"""Bad input to ``aicr-pytest validate`` and plain ``pytest --recipe``: caught before any check runs.

Each case: ``(entry point, argv, extra environment, expected exit code, the one stderr line)``.
``validate`` cases run ``aicr-pytest validate ARGV`` (exit 2; ``simulate``: ``aicr-pytest simulate ARGV``);
``pytest`` cases run
``python -m pytest -p no:cacheprovider ARGV`` (exit 4, pytest's usage code), ARGV written in validate's
spelling and given to pytest in its own (``--recipe``, ``--aicr-<flag>``:
``common.pytest_spelling``).  ``{tmp}`` stands for a scratch directory holding :data:`FILES`; the
runner sets ``KUBECONFIG={tmp}/no-kubeconfig`` unless a case overrides it.  Every case must end with
exactly its line on stderr and no traceback.
"""

from __future__ import annotations

HELM = "type: Helm, source: https://helm.ngc.nvidia.com/nvidia, version: v25.10.1"
HEAD = "kind: RecipeResult\napiVersion: aicr.run/v1alpha2\n"
GPU_OP = f"componentRefs:\n  - {{name: gpu-operator, namespace: gpu-operator, {HELM}}}\n"


def _recipe(validation: str, refs: str = GPU_OP) -> str:
    return HEAD + refs + validation


DEPLOY = "validation:\n  deployment: {checks: [operator-health]}\n"


def alias_bomb(indent: str, levels: int = 9) -> str:
    """A few hundred bytes of nested aliases that expand to 9**levels strings ("billion laughs")."""
    lines = [f"{indent}l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"{indent}l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _exec_kubeconfig(script: str) -> str:
    """A kubeconfig whose user ``sso`` gets its credential from ``sh -c SCRIPT``."""
    return (
        "apiVersion: v1\nkind: Config\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users:\n- name: sso\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
        f"      command: sh\n      args: ['-c', {script!r}]\n"
        "contexts: [{name: c, context: {cluster: c, user: sso}}]\ncurrent-context: c\n"
    )


FILES: dict[str, str] = {
    "kubeconfig-exec-fail": _exec_kubeconfig(
        "echo refreshing >&2; echo 'error: login expired: run sso login' >&2; exit 1"
    ),
    "kubeconfig-exec-garbage": _exec_kubeconfig("echo '<html>login</html>'"),
    "ok.yaml": _recipe(DEPLOY),
    "snap.yaml": (
        "kind: Snapshot\napiVersion: aicr.run/v1alpha2\nmeasurements:\n  - type: K8s\n    subtypes:\n"
        "      - subtype: server\n        data: {version: v1.33.0}\n"
    ),
    "typo.yaml": _recipe("validation:\n  performace: {checks: [nccl-all-reduce-bw]}\n"),
    "typo-deploy.yaml": _recipe("validation:\n  deploy: {checks: [operator-health]}\n"),
    "nccl.yaml": _recipe(
        "validation:\n  performance:\n    checks: [nccl-all-reduce-bw]\n"
        "    constraints: [{name: nccl-all-reduce-bw, value: '>= 300'}]\n"
    ),
    "diag.yaml": _recipe("validation:\n  deployment: {checks: [gpu-diagnostics]}\n"),
    "smoke.yaml": _recipe("validation:\n  deployment: {checks: [gpu-cuda-smoke]}\n"),
    "not-dcgm.json": '{"a": 1}\n',
    "dcgm-runtime.json": '{"DCGM Diagnostic": {"runtime_error": "Unable to connect to the host engine"}, '
    '"metadata": {"version": "4.2.3"}}\n',
    "health.yaml": _recipe("validation:\n  deployment: {checks: [gpu-health]}\n"),
    "no-primary.yaml": _recipe(DEPLOY, "componentRefs:\n  - {name: gpu-operator, type: Helm}\n"),
    "chart-no-source.yaml": _recipe(DEPLOY, GPU_OP + "  - {name: extra, type: Helm, chart: extra-chart}\n"),
    "no-version.yaml": _recipe(
        DEPLOY, GPU_OP + "  - {name: extra, type: Helm, source: https://charts.example.com}\n"
    ),
    "bare-v.yaml": _recipe(
        DEPLOY, GPU_OP + "  - {name: extra, type: Helm, source: https://charts.example.com, version: v}\n"
    ),
    "kustomize-no-path.yaml": _recipe(
        DEPLOY, GPU_OP + "  - {name: kz, type: Kustomize, source: https://git.example.com/kz}\n"
    ),
    "kustomize-tag.yaml": _recipe(DEPLOY, GPU_OP + "  - {name: kz, type: Kustomize, path: base, tag: v1}\n"),
    "patches.yaml": _recipe(
        DEPLOY, GPU_OP + "  - {name: extra, type: Helm, manifestFiles: [a.yaml], patches: [p.yaml]}\n"
    ),
    "odd-type.yaml": _recipe(DEPLOY, GPU_OP + "  - {name: extra, type: Jsonnet}\n"),
    "two-problems.yaml": _recipe(
        DEPLOY, GPU_OP + "  - {name: zz, type: Jsonnet}\n  - {name: aa, type: Kustomize}\n"
    ),
    "cfg-kind.yaml": "kind: Config\nspec: {}\n",
    "cfg-list.yaml": "kind: AICRConfig\nspec:\n  validate:\n    agent: {namespace: [a, b]}\n",
    "cfg-timeout.yaml": "kind: AICRConfig\nspec:\n  validate:\n    execution: {timeout: 5x}\n",
    "cfg-phases.yaml": "kind: AICRConfig\nspec:\n  validate:\n    execution: {phases: deployment}\n",
    "cfg-tol.yaml": "kind: AICRConfig\nspec:\n  validate:\n    agent: {tolerations: '*'}\n",
    "cfg-bool.yaml": "kind: AICRConfig\nspec:\n  validate:\n    agent: {requireGpu: 'yes'}\n",
    "cfg-bad.yaml": "kind: AICRConfig\nspec: [\n",
    "cfg-fake-nodes.yaml": "kind: AICRConfig\nspec:\n  validate:\n    execution: {allowFakeNodes: 'yes'}\n",
    "kubeconfig-garbage": "this: is: not: a kubeconfig\n",
    "kubeconfig-empty": "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    "afile": "x\n",
    # a --data directory whose catalog overlay gives a check a budget that is not a Go duration
    "data-budget/registry.yaml": "components: []\n",
    "data-budget/validators/catalog.yaml": "validators:\n  - {name: operator-health, timeout: 2 minutes}\n",
    # inference-perf knobs: a --data catalog overlay's router mode, a recipe's cache StorageClass
    "data-router/registry.yaml": "components: []\n",
    "data-router/validators/catalog.yaml": (
        "validators:\n  - name: inference-perf\n"
        "    env: [{name: AICR_INFERENCE_PERF_ROUTER_MODE, value: direct}]\n"
    ),
    "inference.yaml": _recipe(
        "validation:\n  performance:\n    checks: [inference-perf]\n"
        "    constraints: [{name: inference-throughput, value: '>= 1'}]\n"
    ),
    "inference-sc.yaml": _recipe(
        "validation:\n  performance:\n    checks: [inference-perf]\n"
        "    constraints: [{name: inference-throughput, value: '>= 1'},"
        " {name: inference-model-cache-storage-class, value: Hyperdisk_Balanced}]\n"
    ),
    "data-budget-neg/registry.yaml": "components: []\n",
    "data-budget-neg/validators/catalog.yaml": "validators:\n  - {name: operator-health, timeout: -1m}\n",
    # alias bombs where a user's YAML reaches us: a componentRef's overrides, a snapshot measurement
    # value, an AICRConfig, a --data file
    "bomb-recipe.yaml": _recipe(
        DEPLOY,
        "componentRefs:\n  - name: gpu-operator\n    namespace: gpu-operator\n    type: Helm\n"
        "    source: https://helm.ngc.nvidia.com/nvidia\n    version: v25.10.1\n    overrides:\n"
        + alias_bomb("      "),
    ),
    "bomb-snap.yaml": (
        "kind: Snapshot\napiVersion: aicr.run/v1alpha2\nmeasurements:\n  - type: K8s\n    subtypes:\n"
        "      - subtype: server\n        data:\n          version: v1.33.0\n" + alias_bomb("          ")
    ),
    "bomb-cfg.yaml": (
        "kind: AICRConfig\nspec:\n  validate:\n    agent: {namespace: x}\nx:\n" + alias_bomb("  ")
    ),
    "self-anchor.yaml": HEAD + "componentRefs: &r [*r]\n" + DEPLOY,
    # a key given twice (Go's yaml.v3 refuses it; the last one used to win silently)
    "dup-recipe.yaml": _recipe(DEPLOY) + "validation:\n  conformance: {checks: [dra-support]}\n",
    "dup-snap.yaml": (
        "kind: Snapshot\napiVersion: aicr.run/v1alpha2\nmeasurements: []\nmeasurements:\n  - type: K8s\n"
    ),
    "dup-cfg.yaml": "kind: AICRConfig\nspec:\n  validate: {}\n  validate: {}\n",
    # a RecipeMetadata overlay as the recipe: hydrated from its criteria, as AICR does; without
    # criteria, or with criteria that are not valid, refused
    "overlay-nocrit.yaml": "kind: RecipeMetadata\nmetadata: {name: x}\nspec: {}\n",
    "overlay-badcrit.yaml": "kind: RecipeMetadata\nmetadata: {name: x}\nspec:\n  criteria: {service: nope}\n",
    "data-dup/registry.yaml": "components: []\n",
    "data-dup/validators/catalog.yaml": "validators: []\nvalidators: []\n",
}

E = "aicr-pytest: error: "
P = "ERROR: "
V, T = "validate", "pytest"
EMIT_SIMULATED = (
    "--emit-attestation is refused with --simulate: a simulated cluster's results must never be "
    "signed as a cluster's evidence"
)
OK = ["-r", "{tmp}/ok.yaml", "-s", "{tmp}/snap.yaml"]
OFF = [*OK, "--no-cluster"]
TIMEOUT_HINT = "parse error (a Go duration such as 5m, 90s, 1h30m)"
SKIP_BOGUS = 'invalid skipChecks: skipChecks entry "bogus" matches no validator in the catalog'
SKIP_EMPTY = (
    "invalid skipChecks: skipChecks removes every declared check from phase deployment; a phase with "
    "nothing left to run still reports passed, so drop the phase from the run instead of emptying it"
)
VALID_PHASES = "valid phases: readiness, deployment, performance, conformance"
INCOHERENT = "recipe has incoherent component ref(s): "
FABRIC = 'unsupported AICR_NCCL_FABRIC="bogus" (expected "efa" or "roce")'
NO_KUBECONFIG_ENV = "KUBECONFIG is set but names no existing file: {tmp}/no-kubeconfig"
NOT_A_DIR = "cannot write the report there: it is a directory"
PROC = "cannot write the report there: ENOENT (No such file or directory)"
CFG = "--config {tmp}/"
SAME, OWN = "the same file as", "give each output its own path"
ON_INPUT, OVER = "the same file as the input", "it would be overwritten"
PREDICATE_VERSIONS = "want 1 (recipe-evidence/v1, the default) or 3 (recipe-evidence/v3)"
NO_CONTEXT = 'cannot load kubeconfig {tmp}/kubeconfig-empty: context "nope" not found (contexts: none)'

FIFO_IN_LIST = (
    "kubeconfig {tmp}/fifo-kubeconfig ($KUBECONFIG) is not a regular file (a FIFO): refusing to read it"
)

Case = tuple[str, list[str], dict[str, str], int, str]
#: FIFOs the runner makes under ``{tmp}`` (no one writes to them)
FIFOS = ["fifo", "data-fifo/registry.yaml"]


def _both(argv: list[str], env: dict[str, str], line: str) -> list[Case]:
    """The same input on both entry points (the runner gives pytest its own spelling of each flag)."""
    return [(V, argv, env, 2, P + line), (T, argv, env, 4, P + line)]


# provider data (read before any cluster work) and -o cm://namespace/name
LIVE = ["-r", "{tmp}/ok.yaml"]
AKS_SHAPE = "expected the JSON array emitted by `az aks nodepool list -o json`"
GKE_SHAPE = (
    "expected the JSON array emitted by `gcloud container node-pools list --cluster <cluster> --format=json`"
)
OKE_SHAPE = (
    "expected the JSON object emitted by "
    "`oci ce cluster list-addons --cluster-id <cluster-ocid> --all --output json`"
)
FILES.update(
    {
        "aks-object.json": '{"value": []}\n',
        "gke-null.json": "null\n",
        "oke-array.json": "[]\n",
        "oke-no-data.json": '{"opc-next-page": null}\n',
        "aks-big.json": "[" + " " * (1 << 20) + "]\n",
        # today's AICR headers: v1beta2 needs a profile or a configuration; v1 takes no configuration
        "v1beta2-bare.yaml": _recipe(DEPLOY).replace("aicr.run/v1alpha2", "aicr.run/v1beta2"),
        "v1-accounting.yaml": _recipe(DEPLOY).replace("aicr.run/v1alpha2", "aicr.run/v1")
        + "configuration: {slurm: {accounting: {mode: disabled}}}\n",
    }
)
PROVIDER_CASES: list[Case] = [
    (
        V,
        [*LIVE, "--aks-gpu-pools", "{tmp}/missing.json"],
        {},
        2,
        E + "AKS GPU pools file not found: {tmp}/missing.json",
    ),
    (V, [*LIVE, "--aks-gpu-pools", "{tmp}"], {}, 2, E + 'AKS GPU pools path "{tmp}" is not a regular file'),
    (
        V,
        [*LIVE, "--aks-gpu-pools", "{tmp}/aks-big.json"],
        {},
        2,
        E + 'AKS GPU pools file "{tmp}/aks-big.json" exceeds 1048576 bytes',
    ),
    (
        V,
        [*LIVE, "--aks-gpu-pools", "{tmp}/afile"],
        {},
        2,
        E + f'failed to decode AKS GPU pools file "{{tmp}}/afile": {AKS_SHAPE}',
    ),
    (
        V,
        [*LIVE, "--aks-gpu-pools", "{tmp}/aks-object.json"],
        {},
        2,
        E + f'failed to decode AKS GPU pools file "{{tmp}}/aks-object.json": {AKS_SHAPE}',
    ),
    (
        V,
        [*LIVE, "--gke-gpu-pools", "{tmp}/gke-null.json"],
        {},
        2,
        E + f'failed to decode GKE GPU pools file "{{tmp}}/gke-null.json": {GKE_SHAPE}',
    ),
    (
        V,
        LIVE,
        {"AICR_GKE_GPU_POOLS_PATH": "missing-gke.json"},
        2,
        E + "GKE GPU pools file not found: missing-gke.json",
    ),
    (
        V,
        [*LIVE, "--oke-addons", "{tmp}/oke-array.json"],
        {},
        2,
        E + f'failed to decode OKE cluster add-ons file "{{tmp}}/oke-array.json": {OKE_SHAPE}',
    ),
    (
        V,
        [*LIVE, "--oke-addons", "{tmp}/oke-no-data.json"],
        {},
        2,
        E + f'failed to decode OKE cluster add-ons file "{{tmp}}/oke-no-data.json": {OKE_SHAPE}',
    ),
    (
        V,
        ["-r", "{tmp}/v1beta2-bare.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        P
        + "recipe {tmp}/v1beta2-bare.yaml: apiVersion aicr.run/v1beta2 requires metadata.selectedProfile or "
        "configuration.slurm.accounting",
    ),
    (
        V,
        ["-r", "{tmp}/v1-accounting.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        P + "recipe {tmp}/v1-accounting.yaml: configuration.slurm.accounting requires apiVersion "
        "aicr.run/v1beta2, not aicr.run/v1",
    ),
    (V, [*OFF, "-o", "cm://"], {}, 2, E + 'invalid --output "cm://": expected cm://namespace/name'),
    (V, [*OFF, "-o", "cm://ns"], {}, 2, E + 'invalid --output "cm://ns": expected cm://namespace/name'),
    (V, [*OFF, "-o", "cm://ns/"], {}, 2, E + 'invalid --output "cm://ns/": expected cm://namespace/name'),
    (
        V,
        [*OFF, "-o", "cm://ns/Bad_Name"],
        {},
        2,
        E + 'invalid --output "cm://ns/Bad_Name": ConfigMap name "Bad_Name" must be a DNS-1123 subdomain',
    ),
    (
        V,
        [*OFF, "-o", "cm://Team_A/report"],
        {},
        2,
        E + 'invalid --output "cm://Team_A/report": namespace "Team_A" must be a DNS-1123 label',
    ),
]

CASES: list[Case] = [
    # --timeout: a Go duration (validate checks it before anything else; pytest in its settings)
    (V, [*OFF, "--timeout", "5x"], {}, 2, E + f'invalid value "5x" for flag --timeout: {TIMEOUT_HINT}'),
    (V, [*OFF, "--timeout", "5"], {}, 2, E + f'invalid value "5" for flag --timeout: {TIMEOUT_HINT}'),
    (V, [*OFF, "--timeout", "0s"], {}, 2, E + f'invalid value "0s" for flag --timeout: {TIMEOUT_HINT}'),
    (V, [*OFF, "--timeout=-1m"], {}, 2, E + f'invalid value "-1m" for flag --timeout: {TIMEOUT_HINT}'),
    (
        T,
        [*OFF, "--aicr-timeout", "1.5.m"],
        {},
        4,
        P + f'invalid value "1.5.m" for flag --timeout: {TIMEOUT_HINT}',
    ),
    # report destinations that cannot be written, before the run
    (V, [*OFF, "-o", "/proc/ctrf.json"], {}, 2, E + f"--output /proc/ctrf.json: {PROC}"),
    (V, [*OFF, "-o", "{tmp}"], {}, 2, E + f"--output {{tmp}}: {NOT_A_DIR}"),
    (
        V,
        [*OFF, "-o", "{tmp}/afile/ctrf.json"],
        {},
        2,
        E + "--output {tmp}/afile/ctrf.json: cannot write the report there: {tmp}/afile is not a directory",
    ),
    (
        T,
        [*OFF, "--aicr-ctrf-report", "/proc/ctrf.json"],
        {},
        4,
        P + f"--aicr-ctrf-report /proc/ctrf.json: {PROC}",
    ),
    (T, [*OFF, "--aicr-ctrf-report", "{tmp}"], {}, 4, P + f"--aicr-ctrf-report {{tmp}}: {NOT_A_DIR}"),
    # two outputs on one file, or an output on an input: refused before anything runs
    (
        V,
        [*OFF, "-o", "x.json", "--html", "x.json"],
        {},
        2,
        E + f"--html x.json: {SAME} --output x.json; {OWN}",
    ),
    (
        V,
        [*OFF, "-o", "x.xml", "--", "--junitxml=x.xml"],
        {},
        2,
        E + f"--junitxml x.xml: {SAME} --output x.xml; {OWN}",
    ),
    (
        V,
        [*OFF, "-o", "{tmp}/ok.yaml"],
        {},
        2,
        E + f"--output {{tmp}}/ok.yaml: {ON_INPUT} --recipe {{tmp}}/ok.yaml; {OVER}",
    ),
    (
        V,
        [*OFF, "--html", "snap.yaml"],
        {},
        2,
        E + f"--html snap.yaml: {ON_INPUT} --snapshot {{tmp}}/snap.yaml; {OVER}",
    ),
    (
        T,
        [*OFF, "--ctrf-report", "r.json", "--junitxml", "{tmp}/r.json"],
        {},
        4,
        P + f"--junitxml {{tmp}}/r.json: {SAME} --aicr-ctrf-report r.json; {OWN}",
    ),
    (
        T,
        [*OFF, "--aicr-html", "ok.yaml"],
        {},
        4,
        P + f"--aicr-html ok.yaml: {ON_INPUT} --recipe {{tmp}}/ok.yaml; {OVER}",
    ),
    # one of validate's own options again after --, in pytest's spelling: it would disagree with
    # what validate resolved, so it is refused before any work
    (
        V,
        [*OFF, "--timeout", "5m", "--", "--aicr-timeout=1s"],
        {},
        2,
        E + "--aicr-timeout after --: validate sets it from its own options; give --timeout before --",
    ),
    (
        V,
        [*OFF, "--", "--aicr-ctrf-report", "x.json"],
        {},
        2,
        E + "--aicr-ctrf-report after --: validate sets it from its own options; give -o/--output before --",
    ),
    # the HTML page, JUnit XML and the evidence bundle: probed before the run too (a long run's output
    # is not lost)
    (T, [*OFF, "--junitxml", "/proc/junit.xml"], {}, 4, P + f"--junitxml /proc/junit.xml: {PROC}"),
    (V, [*OFF, "--html", "/proc/run.html"], {}, 2, P + f"--html /proc/run.html: {PROC}"),
    (T, [*OFF, "--aicr-html", "/proc/run.html"], {}, 4, P + f"--html /proc/run.html: {PROC}"),
    *_both(
        [*OFF, "--emit-attestation", "/proc/evidence"],
        {},
        "--emit-attestation /proc/evidence: cannot write there: ENOENT (No such file or directory)",
    ),
    *_both(
        [*OFF, "--emit-attestation", "{tmp}/afile"],
        {},
        "--emit-attestation {tmp}/afile: cannot write there: it is not a directory",
    ),
    # a simulated cluster's results are never signed as a cluster's evidence
    (
        V,
        [*OK, "--simulate", "h100-eks-training", "--emit-attestation", "{tmp}/ev"],
        {},
        2,
        E + EMIT_SIMULATED,
    ),
    (
        T,
        [*OK, "--aicr-simulated", "h100-eks-training", "--emit-attestation", "{tmp}/ev"],
        {},
        4,
        P + EMIT_SIMULATED,
    ),
    # --predicate-version: the recipe-evidence predicate type to write, 1 or 3
    *_both(
        [*OFF, "--emit-attestation", "{tmp}/ev", "--predicate-version", "2"],
        {},
        'invalid --predicate-version "2": ' + PREDICATE_VERSIONS,
    ),
    *_both(
        [*OFF, "--predicate-version", "three"],
        {},
        'invalid --predicate-version "three": ' + PREDICATE_VERSIONS,
    ),
    # --recipe from the flag or --config
    (
        V,
        ["-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        E + "--recipe is required (or set spec.validate.input.recipe in --config)",
    ),
    # --config
    (V, [*OFF, "--config", "{tmp}/nope.yaml"], {}, 2, E + CFG + "nope.yaml: file not found"),
    (
        V,
        [*OFF, "--config", "https://example.com/aicr.yaml"],
        {},
        2,
        E + "--config https://example.com/aicr.yaml: loading an AICRConfig from a URL is not supported "
        "(no network fetch for run configuration); download it and pass the file",
    ),
    (
        V,
        [*OFF, "--config", "{tmp}/cfg-kind.yaml"],
        {},
        2,
        E + CFG + 'cfg-kind.yaml: kind is "Config", expected "AICRConfig"',
    ),
    (
        V,
        [*OFF, "--config", "{tmp}/cfg-list.yaml"],
        {},
        2,
        E + CFG + "cfg-list.yaml: spec.validate.agent.namespace must be a string",
    ),
    (
        V,
        [*OFF, "--config", "{tmp}/cfg-timeout.yaml"],
        {},
        2,
        E + f'invalid value "5x" for flag --timeout: {TIMEOUT_HINT}',
    ),
    (
        V,
        [*OFF, "--config", "{tmp}/cfg-phases.yaml"],
        {},
        2,
        E + CFG + "cfg-phases.yaml: spec.validate.execution.phases must be a list of strings",
    ),
    (
        V,
        [*OFF, "--config", "{tmp}/cfg-tol.yaml"],
        {},
        2,
        E + CFG + "cfg-tol.yaml: spec.validate.agent.tolerations must be a list of tolerations",
    ),
    (
        V,
        [*OFF, "--config", "{tmp}/cfg-bool.yaml"],
        {},
        2,
        E + CFG + "cfg-bool.yaml: spec.validate.agent.requireGpu must be a boolean",
    ),
    (
        V,
        [*OFF, "--config", "{tmp}/cfg-fake-nodes.yaml"],
        {},
        2,
        E + CFG + "cfg-fake-nodes.yaml: spec.validate.execution.allowFakeNodes must be a boolean",
    ),
    (
        T,
        [*OFF, "--config", "{tmp}/cfg-fake-nodes.yaml"],
        {},
        4,
        P + CFG + "cfg-fake-nodes.yaml: spec.validate.execution.allowFakeNodes must be a boolean",
    ),
    (T, [*OFF, "--config", "{tmp}/nope.yaml"], {}, 4, P + CFG + "nope.yaml: file not found"),
    (
        T,
        [*OFF, "--config", "{tmp}/cfg-kind.yaml"],
        {},
        4,
        P + CFG + 'cfg-kind.yaml: kind is "Config", expected "AICRConfig"',
    ),
    # boolean environment variables of the new switches
    (
        V,
        OFF,
        {"AICR_REQUIRE_GPU": "maybe"},
        2,
        E + "AICR_REQUIRE_GPU='maybe': invalid boolean value (use true or false)",
    ),
    (V, OFF, {"AICR_DEBUG": "loud"}, 2, E + "AICR_DEBUG='loud': invalid boolean value (use true or false)"),
    (V, OFF, {"AICR_LOG_JSON": "x"}, 2, E + "AICR_LOG_JSON='x': invalid boolean value (use true or false)"),
    (
        T,
        OFF,
        {"AICR_REQUIRE_GPU": "maybe"},
        4,
        P + "AICR_REQUIRE_GPU='maybe': invalid boolean value (use true or false)",
    ),
    # --skip-check guards (AICR's: unknown name, a phase emptied)
    *_both([*OFF, "--skip-check", "bogus"], {}, SKIP_BOGUS),
    *_both([*OFF, "--skip-check", "operator-health"], {}, SKIP_EMPTY),
    (
        V,
        [*OFF, "--skip-check", "bogus", "--skip-check", "nope"],
        {},
        2,
        P + 'invalid skipChecks: skipChecks entry "bogus" matches no validator in the catalog; '
        'skipChecks entry "nope" matches no validator in the catalog',
    ),
    # an unknown phase key in `validation`, named, with the valid ones
    *_both(
        ["-r", "{tmp}/typo.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        f'recipe {{tmp}}/typo.yaml: unknown validation phase "performace"; {VALID_PHASES}',
    ),
    (
        V,
        ["-r", "{tmp}/typo-deploy.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        P + f'recipe {{tmp}}/typo-deploy.yaml: unknown validation phase "deploy"; {VALID_PHASES}',
    ),
    # load-time coherence
    *_both(
        ["-r", "{tmp}/no-primary.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        INCOHERENT
        + 'Helm component "gpu-operator" has no deployable primary (no source, chart or manifestFiles)',
    ),
    (
        V,
        ["-r", "{tmp}/chart-no-source.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        P + INCOHERENT + 'Helm component "extra" has a chart name ("extra-chart") but no source repository',
    ),
    (
        V,
        ["-r", "{tmp}/no-version.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        P + INCOHERENT + 'Helm component "extra" has no chart version; set version: on the componentRef',
    ),
    (
        V,
        ["-r", "{tmp}/bare-v.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        P + INCOHERENT + 'Helm component "extra" has chart version "v"; set a full chart version',
    ),
    (
        V,
        ["-r", "{tmp}/kustomize-no-path.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        P + INCOHERENT + 'component "kz" is Kustomize but has no path; a path is required to build from',
    ),
    (
        T,
        ["-r", "{tmp}/kustomize-tag.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        4,
        P + INCOHERENT + 'component "kz" is Kustomize with tag "v1" but no source',
    ),
    (
        V,
        ["-r", "{tmp}/patches.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        P
        + INCOHERENT
        + 'component "extra" declares patches, but no deployer applies patch files; remove `patches`',
    ),
    (
        V,
        ["-r", "{tmp}/odd-type.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        P + INCOHERENT + 'component "extra" has unsupported type "Jsonnet"; expected "Helm" or "Kustomize"',
    ),
    (
        V,
        ["-r", "{tmp}/two-problems.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        2,
        P + INCOHERENT + 'component "aa" is Kustomize but has no path; a path is required to build from; '
        'component "zz" has unsupported type "Jsonnet"; expected "Helm" or "Kustomize"',
    ),
    # AICR_NCCL_FABRIC whenever an NCCL check is selected (not only -net)
    *_both(
        ["-r", "{tmp}/nccl.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {"AICR_NCCL_FABRIC": "bogus"},
        FABRIC,
    ),
    # AICR_NCCL_RUNTIME_IMAGE: an NCCL check on one of our runtimes, before anything touches the cluster
    *_both(
        ["-r", "{tmp}/nccl.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {"AICR_NCCL_RUNTIME_IMAGE": "nvcr.io/NVIDIA/pytorch:25.09 py3"},
        'invalid AICR_NCCL_RUNTIME_IMAGE="nvcr.io/NVIDIA/pytorch:25.09 py3": not a well-formed image '
        "reference ([registry/]repository[:tag][@digest])",
    ),
    *_both(
        ["-r", "{tmp}/nccl.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {"AICR_NCCL_RUNTIME_IMAGE": "   "},
        "AICR_NCCL_RUNTIME_IMAGE is set but blank after trimming whitespace",
    ),
    # --cuda-smoke-image (or AICR_CUDA_SMOKE_IMAGE) that names no image, when gpu-cuda-smoke runs
    *_both(
        [
            "-r",
            "{tmp}/smoke.yaml",
            "-s",
            "{tmp}/snap.yaml",
            "--no-cluster",
            "--cuda-smoke-image",
            "CUDA Sample",
        ],
        {},
        "--cuda-smoke-image 'CUDA Sample' is not an image reference ([registry/]repository[:tag][@digest])",
    ),
    *_both(
        ["-r", "{tmp}/smoke.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {"AICR_CUDA_SMOKE_IMAGE": "cuda:"},
        "--cuda-smoke-image 'cuda:' is not an image reference ([registry/]repository[:tag][@digest])",
    ),
    # inference-perf: AICR_INFERENCE_PERF_ROUTER_MODE outside Dynamo's strategies (the catalog's env),
    # an inference-model-cache-storage-class that cannot name a StorageClass
    *_both(
        [
            "-r",
            "{tmp}/inference.yaml",
            "-s",
            "{tmp}/snap.yaml",
            "--no-cluster",
            "--data",
            "{tmp}/data-router",
        ],
        {},
        'invalid AICR_INFERENCE_PERF_ROUTER_MODE "direct": must be one of kv, round-robin, random, '
        "power-of-two, least-loaded, device-aware-weighted",
    ),
    *_both(
        ["-r", "{tmp}/inference-sc.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        'invalid inference-model-cache-storage-class="Hyperdisk_Balanced": must be a StorageClass name '
        '(lowercase letters, digits, "-" and ".", at most 253 characters, starting and ending with a letter '
        "or digit)",
    ),
    # node health: the knobs of a selected node-health check, before the run starts
    *_both(
        ["-r", "{tmp}/diag.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster", "--dcgm-diag-level", "5"],
        {},
        "--dcgm-diag-level: DCGM diagnostic level '5' is not valid (expected 1, 2, 3 or 4, or quick, "
        "medium, long, xlong)",
    ),
    *_both(
        ["-r", "{tmp}/diag.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {"AICR_DCGM_DIAG_LEVEL": "fast"},
        "--dcgm-diag-level: DCGM diagnostic level 'fast' is not valid (expected 1, 2, 3 or 4, or quick, "
        "medium, long, xlong)",
    ),
    *_both(
        ["-r", "{tmp}/diag.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster", "--dcgm-image", " "],
        {},
        "--dcgm-image is empty (give the DCGM image gpu-diagnostics runs)",
    ),
    *_both(
        ["-r", "{tmp}/health.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster", "--gpu-health-window", "2h"],
        {},
        "gpu-health: invalid window='2h': input should be less than or equal to 3600",
    ),
    *_both(
        [
            "-r",
            "{tmp}/health.yaml",
            "-s",
            "{tmp}/snap.yaml",
            "--no-cluster",
            "--gpu-health-threshold",
            "ecc_dbe_max=-1",
        ],
        {},
        "gpu-health: invalid ecc_dbe_max='-1': input should be greater than or equal to 0",
    ),
    # --isolate-bad-nodes acts on the NCCL all-reduce checks: a run that selects none is refused
    *_both(
        [*OFF, "--isolate-bad-nodes"],
        {},
        "--isolate-bad-nodes: the run selects no NCCL all-reduce check (nccl-all-reduce-bw, "
        "nccl-all-reduce-bw-net, nccl-all-reduce-bw-nvls); select one or drop the flag",
    ),
    *_both(
        [
            "-r",
            "{tmp}/nccl.yaml",
            "-s",
            "{tmp}/snap.yaml",
            "--no-cluster",
            "--phase",
            "deployment",
            "--isolate-bad-nodes",
        ],
        {},
        "--isolate-bad-nodes: the run selects no NCCL all-reduce check (nccl-all-reduce-bw, "
        "nccl-all-reduce-bw-net, nccl-all-reduce-bw-nvls); select one or drop the flag",
    ),
    # --label-bad-nodes / --taint-bad-nodes act on node-health verdicts: a run with no node-health
    # check and no bad-node isolation is refused
    *_both(
        [*OFF, "--taint-bad-nodes"],
        {},
        "--taint-bad-nodes: the run selects no node-health check (gpu-inventory, gpu-diagnostics, "
        "gpu-health, gpu-cuda-smoke) and no --isolate-bad-nodes; add --node-health or drop the flag",
    ),
    *_both(
        [*OFF, "--label-bad-nodes"],
        {},
        "--label-bad-nodes: the run selects no node-health check (gpu-inventory, gpu-diagnostics, "
        "gpu-health, gpu-cuda-smoke) and no --isolate-bad-nodes; add --node-health or drop the flag",
    ),
    # --pushgateway that is not an http(s) URL, --metrics-file that cannot be written (a Pushgateway that
    # refuses is not a usage error: tests/badinput/test_schedule_badinput.py)
    *_both(
        [*OFF, "--pushgateway", "pushgateway.monitoring:9091"],
        {},
        "--pushgateway 'pushgateway.monitoring:9091': not an http:// or https:// URL",
    ),
    *_both(
        [*OFF, "--metrics-file", "{tmp}"],
        {},
        "--metrics-file {tmp}: cannot write the report there: it is a directory",
    ),
    # a per-check budget from a --data catalog overlay that is not a Go duration, or is negative
    *_both(
        [*OFF, "--data", "{tmp}/data-budget"],
        {},
        'validators/catalog.yaml: validator "operator-health": timeout "2 minutes" is not a Go duration '
        "(such as 2m or 90s)",
    ),
    *_both(
        [*OFF, "--data", "{tmp}/data-budget-neg"],
        {},
        'validators/catalog.yaml: validator "operator-health": timeout "-1m" is negative',
    ),
    # a FIFO, a socket or a device as a file input: refused without opening it (it would hang)
    *_both(
        ["-r", "{tmp}/fifo", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        "recipe path is not a regular file (a FIFO): {tmp}/fifo",
    ),
    *_both(
        ["-r", "{tmp}/ok.yaml", "-s", "/dev/zero", "--no-cluster"],
        {},
        "snapshot path is not a regular file (a device): /dev/zero",
    ),
    *_both(
        [*OFF, "--emit-attestation", "{tmp}/ev", "--bom", "{tmp}/fifo"],
        {},
        "--bom {tmp}/fifo: not a regular file (a FIFO); it is not read",
    ),
    *_both(
        [*OFF, "--emit-attestation", "{tmp}/ev", "--bom", "/dev/urandom"],
        {},
        "--bom /dev/urandom: not a regular file (a device); it is not read",
    ),
    (
        V,
        [*OFF, "--config", "{tmp}/fifo"],
        {},
        2,
        E + CFG + "fifo: not a regular file (a FIFO); it is not read",
    ),
    *_both(
        [*OFF, "--data", "{tmp}/data-fifo"],
        {},
        "--data file {tmp}/data-fifo/registry.yaml: not a regular file (a FIFO); it is not read",
    ),
    *_both(
        ["-r", "{tmp}/overlay-nocrit.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        "overlay {tmp}/overlay-nocrit.yaml has no criteria; only leaf overlays (with spec.criteria) can "
        'be used directly — run "aicr-pytest recipe" with explicit criteria instead',
    ),
    *_both(
        ["-r", "{tmp}/overlay-badcrit.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        "overlay {tmp}/overlay-badcrit.yaml: spec.criteria: invalid service type: nope "
        "(valid: any, aks, bcm, eks, generic, gke, k0s, kind, lke, metal3, ocp, oke, rke2)",
    ),
    # a mapping key given twice: file, line and key, in yaml.v3's words
    *_both(
        ["-r", "{tmp}/dup-recipe.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        'malformed YAML in {tmp}/dup-recipe.yaml: line 7: mapping key "validation" already defined at line 5',
    ),
    *_both(
        ["-r", "{tmp}/ok.yaml", "-s", "{tmp}/dup-snap.yaml", "--no-cluster"],
        {},
        'snapshot {tmp}/dup-snap.yaml: invalid YAML: line 4: mapping key "measurements" already defined '
        "at line 3",
    ),
    (
        V,
        [*OFF, "--config", "{tmp}/dup-cfg.yaml"],
        {},
        2,
        E + CFG + 'dup-cfg.yaml: not valid YAML: line 4: mapping key "validate" already defined at line 3',
    ),
    *_both(
        [*OFF, "--data", "{tmp}/data-dup"],
        {},
        "malformed YAML in data file {tmp}/data-dup/validators/catalog.yaml: line 2: mapping key "
        '"validators" already defined at line 1',
    ),
    # kubeconfig / context missing or unreadable, named before any check runs (plain pytest: named
    # by flag, not $KUBECONFIG, and no conftest fixture uses the test kit, which may write it later)
    (
        T,
        [*OK, "--kubeconfig", "/nonexistent/kubeconfig"],
        {},
        4,
        P + "kubeconfig not found: /nonexistent/kubeconfig",
    ),
    (T, [*OK, "--kubeconfig", "{tmp}/kubeconfig-empty", "--kube-context", "nope"], {}, 4, P + NO_CONTEXT),
    *_both(
        [*OK, "--kubeconfig", "{tmp}/kubeconfig-garbage"],
        {},
        "cannot load kubeconfig {tmp}/kubeconfig-garbage (--kubeconfig): not valid YAML: mapping values "
        "are not allowed here (line 1, column 9)",
    ),
    (
        V,
        [*OK, "--kubeconfig", "/nonexistent/kubeconfig"],
        {},
        2,
        P + "kubeconfig not found: /nonexistent/kubeconfig",
    ),
    (V, OK, {}, 2, P + NO_KUBECONFIG_ENV),
    (
        V,
        [*OK, "--kubeconfig", "{tmp}/kubeconfig-empty", "--kube-context", "nope"],
        {},
        2,
        P + NO_CONTEXT,
    ),
    (
        T,
        ["-r", "{tmp}/chart-no-source.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        4,
        P + INCOHERENT + 'Helm component "extra" has a chart name ("extra-chart") but no source repository',
    ),
    (
        T,
        ["-r", "{tmp}/odd-type.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        4,
        P + INCOHERENT + 'component "extra" has unsupported type "Jsonnet"; expected "Helm" or "Kustomize"',
    ),
    (
        T,
        ["-r", "{tmp}/typo-deploy.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        4,
        P + f'recipe {{tmp}}/typo-deploy.yaml: unknown validation phase "deploy"; {VALID_PHASES}',
    ),
    # alias bombs: refused while parsing, before any later stage (bundle, BOM, CTRF) could expand them
    *_both(
        [
            "-r",
            "{tmp}/bomb-recipe.yaml",
            "-s",
            "{tmp}/snap.yaml",
            "--no-cluster",
            "--emit-attestation",
            "{tmp}/ev",
        ],
        {},
        "malformed YAML in {tmp}/bomb-recipe.yaml: document contains excessive aliasing (line 10)",
    ),
    *_both(
        ["-r", "{tmp}/ok.yaml", "-s", "{tmp}/bomb-snap.yaml", "--no-cluster"],
        {},
        "snapshot {tmp}/bomb-snap.yaml: invalid YAML: document contains excessive aliasing "
        'in "<byte string>", line 9, column 20',
    ),
    *_both(
        ["-r", "{tmp}/self-anchor.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"],
        {},
        "malformed YAML in {tmp}/self-anchor.yaml: anchor value contains itself (line 3)",
    ),
    (
        V,
        [*OFF, "--config", "{tmp}/bomb-cfg.yaml"],
        {},
        2,
        E + CFG + "bomb-cfg.yaml: not valid YAML: document contains excessive aliasing",
    ),
    # parse dcgm: a file that is not a DCGM diagnostic, a runtime error, no file
    (
        "parse",
        ["dcgm", "{tmp}/not-dcgm.json"],
        {},
        2,
        E + "DCGM diagnostic {tmp}/not-dcgm.json: not a DCGM diagnostic document "
        '(no "DCGM Diagnostic" object)',
    ),
    (
        "parse",
        ["dcgm", "{tmp}/afile"],
        {},
        2,
        E + "DCGM diagnostic {tmp}/afile: not JSON (Expecting value at line 1 column 1)",
    ),
    (
        "parse",
        ["dcgm", "{tmp}/dcgm-runtime.json"],
        {},
        2,
        E + "DCGM diagnostic {tmp}/dcgm-runtime.json: dcgmi diag reported a runtime error: Unable to connect "
        "to the host engine",
    ),
    ("parse", ["dcgm", "{tmp}/missing.json"], {}, 2, E + "DCGM diagnostic {tmp}/missing.json: no such file"),
    # cluster access: one line before any check (exec credential plugins, non-regular kubeconfig
    # files, no configuration at all, the reach bound)
    *_both(
        [*OK, "--kubeconfig", "{tmp}/kubeconfig-exec-fail"],
        {},
        "kubeconfig user sso: credential plugin sh failed (exit 1): error: login expired: run sso login",
    ),
    *_both(
        [*OK, "--kubeconfig", "{tmp}/kubeconfig-exec-garbage"],
        {},
        "kubeconfig user sso: credential plugin sh printed no ExecCredential: '<html>login</html>'",
    ),
    *_both(
        [*OK, "--kubeconfig", "{tmp}/fifo-kubeconfig"],
        {},
        "kubeconfig {tmp}/fifo-kubeconfig (--kubeconfig) is not a regular file (a FIFO): refusing to read it",
    ),
    (
        V,
        OK,
        {"KUBECONFIG": "{tmp}/kubeconfig-exec-fail:{tmp}/fifo-kubeconfig"},
        2,
        P + FIFO_IN_LIST,
    ),
    (
        V,
        OK,
        {"KUBECONFIG": "", "HOME": "{tmp}/home"},
        2,
        P + "no Kubernetes configuration found; tried --kubeconfig (not given), $KUBECONFIG (not set), "
        "in-cluster service account (not running in a pod), {tmp}/home/.kube/config (missing)",
    ),
    *_both(
        [*OK, "--reach-timeout", "5x"],
        {},
        'invalid value "5x" for flag --reach-timeout: parse error (a Go duration such as 10s, 1m, 1h)',
    ),
    *_both(
        [*OK, "--stale-after", "0s"],
        {},
        'invalid value "0s" for flag --stale-after: parse error (a Go duration such as 10s, 1m, 1h)',
    ),
    # simulate
    ("simulate", [], {}, 2, E + "simulate needs --profile PROFILE (aicr-pytest simulate --list shows them)"),
    *PROVIDER_CASES,
]
