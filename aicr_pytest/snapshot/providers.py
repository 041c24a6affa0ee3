"""Provider data folded into a captured snapshot: ``--aks-gpu-pools``, ``--gke-gpu-pools``, ``--oke-addons``.

Today's AICR (``aicr validate``/``aicr snapshot``, ``pkg/cli/validate.go``; projections in
``pkg/collector/k8s/aksgpupools.go``, ``gkegpupools.go``, ``okeaddons.go`` and the bounded reader in
``providerpools.go``; documented in ``docs/user/cli-reference.md``) reads what a cloud's own CLI
printed about the cluster's GPU pools and adds one ``K8s`` subtype per provider, so that the
profile constraints AKS, GKE and OKE recipes record (``K8s.aks-gpu-pools.gpu-driver``,
``K8s.gke-gpu-pools.gpu-driver-installation``, ``K8s.oke-addons.nvidia-gpu-plugin``) can be
evaluated.  The same readings here, worked out independently from those sources:

* ``aks-gpu-pools`` from ``az aks nodepool list -o json`` (a JSON array): GPU pools are the VM sizes
  ``Standard_NC*``/``ND*``/``NV*`` that are not AMD (``_MI300X``, ``_MI325X``, ``_V620``, ``_V710``);
  each pool's mode is ``gpuProfile.driver`` (``Install`` when absent), ``Managed`` when
  ``gpuProfile.nvidia`` is there with a ``managementMode`` other than ``Unmanaged``.  Keys:
  ``gpu-pool-count``; with at least one GPU pool also ``gpu-pools`` (``name=mode`` sorted, comma
  separated) and ``gpu-driver`` (the one mode, or ``Mixed``).
* ``gke-gpu-pools`` from ``gcloud container node-pools list --cluster C --format=json`` (a JSON
  array): GPU pools have ``config.accelerators``; an accelerator's
  ``gpuDriverInstallationConfig.gpuDriverVersion`` ``INSTALLATION_DISABLED`` is ``Disabled``,
  empty/``GPU_DRIVER_VERSION_UNSPECIFIED``/``DEFAULT``/``LATEST`` is ``Installed``, anything else
  kept as given; a pool's accelerators, and the pools, that disagree are ``Mixed``.  Keys:
  ``gpu-pool-count``, ``gpu-pools``, ``gpu-driver-installation``.
* ``oke-addons`` from ``oci ce cluster list-addons --cluster-id OCID --all --output json`` (an
  object with a ``data`` array): ``nvidia-gpu-plugin`` is ``installed`` (``NvidiaGpuPlugin``
  ``ACTIVE``), ``absent``, or ``addon-<state>`` for any other lifecycle state; ``addon-count``.

``Mixed``, ``Managed``, ``addon-<state>`` and an unknown mode match no value a recipe declares, and
a reading that is absent (no GPU pool) is "not found": the constraint fails closed either way.

The file is an explicit input, so every problem with it is a usage error (exit 2, one line) before
any cluster work: not found, a symlink or not a regular file, over 1 MiB, not JSON, or not the
shape the provider's CLI prints.  Unknown fields are ignored (it is the provider's output, not a
contract).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from aicr_pytest.core.errors import UsageError
from aicr_pytest.snapshot.measure import Data, Doc, subtype

#: a provider file is read only up to this size (AICR's cap)
MAX_BYTES: Final = 1 << 20

MSG_NOT_FOUND: Final = "{desc} file not found: {path}"
MSG_SYMLINK: Final = '{desc} path "{path}" is a symlink, not a regular file'
MSG_NOT_REGULAR: Final = '{desc} path "{path}" is not a regular file'
MSG_UNREADABLE: Final = 'failed to read {desc} file "{path}": {error}'
MSG_TOO_LARGE: Final = '{desc} file "{path}" exceeds {limit} bytes'
MSG_DECODE: Final = 'failed to decode {desc} file "{path}": expected the JSON {shape} emitted by `{command}`'
#: ``--snapshot`` given: the projection only applies to a snapshot validate captures (AICR's words)
MSG_IGNORED: Final = (
    "--{flag} does not apply to a pre-captured --snapshot; "
    "the reading must already be in that snapshot (capture it with the same flag if missing)"
)

_LENIENT = ConfigDict(extra="ignore", populate_by_name=True)


# --- AKS ------------------------------------------------------------------------------------------


class AksNvidiaProfile(BaseModel):
    model_config = _LENIENT
    management_mode: str | None = Field(default=None, alias="managementMode")


class AksGpuProfile(BaseModel):
    model_config = _LENIENT
    driver: str | None = None
    nvidia: AksNvidiaProfile | None = None


class AksAgentPool(BaseModel):
    """One entry of ``az aks nodepool list -o json`` (the fields the projection reads)."""

    model_config = _LENIENT
    name: str = ""
    vm_size: str | None = Field(default=None, alias="vmSize")
    gpu_profile: AksGpuProfile | None = Field(default=None, alias="gpuProfile")


AKS_GPU_SIZE_PREFIXES: Final = ("standard_nc", "standard_nd", "standard_nv")
AKS_AMD_SIZE_MARKERS: Final = ("_mi300x", "_mi325x", "_v620", "_v710")


def aks_gpu_size(vm_size: str) -> bool:
    lower = vm_size.lower()
    if any(marker in lower for marker in AKS_AMD_SIZE_MARKERS):
        return False
    return lower.startswith(AKS_GPU_SIZE_PREFIXES)


def aks_pool_mode(pool: AksAgentPool) -> str:
    profile = pool.gpu_profile
    if profile is None:
        return "Install"
    if profile.nvidia is not None and (profile.nvidia.management_mode or "").lower() != "unmanaged":
        return "Managed"
    return profile.driver or "Install"


def project_aks(pools: Sequence[AksAgentPool]) -> Data:
    gpu = [(p.name, aks_pool_mode(p)) for p in pools if aks_gpu_size(p.vm_size or "")]
    return _pool_reading(gpu, "gpu-driver")


# --- GKE ------------------------------------------------------------------------------------------


class GkeDriverConfig(BaseModel):
    model_config = _LENIENT
    gpu_driver_version: str | None = Field(default=None, alias="gpuDriverVersion")


class GkeAccelerator(BaseModel):
    model_config = _LENIENT
    accelerator_type: str | None = Field(default=None, alias="acceleratorType")
    driver_config: GkeDriverConfig | None = Field(default=None, alias="gpuDriverInstallationConfig")


class GkeNodeConfig(BaseModel):
    model_config = _LENIENT
    accelerators: list[GkeAccelerator] | None = None


class GkeNodePool(BaseModel):
    """One entry of ``gcloud container node-pools list --format=json`` (the fields read)."""

    model_config = _LENIENT
    name: str = ""
    config: GkeNodeConfig | None = None


GKE_INSTALLED_VERSIONS: Final = frozenset({"", "GPU_DRIVER_VERSION_UNSPECIFIED", "DEFAULT", "LATEST"})


def gke_accelerator_mode(acc: GkeAccelerator) -> str:
    version = (acc.driver_config.gpu_driver_version if acc.driver_config else None) or ""
    if version == "INSTALLATION_DISABLED":
        return "Disabled"
    if version in GKE_INSTALLED_VERSIONS:
        return "Installed"
    return version


def project_gke(pools: Sequence[GkeNodePool]) -> Data:
    gpu = []
    for pool in pools:
        accelerators = pool.config.accelerators if pool.config is not None else None
        if accelerators:
            gpu.append((pool.name, _aggregate({gke_accelerator_mode(a) for a in accelerators})))
    return _pool_reading(gpu, "gpu-driver-installation")


# --- OKE ------------------------------------------------------------------------------------------


class OkeAddon(BaseModel):
    model_config = _LENIENT
    name: str = ""
    lifecycle_state: str | None = Field(default=None, alias="lifecycle-state")


class OkeAddons(BaseModel):
    """``oci ce cluster list-addons --all --output json``: ``{"data": [...]}``."""

    model_config = _LENIENT
    data: list[OkeAddon]


def project_oke(dump: OkeAddons) -> Data:
    plugin = "absent"
    for addon in dump.data:
        if addon.name.lower() != "nvidiagpuplugin":
            continue
        state = addon.lifecycle_state or ""
        plugin = "installed" if state.upper() == "ACTIVE" else f"addon-{state.lower()}"
        break
    return {"addon-count": len(dump.data), "nvidia-gpu-plugin": plugin}


# --- shared ---------------------------------------------------------------------------------------


def _aggregate(modes: set[str]) -> str:
    return next(iter(modes)) if len(modes) == 1 else "Mixed"


def _pool_reading(pools: Sequence[tuple[str, str]], key: str) -> Data:
    """``gpu-pool-count``; with a GPU pool, ``gpu-pools`` (``name=mode``, sorted) and ``key``."""
    data: Data = {"gpu-pool-count": len(pools)}
    if pools:
        data["gpu-pools"] = ",".join(sorted(f"{name}={mode}" for name, mode in pools))
        data[key] = _aggregate({mode for _, mode in pools})
    return data


@dataclass(frozen=True)
class Provider:
    """One provider flag: its file's description, shape and projection."""

    flag: str
    env: str
    subtype: str
    desc: str
    shape: str
    command: str
    project: Callable[[bytes], Data]


