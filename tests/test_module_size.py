"""No module of otel_eval/ or collector/ is over 600 lines (issue 32's "done when").

A module that long holds more than one job, and a reader cannot keep it in mind: split it by job
(as ui/pages.py became a module per page family). The test names every module over the limit at
once, with its length, so one run says all that is left to split.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("otel_eval", "collector")
LIMIT = 600

#: Modules over the limit that other work is splitting now: {path: why}. Each must still be over
#: the limit, so the list only shrinks.
BEING_SPLIT: dict[str, str] = {}


def oversized(root: Path, packages: Iterable[str] = PACKAGES, limit: int = LIMIT) -> dict[str, int]:
    """Every module under ``root``'s ``packages`` longer than ``limit`` lines: {path relative to
    ``root``: its lines}."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > limit:
                found[path.relative_to(root).as_posix()] = lines
    return found


def too_long(found: dict[str, int], allowed: Iterable[str] = ()) -> list[str]:
    """One line per module over the limit that is not ``allowed``, longest first."""
    allowed = set(allowed)
    return [
        f"{path}: {lines} lines (over {LIMIT}): split it by job"
        for path, lines in sorted(found.items(), key=lambda item: (-item[1], item[0]))
        if path not in allowed
    ]


def test_no_module_is_over_600_lines():
    problems = too_long(oversized(ROOT), BEING_SPLIT)
    assert not problems, "\n".join(problems)


def test_the_modules_being_split_are_still_over_the_limit():
    found = oversized(ROOT)
    done = [
        f"{path} is no longer over {LIMIT} lines: remove it from BEING_SPLIT in tests/test_module_size.py"
        for path in BEING_SPLIT
        if path not in found
    ]
    assert not done, "\n".join(done)


def test_the_size_check_names_every_module_over_the_limit(tmp_path: Path):
    package = tmp_path / "otel_eval"
    (package / "ui").mkdir(parents=True)
    (package / "short.py").write_text("x = 1\n" * LIMIT)
    (package / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    (package / "ui" / "pages.py").write_text("x = 1\n" * (LIMIT + 130))
    (tmp_path / "collector").mkdir()
    (tmp_path / "collector" / "app.py").write_text("x = 1\n" * (LIMIT + 5))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "long.py").write_text("x = 1\n" * (LIMIT + 5))  # not a package the check reads

    found = oversized(tmp_path)

    assert found == {
        "otel_eval/long.py": LIMIT + 1,
        "otel_eval/ui/pages.py": LIMIT + 130,
        "collector/app.py": LIMIT + 5,
    }
    assert too_long(found) == [
        f"otel_eval/ui/pages.py: {LIMIT + 130} lines (over {LIMIT}): split it by job",
        f"collector/app.py: {LIMIT + 5} lines (over {LIMIT}): split it by job",
        f"otel_eval/long.py: {LIMIT + 1} lines (over {LIMIT}): split it by job",
    ]
    assert too_long(found, ["collector/app.py", "otel_eval/long.py"]) == [
        f"otel_eval/ui/pages.py: {LIMIT + 130} lines (over {LIMIT}): split it by job"
    ]
