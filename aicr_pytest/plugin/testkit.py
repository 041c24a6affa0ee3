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

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # registered on every run; keep its import cheap
    from aicr_pytest.testing.cluster import FakeCluster
    from aicr_pytest.testing.profiles import ClusterProfile

__all__ = ["aicr_fake_cluster", "aicr_fake_cluster_factory"]

FakeClusterFactory = Callable[..., "FakeCluster"]


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
