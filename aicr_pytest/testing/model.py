"""What a simulated cluster is made of: profiles, their components, and the players that run on them.

* :class:`SimulatedCluster` -- what profile installers and players may use of a
  :class:`~aicr_pytest.testing.cluster.FakeCluster` (its store, simulator, HTTP server, clock and
  scenario state, plus the store helpers). ``FakeCluster`` implements it; profiles and players are
  typed with it and never import ``cluster.py``, so the fake has no import cycle.
* :class:`Component`, :class:`ClusterProfile` -- a profile is data: node pools plus an ordered list of
  components (an installer function with options), the nodes to cordon and the faults applied.
  :meth:`ClusterProfile.apply` creates all of it in a cluster, then runs every registered player.
* :class:`Player`, :func:`register_player`, :func:`unregister_player`, :func:`using_player`,
  :func:`player_names` -- the player registry. A player is ``install(fc, profile)``: it extends the
  simulator so that the workloads a check creates behave (``fc.sim.on_create`` hooks, ``PodScript``
  entries, HTTP faults), reading ``profile.faults`` to misbehave on cue. The built-in players
  (``nvidia-smi``, ``nccl``, ``inference``, see :mod:`aicr_pytest.testing.players`) register when
  :mod:`aicr_pytest.testing` is imported; a user registers one for their own check from a conftest
  (``register_player("my-check", install)``) or, scoped, from a fixture
  (``with using_player("my-check", install): yield``). Players run in registration order, after the
  profile's components, whenever a profile is applied (``FakeCluster(profile)``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aicr_pytest.testing.clock import TimerClock
from aicr_pytest.testing.server import FakeApiServer, Faults
from aicr_pytest.testing.simulator import NodeProfile, Simulator
from aicr_pytest.testing.store import Obj, Store

__all__ = [
    "ClusterProfile",
    "Component",
    "Installer",
    "Player",
    "SimulatedCluster",
    "player_names",
    "register_player",
    "unregister_player",
    "using_player",
]


class SimulatedCluster(Protocol):
    """The part of a :class:`~aicr_pytest.testing.cluster.FakeCluster` installers and players use."""

    @property
    def clock(self) -> TimerClock: ...

    @property
    def store(self) -> Store: ...

    @property
    def sim(self) -> Simulator: ...

    @property
    def server(self) -> FakeApiServer: ...

    @property
    def faults(self) -> Faults: ...

    @property
    def state(self) -> dict[str, Any]: ...

    def add(self, obj: Obj) -> Obj: ...

    def add_all(self, objs: Iterable[Obj]) -> list[Obj]: ...

    def find(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None: ...

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj: ...

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]: ...

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None: ...

    def set_pod_log(
        self, namespace: str, pod: str, container: str, text: str, *, previous: bool = False
    ) -> None: ...

    def append_pod_log(self, namespace: str, pod: str, container: str, text: str) -> None: ...

    def record_faults(self, names: Sequence[str]) -> None: ...


Installer = Callable[[SimulatedCluster, "ClusterProfile", "Component"], None]


class Player(Protocol):
    """``install(fc, profile)``: extend the simulator of ``fc`` for ``profile`` (module docstring)."""

    def __call__(self, fc: SimulatedCluster, profile: ClusterProfile, /) -> None: ...


_players: dict[str, Player] = {}
_players_lock = threading.Lock()


def register_player(name: str, install: Player) -> None:
    """Run ``install(fc, profile)`` every time a profile is applied, after the players registered
    before it. Registering a name again replaces that player (it keeps its place in the order)."""
    if not name:
        raise ValueError("a player needs a name")
    with _players_lock:
        _players[name] = install


def unregister_player(name: str) -> None:
    """Stop running the player registered as ``name``; :class:`KeyError` when there is none."""
    with _players_lock:
        if name not in _players:
            known = ", ".join(_players) or "none"
            raise KeyError(f"no player {name!r} is registered (registered: {known})")
        del _players[name]


@contextlib.contextmanager
def using_player(name: str, install: Player) -> Iterator[None]:
    """Register ``install`` as ``name`` for the block, then restore what was there (for fixtures)."""
    with _players_lock:
        previous = _players.get(name)
    register_player(name, install)
    try:
        yield
    finally:
        with _players_lock:
            if previous is None:
                _players.pop(name, None)
            else:
                _players[name] = previous


def player_names() -> tuple[str, ...]:
    """The registered players, in the order they run."""
    with _players_lock:
        return tuple(_players)


def _registered_players() -> list[tuple[str, Player]]:
    with _players_lock:
        return list(_players.items())


@dataclass
class Component:
    name: str
    install: Installer
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ClusterProfile:
    name: str
    description: str = ""
    node_pools: list[NodeProfile] = field(default_factory=list)
    components: list[Component] = field(default_factory=list)
    version: dict[str, str] = field(default_factory=dict)
    cordoned: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)

    def remove(self, name: str) -> None:
        self.components = [c for c in self.components if c.name != name]

    def gpu_pools(self) -> list[NodeProfile]:
        return [p for p in self.node_pools if p.gpu_product and p.gpus_per_node]

    def gpu_node_names(self) -> list[str]:
        return [p.node_name(i) for p in self.gpu_pools() for i in range(p.count)]

    def apply(self, fc: SimulatedCluster) -> None:
        """Create everything in ``fc`` (before or after it starts), then run the registered players."""
        fc.store.version.update(self.version)
        for pool in self.node_pools:
            fc.sim.add_nodes(pool)
        for comp in self.components:
            comp.install(fc, self, comp)
        for node in self.cordoned:
            fc.sim.cordon(node)
        fc.record_faults(self.faults)
        for _name, player in _registered_players():
            player(fc, self)
        fc.add(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "aicr-simulator",
                    "namespace": "kube-public",
                    "labels": {"app.kubernetes.io/managed-by": "aicr-pytest-simulator"},
                },
                "data": {"simulated": "true", "profile": self.name, "faults": ",".join(self.faults)},
            }
        )
