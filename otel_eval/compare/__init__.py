"""Compare two agent versions: which golden cases and criteria got better or worse, and, with
``--gate``, whether to promote the candidate.

One module a job: :mod:`.comparison` (the comparison over current evaluations, pure; its rules
are in that module's docstring), :mod:`.render` (the terminal tables), :mod:`.command` (the
``compare`` subcommand). Every public name is importable from here."""

from .command import add_compare_arguments, compare_main, gate_main
from .comparison import (
    HEALTH,
    HEALTH_MEANS,
    IMPROVED,
    ONLY_BASELINE,
    ONLY_CANDIDATE,
    REGRESSED,
    STATUSES,
    UNCHANGED,
    UNKNOWN_VERSION,
    Comparison,
    Delta,
    Stat,
    VersionSummary,
    compare,
    compare_rows,
    status_of,
    verdict_of_row,
    version_of,
    versions,
)
from .render import render_comparison, render_drift, render_gate

__all__ = [
    "HEALTH",
    "HEALTH_MEANS",
    "IMPROVED",
    "ONLY_BASELINE",
    "ONLY_CANDIDATE",
    "REGRESSED",
    "STATUSES",
    "UNCHANGED",
    "UNKNOWN_VERSION",
    "Comparison",
    "Delta",
    "Stat",
    "VersionSummary",
    "add_compare_arguments",
    "compare",
    "compare_main",
    "compare_rows",
    "gate_main",
    "render_comparison",
    "render_drift",
    "render_gate",
    "status_of",
    "verdict_of_row",
    "version_of",
    "versions",
]
