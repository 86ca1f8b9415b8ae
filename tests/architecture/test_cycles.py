"""No import cycles: neither between packages (the composition root counted as a package of its own) nor
between modules (docs/decisions.md, "No import cycles").

The graph is the one tests/architecture/test_layers.py reads from the source: every import statement, at
module level or inside a function, so that an import moved into a function to dodge a cycle still counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tests.architecture.test_layers import SERVER_LAYER, imports_of, modules

#: The packages of the graph: the top-level ones, with the composition root (the app factory and CLI, which
#: may import every package and which nothing imports) apart from the catalog domain it lives in.
COMPOSITION_ROOT = SERVER_LAYER


def _project_targets(module: str) -> set[str]:
    """The project modules ``module`` imports (``a.b.name`` counted as ``a.b`` when name is not a module)."""
    known = modules()
    found = set()
    for target in imports_of(module):
        parts = target.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in known:
                found.add(candidate)
                break
    found.discard(module)
    return found


def module_graph() -> dict[str, set[str]]:
    return {module: _project_targets(module) for module in modules()}


def package_of(module: str) -> str:
    if module == COMPOSITION_ROOT or module.startswith(COMPOSITION_ROOT + "."):
        return COMPOSITION_ROOT
    return module.split(".")[0]


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, targets in module_graph().items():
        edges = graph.setdefault(package_of(module), set())
        edges.update(package_of(t) for t in targets if package_of(t) != package_of(module))
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for target in edges:
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
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
    return found


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_package_imports_another_that_imports_it_back() -> None:
    assert cycles(package_graph()) == []


def test_nothing_imports_the_composition_root() -> None:
    graph = package_graph()
    assert sorted(p for p, targets in graph.items() if COMPOSITION_ROOT in targets) == []
    # the root itself composes the domains, the migrations and the Spark plugin
    assert {"registry", "catalog_api", "migrations", "spark_plugin"} <= graph[COMPOSITION_ROOT]


def test_no_modules_import_each_other() -> None:
    assert cycles(module_graph()) == []
