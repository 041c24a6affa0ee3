"""No import cycles anywhere, module by module, lazy (function-level) imports included.

import-linter's ``acyclic_siblings`` contract (pyproject.toml) forbids cycles between sibling
packages; this test also forbids them between single modules, so a cycle hidden inside one
package (``a.x -> a.y -> a.x``) cannot creep in either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import grimp


def strongly_connected(nodes: Iterable[str], edges: Callable[[str], Iterable[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the components with more than one node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges(nxt))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e2"], "e2": ["e"]}
    assert strongly_connected(graph, lambda n: graph[n]) == [["a", "b", "c"], ["e", "e2"]]
    assert strongly_connected({"x": []}, lambda n: []) == []


def test_no_module_level_import_cycles() -> None:
    graph = grimp.build_graph("aicr_pytest", exclude_type_checking_imports=False)
    cycles = strongly_connected(graph.modules, graph.find_modules_directly_imported_by)
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)
