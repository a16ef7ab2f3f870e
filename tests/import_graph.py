"""The static import graph of a package tree, and the import cycles in it.

Every ``import`` and ``from ... import`` counts, wherever it stands (module level, inside a
function, under ``if TYPE_CHECKING:``): a circle that only type checking or a late import
hides is still a circle between layers. ``from package import name`` is an edge to
``package.name`` when that is a module, else to ``package`` (the same rule grimp uses).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


def discover(roots: Mapping[str, Path]) -> dict[str, Module]:
    """Modules by dotted name; ``roots`` maps a package name to the folder it installs from."""
    modules: dict[str, Module] = {}
    for prefix, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            name = ".".join([prefix, *parts])
            modules[name] = Module(name, path, is_package)
    return modules


def _imported(module: Module, node: ast.Import | ast.ImportFrom, known: Mapping[str, Module]) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        package = module.name if module.is_package else module.name.rpartition(".")[0]
        parts = package.split(".")
        if node.level > 1:
            parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}


def import_graph(modules: Mapping[str, Module]) -> dict[str, set[str]]:
    """``module -> modules of the tree it imports`` (imports from outside the tree are dropped)."""
    graph: dict[str, set[str]] = {}
    for name, module in modules.items():
        tree = ast.parse(module.path.read_text(), filename=str(module.path))
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                targets |= _imported(module, node, modules)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def package_graph(graph: Mapping[str, set[str]], package: str) -> dict[str, set[str]]:
    """Imports between the direct children of ``package`` (its modules and sub-packages), each child
    standing for everything below it; the package's own ``__init__`` is no child."""

    def child(name: str) -> str | None:
        if not name.startswith(package + "."):
            return None
        return f"{package}.{name[len(package) + 1 :].split('.', 1)[0]}"

    children: dict[str, set[str]] = {}
    for source, targets in graph.items():
        mine = child(source)
        if mine is None:
            continue
        edges = children.setdefault(mine, set())
        for target in targets:
            theirs = child(target)
            if theirs is not None and theirs != mine:
                edges.add(theirs)
                children.setdefault(theirs, set())
    return children


def _strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (a deep package must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _cycle_through(start: str, members: set[str], graph: Mapping[str, set[str]]) -> list[str]:
    """A shortest path ``start -> ... -> start`` inside one strongly connected component."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node] & members):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [start, *reversed(path[:-1]), start] if node != start else [start, start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    raise AssertionError(f"{start} is in a component without a cycle through it")


def import_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle per group of modules that import each other, e.g. ``[a, b, a]``."""
    return [
        _cycle_through(component[0], set(component), graph)
        for component in _strongly_connected(graph)
        if len(component) > 1
    ]
