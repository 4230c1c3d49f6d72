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
                    base = base[: len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                wanted = [
                    f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules else prefix for alias in node.names
                ]
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
    rules = [
        ("otel_eval.metrics", "otel_eval.export"),
        ("otel_eval.models", "otel_eval.metrics"),
        ("otel_eval.ui", "collector"),
        ("otel_eval", "collector"),
    ]
    upward = sorted(
        (module, target)
        for low, high in rules
        for module, targets in graph.items()
        if module == low or module.startswith(low + ".")
        for target in targets
        if target == high or target.startswith(high + ".")
    )
    assert upward == []


LAYERS = (
    (
        "foundation",
        (
            "otel_eval.errors",
            "otel_eval.json_text",
            "otel_eval.listen_address",
            "otel_eval.tablefit",
            "otel_eval.models",
        ),
    ),
    ("spans", ("otel_eval.spans", "otel_eval.otlp_json", "otel_eval.readers", "otel_eval.user_feedback")),
    ("conventions", ("otel_eval.conventions",)),
    (
        "mapping",
        ("otel_eval.mapping", "otel_eval.truncation", "otel_eval.span_rows", "otel_eval.sdk_rows", "otel_eval.unread"),
    ),
    ("trajectory", ("otel_eval.sessions", "otel_eval.trajectory", "otel_eval.vertex_record")),
    (
        "golden/criteria",
        ("otel_eval.golden", "otel_eval.metrics", "otel_eval.criteria", "otel_eval.judging", "otel_eval.drift"),
    ),
    (
        "scoring",
        ("otel_eval.scoring", "otel_eval.session_evaluation", "otel_eval.adk_config", "otel_eval.criteria_file"),
    ),
    ("store", ("otel_eval.store",)),
    ("pipeline", ("otel_eval.pipeline",)),
    (
        "engine",
        (
            "otel_eval.engine",
            "otel_eval.processor",
            "otel_eval.offline",
            "otel_eval.convert_process",
            "otel_eval.convert_worker",
        ),
    ),
    ("read", ("otel_eval.read",)),
    (
        "views",
        (
            "otel_eval.report",
            "otel_eval.watch",
            "otel_eval.inspection",
            "otel_eval.compare",
            "otel_eval.gate",
            "otel_eval.rescore",
            "otel_eval.alerts",
            "otel_eval.ui",
            "otel_eval.export",
            "otel_eval.golden_suggest",
            "otel_eval.labels",
            "otel_eval.judge_backfill",
            "otel_eval.criteria_listing",
            "otel_eval.hosts",
            "otel_eval.datasette",
            "otel_eval.embedding_options",
        ),
    ),
    ("cli/collector", ("otel_eval.cli", "otel_eval", "collector")),
)
"""DESIGN.md §2's layer order, lowest first: a module imports only its own layer and those before
it. The pipeline sits above the store (it loads sessions from it and records into it) and below
the engine that drives it; the package root re-exports the public API, so it is at the top."""


def layer_of(module: str) -> int:
    """The layer of the longest prefix naming the module; a module no prefix names is an error."""
    best = None
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            # the package root names itself only, so a new module no layer names is an error, not "top"
            covers = module == prefix or (prefix != "otel_eval" and module.startswith(prefix + "."))
            if covers and (best is None or len(prefix) > best[1]):
                best = (number, len(prefix))
    if best is None:
        raise AssertionError(f"{module} is in no layer of LAYERS: add it where DESIGN.md §2 puts it")
    return best[0]


def test_every_import_follows_the_layer_order():
    upward = sorted(
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in _graph().items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )
    assert upward == []


def test_a_module_no_layer_names_is_an_error():
    import pytest

    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("otel_eval.some_new_module")


def test_the_layer_check_sees_an_upward_import():
    assert layer_of("otel_eval.models.results") < layer_of("otel_eval.store.schema") < layer_of("collector.app")
    assert layer_of("otel_eval.read.coverage") > layer_of("otel_eval.pipeline")
