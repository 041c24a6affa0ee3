"""Collecting the checks that ship with aicr-pytest.

The bundled ``checks/`` folder is not a package.  Its files are imported under unique names
(``aicr_pytest.checks.<folder>.<file>``), whatever the user's ``--import-mode`` or rootdir, so a
user's own ``checks`` package or a same-named test file never collides with ours.  pytest's
assertion rewriting still applies: the module is found through ``sys.meta_path`` as pytest does.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from aicr_pytest.core.resources import bundled_dir

MODULE_PREFIX = "aicr_pytest.checks"

#: the catalog checks each bundled file implements (relative path → names).  A run imports only
#: the files that implement a selected check (start-up: importing a family costs tens of ms); a
#: file not listed here is always collected.  ``tests/plugin/test_bundled_manifest.py`` keeps this
#: in step with the files' ``@pytest.mark.check`` markers.
IMPLEMENTS: dict[str, frozenset[str]] = {
    "performance/test_inference_perf.py": frozenset({"inference-perf"}),
    "performance/test_nccl_all_reduce.py": frozenset(
        {"nccl-all-reduce-bw", "nccl-all-reduce-bw-net", "nccl-all-reduce-bw-nvls"}
    ),
    "deployment/test_deployment.py": frozenset(
        {"operator-health", "gpu-operator-version", "expected-resources", "check-nvidia-smi"}
    ),
    "conformance/test_conformance_phase1.py": frozenset(
        {
            "dra-support",
            "gang-scheduling",
            "robust-controller",
            "secure-accelerator-access",
            "gpu-operator-health",
            "platform-health",
        }
    ),
    "conformance/test_conformance_phase2.py": frozenset(
        {
            "accelerator-metrics",
            "ai-service-metrics",
            "inference-gateway",
            "pod-autoscaling",
            "cluster-autoscaling",
            "slinky-slurm-health",
            "slinky-slurm-imex-channel",
        }
    ),
}


def not_needed(path: Path, selected: set[str]) -> bool:
    """Whether the bundled file ``path`` implements none of the ``selected`` checks."""
    if not is_bundled(path):
        return False
    names = IMPLEMENTS.get(path.resolve().relative_to(checks_dir()).as_posix())
    return names is not None and not (names & selected)


def checks_dir() -> Path:
    return bundled_dir("checks")


def is_bundled(path: Path) -> bool:
    try:
        path.resolve().relative_to(checks_dir())
    except ValueError:
        return False
    return True


def module_name(path: Path) -> str:
    rel = path.resolve().relative_to(checks_dir()).with_suffix("")
    return ".".join((MODULE_PREFIX, *rel.parts))


def import_bundled(path: Path) -> ModuleType:
    name = module_name(path)
    existing = sys.modules.get(name)
    if existing is not None:
        return existing
    spec = None
    for finder in sys.meta_path:  # pytest's assertion rewriter is one of them
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        spec = find_spec(name, [str(path.resolve().parent)])
        if spec is not None:
            break
    if spec is None or spec.loader is None:
        spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a file we ship
        raise ImportError(f"cannot import bundled check {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


class BundledModule(pytest.Module):
    """A bundled check file, imported under its ``aicr_pytest.checks.*`` name."""

    def _getobj(self) -> ModuleType:
        return import_bundled(self.path)