def _decode(model: Any) -> Callable[[bytes], Any]:
    adapter = TypeAdapter(model)

    def load(raw: bytes) -> Any:
        return adapter.validate_python(json.loads(raw))

    return load


def _projector(load: Callable[[bytes], Any], project: Callable[[Any], Data]) -> Callable[[bytes], Data]:
    return lambda raw: project(load(raw))


PROVIDERS: Final[tuple[Provider, ...]] = (
    Provider(
        "aks-gpu-pools",
        "AICR_AKS_GPU_POOLS_PATH",
        "aks-gpu-pools",
        "AKS GPU pools",
        "array",
        "az aks nodepool list -o json",
        _projector(_decode(list[AksAgentPool]), project_aks),
    ),
    Provider(
        "gke-gpu-pools",
        "AICR_GKE_GPU_POOLS_PATH",
        "gke-gpu-pools",
        "GKE GPU pools",
        "array",
        "gcloud container node-pools list --cluster <cluster> --format=json",
        _projector(_decode(list[GkeNodePool]), project_gke),
    ),
    Provider(
        "oke-addons",
        "AICR_OKE_ADDONS_PATH",
        "oke-addons",
        "OKE cluster add-ons",
        "object",
        "oci ce cluster list-addons --cluster-id <cluster-ocid> --all --output json",
        _projector(_decode(OkeAddons), project_oke),
    ),
)


