"""Test harness: an in-process fake Kubernetes API server and a GPU-cluster simulator.

Public API (see each module's docstring for semantics and known gaps):

* :class:`FakeCluster` -- start/stop the fake, kubeconfig, store helpers, faults, clock;
* :class:`FakeClock` / :class:`RealClock` -- injectable clocks; ``FakeCluster(auto_advance=True)``
  (or ``with fc.auto_advancing():``) moves a FakeClock whenever every client is blocked in a watch,
  so watch-based waits run in virtual time (:mod:`aicr_pytest.testing.virtualtime`);
* :class:`Simulator`, :class:`NodeProfile`, :class:`PodScript` -- controllers and timelines;
* :data:`PROFILES`, :data:`FAULTS`, :class:`ClusterProfile` -- named cluster shapes and faults;
* :class:`Store`, :class:`ApiError`, :class:`FakeApiServer`, :class:`Faults` -- lower layers.

Fixtures (``fake_cluster``, ``fake_cluster_factory``) come with the aicr plugin
(:mod:`aicr_pytest.plugin.testkit`); :data:`FakeClusterFactory` types the factory.
"""

from __future__ import annotations

from collections.abc import Callable

from aicr_pytest.testing.clock import FakeClock, RealClock, TimerClock
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.profiles import FAULTS, PROFILES, ClusterProfile, Component, resolve_profile
from aicr_pytest.testing.server import FakeApiServer, Faults
from aicr_pytest.testing.simulator import NodeProfile, PodScript, Simulator
from aicr_pytest.testing.store import ApiError, Store

FakeClusterFactory = Callable[..., FakeCluster]
"""The type of the ``fake_cluster_factory`` fixture: ``factory(profile=None, faults=(), **kwargs)``."""

__all__ = [
    "FAULTS",
    "PROFILES",
    "ApiError",
    "ClusterProfile",
    "Component",
    "FakeApiServer",
    "FakeClock",
    "FakeCluster",
    "FakeClusterFactory",
    "Faults",
    "NodeProfile",
    "PodScript",
    "RealClock",
    "Simulator",
    "Store",
    "TimerClock",
    "resolve_profile",
]
