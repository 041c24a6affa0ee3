"""Bad input to `aicr-pytest recipe`: (argv, expected exit code, the one line on stderr).

Data for a shared bad-input corpus.  ``{tmp}`` in an argument or a line stands for a scratch
directory that holds :data:`FILES`; runners set ``KUBECONFIG={tmp}/no-kubeconfig`` (a file that does
not exist) so no case can reach a real cluster.  Each case must end with exactly its line and no
traceback.
"""

from __future__ import annotations

#: Files the cases refer to, relative to ``{tmp}``.
FILES: dict[str, str] = {
    "criteria-kind.yaml": "kind: Recipe\nspec: {service: eks}\n",
    "criteria-api.yaml": "kind: RecipeCriteria\napiVersion: aicr.nvidia.com/v1alpha1\nspec: {service: eks}\n",
    "criteria-service.yaml": "kind: RecipeCriteria\nspec: {service: nope}\n",
    "criteria-nodes.yaml": "kind: RecipeCriteria\nspec: {service: eks, nodes: -2}\n",
    "criteria-nodes-text.yaml": "kind: RecipeCriteria\nspec: {service: eks, nodes: many}\n",
    "criteria-list.yaml": "- service: eks\n",
    "criteria-empty.yaml": "kind: RecipeCriteria\nspec: {service: any}\n",
    "snapshot-list.yaml": "- type: K8s\n",
    "snapshot-kind.yaml": "kind: Recipe\nmeasurements: []\n",
    "nodata/readme.txt": "no registry here\n",
    "tree-nobase/registry.yaml": "components: []\n",
    "tree-badmixin/registry.yaml": "components: []\n",
    "tree-badmixin/overlays/base.yaml": "kind: RecipeMetadata\nmetadata: {name: base}\n",
    "tree-badmixin/mixins/m.yaml": "kind: RecipeMetadata\nmetadata: {name: m}\n",
    "tree-dup-overlay/registry.yaml": "components: []\n",
    "tree-dup-overlay/overlays/base.yaml": (
        "kind: RecipeMetadata\nmetadata: {name: base}\nspec: {}\nspec: {}\n"
    ),
    "tree-dup-registry/registry.yaml": "components: []\ncomponents: []\n",
    "tree-dup-registry/overlays/base.yaml": "kind: RecipeMetadata\nmetadata: {name: base}\n",
    "tree-cycle/registry.yaml": "components: []\n",
    "tree-cycle/overlays/base.yaml": "kind: RecipeMetadata\nmetadata: {name: base}\n",
    "tree-cycle/overlays/a.yaml": (
        "kind: RecipeMetadata\nmetadata: {name: a}\nspec:\n  criteria: {service: eks}\n  componentRefs:\n"
        "    - {name: x, type: Helm, source: https://s, version: '1', dependencyRefs: [y]}\n"
        "    - {name: y, type: Helm, source: https://s, version: '1', dependencyRefs: [x]}\n"
    ),
}

E = "aicr-pytest: error: "
NO_CRITERIA = (
    E + "no criteria provided: specify at least one of --service, --accelerator, --intent, --os, --platform, "
    "--nodes, --criteria, or use --snapshot to load from a snapshot file"
)

