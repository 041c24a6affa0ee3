"""Bad input to ``--cncf-submission``/``--feature``/``--evidence-dir``, on both entry points:
(arguments, expected exit code, the one line on stderr).

Data for the shared bad-input corpus, like :mod:`tests.badinput.recipe_cases`.  ``{tmp}`` stands
for a scratch directory holding :data:`FILES`; runners set ``KUBECONFIG={tmp}/no-kubeconfig`` (a
file that does not exist), so a case that reached the cluster would end with a different line.
:data:`VALIDATE_CASES` run as ``aicr-pytest validate ARGS``, :data:`PYTEST_CASES` as ``pytest ARGS``
(pytest's usage code is 4).  Blank lines are ignored; there must be no traceback.
"""

from __future__ import annotations

FILES: dict[str, str] = {
    "afile": "not a directory\n",
    "list-recipe.yaml": "- not a recipe\n",
}

E = "aicr-pytest: error: "
P = "ERROR: "
RECIPE = "../recipe.yaml"  # resolved by the runner to the repository's example recipe
VALID = (
    "dra-support, gang-scheduling, secure-access, accelerator-metrics, ai-service-metrics, "
    "inference-gateway, robust-operator, pod-autoscaling, cluster-autoscaling"
)
FEATURE_NEEDS = "[INVALID_REQUEST] --feature requires --cncf-submission"
NEEDS_DIR = "[INVALID_REQUEST] --cncf-submission requires --evidence-dir"
NOT_DIR = "[INVALID_REQUEST] --evidence-dir {tmp}/afile: exists and is not a directory"
CANNOT_CREATE = (
    "[INVALID_REQUEST] --evidence-dir {tmp}/afile/sub: cannot create the directory: Not a directory"
)


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
    *((args, 4, P + line) for args, line in _COMMON),
    (
        ["--recipe", "{tmp}/list-recipe.yaml", "--cncf-submission", "--evidence-dir", "{tmp}/ev"],
        4,
        P + "recipe {tmp}/list-recipe.yaml is not a YAML mapping (got a list)",
    ),
    (
        ["--cncf-submission", "--evidence-dir", "{tmp}/ev", "--feature", "hpa"],
        4,
        P + "KUBECONFIG is set but names no existing file: {tmp}/no-kubeconfig",
    ),
]
