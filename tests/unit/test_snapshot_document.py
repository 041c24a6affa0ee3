"""API-side measurements, the agent's manifests, and the written document (what core.snapshot loads).

Rules of AICR's collectors and snapshot document, and of ``cm://`` keys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.settings import parse_toleration
from aicr_pytest.core.snapshot import load_snapshot_text
from aicr_pytest.core.sources import configmap_data_key
from aicr_pytest.snapshot.agent import agent_job, auto_node_selector, collector_script, script_configmap
from aicr_pytest.snapshot.apifacts import (
    TopologyBuilder,
    cluster_policy_resources,
    flatten_spec,
    format_nodes,
    image_data,
    node_data,
    policy_data,
    provider_of,
    server_data,
    split_image,
)
from aicr_pytest.snapshot.measure import Collected, snapshot_document
from aicr_pytest.snapshot.output import (
    configmap_object,
    dumps,
    parse_destination,
    parse_format,
    write,
)

# --- K8s.server / K8s.image ------------------------------------------------------------------------


def test_server_from_version() -> None:
    body = {"major": "1", "minor": "33", "gitVersion": "v1.33.5-eks-3025e55", "goVersion": "go1.24.4",
            "platform": "linux/amd64"}  # fmt: skip
    assert server_data(body) == {
        "version": "v1.33.5-eks-3025e55",
        "platform": "linux/amd64",
        "goVersion": "go1.24.4",
    }
    assert server_data({"gitVersion": "v1.34.0"}) == {"version": "v1.34.0"}


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("nvcr.io/nvidia/gpu-operator:v25.10.1", ("gpu-operator", "v25.10.1")),
        ("registry.local:5000/team/agent", ("agent", "latest")),
        ("busybox", ("busybox", "latest")),
        ("ghcr.io/x/y:1.2@sha256:" + "a" * 64, ("y", "1.2")),
        ("ghcr.io/x/y@sha256:" + "b" * 64, ("y", "latest")),
    ],
)
def test_split_image(ref: str, expected: tuple[str, str]) -> None:
    assert split_image(ref) == expected


def test_images_of_containers_init_and_ephemeral_containers() -> None:
    pods = [
        {"spec": {"containers": [{"image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}],
                  "initContainers": [{"image": "nvcr.io/nvidia/cuda:12.8.0-base-ubi9"}]}},
        {"spec": {"containers": [{"image": "nvcr.io/nvidia/k8s-device-plugin:v0.18.0"}],
                  "ephemeralContainers": [{"image": "busybox"}]}},
        {"spec": {}},
    ]  # fmt: skip
    assert image_data(pods) == {
        "k8s-device-plugin": "v0.18.0",
        "cuda": "12.8.0-base-ubi9",
        "busybox": "latest",
    }


# --- K8s.policy ------------------------------------------------------------------------------------


def test_cluster_policy_spec_is_flattened_to_strings() -> None:
    spec = {
        "driver": {"enabled": True, "version": "580.95.05", "upgradePolicy": {"maxParallelUpgrades": 1}},
        "devicePlugin": {"env": [{"name": "PASS_DEVICE_SPECS", "value": "true"}], "args": []},
        "toolkit": {"installDir": "/usr/local/nvidia", "env": None},
        "dcgmExporter": {"config": {}},
        "validator": {"ratio": 0.5, "big": 1e6},
        "mig": {"strategy": "single"},
        "operator": {"annotations": ["a<b>&c"]},
    }
    assert flatten_spec(spec) == {
        "driver.enabled": "true",
        "driver.version": "580.95.05",
        "driver.upgradePolicy.maxParallelUpgrades": "1",
        "devicePlugin.env": '[{"name":"PASS_DEVICE_SPECS","value":"true"}]',
        "toolkit.installDir": "/usr/local/nvidia",
        "validator.ratio": "0.5",
        "validator.big": "1e+06",
        "mig.strategy": "single",
        "operator.annotations": '["a\\u003cb\\u003e\\u0026c"]',
    }


def test_later_policies_win_and_only_clusterpolicy_kinds_are_listed() -> None:
    first = {"spec": {"driver": {"version": "570.124.06"}, "cdi": {"enabled": False}}}
    second = {"spec": {"driver": {"version": "580.95.05"}}}
    assert policy_data([first, second]) == {"driver.version": "580.95.05", "cdi.enabled": "false"}
    resources = [
        {"name": "clusterpolicies", "kind": "ClusterPolicy"},
        {"name": "clusterpolicies/status", "kind": "ClusterPolicy"},
        {"name": "nvidiadrivers", "kind": "NVIDIADriver"},
    ]
    assert cluster_policy_resources("nvidia.com/v1", resources) == ["clusterpolicies"]


# --- K8s.node --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider_id", "provider"),
    [
        ("aws:///us-west-2b/i-0f3c5a9e17d2b4c61", "eks"),
        ("gce://proj/us-central1-a/gke-node-1", "gke"),
        ("azure:///subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/virtualMachines/z", "aks"),
        ("oci://ocid1.instance.oc1.phx.abc", "oke"),
        ("ocid1.instance.oc1.iad.anuwcljt", "oke"),
        ("linode://12345", "lke"),
        ("kind://docker/kind/kind-worker", "kind"),
    ],
)
def test_provider_from_provider_id(provider_id: str, provider: str) -> None:
    assert provider_of(provider_id) == provider


def test_node_data_from_node_info() -> None:
    node = {
        "metadata": {"name": "ip-10-0-4-17.ec2.internal"},
        "spec": {"providerID": "aws:///us-east-1a/i-0123"},
        "status": {"nodeInfo": {"containerRuntimeVersion": "containerd://1.7.27", "kubeletVersion": "v1.33.5",
                                "kernelVersion": "6.8.0-1021-aws", "operatingSystem": "linux",
                                "osImage": "Ubuntu 24.04.2 LTS"}},
    }  # fmt: skip
    assert node_data(node) == {
        "source-node": "ip-10-0-4-17.ec2.internal",
        "provider": "eks",
        "provider-id": "aws:///us-east-1a/i-0123",
        "container-runtime-id": "containerd://1.7.27",
        "container-runtime-name": "containerd",
        "container-runtime-version": "1.7.27",
        "kubelet-version": "v1.33.5",
        "kernel-version": "6.8.0-1021-aws",
        "operating-system": "linux",
        "os-image": "Ubuntu 24.04.2 LTS",
    }
    assert node_data({"metadata": {"name": "bare"}}) == {"source-node": "bare"}


# --- NodeTopology ----------------------------------------------------------------------------------


def _node(name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints or []}}


def test_topology_encoding_and_disambiguation() -> None:
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    b = TopologyBuilder()
    b.add(_node("gpu-b", {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "pool": "gpu"}, [gpu_taint]))
    b.add(_node("gpu-a", {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "pool": "gpu"}, [gpu_taint]))
    b.add(
        _node(
            "cpu-0",
            {"pool": "system"},
            [
                {"key": "dedicated", "value": "infra", "effect": "NoExecute"},
                {"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
            ],
        )
    )
    summary, taints, labels = b.subtypes(0)
    assert taints == ("taint", {
        "nvidia.com/gpu": "NoSchedule|present|gpu-a,gpu-b",
        "dedicated.NoExecute": "infra|cpu-0",
        "dedicated.NoSchedule": "infra|cpu-0",
    })  # fmt: skip
    assert labels == ("label", {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3|gpu-a,gpu-b",
        "pool.gpu": "gpu|gpu-a,gpu-b",
        "pool.system": "system|cpu-0",
    })  # fmt: skip
    assert summary == ("summary", {"node-count": 3, "taint-count": 3, "label-count": 3})


def test_node_lists_are_truncated_beyond_max_nodes_per_entry() -> None:
    assert format_nodes(["a", "b", "c", "d"], 2) == "a,b (+2 more)"
    assert format_nodes(["a", "b"], 2) == "a,b"
    assert format_nodes(["a", "b", "c"], 0) == "a,b,c"
    b = TopologyBuilder()
    for i in range(5):
        b.add(_node(f"n{i}", {"zone": "z1"}))
    assert b.label_data(3) == {"zone": "z1|n0,n1,n2 (+2 more)"}


# --- the agent ------------------------------------------------------------------------------------


def test_auto_node_selector_targets_gpu_labelled_nodes() -> None:
    assert auto_node_selector([_node("a", {}), _node("b", {"nvidia.com/gpu.present": "true"})]) == {
        "nvidia.com/gpu.present": "true"
    }
    assert auto_node_selector([_node("a", {"nvidia.com/gpu.present": "false"})]) is None


def _job(**kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = dict(configmap="cm", image="img:1", privileged=True, node_selector=None,
                                tolerations=None, require_gpu=False, active_deadline_seconds=301)  # fmt: skip
    args.update(kw)
    return agent_job("aicr-snapshot", **args)


def test_privileged_agent_shares_host_namespaces_and_mounts_only_os_release() -> None:
    job = _job()
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["hostPID"] and pod["hostIPC"] and pod["hostNetwork"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["tolerations"] == [{"operator": "Exists"}] and "nodeSelector" not in pod
    assert container["securityContext"]["privileged"] is True
    assert container["command"] == ["/bin/sh", "/aicr-snapshot/collect.sh"]
    host_paths = [v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v]
    assert host_paths == ["/etc/os-release"]
    assert {"name": "AICR_PRIVILEGED", "value": "true"} in container["env"]
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 301


def test_unprivileged_agent_fits_pss_restricted() -> None:
    job = _job(
        privileged=False,
        require_gpu=True,
        node_selector={"pool": "gpu"},
        tolerations=[parse_toleration("nvidia.com/gpu:NoSchedule")],
    )
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert not any(pod.get(k) for k in ("hostPID", "hostIPC", "hostNetwork"))
    assert not [v for v in pod["volumes"] if "hostPath" in v]
    sc = container["securityContext"]
    assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["runAsNonRoot"] and sc["readOnlyRootFilesystem"]
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["runAsUser"] == 65534
    assert pod["nodeSelector"] == {"pool": "gpu"}
    assert pod["tolerations"] == [{"operator": "Exists", "key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_the_script_configmap_carries_the_collector() -> None:
    cm = script_configmap("aicr-snapshot-agent", collector_script())
    assert cm["data"]["collect.sh"].startswith("#!/bin/sh\n")
    assert "==AICR== begin 1" in cm["data"]["collect.sh"]


# --- the document and its output -----------------------------------------------------------------


def _document() -> dict[str, Any]:
    c = Collected()
    c.add("OS", "release", {"ID": "ubuntu", "VERSION_ID": "24.04"})
    c.add("K8s", "server", {"version": "v1.33.5-eks-3025e55"})
    c.add("OS", "sysctl", {"/proc/sys/kernel/osrelease": "6.8.0-1021-aws", "/proc/sys/kernel/x": "0o17"})
    c.add("GPU", "hardware", {"gpu-count": 8, "gpu-present": True, "model": "h100"})
    c.add("SystemD", "containerd.service", {"ActiveState": "active", "CPUAccounting": "yes", "X": "1e3"})
    c.omit("OS.grub", "the agent's log ends inside this section (truncated)")
    assert c.warnings == ["OS.grub omitted: the agent's log ends inside this section (truncated)"]
    return snapshot_document(
        c.measurements(), timestamp="2026-07-14T08:12:45Z", version="0.1.0", source_node="n1"
    )


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_the_written_document_loads_with_our_loader(fmt: str) -> None:
    doc = _document()
    assert [m["type"] for m in doc["measurements"]] == ["K8s", "GPU", "OS", "SystemD"]
    text = dumps(doc, parse_format(fmt))
    snap = load_snapshot_text(text, f"snap.{fmt}", format=fmt if fmt == "json" else None)
    assert snap.kind == "Snapshot" and snap.api_version == "aicr.run/v1alpha2"
    assert snap.metadata == {"timestamp": "2026-07-14T08:12:45Z", "version": "0.1.0", "source-node": "n1"}
    assert snap.lookup("OS.release.VERSION_ID") == "24.04"
    assert snap.lookup("OS.sysctl./proc/sys/kernel/x") == "0o17"
    # A unit name has a dot, so constraint paths cannot address SystemD subtypes (as in AICR).
    unit = snap.subtype("SystemD", "containerd.service")
    assert unit is not None and unit.data == {"ActiveState": "active", "CPUAccounting": "yes", "X": "1e3"}
    assert snap.lookup("GPU.hardware.gpu-present") == "true"
    assert snap.lookup("GPU.hardware.gpu-count") == "8"


def test_yaml_quotes_strings_other_readers_would_retype() -> None:
    text = dumps(_document(), "yaml")
    for quoted in ("'24.04'", "'0o17'", "'1e3'", "'yes'"):
        assert quoted in text
    assert "gpu-present: true" in text and "gpu-count: 8" in text
    assert json.loads(dumps(_document(), "json"))["metadata"]["source-node"] == "n1"


def test_bad_format() -> None:
    with pytest.raises(UsageError, match='unknown output format: "table", valid formats are: yaml, json'):
        parse_format("table")


def test_destinations_are_checked_before_anything_runs(tmp_path: Path) -> None:
    assert parse_destination(None).kind == "stdout" and parse_destination("-").kind == "stdout"
    cm = parse_destination("cm://gpu-operator/aicr-snapshot")
    assert (cm.kind, cm.namespace, cm.name) == ("configmap", "gpu-operator", "aicr-snapshot")
    assert parse_destination(str(tmp_path / "s.yaml")).kind == "file"
    with pytest.raises(UsageError, match="does not exist"):
        parse_destination(str(tmp_path / "missing" / "s.yaml"))
    with pytest.raises(UsageError, match="it is a directory"):
        parse_destination(str(tmp_path))
    with pytest.raises(UsageError, match="expected cm://namespace/name"):
        parse_destination("cm://only-namespace")


def test_configmap_output_uses_the_keys_cm_sources_read() -> None:
    dest = parse_destination("cm://ns1/snap")
    written: list[dict[str, Any]] = []
    where = write(_document(), "yaml", dest, configmap_writer=written.append)
    assert where == "cm://ns1/snap"
    (cm,) = written
    assert cm["metadata"] == {"name": "snap", "namespace": "ns1", "labels": {
        "app.kubernetes.io/name": "aicr-pytest", "app.kubernetes.io/component": "Snapshot",
        "app.kubernetes.io/version": cm["metadata"]["labels"]["app.kubernetes.io/version"]}}  # fmt: skip
    assert cm["data"]["format"] == "yaml" and cm["data"]["timestamp"] == "2026-07-14T08:12:45Z"
    key = configmap_data_key(cm["data"])
    assert key == "snapshot.yaml"
    assert load_snapshot_text(cm["data"][key], "cm").lookup("K8s.server.version") == "v1.33.5-eks-3025e55"
    assert configmap_object(dest, "{}", "json", "t")["data"]["snapshot.json"] == "{}"
