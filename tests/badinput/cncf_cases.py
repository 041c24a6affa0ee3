"""Bad input to ``--cncf-submission``/``--feature``/``--evidence-dir``, on both entry points:
(arguments, expected exit code, the one line on stderr).

Data for the shared bad-input corpus, like :mod:`tests.badinput.recipe_cases`.  ``{tmp}`` stands
for a scratch directory holding :data:`FILES`; runners set ``KUBECONFIG={tmp}/no-kubeconfig`` (a
file that does not exist), so a case that reached the cluster would end with a different line.
:data:`VALIDATE_CASES` run as ``aicr-pytest validate ARGS``, :data:`PYTEST_CASES` as ``pytest ARGS``
(pytest's usage code is 4).  Blank lines are ignored; there must be no traceback.
"""

from __future__ import annotations

from tests.badinput.common import pytest_spelling

FILES: dict[str, str] = {
    "afile": "not a directory\n",
    "list-recipe.yaml": "- not a recipe\n",
    # --cncf-checklist templates that are not usable
    "not-yaml.yaml": "metadata: [unclosed\n",
    "list.yaml": "- id: gang_scheduling\n",
    "no-metadata.yaml": "spec:\n  security: []\n",
    "no-id.yaml": "metadata: {}\nspec:\n  security:\n    - {description: x, level: MUST}\n",
    "no-level.yaml": "metadata: {}\nspec:\n  security:\n    - {id: secure_accelerator_access}\n",
    "bad-level.yaml": "metadata: {}\nspec:\n  security:\n    - {id: secure_accelerator_access, level: MAY}\n",
    "empty-spec.yaml": "metadata: {}\nspec: {}\n",
    "PRODUCT.yaml": "- not a product\n",
    "config-should-not-bool.yaml": (
        "kind: AICRConfig\nspec:\n  validate:\n    execution: {cncfShould: 'yes'}\n"
    ),
    "config-missing-checklist.yaml": (
        "kind: AICRConfig\nspec:\n  validate:\n    cncf:\n      checklist: missing.yaml\n"
    ),
}

E = "aicr-pytest: error: "
P = "ERROR: "
RECIPE = "../recipe.yaml"  # resolved by the runner to the repository's example recipe
VALID = (
    "dra-support, gang-scheduling, secure-access, accelerator-metrics, ai-service-metrics, "
    "inference-gateway, robust-operator, pod-autoscaling, cluster-autoscaling, gpu-sharing, "
    "driver-runtime-management, workload-sandboxing, high-performance-networking"
)
FEATURE_NEEDS = "[INVALID_REQUEST] --feature requires --cncf-submission"
NEEDS_DIR = "[INVALID_REQUEST] --cncf-submission requires --evidence-dir"
NOT_DIR = "[INVALID_REQUEST] --evidence-dir {tmp}/afile: exists and is not a directory"
CANNOT_CREATE = (
    "[INVALID_REQUEST] --evidence-dir {tmp}/afile/sub: cannot create the directory: Not a directory"
)


CHECKLIST_NEEDS = "[INVALID_REQUEST] --cncf-checklist requires --cncf-submission"
SUBMIT = ["--cncf-submission", "--evidence-dir", "{tmp}/ev"]


#: (a --cncf-checklist path under {tmp}, the problem its one line names)
BAD_TEMPLATES: list[tuple[str, str]] = [
    ("/missing.yaml", "file not found"),
    ("", "cannot read the file: Is a directory"),
    ("/not-yaml.yaml", "not valid YAML: did not find expected ',' or ']' (line 2)"),
    ("/list.yaml", "not a CNCF AI-conformance checklist: no metadata/spec mapping"),
    ("/no-metadata.yaml", "not a CNCF AI-conformance checklist: no metadata mapping"),
    ("/no-id.yaml", "spec.security[0] has no id"),
    ("/no-level.yaml", 'requirement "secure_accelerator_access" (spec.security) has no level'),
    (
        "/bad-level.yaml",
        "requirement \"secure_accelerator_access\" (spec.security): unknown level 'MAY' "
        "(expected MUST or SHOULD)",
    ),
    ("/empty-spec.yaml", "the checklist has no requirements"),
]


def bad_checklist(name: str, problem: str) -> str:
    return f"[INVALID_REQUEST] --cncf-checklist {name}: {problem}"


def unknown(feature: str) -> str:
    return f'[INVALID_REQUEST] unknown feature "{feature}"; valid features: {VALID}'


