"""The public API of :mod:`aicr_pytest.testing`: what ``__all__`` names, what importing it costs, and
the open player registry (``register_player`` and friends)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

import aicr_pytest.testing as testing
from aicr_pytest.testing import (
    ClusterProfile,
    FakeClusterFactory,
    SimulatedCluster,
    player_names,
    register_player,
    unregister_player,
    using_player,
)
from aicr_pytest.testing.players import BUILTIN_PLAYERS

BUILTINS = (
    "nvidia-smi",
    "nccl",
    "inference",
    "conformance",
    "metrics",
    "autoscaling",
    "slinky",
    "cre",
    "snapshot-agent",
    "dcgm-diag",
    "gpu-health",
    "cuda-smoke",
    "sandbox",
    "kueue",
    "imex",
)


def test_every_public_name_has_a_line_in_the_package_docstring() -> None:
    doc = testing.__doc__ or ""
    documented = set(re.findall(r"^\* :\w+:`(\w+)`", doc, flags=re.MULTILINE))
    assert set(testing.__all__) == documented
    for name in testing.__all__:
        assert hasattr(testing, name), name


def test_importing_the_test_kit_does_not_import_kubernetes() -> None:
    code = (
        "import sys, aicr_pytest.testing as t\n"
        "t.FakeCluster('h100-eks-training')\n"
        "print(sorted(m for m in sys.modules if m == 'kubernetes' or m.startswith('kubernetes.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_builtin_players_are_registered_in_order() -> None:
    assert tuple(name for name, _ in BUILTIN_PLAYERS) == BUILTINS
    assert player_names()[: len(BUILTINS)] == BUILTINS


@pytest.fixture
def calls() -> Iterator[list[tuple[str, str, int]]]:
    """Players registered through :func:`recorder` append here; all are unregistered afterwards."""
    seen: list[tuple[str, str, int]] = []
    before = player_names()
    yield seen
    for name in player_names():
        if name not in before:
            unregister_player(name)


def recorder(tag: str, seen: list[tuple[str, str, int]]) -> testing.Player:
    def play(fc: SimulatedCluster, profile: ClusterProfile) -> None:
        # how many nodes exist when the player runs: players run after the profile's components
        seen.append((tag, profile.name, len(fc.list("v1", "Node"))))

    return play


def test_a_registered_player_runs_after_the_builtins_on_every_profile(
    aicr_fake_cluster_factory: FakeClusterFactory, calls: list[tuple[str, str, int]]
) -> None:
    register_player("first", recorder("first", calls))
    register_player("second", recorder("second", calls))
    assert player_names()[-2:] == ("first", "second")
    aicr_fake_cluster_factory("h100-eks-training")
    aicr_fake_cluster_factory(ClusterProfile(name="bare"))
    assert calls == [
        ("first", "h100-eks-training", 5),
        ("second", "h100-eks-training", 5),
        ("first", "bare", 0),
        ("second", "bare", 0),
    ]


def test_a_player_gets_the_cluster_being_built(
    aicr_fake_cluster_factory: FakeClusterFactory, calls: list[tuple[str, str, int]]
) -> None:
    got: list[object] = []
    register_player("grab", lambda fc, profile: got.append(fc))
    fc = aicr_fake_cluster_factory("gb200-eks-training")
    assert got == [fc]


def test_an_empty_cluster_applies_no_profile_and_runs_no_player(
    aicr_fake_cluster_factory: FakeClusterFactory, calls: list[tuple[str, str, int]]
) -> None:
    register_player("first", recorder("first", calls))
    aicr_fake_cluster_factory()
    assert calls == []


def test_registering_a_name_again_replaces_the_player_in_place(
    aicr_fake_cluster_factory: FakeClusterFactory, calls: list[tuple[str, str, int]]
) -> None:
    register_player("a", recorder("a-old", calls))
    register_player("b", recorder("b", calls))
    register_player("a", recorder("a-new", calls))
    assert player_names()[-2:] == ("a", "b")
    aicr_fake_cluster_factory(ClusterProfile(name="p"))
    assert [c[0] for c in calls] == ["a-new", "b"]


def test_an_unregistered_player_no_longer_runs(
    aicr_fake_cluster_factory: FakeClusterFactory, calls: list[tuple[str, str, int]]
) -> None:
    register_player("gone", recorder("gone", calls))
    unregister_player("gone")
    aicr_fake_cluster_factory(ClusterProfile(name="p"))
    assert calls == []
    assert "gone" not in player_names()


def test_unregistering_an_unknown_player_names_the_registered_ones() -> None:
    with pytest.raises(
        KeyError, match=r"no player 'nope' is registered \(registered: nvidia-smi, nccl, inference"
    ):
        unregister_player("nope")


def test_a_player_needs_a_name() -> None:
    with pytest.raises(ValueError, match="a player needs a name"):
        register_player("", lambda fc, profile: None)


def test_using_player_registers_for_the_block_and_restores_what_was_there(
    aicr_fake_cluster_factory: FakeClusterFactory, calls: list[tuple[str, str, int]]
) -> None:
    register_player("kept", recorder("kept-outer", calls))
    with using_player("kept", recorder("kept-inner", calls)), using_player("temp", recorder("temp", calls)):
        aicr_fake_cluster_factory(ClusterProfile(name="inside"))
    aicr_fake_cluster_factory(ClusterProfile(name="outside"))
    assert [(c[0], c[1]) for c in calls] == [
        ("kept-inner", "inside"),
        ("temp", "inside"),
        ("kept-outer", "outside"),
    ]
    assert "temp" not in player_names()