CASES: list[tuple[list[str], int, str]] = [
    # criteria values
    (["recipe", "--service", "bogus"], 2, E + "invalid service type: bogus"),
    (["recipe", "--accelerator", "x100"], 2, E + "invalid accelerator type: x100"),
    (["recipe", "--gpu", "T4"], 2, E + "invalid accelerator type: T4"),
    (["recipe", "--intent", "serving"], 2, E + "invalid intent type: serving"),
    (["recipe", "--os", "windows"], 2, E + "invalid os type: windows"),
    (["recipe", "--platform", "ray"], 2, E + "invalid platform type: ray"),
    (["recipe", "--nodes", "-1"], 2, E + "invalid nodes count: -1 (must be >= 0)"),
    (
        ["recipe", "--nodes", "many"],
        2,
        "aicr-pytest recipe: error: argument --nodes: invalid int value: 'many'",
    ),
    (
        ["recipe", "--service", "eks", "--nodes", "99999999999999999999999"],
        2,
        E + "invalid nodes count: 99999999999999999999999 (out of range for a 64-bit integer)",
    ),
    (["recipe", "--service", ""], 2, E + "--service must not be empty (leave it out to match any service)"),
    (
        ["recipe", "--accelerator", " "],
        2,
        E + "--accelerator must not be empty (leave it out to match any accelerator)",
    ),
    (
        ["recipe", "--service", "eks", "--nodes", "-5x"],
        2,
        "aicr-pytest recipe: error: --nodes needs a value (write --nodes=VALUE for one that starts with '-')",
    ),
    (
        ["recipe", "--service", "eks", "-o", "/proc/recipe.yaml"],
        2,
        E + "--output /proc/recipe.yaml: cannot write the report there: ENOENT (No such file or directory)",
    ),
    (["recipe"], 2, NO_CRITERIA),
    (["recipe", "--service", "any", "--intent", "any"], 2, NO_CRITERIA),
    # conflicting or repeated flags
    (["recipe", "--service", "eks", "--service", "gke"], 2, E + "flag --service can only be specified once"),
    (
        ["recipe", "--gpu", "h100", "--accelerator", "h100"],
        2,
        E + "flag --accelerator can only be specified once",
    ),
    (
        ["recipe", "--service", "eks", "-o", "a.yaml", "-o", "b.yaml"],
        2,
        E + "flag --output can only be specified once",
    ),
    (
        ["recipe", "--service", "eks", "--no-embedded-data"],
        2,
        E + "--no-embedded-data needs --data DIR (the data tree to use instead of the embedded)",
    ),
    (["recipe", "--service", "eks", "--bogus"], 2, "aicr-pytest: error: unrecognized arguments: --bogus"),
    # output
    (
        ["recipe", "--service", "eks", "--format", "xml"],
        2,
        E + 'unknown output format: "xml", valid formats are: yaml, json',
    ),
    (
        ["recipe", "--service", "eks", "-o", "cm://only-a-namespace"],
        2,
        E + 'invalid ConfigMap URI "cm://only-a-namespace": expected cm://namespace/name',
    ),
    (
        ["recipe", "--service", "eks", "-o", "{tmp}/no/such/dir/recipe.yaml"],
        2,
        E + "cannot write recipe to {tmp}/no/such/dir/recipe.yaml: ENOENT (No such file or directory)",
    ),
    # the OS guard on the embedded data
    (
        ["recipe", "--service", "gke", "--accelerator", "h100", "--intent", "training"],
        2,
        E + "service 'gke' has no OS-agnostic recipe for accelerator 'h100'; specify an OS (valid: cos)",
    ),
    # --criteria FILE
    (["recipe", "--criteria", "{tmp}/missing.yaml"], 2, E + "criteria file not found: {tmp}/missing.yaml"),
    (
        ["recipe", "--criteria", "{tmp}/criteria-kind.yaml"],
        2,
        E + 'criteria file {tmp}/criteria-kind.yaml: invalid kind "Recipe", expected "RecipeCriteria"',
    ),
    (
        ["recipe", "--criteria", "{tmp}/criteria-api.yaml"],
        2,
        E + 'criteria file {tmp}/criteria-api.yaml: invalid apiVersion "aicr.nvidia.com/v1alpha1", '
        'expected "aicr.run/v1alpha2"',
    ),
    (
        ["recipe", "--criteria", "{tmp}/criteria-service.yaml"],
        2,
        E + "criteria file {tmp}/criteria-service.yaml: invalid service type: nope",
    ),
    (
        ["recipe", "--criteria", "{tmp}/criteria-nodes.yaml"],
        2,
        E + "criteria file {tmp}/criteria-nodes.yaml: invalid nodes count: -2 (must be >= 0)",
    ),
    (
        ["recipe", "--criteria", "{tmp}/criteria-nodes-text.yaml"],
        2,
        E + "criteria file {tmp}/criteria-nodes-text.yaml: spec.nodes: expected an integer, got 'many'",
    ),
    (
        ["recipe", "--criteria", "{tmp}/criteria-list.yaml"],
        2,
        E + "criteria file {tmp}/criteria-list.yaml is not a YAML mapping (got a list)",
    ),
    (["recipe", "--criteria", "{tmp}/criteria-empty.yaml"], 2, NO_CRITERIA),
    # --snapshot
    (["recipe", "--snapshot", "{tmp}/nosnap.yaml"], 2, E + "snapshot file not found: {tmp}/nosnap.yaml"),
    (
        ["recipe", "--snapshot", "{tmp}/snapshot-list.yaml"],
        2,
        E + "snapshot {tmp}/snapshot-list.yaml: expected a mapping at the top level, got a list",
    ),
    (
        ["recipe", "--snapshot", "{tmp}/snapshot-kind.yaml"],
        2,
        E + 'snapshot {tmp}/snapshot-kind.yaml: kind is "Recipe", expected "Snapshot"',
    ),
    (
        ["recipe", "--snapshot", "http://example.com/snapshot.yaml"],
        2,
        E + "refusing to fetch snapshot over plain http: http://example.com/snapshot.yaml — the input "
        "decides what "
        "is validated, so it must come over TLS; use an https:// URL, a local file, or cm://namespace/name",
    ),
    (
        ["recipe", "--snapshot", "cm://gpu-operator/aicr-snapshot"],
        2,
        E + "KUBECONFIG is set but names no existing file: {tmp}/no-kubeconfig",
    ),
    # --data DIR
    (
        ["recipe", "--service", "eks", "--data", "{tmp}/absent"],
        2,
        E + "--data {tmp}/absent: directory not found",
    ),
    (
        ["recipe", "--service", "eks", "--data", "{tmp}/nodata"],
        2,
        E + "--data {tmp}/nodata: registry.yaml not found (an AICR data directory must contain one)",
    ),
    (
        ["recipe", "--service", "eks", "--no-embedded-data", "--data", "{tmp}/absent"],
        2,
        E + "--data {tmp}/absent: directory not found",
    ),
    (
        ["recipe", "--service", "eks", "--no-embedded-data", "--data", "{tmp}/tree-nobase"],
        2,
        E + "base.yaml not found (the data tree needs overlays/base.yaml)",
    ),
    (
        ["recipe", "--service", "eks", "--no-embedded-data", "--data", "{tmp}/tree-badmixin"],
        2,
        E + 'mixin file mixins/m.yaml has wrong kind "RecipeMetadata", expected "RecipeMixin"',
    ),
    # a destination that takes no bytes: the write fails whole, naming the path and the errno
    (
        ["recipe", "--service", "eks", "-o", "/dev/full"],
        2,
        E + "cannot write recipe to /dev/full: ENOSPC (No space left on device)",
    ),
    # a mapping key given twice in an overlay or a data file: file, line and key
    (
        ["recipe", "--service", "eks", "--no-embedded-data", "--data", "{tmp}/tree-dup-overlay"],
        2,
        E + 'failed to parse overlays/base.yaml: line 4: mapping key "spec" already defined at line 3',
    ),
    (
        ["recipe", "--service", "eks", "--data", "{tmp}/tree-dup-registry"],
        2,
        E + "malformed YAML in data file {tmp}/tree-dup-registry/registry.yaml: line 2: mapping key "
        '"components" already defined at line 1',
    ),
    (
        ["recipe", "--service", "eks", "--no-embedded-data", "--data", "{tmp}/tree-cycle"],
        2,
        E + "merged recipe validation failed: dependency validation failed: circular dependency "
        "detected: [x y x]",
    ),
]

__all__ = ["CASES", "FILES"]
