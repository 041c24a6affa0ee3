"""Provider data (``--aks-gpu-pools``, ``--gke-gpu-pools``, ``--oke-addons``): the projections into
``K8s.<provider>`` readings, the bounded file reader, and how the readings join a snapshot.

The expected readings follow today's AICR (``pkg/collector/k8s/aksgpupools.go``, ``gkegpupools.go``,
``okeaddons.go``); the end-to-end runs (readiness on them, the ``--snapshot`` warning) are in
tests/plugin/test_provider_data.py, the bad files in the bad-input corpus.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.snapshot import parse_snapshot
from aicr_pytest.snapshot import providers as P


def aks(*pools: dict[str, Any]) -> dict[str, Any]:
    return P.project_aks([P.AksAgentPool.model_validate(p) for p in pools])


def gke(*pools: dict[str, Any]) -> dict[str, Any]:
    return P.project_gke([P.GkeNodePool.model_validate(p) for p in pools])


def oke(*addons: dict[str, Any]) -> dict[str, Any]:
    return P.project_oke(P.OkeAddons.model_validate({"data": list(addons)}))


H100 = "Standard_ND96isr_H100_v5"


def test_aks_driver_modes() -> None:
    assert aks({"name": "gpu", "vmSize": H100}) == {
        "gpu-pool-count": 1,
        "gpu-pools": "gpu=Install",  # gpuProfile absent: the provider's default
        "gpu-driver": "Install",
    }
    assert aks({"name": "gpu", "vmSize": H100, "gpuProfile": {"driver": "None"}})["gpu-driver"] == "None"
    assert aks({"name": "gpu", "vmSize": H100, "gpuProfile": {"driver": ""}})["gpu-driver"] == "Install"
    assert aks({"name": "gpu", "vmSize": H100, "gpuProfile": {"driver": "Weird"}})["gpu-driver"] == "Weird"


def test_aks_managed_stack_matches_no_profile_and_unmanaged_follows_the_driver() -> None:
    managed = {"driver": "Install", "nvidia": {"managementMode": "Managed"}}
    assert aks({"name": "g", "vmSize": H100, "gpuProfile": managed})["gpu-driver"] == "Managed"
    empty_mode = {"driver": "None", "nvidia": {}}
    assert aks({"name": "g", "vmSize": H100, "gpuProfile": empty_mode})["gpu-driver"] == "Managed"
    unmanaged = {"driver": "None", "nvidia": {"managementMode": "unmanaged"}}
    assert aks({"name": "g", "vmSize": H100, "gpuProfile": unmanaged})["gpu-driver"] == "None"


def test_aks_only_nvidia_gpu_sizes_count_and_disagreement_is_mixed() -> None:
    got = aks(
        {"name": "system", "vmSize": "Standard_D4s_v5"},
        {"name": "amd", "vmSize": "Standard_ND96isr_MI300X_v5", "gpuProfile": {"driver": "None"}},
        {"name": "b-gpu", "vmSize": "standard_nc24ads_a100_v4"},
        {"name": "a-gpu", "vmSize": H100, "gpuProfile": {"driver": "None"}},
    )
    assert got == {"gpu-pool-count": 2, "gpu-pools": "a-gpu=None,b-gpu=Install", "gpu-driver": "Mixed"}
    # no GPU pool: no gpu-driver key at all, so a constraint on it is "not found" (fails closed)
    assert aks({"name": "system", "vmSize": "Standard_D4s_v5"}) == {"gpu-pool-count": 0}
    assert aks() == {"gpu-pool-count": 0}


def test_gke_installation_modes() -> None:
    def pool(name: str, *versions: str | None) -> dict[str, Any]:
        accs = [
            {"acceleratorType": "nvidia-h100-80gb"}
            if v is None
            else {"gpuDriverInstallationConfig": {"gpuDriverVersion": v}}
            for v in versions
        ]
        return {"name": name, "config": {"accelerators": accs}}

    assert gke(pool("p", "INSTALLATION_DISABLED")) == {
        "gpu-pool-count": 1,
        "gpu-pools": "p=Disabled",
        "gpu-driver-installation": "Disabled",
    }
    for installed in (None, "", "GPU_DRIVER_VERSION_UNSPECIFIED", "DEFAULT", "LATEST"):
        assert gke(pool("p", installed))["gpu-driver-installation"] == "Installed"
    assert gke(pool("p", "FUTURE_MODE"))["gpu-driver-installation"] == "FUTURE_MODE"
    within = gke(pool("p", "DEFAULT", "INSTALLATION_DISABLED"))
    assert within["gpu-pools"] == "p=Mixed" and within["gpu-driver-installation"] == "Mixed"
    across = gke(pool("b", "LATEST"), pool("a", "INSTALLATION_DISABLED"), {"name": "cpu", "config": {}})
    assert across == {
        "gpu-pool-count": 2,
        "gpu-pools": "a=Disabled,b=Installed",
        "gpu-driver-installation": "Mixed",
    }
    assert gke({"name": "cpu"}, {"name": "cpu2", "config": {"accelerators": []}}) == {"gpu-pool-count": 0}


def test_oke_plugin_states() -> None:
    core = {"name": "CoreDNS", "lifecycle-state": "ACTIVE"}
    assert oke(core, {"name": "NvidiaGpuPlugin", "lifecycle-state": "ACTIVE"}) == {
        "addon-count": 2,
        "nvidia-gpu-plugin": "installed",
    }
    assert oke(core) == {"addon-count": 1, "nvidia-gpu-plugin": "absent"}
    deleting = oke({"name": "nvidiagpuplugin", "lifecycle-state": "DELETING"})
    assert deleting["nvidia-gpu-plugin"] == "addon-deleting"
    assert oke()["nvidia-gpu-plugin"] == "absent"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_project_file_reads_and_names_the_subtype(tmp_path: Path) -> None:
    pools = [{"name": "gpu", "vmSize": H100, "gpuProfile": {"driver": "None"}, "unknownField": [1, 2]}]
    path = write(tmp_path, "pools.json", json.dumps(pools))
    sub = P.project_file(P.PROVIDERS[0], path)
    assert sub == {
        "subtype": "aks-gpu-pools",
        "data": {"gpu-driver": "None", "gpu-pool-count": 1, "gpu-pools": "gpu=None"},
    }
    paths = {"aks-gpu-pools": path, "gke-gpu-pools": None, "oke-addons": ""}
    assert P.project_all(paths) == [sub]


@pytest.mark.parametrize(
    ("flag", "text"),
    [
        ("aks-gpu-pools", "null"),
        ("aks-gpu-pools", '{"value": []}'),
        ("aks-gpu-pools", '[{"name": 3}]'),
        ("gke-gpu-pools", "not json"),
        ("gke-gpu-pools", '[{"config": {"accelerators": {}}}]'),
        ("oke-addons", "[]"),
        ("oke-addons", "{}"),
        ("oke-addons", '{"data": null}'),
    ],
)
def test_a_file_of_the_wrong_shape_is_one_usage_line(tmp_path: Path, flag: str, text: str) -> None:
    provider = next(p for p in P.PROVIDERS if p.flag == flag)
    path = write(tmp_path, "dump.json", text)
    with pytest.raises(UsageError) as err:
        P.project_file(provider, path)
    assert str(err.value) == P.MSG_DECODE.format(
        desc=provider.desc, path=path, shape=provider.shape, command=provider.command
    )


def test_the_reader_takes_only_a_regular_file_up_to_1_mib(tmp_path: Path) -> None:
    exact = write(tmp_path, "exact.json", "x" * P.MAX_BYTES)
    assert len(P.read_bounded(exact, "AKS GPU pools")) == P.MAX_BYTES
    big = write(tmp_path, "big.json", "x" * (P.MAX_BYTES + 1))
    with pytest.raises(UsageError, match=r'^AKS GPU pools file ".*big.json" exceeds 1048576 bytes$'):
        P.read_bounded(big, "AKS GPU pools")
    link = tmp_path / "link.json"
    link.symlink_to(exact)
    with pytest.raises(
        UsageError, match=r'^AKS GPU pools path ".*link.json" is a symlink, not a regular file$'
    ):
        P.read_bounded(str(link), "AKS GPU pools")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=r'^AKS GPU pools path ".*fifo" is not a regular file$'):
        P.read_bounded(str(fifo), "AKS GPU pools")  # never opened, so it cannot block
    with pytest.raises(UsageError, match=r"^AKS GPU pools file not found: .*nope.json$"):
        P.read_bounded(str(tmp_path / "nope.json"), "AKS GPU pools")


def test_attach_adds_to_the_k8s_measurement_and_constraints_read_it() -> None:
    doc: dict[str, Any] = {
        "kind": "Snapshot",
        "apiVersion": "aicr.run/v1alpha2",
        "measurements": [
            {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.33.0"}}]},
        ],
    }
    sub = {"subtype": "aks-gpu-pools", "data": {"gpu-driver": "None", "gpu-pool-count": 1}}
    P.attach(doc, [sub])
    P.attach(doc, [{"subtype": "aks-gpu-pools", "data": {"gpu-driver": "Install", "gpu-pool-count": 1}}])
    names = [s["subtype"] for s in doc["measurements"][0]["subtypes"]]
    assert names == ["server", "aks-gpu-pools"]  # the second replaced the first
    snap = parse_snapshot(doc, "captured")
    assert snap.lookup("K8s.aks-gpu-pools.gpu-driver") == "Install"
    assert snap.lookup("K8s.aks-gpu-pools.gpu-pool-count") == "1"
    bare: dict[str, Any] = {"measurements": []}
    P.attach(bare, [sub])
    assert bare["measurements"] == [{"type": "K8s", "subtypes": [sub]}]
    P.attach(bare, [])
    assert bare["measurements"] == [{"type": "K8s", "subtypes": [sub]}]


def test_ignored_warning_is_aicrs_sentence() -> None:
    assert P.ignored_warnings(["oke-addons"]) == [
        "--oke-addons does not apply to a pre-captured --snapshot; the reading must already be in that "
        "snapshot (capture it with the same flag if missing)"
    ]
    assert P.ignored_warnings([]) == []
