"""Bad input to `aicr-pytest snapshot`: (argv, expected exit code, the one line on stderr).

Data for the shared bad-input corpus. ``{tmp}`` in an argument or a line stands for a scratch
directory that holds :data:`FILES`; runners set ``KUBECONFIG={tmp}/no-kubeconfig`` (a file that does
not exist) so no case can reach a cluster: every input is checked before connecting, and the last
cases are the connection's own errors. Each case must end with exactly its line and no traceback.
"""

from __future__ import annotations

#: Files the cases refer to, relative to ``{tmp}``.
FILES: dict[str, str] = {
    "a-file": "not a directory\n",
    "out/.keep": "",
}

E = "aicr-pytest: error: "
S = "aicr-pytest snapshot: error: "
TIMEOUT = 'invalid --timeout "{value}": expected a positive duration such as 90s, 5m or 1h30m'

CASES: list[tuple[list[str], int, str]] = [
    # a value that starts with '-' is taken for a flag unless attached with '='
    (
        ["snapshot", "--timeout", "-5s"],
        2,
        S + "--timeout needs a value (write --timeout=VALUE for one that starts with '-')",
    ),
    (["snapshot", "--timeout=-5s"], 2, E + TIMEOUT.format(value="-5s")),
    # output format and destination (really probed: root passes os.access under /proc)
    (
        ["snapshot", "-o", "/proc/snapshot.yaml"],
        2,
        E + "cannot write snapshot to /proc/snapshot.yaml: permission denied",
    ),
    (
        ["snapshot", "--format", "table"],
        2,
        E + 'unknown output format: "table", valid formats are: yaml, json',
    ),
    (["snapshot", "--format", "yaml", "--format", "json"], 2, E + "flag --format can only be specified once"),
    (
        ["snapshot", "-o", "{tmp}/missing/snap.yaml"],
        2,
        E + "cannot write snapshot to {tmp}/missing/snap.yaml: directory {tmp}/missing does not exist",
    ),
    (["snapshot", "-o", "{tmp}/out"], 2, E + "cannot write snapshot to {tmp}/out: it is a directory"),
    (
        ["snapshot", "-o", "{tmp}/a-file/snap.yaml"],
        2,
        E + "cannot write snapshot to {tmp}/a-file/snap.yaml: {tmp}/a-file is not a directory",
    ),
    (["snapshot", "-o", "a.yaml", "-o", "b.yaml"], 2, E + "flag --output can only be specified once"),
    (
        ["snapshot", "-o", "cm://gpu-operator"],
        2,
        E + 'invalid ConfigMap URI "cm://gpu-operator": expected cm://namespace/name',
    ),
    (
        ["snapshot", "-o", "cm:///snap"],
        2,
        E + 'invalid ConfigMap URI "cm:///snap": expected cm://namespace/name',
    ),
    (["snapshot", "-o", "cm://ns/"], 2, E + 'invalid ConfigMap URI "cm://ns/": expected cm://namespace/name'),
    # where the agent runs
    (
        ["snapshot", "--toleration", "nvidia.com/gpu"],
        2,
        E + 'invalid toleration: invalid format "nvidia.com/gpu", expected key=value:Effect, key:Effect or *',
    ),
    (
        ["snapshot", "--toleration", "dedicated=gpu:Sometimes"],
        2,
        E + 'invalid toleration: invalid effect "Sometimes" in "dedicated=gpu:Sometimes", '
        "must be one of: NoSchedule, PreferNoSchedule, NoExecute",
    ),
    (
        ["snapshot", "--toleration", "a:b:NoSchedule"],
        2,
        E + 'invalid toleration: invalid format "a:b:NoSchedule", expected key=value:Effect, key:Effect or *',
    ),
    (
        ["snapshot", "--toleration", "=v:NoSchedule"],
        2,
        E + 'invalid toleration: empty key in "=v:NoSchedule"',
    ),
    (
        ["snapshot", "--node-selector", "gpu"],
        2,
        E + 'invalid node-selector: invalid format "gpu", expected key=value',
    ),
    (
        ["snapshot", "--namespace", "GPU_Nodes"],
        2,
        E + 'invalid --namespace "GPU_Nodes": must be a DNS-1123 label',
    ),
    (["snapshot", "-n", "a", "-n", "b"], 2, E + "flag --namespace can only be specified once"),
    (["snapshot", "--image", " "], 2, E + "--image must not be empty"),
    (["snapshot", "--image", "a", "--image", "b"], 2, E + "flag --image can only be specified once"),
    # agent behaviour
    (["snapshot", "--timeout", "soon"], 2, E + TIMEOUT.format(value="soon")),
    (["snapshot", "--timeout", "0s"], 2, E + TIMEOUT.format(value="0s")),
    (["snapshot", "--timeout", "5"], 2, E + TIMEOUT.format(value="5")),
    (["snapshot", "--timeout", "1m", "--timeout", "2m"], 2, E + "flag --timeout can only be specified once"),
    (
        ["snapshot", "--max-nodes-per-entry", "-1"],
        2,
        E + "invalid --max-nodes-per-entry -1: must be 0 (unlimited) or more",
    ),
    (
        ["snapshot", "--max-nodes-per-entry", "many"],
        2,
        S + "argument --max-nodes-per-entry: invalid int value: 'many'",
    ),
    (
        ["snapshot", "--privileged=maybe"],
        2,
        S + "argument --privileged: invalid boolean value 'maybe' (use true or false)",
    ),
    (
        ["snapshot", "--privileged", "--privileged=false"],
        2,
        E + "flag --privileged can only be specified once",
    ),
    (
        ["snapshot", "--require-gpu=perhaps"],
        2,
        S + "argument --require-gpu: invalid boolean value 'perhaps' (use true or false)",
    ),
    (["snapshot", "--bogus"], 2, E + "unrecognized arguments: --bogus"),
    # provider data: read before the cluster is touched
    (
        ["snapshot", "--aks-gpu-pools", "{tmp}/none.json"],
        2,
        E + "AKS GPU pools file not found: {tmp}/none.json",
    ),
    (
        ["snapshot", "--oke-addons", "{tmp}/a-file"],
        2,
        E + 'failed to decode OKE cluster add-ons file "{tmp}/a-file": expected the JSON object emitted by '
        "`oci ce cluster list-addons --cluster-id <cluster-ocid> --all --output json`",
    ),
    (
        ["snapshot", "--gke-gpu-pools", "{tmp}/a", "--gke-gpu-pools", "{tmp}/b"],
        2,
        E + "flag --gke-gpu-pools can only be specified once",
    ),
    # the connection (every other input was valid)
    (["snapshot"], 2, E + "KUBECONFIG is set but names no existing file: {tmp}/no-kubeconfig"),
    (["snapshot", "-k", "{tmp}/absent.kubeconfig"], 2, E + "kubeconfig not found: {tmp}/absent.kubeconfig"),
]
