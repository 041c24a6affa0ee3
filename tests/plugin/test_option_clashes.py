"""Installed next to any project, aicr-pytest takes none of its option names.

Plain pytest spells every aicr-pytest option ``--aicr-<flag>`` but the design's ``--recipe`` and
``--snapshot``, so a project's ``conftest.py`` that registers generic names (``--config``,
``--kubeconfig``, ``--timeout`` ...) still starts; ``aicr-pytest validate`` keeps ``aicr validate``'s
names.  When a project does register one of our names, the one error line says whose it is.
"""

from __future__ import annotations

import pytest

from aicr_pytest.plugin import options

#: generic names a project may well register for itself; each clashed with aicr-pytest before.
#: (``--timeout`` and ``--debug`` belong to pytest-timeout and pytest themselves, not to a project.)
FOREIGN = (
    "--config",
    "--kubeconfig",
    "--namespace",
    "--kube-context",
    "--fail-fast",
    "--output",
    "--phase",
    "--data",
    "--html",
    "--node-selector",
    "--toleration",
    "--image",
    "--push",
    "--no-cleanup",
    "--simulate",
    "--fault",
    "--evidence-dir",
    "--image-pull-secret",
)

FOREIGN_CONFTEST = """
def pytest_addoption(parser):
    for flag in {flags!r}:
        parser.addoption(flag, action="store", default=None, dest="project_" + flag[2:].replace("-", "_"))
"""

PROJECT_TEST = """
def test_the_project_reads_its_own_options(request):
    assert request.config.getoption("project_config") == "project.yaml"
    assert request.config.getoption("project_kubeconfig") == "kc"
    assert request.config.getoption("project_fail_fast") == "7"
"""


def test_a_project_registering_generic_names_still_runs(pytester: pytest.Pytester) -> None:
    assert len(FOREIGN) == 18
    pytester.makeconftest(FOREIGN_CONFTEST.format(flags=FOREIGN))
    pytester.makepyfile(test_project=PROJECT_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--config", "project.yaml", "--kubeconfig", "kc", "--fail-fast", "7"
    )
    result.assert_outcomes(passed=1)
    # our spellings of the same options are still there, beside the project's
    config = pytester.parseconfig("--aicr-kubeconfig", "ours", "--kubeconfig", "theirs")
    assert (config.option.aicr_kubeconfig, config.option.project_kubeconfig) == ("ours", "theirs")


def test_no_plain_pytest_option_of_ours_is_a_generic_name() -> None:
    spellings = {f for opt in options.entries(options.PYTEST) for f in opt.flags_for(options.PYTEST)}
    assert {f for f in spellings if not f.startswith("--aicr-")} == {"--recipe", "--snapshot"}
    assert not spellings & set(FOREIGN)


@pytest.mark.parametrize("explicit_dest", [False, True], ids=["same-dest", "own-dest"])
def test_a_project_registering_one_of_our_names_is_told_whose_it_is(
    pytester: pytest.Pytester, explicit_dest: bool
) -> None:
    dest = ', dest="mine"' if explicit_dest else ""
    pytester.makeconftest(f'def pytest_addoption(parser):\n    parser.addoption("--aicr-kubeconfig"{dest})\n')
    pytester.makepyfile(test_project="def test_a():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line.strip()] == [
        "ERROR: " + options.MSG_CLASH.format(flag="--aicr-kubeconfig")
    ]
    assert "Traceback" not in result.stderr.str()
