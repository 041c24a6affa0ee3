"""Workload players: simulator extensions that play the controllers and tools checks depend on.

Each module here exposes ``install(fc, profile)`` and is called by ``ClusterProfile.apply`` after
the profile's components are installed.  A player typically registers ``fc.sim.on_create``
hooks (e.g. "when a TrainJob appears, create launcher and worker pods with this log") and
``PodScript`` entries for pods a check creates, reading ``profile.faults`` to misbehave on cue.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aicr_pytest.testing.cluster import FakeCluster
    from aicr_pytest.testing.profiles import ClusterProfile

PLAYERS: tuple[str, ...] = (
    "aicr_pytest.testing.players.nvidia_smi",
    "aicr_pytest.testing.players.nccl",
    "aicr_pytest.testing.players.inference",
)


def install_players(fc: FakeCluster, profile: ClusterProfile) -> None:
    for name in PLAYERS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name == name:  # a player that has not been written yet
                continue
            raise
        module.install(fc, profile)
