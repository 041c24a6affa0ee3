"""The xdist scheduler of an active run: a phase's checks run together, the phases in order.

pytest-xdist's ``load`` scheduling (its ``scheduler/protocol.py``), with one rule about *when* an
item may start.  An xdist worker starts an item only once it holds the next one or was told to
shut down (``remote.py`` keeps one item back as ``nextitem``).  So the scheduler decides when each
item starts by when it sends the item's successor, and this one sends a worker's successor only
when the worker's last item is *allowed*: every item of the earlier phases has finished.  A later
phase's first item can wait on a worker (held, not started) while the earlier phase ends elsewhere;
no process polls anything.

The phase of each collected item comes from the worker's plan
(:class:`~aicr_pytest.plugin.ledger.PhaseLedger`); items that are not checks of the run (``None``)
may start whenever they are sent.  Without a plan every item waits for all items before it (safe).

Two endings loosen the rule, as they end the run anyway: xdist's own stop (``-x``,
``--maxfail``) tells every worker to shut down, which starts what it holds; and when a crashed
worker's items come back while every other worker holds a later item and none can run, the first
of them is sent on rather than waiting forever.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pytest

#: how many items a worker holds at most: one running, one held back
PER_NODE = 2


class Node(Protocol):
    """What the scheduler uses of xdist's ``WorkerController``."""

    @property
    def shutting_down(self) -> bool: ...

    def send_runtest_some(self, indices: Sequence[int]) -> None: ...

    def shutdown(self) -> None: ...


Plan = Callable[[Any], "list[str | None] | None"]


def phase_ranks(plan: Sequence[str | None] | None, phases: Sequence[str], size: int) -> list[int | None]:
    """Each item's rank: its phase's position in ``phases`` (``None``: not a check, no rule).
    Without a usable plan every item gets its own rank, so each waits for all before it."""
    if plan is None or len(plan) != size or any(p is not None and p not in phases for p in plan):
        return list(range(size))
    return [None if p is None else list(phases).index(p) for p in plan]


class PhaseScheduling:
    """``load`` scheduling that starts an item only when every item of an earlier phase finished
    (xdist's ``Scheduling`` protocol)."""

    def __init__(self, config: pytest.Config, *, numnodes: int, phases: Sequence[str], plan: Plan) -> None:
        self.config = config
        self.numnodes = numnodes
        self.phases = list(phases)
        self.plan = plan
        self.node2collection: dict[Any, list[str]] = {}
        self.node2pending: dict[Any, list[int]] = {}
        self.pending: list[int] = []
        self.collection: list[str] | None = None
        self.ranks: list[int | None] = []
        self.done: set[int] = set()

    # --- the rule -------------------------------------------------------------------------------

    def allowed(self, index: int) -> bool:
        """Whether item ``index`` may start: every item of an earlier phase has finished."""
        rank = self.ranks[index]
        if rank is None:
            return True
        return all(i in self.done for i, r in enumerate(self.ranks) if r is not None and r < rank)

    def _tail_allowed(self, node: Node) -> bool:
        held = self.node2pending[node]
        return not held or self.allowed(held[-1])

    # --- xdist's Scheduling protocol ------------------------------------------------------------

    @property
    def nodes(self) -> list[Any]:
        return list(self.node2pending)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.node2collection) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        """Finished once nothing is pending and every worker may start what it holds (xdist then
        tells every worker to shut down, which starts it)."""
        if not self.collection_is_completed or self.pending:
            return False
        return all(len(p) < PER_NODE and self._tail_allowed(n) for n, p in self.node2pending.items())

    @property
    def has_pending(self) -> bool:
        return bool(self.pending) or any(self.node2pending.values())

    def add_node(self, node: Node) -> None:
        assert node not in self.node2pending
        self.node2pending[node] = []

    def add_node_collection(self, node: Node, collection: Sequence[str]) -> None:
        assert node in self.node2pending
        if self.collection is not None and list(collection) != self.collection:
            self._collection_differs(node, collection)
            return
        self.node2collection[node] = list(collection)

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is None:
            first, collection = next(iter(self.node2collection.items()))
            for node, other in self.node2collection.items():
                if other != collection:
                    self._collection_differs(node, other)
                    return
            self.collection = collection
            self.ranks = phase_ranks(self.plan(first), self.phases, len(collection))
            self.pending[:] = range(len(collection))
        self._check_all()

    def mark_test_complete(self, node: Node, item_index: int, duration: float = 0) -> None:
        self.node2pending[node].remove(item_index)
        self.done.add(item_index)
        self._check_all()  # a finished phase lets other workers start what they hold

    def mark_test_pending(self, item: str) -> None:
        assert self.collection is not None
        index = self.collection.index(item)
        self.done.discard(index)
        self.pending = sorted({*self.pending, index})
        self._check_all()

    def remove_pending_tests_from_node(self, node: Node, indices: Sequence[int]) -> None:
        raise NotImplementedError  # only work stealing asks (xdist's LoadScheduling neither)

    def remove_node(self, node: Node) -> str | None:
        held = self.node2pending.pop(node)
        if not held:
            return None
        assert self.collection is not None
        crashed = held.pop(0)
        self.done.add(crashed)  # xdist reports it (the worker crashed)
        self.pending = sorted({*self.pending, *held})
        self._check_all()
        return self.collection[crashed]

    # --- sending --------------------------------------------------------------------------------

    def _send_one(self, node: Node) -> bool:
        """Send ``node`` the next pending item if it may have one: it holds fewer than
        :data:`PER_NODE`, and what it holds may start (the item sent lets it)."""
        held = self.node2pending[node]
        if node.shutting_down or not self.pending or len(held) >= PER_NODE:
            return False
        if held and not self.allowed(held[-1]):
            return False
        index = self.pending.pop(0)
        held.append(index)
        node.send_runtest_some([index])
        return True

    def _check_all(self) -> None:
        """Hand out pending items one per worker per round (as ``load`` does for a short
        collection); with nothing left, ``shutdown`` each worker once what it holds may start."""
        while any([self._send_one(node) for node in list(self.node2pending)]):
            pass
        live = [n for n in self.node2pending if not n.shutting_down]
        if not self.pending:
            for node in live:
                if self._tail_allowed(node):
                    node.shutdown()
        elif (
            live
            and all(len(self.node2pending[n]) == 1 for n in live)
            and not any(self.node2pending[n] for n in self.node2pending if n.shutting_down)
        ):
            # nothing runs and nothing may start: only after a crash handed an earlier item back
            # while every worker held a later one; run on rather than wait forever
            node, index = live[0], self.pending.pop(0)
            self.node2pending[node].append(index)
            node.send_runtest_some([index])

    def _collection_differs(self, node: Any, collection: Sequence[str]) -> None:
        """As xdist's own schedulers: a failed collect report names the difference."""
        from xdist.report import report_collection_diff  # type: ignore[import-untyped]

        first, expected = next(iter(self.node2collection.items()))
        msg = report_collection_diff(expected, list(collection), first.gateway.id, node.gateway.id)
        if msg:
            report = pytest.CollectReport(nodeid=node.gateway.id, outcome="failed", longrepr=msg, result=[])
            self.config.hook.pytest_collectreport(report=report)


__all__ = ["PER_NODE", "Node", "PhaseScheduling", "phase_ranks"]
