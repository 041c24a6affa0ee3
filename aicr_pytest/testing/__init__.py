"""The public test kit: an in-process fake Kubernetes API server and a GPU-cluster simulator.

Importing this package never imports ``kubernetes`` (only :meth:`FakeCluster.api_client` does).
Public API (each module's docstring gives the semantics and the known gaps):

* :class:`FakeCluster` -- the fake API server + store + clock + simulator started as one unit:
  kubeconfig, store helpers (``add``/``find``/``get``/``list``/``delete``, pod logs), HTTP faults,
  virtual time (:mod:`.cluster`);
* :data:`FakeClusterFactory` -- the type of the ``aicr_fake_cluster_factory`` fixture;
* :class:`TimerClock` -- a :class:`aicr_pytest.core.clock.Clock` with timers, the base of:
* :class:`FakeClock` -- virtual time that moves only when advanced (or auto-advanced while every
  client is blocked in a watch, :mod:`.virtualtime`);
* :class:`RealClock` -- wall-clock time with timers on a thread (``aicr-pytest simulate``);
* :class:`Simulator` -- the controllers: scheduler, kubelet, Job controller, hooks (:mod:`.simulator`);
* :class:`NodeProfile` -- a pool of identical GPU (or system) nodes;
* :class:`PodScript` -- the scripted life of matching pods (start, logs, exit, crash loop);
* :data:`PROFILES` -- named cluster shapes (``h100-eks-training``, ...), :mod:`.profiles`;
* :data:`FAULTS` -- named faults that break a profile the way a real cluster breaks;
* :class:`ClusterProfile` -- node pools + components + faults; ``apply(fc)`` builds it (:mod:`.model`);
* :class:`Component` -- one installer with options in a profile;
* :func:`resolve_profile` -- a fresh profile by name (or a copy of one), faults applied;
* :class:`SimulatedCluster` -- what installers and players may use of a FakeCluster (a Protocol);
* :class:`Player` -- ``install(fc, profile)``: plays the workloads of a check on the simulator;
* :func:`register_player` -- run a player whenever a profile is applied (after the ones before it);
* :func:`unregister_player` -- stop running a registered player;
* :func:`using_player` -- register a player for a ``with`` block (a fixture's ``yield``);
* :func:`player_names` -- the registered players, in the order they run;
* :class:`FakeApiServer` -- the HTTP front end (:mod:`.server`);
* :class:`Faults` -- scripted HTTP failures (429, 5xx, dropped connection, 403, 410 on watch);
* :class:`Store` -- the object store with the API's semantics (:mod:`.store`);
* :class:`ApiError` -- an error the API answers with a ``Status``;
* :data:`Obj` -- a Kubernetes object as a JSON dict.

Players: the built-in ones (``nvidia-smi``, ``nccl``, ``inference``, ``snapshot-agent``; :mod:`.players`) are
registered when this package is imported. A check of your own brings its player like this::

    from aicr_pytest.testing import SimulatedCluster, ClusterProfile, register_player

    def play_probe(fc: SimulatedCluster, profile: ClusterProfile) -> None:
        fc.sim.script(name_prefix="probe-", logs="probe ok\\n")   # the pods the check creates

    register_player("probe", play_probe)          # in a conftest.py, or scoped in a fixture:
    # with using_player("probe", play_probe): yield

Every ``FakeCluster(profile)`` (and ``aicr_fake_cluster_factory(profile)``) then runs it after the
profile's components; players run in registration order, and registering a name again replaces it.

Fixtures (``aicr_fake_cluster``, ``aicr_fake_cluster_factory``) come with aicr-pytest's
``aicr_testkit`` plugin (:mod:`aicr_pytest.plugin.testkit`; ``-p no:aicr_testkit`` turns it off).
"""

from __future__ import annotations

from collections.abc import Callable

from aicr_pytest.testing.clock import FakeClock, RealClock, TimerClock
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.model import (
    ClusterProfile,
    Component,
    Player,
    SimulatedCluster,
    player_names,
    register_player,
    unregister_player,
    using_player,
)
from aicr_pytest.testing.profiles import FAULTS, PROFILES, resolve_profile
from aicr_pytest.testing.server import FakeApiServer, Faults
from aicr_pytest.testing.simulator import NodeProfile, PodScript, Simulator
from aicr_pytest.testing.store import ApiError, Obj, Store

FakeClusterFactory = Callable[..., FakeCluster]
"""The type of the ``aicr_fake_cluster_factory`` fixture: ``factory(profile=None, faults=(), **kwargs)``."""

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
    "Obj",
    "Player",
    "PodScript",
    "RealClock",
    "SimulatedCluster",
    "Simulator",
    "Store",
    "TimerClock",
    "player_names",
    "register_player",
    "resolve_profile",
    "unregister_player",
    "using_player",
]
