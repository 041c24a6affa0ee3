"""Bad-node isolation for the NCCL checks: which of the selected nodes makes the run fail?

Called after a multi-node NCCL run missed its floor (or a worker failed) on the nodes the run
selected.  :func:`isolate` plans rounds of reruns on node subsets; the caller's ``run_round`` runs
every subset of one round in parallel and returns, per subset, ``True`` (met its floor), ``False``
(missed it or failed) or ``None`` (could not run: inconclusive).  A one-node subset is measured
against the intra-node floor, a larger one against the inter-node floor; that is the runner's
business, as are run-scoped objects and cleanup.

The plan, at most ``⌈log2 n⌉ + 1`` rounds (:func:`round_budget`):

1. every node alone, in one round: a node that fails alone is the suspect and isolation ends;
2. then bisection: every *group* (a set of nodes known to hold a fault; at first all nodes) is
   split in two halves, each half is run as a subset (a one-node half is padded with a node that
   already passed in a multi-node subset, else with a node outside the group, else with one of the
   other half).  A passing subset clears its nodes.  A failing subset becomes a new group of its
   uncleared nodes; one uncleared node left is a named suspect.  When both halves of a group pass,
   no single node is at fault: the fault is in the links or the fabric between them, and the result
   says so honestly.  Subsets already run are not rerun.

The model behind it: a bad node makes every subset it joins fail.  Two bad nodes are both found
(each ends in its own group); a bad link shows as a group whose halves pass alone.  Groups left when
the round budget is spent are reported as narrowed-down suspects, not as named ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from aicr_pytest.core.errors import UsageError

Subset = tuple[str, ...]
Outcome = bool | None
RunRound = Callable[[Sequence[Subset]], Mapping[Subset, Outcome]]
FindingKind = Literal["alone", "node", "link", "unresolved", "untested", "not-reproduced"]

MSG_NO_NODES: Final = "bad-node isolation needs at least one node"
MSG_DUPLICATE: Final = "bad-node isolation: node {node} is listed twice"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def round_budget(n: int) -> int:
    """``⌈log2 n⌉ + 1`` rounds for ``n`` nodes (1 for a single node)."""
    return 1 if n <= 1 else math.ceil(math.log2(n)) + 1


@dataclass(frozen=True)
class Round:
    number: int
    results: tuple[tuple[Subset, Outcome], ...]


def _names(nodes: Sequence[str]) -> str:
    return ", ".join(nodes)


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    nodes: tuple[str, ...]

    def describe(self, budget: int) -> str:
        names = _names(self.nodes)
        s = "" if len(self.nodes) == 1 else "s"
        if self.kind == "alone":
            verb = "fails" if len(self.nodes) == 1 else "fail"
            return f"suspect node{s} {names}: {verb} alone against the intra-node floor"
        if self.kind == "node":
            pronoun = "them" if s else "it"
            return f"suspect node{s} {names}: the subsets with {pronoun} fail, the others pass"
        if self.kind == "link":
            return (
                f"no single node at fault among {names}: every subset passes alone, so the fault is in "
                "the links or the fabric between them"
            )
        if self.kind == "unresolved":
            return f"suspects narrowed to {names} (round budget of {budget} spent)"
        if self.kind == "untested":
            return f"not isolated: {names} (their reruns did not run)"
        return f"the failure did not reproduce: {names} passes alone"


@dataclass(frozen=True)
class IsolationResult:
    findings: tuple[Finding, ...]
    rounds: tuple[Round, ...]
    budget: int

    @property
    def suspects(self) -> tuple[str, ...]:
        """The named bad nodes (a node that fails alone, or the last uncleared node of a group)."""
        return tuple(sorted({n for f in self.findings if f.kind in ("alone", "node") for n in f.nodes}))

    @property
    def fabric_suspected(self) -> bool:
        return any(f.kind == "link" for f in self.findings)

    @property
    def reruns(self) -> int:
        return sum(len(r.results) for r in self.rounds)

    @property
    def message(self) -> str:
        body = "; ".join(f.describe(self.budget) for f in self.findings)
        return f"{body} (isolation: {_plural(len(self.rounds), 'round')}, {_plural(self.reruns, 'rerun')})"

    def as_extra(self) -> dict[str, Any]:
        """For CTRF ``extra``."""
        return {
            "suspects": list(self.suspects),
            "fabric_suspected": self.fabric_suspected,
            "findings": [{"kind": f.kind, "nodes": list(f.nodes)} for f in self.findings],
            "rounds": [[{"nodes": list(s), "passed": o} for s, o in r.results] for r in self.rounds],
            "reruns": self.reruns,
            "budget": self.budget,
        }


class _Planner:
    def __init__(self, names: list[str], run_round: RunRound, budget: int) -> None:
        self.names = names
        self.run_round = run_round
        self.budget = budget
        self.rounds: list[Round] = []
        self.memo: dict[Subset, Outcome] = {}
        self.cleared: set[str] = set()

    def run(self, subsets: Sequence[Subset]) -> None:
        fresh = list(dict.fromkeys(s for s in subsets if s not in self.memo))
        if not fresh:
            return
        answer = self.run_round(fresh)
        results = tuple((s, _outcome(answer.get(s))) for s in fresh)
        self.memo.update(results)
        self.rounds.append(Round(len(self.rounds) + 1, results))

    def pad(self, half: list[str], group: list[str], other: list[str]) -> Subset:
        if len(half) >= 2:
            return tuple(half)
        outside = [n for n in self.names if n not in group]
        for candidate in (*sorted(self.cleared), *outside, *other):
            if candidate not in half:
                return tuple(sorted([*half, candidate]))
        return tuple(half)  # pragma: no cover - a group always has two halves


def _outcome(value: object) -> Outcome:
    return value if isinstance(value, bool) else None


def isolate(nodes: Sequence[str], run_round: RunRound, *, budget: int | None = None) -> IsolationResult:
    """Plan and run the isolation rounds (see the module docstring); pure but for ``run_round``."""
    if not nodes:
        raise UsageError(MSG_NO_NODES)
    seen: set[str] = set()
    for n in nodes:
        if n in seen:
            raise UsageError(MSG_DUPLICATE.format(node=n))
        seen.add(n)
    names = sorted(nodes)
    limit = round_budget(len(names)) if budget is None else budget
    p = _Planner(names, run_round, limit)

    p.run([(n,) for n in names])
    alone_bad = [n for n in names if p.memo[(n,)] is False]
    untested = [n for n in names if p.memo[(n,)] is None]
    findings: list[Finding] = []
    if alone_bad:
        findings.append(Finding("alone", tuple(alone_bad)))
        if untested:
            findings.append(Finding("untested", tuple(untested)))
        return IsolationResult(tuple(findings), tuple(p.rounds), limit)
    candidates = [n for n in names if n not in untested]
    if len(candidates) == 1 and len(names) == 1:
        return IsolationResult((Finding("not-reproduced", tuple(candidates)),), tuple(p.rounds), limit)

    groups: list[list[str]] = [candidates] if len(candidates) >= 2 else []
    named: set[str] = set()
    links: list[tuple[str, ...]] = []
    lost: set[str] = set(untested)
    while groups and len(p.rounds) < limit:
        plan: list[tuple[list[str], Subset, Subset]] = []
        for g in groups:
            mid = (len(g) + 1) // 2
            h1, h2 = g[:mid], g[mid:]
            s1, s2 = p.pad(h1, g, h2), p.pad(h2, g, h1)
            if set(s1) == set(g) or set(s2) == set(g):
                links.append(tuple(g))  # no smaller subset exists: the nodes pass alone, fail together
            else:
                plan.append((g, s1, s2))
        before = len(p.rounds)
        p.run([s for _, s1, s2 in plan for s in (s1, s2)])
        for _, s1, s2 in plan:
            for sub in (s1, s2):
                if p.memo[sub] is True:
                    p.cleared.update(sub)
        next_groups: list[list[str]] = []
        for g, s1, s2 in plan:
            o1, o2 = p.memo[s1], p.memo[s2]
            if o1 is True and o2 is True:
                links.append(tuple(g))
                continue
            for sub, o in ((s1, o1), (s2, o2)):
                members = [n for n in sub if n not in p.cleared]
                if o is None:
                    lost.update(members)
                elif o is False:
                    if len(members) == 1:
                        named.add(members[0])
                    elif not members:
                        links.append(sub)
                    elif members not in next_groups:
                        next_groups.append(members)
        next_groups = [g for g in next_groups if not set(g) <= named]
        if len(p.rounds) == before and next_groups == groups:
            break  # nothing new to learn within this model
        groups = next_groups

    if named:
        findings.append(Finding("node", tuple(sorted(named))))
    findings += [Finding("link", link) for link in dict.fromkeys(links)]
    left = sorted({n for g in groups for n in g} - named - p.cleared)
    if left:
        findings.append(Finding("unresolved", tuple(left)))
    lost -= p.cleared | named | set(left)
    if lost:
        findings.append(Finding("untested", tuple(sorted(lost))))
    if not findings:
        findings.append(Finding("link", tuple(names)))
    return IsolationResult(tuple(findings), tuple(p.rounds), limit)


__all__ = [
    "Finding",
    "IsolationResult",
    "Outcome",
    "Round",
    "RunRound",
    "Subset",
    "isolate",
    "round_budget",
]
