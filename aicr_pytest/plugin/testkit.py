"""Pytest fixtures for the fake cluster.

``aicr_fake_cluster`` yields a started, empty :class:`FakeCluster` (default namespaces only);
``aicr_fake_cluster_factory(profile=None, faults=(), **kwargs)`` starts as many as a test needs, all
stopped at teardown. Profile/fault names: :data:`aicr_pytest.testing.profiles.PROFILES`,
:data:`aicr_pytest.testing.profiles.FAULTS`. A test can also pick the profile of ``aicr_fake_cluster``
with ``@pytest.mark.parametrize("aicr_fake_cluster", ["h100-eks-training"], indirect=True)``.

A plugin of its own (the ``aicr_testkit`` ``pytest11`` entry point; ``-p no:aicr_testkit`` turns
it off), registered on every run, so it imports nothing of :mod:`aicr_pytest.testing` until a test
asks for a fake cluster.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # registered on every run; keep its import cheap
    from aicr_pytest.testing.cluster import FakeCluster
    from aicr_pytest.testing.profiles import ClusterProfile

__all__ = ["KIT_FIXTURES", "aicr_fake_cluster", "aicr_fake_cluster_factory", "kit_writes_kubeconfig"]

FakeClusterFactory = Callable[..., "FakeCluster"]

#: the fixtures that start a fake cluster (and write its kubeconfig) while the session runs
KIT_FIXTURES = frozenset({"aicr_fake_cluster", "aicr_fake_cluster_factory"})


def kit_writes_kubeconfig(config: pytest.Config) -> bool:
    """Whether a conftest or plugin loaded before the session has a fixture that asks for a test-kit
    fixture (:data:`KIT_FIXTURES`): it may write the kubeconfig the run names while the session runs,
    so that kubeconfig is not loaded up front."""
    me = sys.modules[__name__]
    for plugin in config.pluginmanager.get_plugins():
        if plugin is me or not isinstance(plugin, ModuleType):
            continue
        for value in list(vars(plugin).values()):
            if type(value).__name__ != "FixtureFunctionDefinition":  # what @pytest.fixture makes
                continue
            try:
                params = inspect.signature(value).parameters
            except (TypeError, ValueError):
                continue
            if KIT_FIXTURES & set(params):
                return True
    return False


@pytest.fixture
def aicr_fake_cluster_factory() -> Iterator[FakeClusterFactory]:
    """``factory(profile=None, faults=(), **FakeCluster kwargs) -> started FakeCluster``."""
    started: list[FakeCluster] = []

    def factory(
        profile: str | ClusterProfile | None = None, faults: Iterable[str] = (), **kwargs: Any
    ) -> FakeCluster:
        from aicr_pytest.testing.cluster import FakeCluster

        fc = FakeCluster(profile, faults, **kwargs).start()
        started.append(fc)
        return fc

    yield factory
    for fc in reversed(started):
        fc.stop()


@pytest.fixture
def aicr_fake_cluster(
    request: pytest.FixtureRequest, aicr_fake_cluster_factory: FakeClusterFactory
) -> FakeCluster:
    """A started fake cluster; empty unless indirectly parametrized with a profile name."""
    param = getattr(request, "param", None)
    if isinstance(param, dict):
        return aicr_fake_cluster_factory(**param)
    return aicr_fake_cluster_factory(param)
