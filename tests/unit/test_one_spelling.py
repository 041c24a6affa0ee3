"""A check is spelled in one place: its catalog row (and, at most, its own family's module); a CNCF
feature only in the catalog row of the check that evidences it.

Counted over the product (``aicr_pytest`` without the simulator's test kit, and the bundled
``checks/``): a module "names" a check when one of its string literals is exactly the check's name.
The conformance phase, the CNCF requirement map, the marker docs and the opt-in group lists derive
from the rows; a new spelling anywhere else is a second source of truth, and this test says where.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from aicr_pytest.core import catalog
from aicr_pytest.evidence.cncf import features

ROOT = Path(__file__).resolve().parents[2]
CATALOG_MODULE = "aicr_pytest/core/catalog.py"
#: the test kit plays the cluster (players and faults are named after what they break): not product
NOT_PRODUCT = ("aicr_pytest/testing/",)
#: literals that are the same text as a check's name but name something else, and where
HOMONYMS: dict[str, dict[str, str]] = {
    "inference-gateway": {
        "aicr_pytest/conformance/inference_gateway.py": "the Gateway object the check looks for",
        "aicr_pytest/inference/cluster.py": "the Gateway object inference-perf deploys",
        "aicr_pytest/inference/knobs.py": "the Gateway object inference-perf deploys",
    },
}


def scan(root: Path, paths: list[Path]) -> dict[str, frozenset[str]]:
    """Every string literal of ``paths`` -> the modules (relative to ``root``) that hold it."""
    found: dict[str, set[str]] = {}
    for path in paths:
        rel = path.relative_to(root).as_posix()
        if rel.startswith(NOT_PRODUCT):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.setdefault(node.value, set()).add(rel)
    return {text: frozenset(modules) for text, modules in found.items()}


@cache
def literals() -> dict[str, frozenset[str]]:
    """The product's string literals (:func:`scan` of ``aicr_pytest`` and ``checks``)."""
    return scan(ROOT, [*(ROOT / "aicr_pytest").rglob("*.py"), *(ROOT / "checks").rglob("*.py")])


def spelled_in(name: str, found: dict[str, frozenset[str]] | None = None) -> set[str]:
    """The product modules besides the catalog that spell ``name`` (homonyms left out)."""
    modules = (literals() if found is None else found).get(name, frozenset())
    return set(modules) - {CATALOG_MODULE} - set(HOMONYMS.get(name, {}))


def family_package(spec: catalog.CheckSpec) -> str | None:
    """The package of the row's family code, where the row says (``entry`` or ``hooks``)."""
    where = spec.entry.partition(":")[0] if spec.entry else spec.hooks
    return "/".join(where.split(".")[:2]) + "/" if where else None


@pytest.mark.parametrize("spec", catalog.CATALOG, ids=lambda s: s.name)
def test_a_check_is_named_by_its_row_and_at_most_its_family(spec: catalog.CheckSpec) -> None:
    assert CATALOG_MODULE in literals()[spec.name]
    others = spelled_in(spec.name)
    assert len(others) <= 1, f"{spec.name} is spelled in {sorted(others)} as well as the catalog"
    package = family_package(spec)
    if others and package is not None:
        [module] = others
        assert module.startswith(package), f"{spec.name}: {module} is not its family ({package})"


def test_conformance_checks_are_named_by_their_rows_only() -> None:
    """The conformance family dispatches by the row's ``entry``: no module of it names a check."""
    named = {s.name: spelled_in(s.name) for s in catalog.CATALOG if s.phase == "conformance"}
    assert {name: modules for name, modules in named.items() if modules} == {}


@pytest.mark.parametrize("feature", features.ALL_FEATURES, ids=lambda f: f.name)
def test_a_cncf_feature_is_named_by_its_catalog_row_only(feature: features.Feature) -> None:
    assert CATALOG_MODULE in literals()[feature.name] or feature.name == feature.check
    assert spelled_in(feature.name) == set()


def test_every_cncf_row_has_its_prose_and_one_row_per_requirement() -> None:
    """A feature is derived from its row and its prose (by requirement id): neither is silently
    dropped, and two rows never claim one requirement's feature (a :class:`Feature` has one check)."""
    rows = catalog.cncf_rows()
    requirements = [str(row.cncf.requirement) for row in rows if row.cncf is not None]
    assert len(requirements) == len(set(requirements))
    assert sorted(requirements) == sorted(features.PROSE)
    assert [f.check for f in features.ALL_FEATURES] == [
        catalog.check_of_feature(f.name) for f in features.ALL_FEATURES
    ]


def test_the_opt_in_groups_and_their_marker_docs_come_from_the_rows() -> None:
    health = catalog.names_in_group(catalog.HEALTH)
    assert health == ["gpu-inventory", "gpu-diagnostics", "gpu-health", "gpu-cuda-smoke"]
    assert catalog.group_marker_doc(catalog.HEALTH) == (
        "node-health checks (gpu-inventory, gpu-diagnostics, gpu-health, gpu-cuda-smoke); "
        "`-m health` runs them (as --node-health does) and nothing else"
    )
    assert catalog.group_marker_doc(catalog.CNCF_SHOULD) == (
        "CNCF SHOULD checks (gpu-sharing, driver-runtime-management, workload-sandboxing, "
        "high-performance-networking); `-m cncf-should` runs them (as --cncf-should does) and "
        "nothing else"
    )


def test_each_group_names_a_settings_flag() -> None:
    from aicr_pytest.core.settings import Settings

    for group, spec in catalog.GROUPS.items():
        assert isinstance(getattr(Settings(), spec.setting), bool), group


def test_a_new_group_member_joins_the_marker_doc(monkeypatch: pytest.MonkeyPatch) -> None:
    toy = catalog.CheckSpec("toy-health", "deployment", 1, "toy", group=catalog.HEALTH)
    monkeypatch.setattr(catalog, "CATALOG", (*catalog.CATALOG, toy))
    assert "gpu-cuda-smoke, toy-health);" in catalog.group_marker_doc(catalog.HEALTH)


def test_the_count_sees_a_second_spelling(tmp_path: Path) -> None:
    """The counter is honest: a module that restates a name (a hand-written group list, a
    constant) is found; a docstring that mentions it is not a spelling."""
    (tmp_path / "aicr_pytest" / "plugin").mkdir(parents=True)
    (tmp_path / "aicr_pytest" / "plugin" / "groups.py").write_text(
        '"""Lists dra-support in prose."""\nMEMBERS = ("dra-support", "gpu-sharing")\n'
    )
    (tmp_path / "aicr_pytest" / "testing").mkdir()
    (tmp_path / "aicr_pytest" / "testing" / "player.py").write_text('NAME = "dra-support"\n')
    found = scan(tmp_path, sorted(tmp_path.rglob("*.py")))
    assert spelled_in("dra-support", found) == {"aicr_pytest/plugin/groups.py"}
    assert (
        spelled_in("inference-gateway", {"inference-gateway": frozenset(HOMONYMS["inference-gateway"])})
        == set()
    )
