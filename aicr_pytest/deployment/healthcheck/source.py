"""Where a component's health check comes from: inline in the recipe, or the registry's file.

Files are read through the data root (``read_data_file``), so a ``--data`` layer can override them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aicr_pytest.core import yamlio
from aicr_pytest.deployment.healthcheck.model import HealthCheckRejected
from aicr_pytest.deployment.treematch import _one_line

__all__ = ["registry_lookup", "resolve_health_check_source"]

MSG_DATA_FILE_UNREADABLE = "[NOT_FOUND] health check file {path} for component {component}: {err}"


def _ref_get(ref: Any, key: str) -> Any:
    if isinstance(ref, Mapping):
        return ref.get(key)
    dump = getattr(ref, "model_dump", None)
    if callable(dump):
        data = dump(by_alias=True)
        if isinstance(data, Mapping):
            return data.get(key)
    return None


def resolve_health_check_source(
    ref: Mapping[str, Any] | Any,
    read_data_file: Callable[[str], str],
    registry_entry: Callable[[str], Mapping[str, Any] | None] | None = None,
) -> tuple[str, str] | None:
    """The health-check YAML for a component ref and where it came from, or ``None``.

    * inline ``healthCheckAsserts`` (non-empty) wins: ``(text, "inline")``;
    * ``healthCheckSkip: true`` opts out of the registry lookup;
    * otherwise the registry entry's ``healthCheck.assertFile`` is read through
      ``read_data_file`` (data-root relative, so a ``--data`` layer can override it):
      ``(text, assertFile)``.

    ``registry_entry(name)`` defaults to reading ``registry.yaml`` through ``read_data_file``.
    A registered file that cannot be read raises :class:`HealthCheckRejected`.
    """
    name = str(_ref_get(ref, "name") or "")
    inline = _ref_get(ref, "healthCheckAsserts")
    if isinstance(inline, str) and inline.strip():
        return inline, "inline"
    if _ref_get(ref, "healthCheckSkip") is True:
        return None
    lookup = registry_entry or registry_lookup(read_data_file)
    entry = lookup(name)
    if not entry:
        return None
    hc = entry.get("healthCheck") or {}
    path = hc.get("assertFile") if isinstance(hc, Mapping) else None
    if not path:
        return None
    try:
        return read_data_file(str(path)), str(path)
    except Exception as err:
        raise HealthCheckRejected(
            MSG_DATA_FILE_UNREADABLE.format(path=path, component=name, err=_one_line(err))
        ) from err


def registry_lookup(read_data_file: Callable[[str], str]) -> Callable[[str], Mapping[str, Any] | None]:
    """``name -> registry entry`` over ``registry.yaml`` read (once, lazily) through ``read_data_file``."""
    cache: dict[str, Mapping[str, Any]] = {}
    loaded = False

    def lookup(name: str) -> Mapping[str, Any] | None:
        nonlocal loaded
        if not loaded:
            loaded = True
            try:
                doc = yamlio.load(read_data_file("registry.yaml")) or {}
            except Exception:  # no registry in the data root: no registered checks
                doc = {}
            components = doc.get("components") if isinstance(doc, Mapping) else None
            for comp in components or []:
                if isinstance(comp, Mapping) and comp.get("name"):
                    cache[str(comp["name"])] = comp
        return cache.get(name)

    return lookup
