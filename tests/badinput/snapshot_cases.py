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
    "report.j2": "{{ kind }}\n",
    "broken.j2": "{% for %}\n",
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
    # the agent pod: runtime class, resources, names
    (
        ["snapshot", "--runtime-class", "nvidia", "--require-gpu"],
        2,
        E + "--require-gpu and --runtime-class are mutually exclusive; prefer --runtime-class, which "
        "provides nvidia-smi access via the container runtime without consuming a GPU allocation",
    ),
    (
        ["snapshot", "--runtime-class", "NVIDIA_CDI"],
        2,
        E + 'invalid --runtime-class "NVIDIA_CDI": must be a DNS-1123 subdomain',
    ),
    (
        ["snapshot", "--runtime-class", "a", "--runtime-class", "b"],
        2,
        E + "flag --runtime-class can only be specified once",
    ),
    (
        ["snapshot", "--requests", "cpu"],
        2,
        E + 'invalid --requests: entry "cpu" is not in name=quantity form',
    ),
    (
        ["snapshot", "--requests", "cpu=,memory=1Gi"],
        2,
        E + 'invalid --requests: entry "cpu=" has empty name or quantity',
    ),
    (
        ["snapshot", "--limits", "memory=lots"],
        2,
        E + 'invalid --limits: entry "memory=lots": quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    (
        ["snapshot", "--limits", "memory=2K"],
        2,
        E + 'invalid --limits: entry "memory=2K": unable to parse quantity\'s suffix',
    ),
    (
        ["snapshot", "--limits", "cpu=1.2.3"],
        2,
        E + 'invalid --limits: entry "cpu=1.2.3": unable to parse numeric part of quantity',
    ),
    (
        ["snapshot", "--limits", "cpu=1", "--limits", "cpu=2"],
        2,
        E + "flag --limits can only be specified once",
    ),
    (
        ["snapshot", "--image-pull-secret", "regcred", "--image-pull-secret", "Reg Cred"],
        2,
        E + 'invalid --image-pull-secret "Reg Cred": must be a DNS-1123 subdomain',
    ),
    (
        ["snapshot", "--job-name", "GPU.audit"],
        2,
        E + 'invalid --job-name "GPU.audit": must be a DNS-1123 label',
    ),
    (
        ["snapshot", "--service-account-name", "snapshot_agent"],
        2,
        E + 'invalid --service-account-name "snapshot_agent": must be a DNS-1123 subdomain',
    ),
    # --template
    (["snapshot", "--template", "{tmp}/absent.j2"], 2, E + "template file not found: {tmp}/absent.j2"),
    (["snapshot", "--template", "{tmp}/out"], 2, E + "template path is a directory, not a file: {tmp}/out"),
    (
        ["snapshot", "--template", "{tmp}/report.j2", "--format", "json"],
        2,
        E + '--template requires YAML format; --format must be "yaml" or omitted',
    ),
    (
        ["snapshot", "--template", "{tmp}/report.j2", "-o", "cm://default/report"],
        2,
        E + "--template writes a file or stdout, not a ConfigMap: cm://default/report",
    ),
    (
        ["snapshot", "--template", "{tmp}/broken.j2"],
        2,
        E + "failed to parse template {tmp}/broken.j2: "
        "Expected an expression, got 'end of statement block' (line 1)",
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
