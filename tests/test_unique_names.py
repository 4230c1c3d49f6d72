"""One vocabulary: no public class, function or type alias of otel_eval/ and collector/ is
defined in two modules, so a name found in a traceback, a docstring or an import means one thing.

A module's top level counts (methods and ``_private`` names do not). Two kinds of name may repeat:
the members of a module protocol, which every module of its package defines because that is the
protocol (the conventions: :class:`otel_eval.conventions.base.Convention`), and ``main``, a
program's entry point by convention. :data:`WAITING` lists the repeats whose renaming reaches
into files other work holds now; each entry must still be a repeat, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from otel_eval.conventions.base import Convention

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("otel_eval", "collector")
#: A type alias is named like a class (``SpanRow = tuple[...]``); constants are UPPER_CASE.
TYPE_ALIAS = re.compile(r"[A-Z][a-z0-9]\w*")

#: Module protocols: the package whose modules implement it, and its members.
PROTOCOLS = {
    "otel_eval/conventions/": {name for name in vars(Convention) if not name.startswith("_")}
    | set(Convention.__annotations__),
    # each ADK judge metric's module builds its judge prompt as ADK's format_auto_rater_prompt does;
    # judging/adk/protocol.py calls the metric's own (frm.prompt, rfrq.prompt, ...)
    "otel_eval/judging/adk/": {"prompt"},
}
ENTRY_POINT = "main"

#: Repeats left for now, with why: {name: (its modules, why it waits)}.
WAITING: dict[str, tuple[set[str], str]] = {}


def public_names(path: Path) -> set[str]:
    """The public classes, functions and type aliases ``path`` defines at its top level."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name) and TYPE_ALIAS.fullmatch(t.id))
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and TYPE_ALIAS.fullmatch(node.target.id)
        ):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


def definitions() -> dict[str, set[str]]:
    """Name → the modules (paths relative to the repository) that define it."""
    where: dict[str, set[str]] = defaultdict(set)
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name in public_names(path):
                where[name].add(path.relative_to(ROOT).as_posix())
    return where


def allowed(name: str, modules: set[str]) -> bool:
    if name == ENTRY_POINT:
        return True
    return any(
        name in members and all(m.startswith(package) for m in modules) for package, members in PROTOCOLS.items()
    )


def test_no_public_name_is_defined_twice():
    repeated = {
        name: sorted(modules)
        for name, modules in definitions().items()
        if len(modules) > 1 and not allowed(name, modules) and name not in WAITING
    }
    assert repeated == {}, "defined in more than one module (rename one by its role): " + "; ".join(
        f"{name} in {', '.join(modules)}" for name, modules in sorted(repeated.items())
    )


def test_the_names_left_waiting_are_still_the_ones_listed():
    where = definitions()
    stale = {
        name: sorted(where.get(name, set())) for name, (modules, _) in WAITING.items() if where.get(name) != modules
    }
    assert stale == {}, f"WAITING is out of date (renamed? take the entry out): {stale}"


def test_the_check_sees_a_repeat_and_the_protocol_it_allows(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "class Health:\n    def ok(self): ...\n\ndef _private(): ...\n\nSpanRow = tuple[str, int]\nLIMIT = 3\n"
    )
    assert public_names(module) == {"Health", "SpanRow"}
    assert {"detect", "read", "quick_span_type"} <= PROTOCOLS["otel_eval/conventions/"]
    assert allowed("detect", {"otel_eval/conventions/genai.py", "otel_eval/conventions/noveum.py"})
    assert not allowed("detect", {"otel_eval/conventions/genai.py", "otel_eval/golden/load.py"})
    assert not allowed("SpanRow", {"otel_eval/span_rows.py", "otel_eval/read/spans.py"})
