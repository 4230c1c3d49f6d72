"""The module graph (issue 13.4): no import cycles, and nothing imports upward.

Every import is read from the source with ``ast``, function-local and TYPE_CHECKING ones included,
so a cycle hidden inside a function still counts. A module importing its own package (to reach a
sibling through ``__init__``) is not an edge back.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("otel_eval", "collector")


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                wanted = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules else prefix
                          for alias in node.names]
            else:
                continue
            for target in wanted:
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name and not name.startswith(target + "."):
                    targets.add(target)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
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
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_module_imports_itself_back_through_others():
    assert _cycles(_graph()) == []


def test_the_cycle_check_sees_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_nothing_imports_upward():
    """Scores do not know about exporters, the models not about metrics, the dashboard not about
    the collector that may mount it, and otel_eval not about the collector, but for its command
    line (``otel-eval collect`` starts one)."""
    graph = _graph()
    graph.pop("otel_eval.cli")
    rules = [("otel_eval.metrics", "otel_eval.export"), ("otel_eval.models", "otel_eval.metrics"),
             ("otel_eval.ui", "collector"), ("otel_eval", "collector")]
    upward = sorted((module, target) for low, high in rules for module, targets in graph.items()
                    if module == low or module.startswith(low + ".")
                    for target in targets if target == high or target.startswith(high + "."))
    assert upward == []