def read_bounded(path: str, desc: str, limit: int = MAX_BYTES) -> bytes:
    """The file's bytes: a regular file (not a symlink) of at most ``limit`` bytes, else ``UsageError``."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise UsageError(MSG_NOT_FOUND.format(desc=desc, path=path)) from None
    except OSError as exc:
        raise UsageError(MSG_UNREADABLE.format(desc=desc, path=path, error=exc.strerror or exc)) from None
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(MSG_SYMLINK.format(desc=desc, path=path))
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(MSG_NOT_REGULAR.format(desc=desc, path=path))
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise UsageError(MSG_UNREADABLE.format(desc=desc, path=path, error=exc.strerror or exc)) from None
    if len(raw) > limit:
        raise UsageError(MSG_TOO_LARGE.format(desc=desc, path=path, limit=limit))
    return raw


def project_file(provider: Provider, path: str) -> Doc:
    """The ``K8s`` subtype ``provider`` projects from ``path``; a bad file is a ``UsageError``."""
    raw = read_bounded(path, provider.desc)
    try:
        data = provider.project(raw)
    except (ValueError, ValidationError):  # json.JSONDecodeError is a ValueError
        raise UsageError(
            MSG_DECODE.format(desc=provider.desc, path=path, shape=provider.shape, command=provider.command)
        ) from None
    return subtype(provider.subtype, data)


def project_all(paths: dict[str, str | None]) -> list[Doc]:
    """The subtypes for every provider flag given (``paths``: flag → path), in flag order."""
    return [project_file(p, str(paths[p.flag])) for p in PROVIDERS if paths.get(p.flag)]


def attach(document: dict[str, Any], subtypes: Sequence[Doc]) -> None:
    """Add ``subtypes`` to the document's ``K8s`` measurement (replacing same-named ones)."""
    if not subtypes:
        return
    measurements = document.setdefault("measurements", [])
    k8s = next((m for m in measurements if m.get("type") == "K8s"), None)
    if k8s is None:
        k8s = {"type": "K8s", "subtypes": []}
        measurements.insert(0, k8s)
    names = {s["subtype"] for s in subtypes}
    k8s["subtypes"] = [s for s in k8s.get("subtypes") or [] if s.get("subtype") not in names] + list(subtypes)


def ignored_warnings(given_flags: Sequence[str]) -> list[str]:
    """The warning for each provider flag given explicitly while ``--snapshot`` was given too."""
    return [MSG_IGNORED.format(flag=p.flag) for p in PROVIDERS if p.flag in given_flags]


__all__ = [
    "MAX_BYTES",
    "MSG_DECODE",
    "MSG_IGNORED",
    "PROVIDERS",
    "AksAgentPool",
    "GkeNodePool",
    "OkeAddons",
    "Provider",
    "attach",
    "ignored_warnings",
    "project_aks",
    "project_all",
    "project_file",
    "project_gke",
    "project_oke",
    "read_bounded",
]
