"""The aicr-pytest pytest plugin (entry point ``pytest11: aicr``): light until a run is asked for.

Installed, the plugin is loaded by every pytest run in the environment, so this module imports
nothing heavy (no models, no cluster client, no templates): it registers the options (the light
rows of :mod:`~aicr_pytest.plugin.options`, every plain-pytest spelling ``--aicr-…`` but
``--recipe``/``--snapshot``), aicr-pytest's own hook specifications
(:mod:`~aicr_pytest.plugin.hookspecs`) and the fixtures (:mod:`~aicr_pytest.plugin.fixtures`,
whose imports wait for a test that asks for one).

A run is asked for when any aicr-pytest option is given (``--recipe``, ``--aicr-config``,
``--aicr-cncf-submission`` ...): only then are the run's hooks (:mod:`~aicr_pytest.plugin.hooks`)
imported and registered, as ``aicr-run``, the way pytest-xdist registers its scheduler only for
``-n``.  Without one the plugin adds nothing to a session but its options and fixtures.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Generator
from types import ModuleType

import pytest

from aicr_pytest.plugin import hookspecs, options

#: the name the run's hooks are registered under (``config.pluginmanager.get_plugin(RUN_PLUGIN)``)
RUN_PLUGIN = "aicr-run"

#: the run's fixtures (the fake-cluster fixtures are a plugin of their own, ``aicr_testkit``)
pytest_plugins = ("aicr_pytest.plugin.fixtures",)


def pytest_addoption(parser: pytest.Parser) -> None:
    try:
        options.add_pytest_options(parser.getgroup(*options.PYTEST_GROUP))
    except (ValueError, argparse.ArgumentError) as exc:  # a plugin registered before us took a name
        raise _clash(exc) from None


def _clash(exc: Exception) -> Exception:
    """pytest's error on an option registered twice, naming aicr-pytest when the option is ours."""
    message = options.clash_message(exc)
    return exc if message is None else pytest.UsageError(message)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests() -> Generator[None, None, None]:
    """A ``conftest.py`` that registers one of our options: one line naming the owner, not
    argparse's traceback."""
    try:
        return (yield)
    except (ValueError, argparse.ArgumentError) as exc:
        raise _clash(exc) from None


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def run_asked_for(config: pytest.Config) -> bool:
    """Whether any aicr-pytest option was given: the run's hooks are needed."""
    return options.any_given(config.option)


def register_run(config: pytest.Config) -> ModuleType | None:
    """The run's hooks, imported and registered once when a run is asked for (``None``: not)."""
    if not run_asked_for(config):
        return None
    plugin = config.pluginmanager.get_plugin(RUN_PLUGIN)
    if plugin is None:
        from aicr_pytest.plugin import features, hooks

        # the features first: registered late, the run's hooks run their pytest_configure at once
        features.register(config.pluginmanager)
        config.pluginmanager.register(hooks, RUN_PLUGIN)
        plugin = hooks
    assert isinstance(plugin, ModuleType)
    return plugin


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """Registers the run's hooks before ``pytest_configure`` runs; a feature may replace the
    session (``--aicr-cncf-submission``: the evidence collector)."""
    run = register_run(config)
    if run is None:
        return None
    main: Callable[[pytest.Config], int | None] = run.session_main
    return main(config)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Where ``pytest_cmdline_main`` is not called (an in-process ``parseconfigure``), the run's
    hooks are registered here; their own ``pytest_configure`` then runs at registration."""
    register_run(config)