#: (arguments after the entry point, exit code, message without the entry point's prefix)
_COMMON: list[tuple[list[str], str]] = [
    (["--feature", "dra"], FEATURE_NEEDS),
    (["--recipe", RECIPE, "--feature", "gang", "--evidence-dir", "{tmp}/ev"], FEATURE_NEEDS),
    (["--cncf-submission"], NEEDS_DIR),
    (["--cncf-submission", "--feature", "dra"], NEEDS_DIR),
    (["--cncf-submission", "--evidence-dir", ""], NEEDS_DIR),
    (["--cncf-submission", "--evidence-dir", "{tmp}/ev", "--feature", "bogus"], unknown("bogus")),
    (
        ["--cncf-submission", "--evidence-dir", "{tmp}/ev", "--feature", "all", "--feature", "DRA"],
        unknown("DRA"),
    ),
    # a check's name is not a feature's
    (
        ["--cncf-submission", "--evidence-dir", "{tmp}/ev", "--feature", "robust-controller"],
        unknown("robust-controller"),
    ),
    (["--cncf-submission", "--evidence-dir", "{tmp}/afile"], NOT_DIR),
    (["--cncf-submission", "--evidence-dir", "{tmp}/afile/sub"], CANNOT_CREATE),
    # without --cncf-submission the directory is still checked before anything runs
    (["--recipe", RECIPE, "--evidence-dir", "{tmp}/afile"], NOT_DIR),
    (["--recipe", RECIPE, "--evidence-dir", "{tmp}/afile/sub"], CANNOT_CREATE),
    # --cncf-checklist FILE and the product metadata: the template is read before the cluster
    (["--cncf-checklist", "{tmp}/list.yaml"], CHECKLIST_NEEDS),
    (["--recipe", RECIPE, "--evidence-dir", "{tmp}/ev", "--cncf-checklist", "{tmp}/x.yaml"], CHECKLIST_NEEDS),
    (
        [*SUBMIT, "--cncf-vendor-name", "ACME"],
        "[INVALID_REQUEST] --cncf-vendor-name requires --cncf-checklist",
    ),
    *(
        ([*SUBMIT, "--cncf-checklist", f"{{tmp}}{name}"], bad_checklist(f"{{tmp}}{name}", problem))
        for name, problem in BAD_TEMPLATES
    ),
    # the template may come from --config (spec.validate.cncf.checklist)
    (
        [*SUBMIT, "--config", "{tmp}/config-missing-checklist.yaml"],
        bad_checklist("missing.yaml", "file not found"),
    ),
    # a requirement id is a feature's name too, but a check's name is not
    ([*SUBMIT, "--feature", "gang_scheduling", "--feature", "bogus"], unknown("bogus")),
    # --cncf-should's --config key is a boolean
    (
        ["--recipe", RECIPE, "--config", "{tmp}/config-should-not-bool.yaml"],
        "--config {tmp}/config-should-not-bool.yaml: spec.validate.execution.cncfShould must be a boolean",
    ),
]

VALIDATE_CASES: list[tuple[list[str], int, str]] = [
    *((["validate", *args], 2, E + line) for args, line in _COMMON),
    # the recipe is loaded (and its allocation policy resolved) before the cluster is touched
    (
        ["validate", "-r", "{tmp}/list-recipe.yaml", "--cncf-submission", "--evidence-dir", "{tmp}/ev"],
        2,
        P + "recipe {tmp}/list-recipe.yaml is not a YAML mapping (got a list)",
    ),
    (
        ["validate", "--cncf-submission", "--evidence-dir", "{tmp}/ev", "-f", "dra"],
        2,
        P + "KUBECONFIG is set but names no existing file: {tmp}/no-kubeconfig",
    ),
    (
        ["validate", "--evidence-dir", "{tmp}/ev"],
        2,
        E + "--recipe is required (or set spec.validate.input.recipe in --config)",
    ),
]

PYTEST_CASES: list[tuple[list[str], int, str]] = [
    *((pytest_spelling(args), 4, P + line) for args, line in _COMMON),
    (
        ["--recipe", "{tmp}/list-recipe.yaml", "--aicr-cncf-submission", "--aicr-evidence-dir", "{tmp}/ev"],
        4,
        P + "recipe {tmp}/list-recipe.yaml is not a YAML mapping (got a list)",
    ),
    (
        ["--aicr-cncf-submission", "--aicr-evidence-dir", "{tmp}/ev", "--aicr-feature", "hpa"],
        4,
        P + "KUBECONFIG is set but names no existing file: {tmp}/no-kubeconfig",
    ),
]

#: ``aicr-pytest cncf check`` on unusable input: exit 2, one line, nothing on stdout
CHECK = "[INVALID_REQUEST] cncf check"
CNCF_CHECK_CASES: list[tuple[list[str], int, str]] = [
    (["cncf", "check", "{tmp}/missing.yaml"], 2, E + CHECK + " {tmp}/missing.yaml: file not found"),
    (
        ["cncf", "check", "{tmp}/not-yaml.yaml"],
        2,
        E + CHECK + " {tmp}/not-yaml.yaml: not valid YAML: did not find expected ',' or ']' (line 2)",
    ),
    (
        ["cncf", "check", "{tmp}/PRODUCT.yaml"],
        2,
        E + CHECK + " {tmp}/PRODUCT.yaml: not a PRODUCT.yaml (the document is not a mapping)",
    ),
    (
        ["cncf", "check", "{tmp}/no-metadata.yaml", "--checklist", "{tmp}/bad-level.yaml"],
        2,
        E + '[INVALID_REQUEST] --checklist {tmp}/bad-level.yaml: requirement "secure_accelerator_access" '
        "(spec.security): unknown level 'MAY' (expected MUST or SHOULD)",
    ),
    (
        ["cncf", "check", "{tmp}/no-metadata.yaml", "--checklist", "{tmp}/missing.yaml"],
        2,
        E + "[INVALID_REQUEST] --checklist {tmp}/missing.yaml: file not found",
    ),
    (
        [
            "cncf",
            "check",
            "{tmp}/no-metadata.yaml",
            "--checklist",
            "{tmp}/a.yaml",
            "--checklist",
            "{tmp}/b.yaml",
        ],
        2,
        E + "flag --checklist can only be specified once",
    ),
    (["cncf", "check"], 2, "aicr-pytest cncf check: error: the following arguments are required: product"),
]
