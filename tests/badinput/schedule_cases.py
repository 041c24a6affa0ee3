"""Bad input to ``aicr-pytest schedule``: (argv, expected exit code, the one line on stderr).

Every case is caught before anything connects (``KUBECONFIG`` names a file that does not exist, so
a case that got further would fail differently).  ``{tmp}`` stands for a scratch directory that
holds :data:`FILES`.
"""

from __future__ import annotations

FILES: dict[str, str] = {"recipe.yaml": "kind: RecipeResult\napiVersion: aicr.run/v1alpha2\n"}

E = "aicr-pytest: error: "
R = ["schedule", "-r", "{tmp}/recipe.yaml", "--dry-run"]
FIELDS = "a cron expression has 5 fields (minute hour day-of-month month day-of-week)"
IMAGE = "is not an image reference ([registry/]repository[:tag][@sha256:digest])"

MARKS = (
    "the scheduled run selects no node-health check (gpu-inventory, gpu-diagnostics, gpu-health, "
    "gpu-cuda-smoke); "
    "add --node-health or drop the flag"
)
NS = "is not a namespace name (lowercase letters, digits and -, at most 63)"
LATEST = "give a tag or a digest (an image without one means :latest, which moves)"

CASES: list[tuple[list[str], int, str]] = [
    # a malformed cron expression
    ([*R, "--cron", "0 */6 * *"], 2, E + f"--cron '0 */6 * *': {FIELDS}, not 4"),
    ([*R, "--cron", "0 */6 * * * *"], 2, E + f"--cron '0 */6 * * * *': {FIELDS}, not 6"),
    ([*R, "--cron", "61 * * * *"], 2, E + "--cron '61 * * * *': minute '61' is not valid (0-59)"),
    (
        [*R, "--cron", "0 0 * * mon-xyz"],
        2,
        E + "--cron '0 0 * * mon-xyz': day of week 'mon-xyz' is not valid (not a number or a name)",
    ),
    # an image reference that is not one
    ([*R, "--image", "Registry/Image"], 2, E + f"--image 'Registry/Image' {IMAGE}"),
    ([*R, "--image", "ghcr.io/team/aicr-pytest"], 2, E + f"--image 'ghcr.io/team/aicr-pytest': {LATEST}"),
    ([*R, "--image", "x:1@sha256:abc"], 2, E + f"--image 'x:1@sha256:abc' {IMAGE}"),
    # node marks without a node-health check
    ([*R, "--taint-bad-nodes"], 2, E + f"--taint-bad-nodes: {MARKS}"),
    ([*R, "--label-bad-nodes", "--check", "operator-health"], 2, E + f"--label-bad-nodes: {MARKS}"),
    # the rest of the selection and the target
    (
        [*R, "--phase", "deploy"],
        2,
        E + 'invalid phase "deploy": must be one of: deployment, performance, conformance, all',
    ),
    ([*R, "-n", "Team_NS"], 2, E + f"--namespace 'Team_NS' {NS}"),
    (["schedule", "--delete", "-n", "Team_NS"], 2, E + f"--namespace 'Team_NS' {NS}"),
    (
        ["schedule", "--dry-run"],
        2,
        E + "schedule: --recipe is required (a file, an https:// URL or cm://namespace/name)",
    ),
    (
        ["schedule", "-r", "{tmp}/missing.yaml", "--dry-run"],
        2,
        E + "cannot read {tmp}/missing.yaml: No such file or directory",
    ),
]
