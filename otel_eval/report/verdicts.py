"""How a session's verdict and a score read in a terminal: the words and colours every view of the
report shares."""

from __future__ import annotations

from ..models.results import FAILED, NOT_EVALUATED, PASSED
from ..read.evaluations import StoredEvaluation, judge_state


def verdict_markup(row: StoredEvaluation) -> str:
    """PASS, FAIL or NOT EVALUATED for a matched session; unmatched ones say so."""
    word, style = verdict_word(row)
    return f"[{style}]{word}[/]"


VERDICT_STYLES = {PASSED: ("PASS", "green"), FAILED: ("FAIL", "red"), NOT_EVALUATED: ("NOT EVALUATED", "yellow")}


def verdict_word(row: StoredEvaluation) -> tuple[str, str]:
    """The verdict as a word and its colour: PASS, FAIL, NOT EVALUATED or unmatched; "· judge
    pending" while the judge's answer is awaited (the verdict is the deterministic criteria's so
    far), "· not sampled" when the judge sampled the session out."""
    if not row.case_id:
        return "unmatched", "yellow"
    word, style = VERDICT_STYLES[row.verdict]
    state = judge_state(row.criteria)
    return (f"{word} · {state}", style) if state else (word, style)


def shows_score(row: StoredEvaluation) -> bool:
    """A session's score means something only when it matched a case and something was checked."""
    return bool(row.case_id) and row.verdict != NOT_EVALUATED


def terminal_score(value: float | None) -> str:
    """A score, or ``-`` where there is none (a skipped criterion, a session not evaluated)."""
    return "-" if value is None else f"{value:.2f}"
