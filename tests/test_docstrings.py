"""Public classes, functions and methods are documented (issue 32.7).

Read at run time, as ``help()`` and an editor's hover read them: a method that overrides a
documented one (``SpanProcessor.on_end``, a criterion's ``evaluate``) inherits its docstring through
``inspect.getdoc``, so it need not repeat it. Private names (a leading underscore) are exempt.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator

PACKAGES = ("otel_eval", "collector")


def _modules() -> Iterator[object]:
    for package in PACKAGES:
        root = importlib.import_module(package)
        yield root
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            yield importlib.import_module(info.name)


def _own_doc(obj: object) -> bool:
    doc = obj.__doc__
    # a class without a docstring of its own shows its metaclass's or a generated one
    if inspect.isclass(obj):
        doc = vars(obj).get("__doc__")
        if doc and (doc.startswith(f"{obj.__name__}(") or doc == "An enumeration."):
            return False  # dataclasses' and NamedTuple's generated signature, Enum's default
    return bool((doc or "").strip())


def undocumented() -> list[str]:
    """Every public name of ``otel_eval`` and ``collector`` without a docstring, by dotted path."""
    missing = []
    for module in _modules():
        name = module.__name__
        for attr, obj in vars(module).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not _own_doc(obj):
                missing.append(f"{name}.{attr}")
            if not inspect.isclass(obj):
                continue
            for member_name, member in vars(obj).items():
                if member_name.startswith("_"):
                    continue
                if isinstance(member, property):
                    documented = bool((member.__doc__ or "").strip())
                else:
                    function = getattr(member, "__func__", member)
                    if not inspect.isfunction(function):
                        continue
                    documented = bool(inspect.getdoc(getattr(obj, member_name)))
                if not documented:
                    missing.append(f"{name}.{attr}.{member_name}")
    return sorted(missing)


def test_every_public_class_function_and_method_says_what_it_is_for():
    missing = undocumented()
    assert missing == [], f"{len(missing)} public names without a docstring:\n" + "\n".join(missing)


def test_the_check_sees_a_missing_docstring(tmp_path, monkeypatch):
    package = tmp_path / "otel_eval_docprobe"
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""A probe."""\n'
        "class Documented:\n"
        '    """Says why."""\n'
        "    def run(self):\n"
        '        """Runs."""\n'
        "class Bare:\n"
        "    def run(self):\n"
        "        pass\n"
        "class Inherits(Documented):\n"
        "    def run(self):\n"
        "        pass\n"
        "def helper():\n"
        "    pass\n"
        "def _private():\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(globals(), "PACKAGES", ("otel_eval_docprobe",))
    missing = undocumented()
    # Inherits.run is documented by Documented.run, and Inherits by nothing of its own
    assert missing == [
        "otel_eval_docprobe.Bare",
        "otel_eval_docprobe.Bare.run",
        "otel_eval_docprobe.Inherits",
        "otel_eval_docprobe.helper",
    ]
