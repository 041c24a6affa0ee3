"""aicr-pytest lives beside other suites: every fixture it registers carries the ``aicr_`` prefix, so
syrupy's ``snapshot`` and a suite's own ``recipe``/``run``/``check``/``cluster`` stay theirs, with
and without ``--recipe``; the fake-cluster fixtures are a plugin of their own (``aicr_testkit``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.plugin.helpers import EXAMPLE_RECIPE, EXAMPLE_SNAPSHOT

#: the names the plugin registered before the prefix: none of them may be ours any more
UNPREFIXED = (
    "recipe",
    "snapshot",
    "check",
    "cluster",
    "run",
    "data_tree",
    "allocation_policy",
    "snapshot_constraint",
    "fake_cluster",
    "fake_cluster_factory",
)

RUN_MODES = {
    "without-recipe": (),
    "with-recipe": (
        "--recipe",
        str(EXAMPLE_RECIPE),
        "--snapshot",
        str(EXAMPLE_SNAPSHOT),
        "--aicr-no-cluster",
    ),
}

SYRUPY_SUITE = """
def test_syrupy_snapshot(snapshot):
    assert {"a": 1} == snapshot
"""

OWN_FIXTURES_CONFTEST = """
import pytest

@pytest.fixture
def recipe():
    return "my recipe"

@pytest.fixture
def run():
    return "my run"

@pytest.fixture
def check():
    return "my check"

@pytest.fixture
def cluster():
    return "my cluster"
"""

OWN_FIXTURES_SUITE = """
def test_own_fixtures(recipe, run, check, cluster):
    assert (recipe, run, check, cluster) == ("my recipe", "my run", "my check", "my cluster")
"""


@pytest.fixture
def syrupy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under xdist the subprocess would inherit the worker's variables, and syrupy, taking itself
    for a worker, would print no snapshot report."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("syrupy_env")
@pytest.mark.parametrize("mode", list(RUN_MODES), ids=list(RUN_MODES))
def test_a_syrupy_suite_behaves_as_without_aicr_pytest(pytester: pytest.Pytester, mode: str) -> None:
    """Real syrupy, in a subprocess: the snapshot is written once, then matched."""
    pytester.makepyfile(test_syrupy=SYRUPY_SUITE)
    args = ("-p", "no:cacheprovider", "-v", *RUN_MODES[mode], "test_syrupy.py")
    update = pytester.runpytest_subprocess(*args, "--snapshot-update")
    assert update.ret == 0, update.stdout.str() + update.stderr.str()
    update.stdout.fnmatch_lines(["*::test_syrupy_snapshot PASSED*", "*1 snapshot generated*"])
    assert (pytester.path / "__snapshots__" / "test_syrupy.ambr").is_file()

    plain = pytester.runpytest_subprocess(*args)
    assert plain.ret == 0, plain.stdout.str() + plain.stderr.str()
    plain.stdout.fnmatch_lines(["*::test_syrupy_snapshot PASSED*", "*1 snapshot passed*"])
    plain.stdout.no_fnmatch_line("*aicr-pytest fixtures need --recipe*")


@pytest.mark.usefixtures("syrupy_env")
def test_a_changed_syrupy_snapshot_still_fails(pytester: pytest.Pytester) -> None:
    """The syrupy suite really compares (not a pass for anything): a different value fails."""
    pytester.makepyfile(test_syrupy=SYRUPY_SUITE)
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider", "--snapshot-update").ret == 0
    pytester.makepyfile(test_syrupy=SYRUPY_SUITE.replace('{"a": 1}', '{"a": 2}'))
    changed = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *RUN_MODES["with-recipe"], "test_syrupy.py"
    )
    assert changed.ret == 1
    changed.stdout.fnmatch_lines(["*1 snapshot failed*"])


@pytest.mark.parametrize("mode", list(RUN_MODES), ids=list(RUN_MODES))
def test_a_suites_own_fixtures_keep_their_values(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makeconftest(OWN_FIXTURES_CONFTEST)
    pytester.makepyfile(test_own=OWN_FIXTURES_SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-v", *RUN_MODES[mode], "test_own.py")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*::test_own_fixtures PASSED*"])


def test_the_plugin_registers_no_unprefixed_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_names="\n".join(f"def test_{name}({name}):\n    pass\n" for name in UNPREFIXED))
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:syrupy")  # syrupy's is `snapshot`
    result.assert_outcomes(errors=len(UNPREFIXED))
    result.stdout.fnmatch_lines([f"*fixture '{name}' not found*" for name in UNPREFIXED], consecutive=False)


TESTKIT_SUITE = """
def test_kit(aicr_fake_cluster_factory):
    assert callable(aicr_fake_cluster_factory)
"""


def _fixture_names(result: pytest.RunResult) -> set[str]:
    """The fixture names ``pytest --fixtures`` lists (``name [scope] -- where``)."""
    return {line.split()[0] for line in result.stdout.lines if " -- " in line and not line.startswith(" ")}


def test_the_testkit_is_its_own_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kit=TESTKIT_SUITE)
    on = pytester.runpytest("-p", "no:cacheprovider")
    on.assert_outcomes(passed=1)

    off = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:aicr_testkit")
    off.assert_outcomes(errors=1)
    off.stdout.fnmatch_lines(["*fixture 'aicr_fake_cluster_factory' not found*"])


def test_without_the_testkit_the_run_fixtures_remain(pytester: pytest.Pytester) -> None:
    """``-p no:aicr_testkit`` turns off the fake cluster only: the aicr plugin's fixtures are there."""
    on = _fixture_names(pytester.runpytest("-p", "no:cacheprovider", "--fixtures"))
    off = _fixture_names(pytester.runpytest("-p", "no:cacheprovider", "-p", "no:aicr_testkit", "--fixtures"))
    run_fixtures = {f"aicr_{name}" for name in UNPREFIXED[:8]} | {"aicr_settings", "aicr_clock"}
    kit = {"aicr_fake_cluster", "aicr_fake_cluster_factory"}
    assert run_fixtures | kit <= on
    assert run_fixtures <= off
    assert not kit & off


def test_a_run_fixture_without_recipe_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_needs="def test_needs(aicr_recipe):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*aicr-pytest fixtures need --recipe*"])


def test_a_check_without_its_marker_names_the_prefixed_fixture(
    pytester: pytest.Pytester, write_inputs: Callable[..., tuple[Path, Path]]
) -> None:
    pytester.makepyfile(test_user="def test_unmarked(aicr_check):\n    pass\n")
    rp, sp = write_inputs()
    args = ("test_user.py", "--aicr-no-bundled-checks", "--recipe", str(rp), "--snapshot", str(sp))
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*test_user.py::test_unmarked: a test that uses the `aicr_check` fixture needs @pytest.mark.check(*"]
    )
