"""The wheel ships the bundled checks, recipes and runtimes inside ``aicr_pytest``, nothing on top.

A user's own ``checks`` (or ``recipes``) package can therefore never collide with ours, and the
checks are still collected from any directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.plugin.helpers import SNAPSHOT, make_recipe

REPO = Path(__file__).resolve().parents[2]
BUNDLED = ("checks", "recipes", "runtimes", "deploy")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            REPO,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = out.glob("aicr_pytest-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel unpacked as a site directory (what ``pip install`` lays down)."""
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    return site


def test_wheel_has_no_top_level_bundled_packages(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert not tops & set(BUNDLED), sorted(tops)
    assert not tops & {"tests", "benchmarks", "tools"}, sorted(tops)
    for name in BUNDLED:
        assert any(n.startswith(f"aicr_pytest/{name}/") for n in names), name
    assert "aicr_pytest/checks/deployment/test_deployment.py" in names
    assert "aicr_pytest/recipes/registry.yaml" in names
    assert "aicr_pytest/deploy/rbac.yaml" in names  # aicr-pytest schedule renders its RBAC from it
    assert not any("harness" in n or "controlplane" in n for n in names)


def test_wheel_metadata_carries_the_license(wheel: Path) -> None:
    zf = zipfile.ZipFile(wheel)
    (dist_info,) = {n.split("/", 1)[0] for n in zf.namelist() if n.split("/", 1)[0].endswith(".dist-info")}
    assert zf.read(f"{dist_info}/licenses/LICENSE") == (REPO / "LICENSE").read_bytes()
    metadata = zf.read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()
    assert (REPO / "LICENSE").read_text().splitlines()[1].strip() == "Apache License"


#: a plugin that prints where each collected item's file lives
PROBE = (
    "def pytest_collection_finish(session):\n"
    "    for item in session.items:\n"
    "        print('ITEM', item.path)\n"
)


def _run_from(cwd: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (cwd / "aicr_wheel_probe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(cwd)])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "aicr_wheel_probe", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def _inputs(where: Path, **recipe_kwargs: list[str]) -> tuple[Path, Path]:
    from aicr_pytest.core import yamlio

    rp, sp = where / "r.yaml", where / "s.yaml"
    rp.write_text(yamlio.dump(make_recipe(**recipe_kwargs)))
    sp.write_text(yamlio.dump(SNAPSHOT))
    return rp, sp


def test_installed_wheel_collects_the_bundled_checks_from_an_empty_directory(
    installed: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    rp, sp = _inputs(tmp_path, deployment=["operator-health", "check-nvidia-smi"])
    report = tmp_path / "ctrf.json"
    proc = _run_from(
        empty,
        installed,
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-no-cluster",
        "--aicr-ctrf-report",
        str(report),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tests = json.loads(report.read_text())["results"]["tests"]
    assert [t["name"] for t in tests] == ["operator-health", "check-nvidia-smi"]
    # collected from the wheel's copy, not from the source checkout
    items = [line.removeprefix("ITEM ") for line in proc.stdout.splitlines() if line.startswith("ITEM ")]
    assert items and all(p.startswith(str(installed / "aicr_pytest" / "checks")) for p in items), items


def test_a_project_with_its_own_checks_package_and_a_user_check_runs_both(
    installed: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "checks").mkdir(parents=True)
    (project / "checks" / "__init__.py").write_text("MARK = 'user checks package'\n")
    (project / "checks" / "test_deployment.py").write_text(
        "from checks import MARK\n\ndef test_users_own_file():\n    assert MARK == 'user checks package'\n"
    )
    (project / "conftest.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.check('gang-scheduling')\n"
        "def test_user_gang(aicr_check):\n"
        "    aicr_check.emit('user check ran')\n"
    )
    rp, sp = _inputs(project, deployment=["operator-health"], conformance=["gang-scheduling"])
    report = tmp_path / "ctrf.json"
    proc = _run_from(
        project,
        installed,
        "conftest.py",
        "checks",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-ctrf-report",
        str(report),
        "-rA",
    )
    results = json.loads(report.read_text())["results"]["tests"]
    tests = {t["name"]: t for t in results}
    # the user's own checks package imported as itself, next to ours
    assert "PASSED checks/test_deployment.py::test_users_own_file" in proc.stdout, proc.stdout
    # the user's gang-scheduling check ran next to ours (no cluster: ours is other), each reported
    gang = [t for t in results if t["name"] == "gang-scheduling"]
    assert sorted(t["status"] for t in gang) == ["other", "passed"], gang
    assert [t["stdout"] for t in gang if t["status"] == "passed"] == [["user check ran"]]
    assert tests["operator-health"]["status"] == "other"
