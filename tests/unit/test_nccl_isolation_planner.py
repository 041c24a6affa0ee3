"""nccl.isolation: the bad-node isolation planner, against simulated clusters."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.nccl import isolation as iso
from aicr_pytest.nccl.isolation import Outcome, Subset

NODES16 = [f"gpu-{i:02d}" for i in range(16)]


class Cluster:
    """A simulated NCCL cluster: a subset fails when it holds a bad node (alone too, unless
    ``fine_alone``) or both ends of a bad link; ``dead`` nodes never run."""

    def __init__(
        self,
        bad: Sequence[str] = (),
        *,
        fine_alone: bool = False,
        links: Sequence[tuple[str, str]] = (),
        dead: Sequence[str] = (),
        fails_at: int | None = None,
    ) -> None:
        self.bad, self.fine_alone, self.links, self.dead, self.fails_at = (
            set(bad),
            fine_alone,
            links,
            set(dead),
            fails_at,
        )
        self.calls: list[list[Subset]] = []

    def __call__(self, subsets: Sequence[Subset]) -> Mapping[Subset, Outcome]:
        self.calls.append(list(subsets))
        out: dict[Subset, Outcome] = {}
        for s in subsets:
            assert list(s) == sorted(s) and len(set(s)) == len(s)
            if self.dead & set(s):
                out[s] = None
                continue
            hit = self.bad & set(s) and (len(s) > 1 or not self.fine_alone)
            linked = any(a in s and b in s for a, b in self.links)
            big = self.fails_at is not None and len(s) >= self.fails_at
            out[s] = not (hit or linked or big)
        return out


def test_round_budget() -> None:
    assert [iso.round_budget(n) for n in (1, 2, 3, 4, 5, 8, 16, 17, 64)] == [1, 2, 3, 3, 4, 4, 5, 6, 7]


def test_a_node_that_fails_alone_is_named_in_the_first_round() -> None:
    r = iso.isolate(NODES16, Cluster(["gpu-15"]))
    assert r.suspects == ("gpu-15",) and len(r.rounds) == 1 and r.reruns == 16
    assert r.message == (
        "suspect node gpu-15: fails alone against the intra-node floor (isolation: 1 round, 16 reruns)"
    )


@pytest.mark.parametrize("bad", NODES16)
def test_one_slow_node_of_16_is_named_within_5_rounds(bad: str) -> None:
    cluster = Cluster([bad], fine_alone=True)
    r = iso.isolate(NODES16, cluster)
    assert r.suspects == (bad,)
    assert len(r.rounds) <= 5 == r.budget
    assert r.message.startswith(f"suspect node {bad}: the subsets with it fail, the others pass (isolation: ")
    assert all(len(s) >= 2 for call in cluster.calls[1:] for s in call)  # reruns after round 1 are multi-node
    assert len(cluster.calls) == len(r.rounds)  # one parallel call per round


@pytest.mark.parametrize(("a", "b"), [("gpu-00", "gpu-01"), ("gpu-02", "gpu-13"), ("gpu-04", "gpu-07")])
def test_two_bad_nodes_are_both_named(a: str, b: str) -> None:
    r = iso.isolate(NODES16, Cluster([a, b], fine_alone=True))
    assert r.suspects == (a, b) and len(r.rounds) <= 5
    assert r.message.startswith(f"suspect nodes {a}, {b}: the subsets with them fail, the others pass")


def test_two_nodes_that_fail_alone_are_both_named() -> None:
    r = iso.isolate(NODES16, Cluster(["gpu-03", "gpu-09"]))
    assert r.suspects == ("gpu-03", "gpu-09")
    assert r.message.startswith("suspect nodes gpu-03, gpu-09: fail alone against the intra-node floor")


def test_a_slow_link_is_reported_as_fabric_not_a_node() -> None:
    r = iso.isolate(NODES16, Cluster(links=[("gpu-00", "gpu-08")]))
    assert r.suspects == () and r.fabric_suspected and len(r.rounds) <= 5
    assert r.message == (
        "no single node at fault among "
        + ", ".join(NODES16)
        + ": every subset passes alone, so the fault is in "
        "the links or the fabric between them (isolation: 2 rounds, 18 reruns)"
    )


def test_a_link_inside_one_half_is_narrowed_to_that_half() -> None:
    r = iso.isolate(NODES16, Cluster(links=[("gpu-00", "gpu-01")]))
    assert r.suspects == () and r.fabric_suspected
    (finding,) = r.findings
    assert finding.kind == "link" and finding.nodes == ("gpu-00", "gpu-01")


def test_a_fabric_that_fails_at_scale_names_no_node() -> None:
    r = iso.isolate(NODES16, Cluster(fails_at=8))
    assert r.suspects == () and {f.kind for f in r.findings} == {"link"}


def test_two_nodes_passing_alone_is_the_link_between_them() -> None:
    r = iso.isolate(["b", "a"], Cluster(links=[("a", "b")]))
    assert r.message == (
        "no single node at fault among a, b: every subset passes alone, so the fault is in the links or the "
        "fabric between them (isolation: 1 round, 2 reruns)"
    )


@pytest.mark.parametrize("bad", ["a", "b", "c"])
def test_three_nodes_one_bad_within_budget(bad: str) -> None:
    r = iso.isolate(["a", "b", "c"], Cluster([bad], fine_alone=True))
    assert r.suspects == (bad,) and len(r.rounds) <= 3


def test_every_pair_of_bad_nodes_in_8_is_found_within_budget() -> None:
    nodes = [f"n{i}" for i in range(8)]
    for a, b in itertools.combinations(nodes, 2):
        r = iso.isolate(nodes, Cluster([a, b], fine_alone=True))
        assert r.suspects == (a, b), (a, b, r.message)
        assert len(r.rounds) <= iso.round_budget(8)


def test_a_rerun_that_could_not_run_is_reported_not_guessed() -> None:
    r = iso.isolate(NODES16, Cluster(dead=["gpu-05"], bad=["gpu-05"], fine_alone=True))
    assert "gpu-05" not in r.suspects
    assert any(f.kind == "untested" and "gpu-05" in f.nodes for f in r.findings)


def test_a_tight_budget_reports_narrowed_suspects() -> None:
    r = iso.isolate(NODES16, Cluster(["gpu-06"], fine_alone=True), budget=3)
    assert r.suspects == () and len(r.rounds) == 3
    (finding,) = r.findings
    assert finding.kind == "unresolved" and "gpu-06" in finding.nodes and len(finding.nodes) == 4
    assert r.message.startswith(
        "suspects narrowed to gpu-04, gpu-05, gpu-06, gpu-07 (round budget of 3 spent)"
    )


def test_single_node_that_passes_did_not_reproduce() -> None:
    r = iso.isolate(["only"], Cluster())
    assert r.message == "the failure did not reproduce: only passes alone (isolation: 1 round, 1 rerun)"


def test_extra_is_json_shaped() -> None:
    r = iso.isolate(["a", "b", "c", "d"], Cluster(["c"], fine_alone=True))
    extra = r.as_extra()
    assert extra["suspects"] == ["c"] and extra["reruns"] == r.reruns and extra["budget"] == 3
    assert extra["rounds"][0][0] == {"nodes": ["a"], "passed": True}


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ([], "bad-node isolation needs at least one node"),
        (["a", "a"], "bad-node isolation: node a is listed twice"),
    ],
)
def test_bad_input_is_a_usage_error(nodes: list[str], message: str) -> None:
    with pytest.raises(UsageError) as err:
        iso.isolate(nodes, Cluster())
    assert str(err.value) == message
