"""``otel-eval report --session``: one session's match, criteria with their explanations, and per
turn the user message and aligned trajectory; then what its spans carried that no rule read."""

from __future__ import annotations

from typing import Any

from ..read.sessions import SessionDetail
from .details import (
    RESPONSE_CHARS,
    call_text,
    is_response_criterion,
    is_trajectory_criterion,
    measure_label,
    response_lines,
    shorten_text,
    trajectory_rows,
)
from .verdicts import terminal_score, verdict_markup


def render_session(row: SessionDetail, console: Any = None) -> None:
    """One session: its match, every criterion with its explanation (a failed response criterion
    with the expected and actual text), and per turn the user message and aligned trajectory."""
    from rich.console import Console
    from rich.markup import escape

    from ..tablefit import Column, fit_table

    console = console or Console()
    console.print(f"[bold]session {escape(row.session_id)}[/] (revision {row.revision}): {verdict_markup(row)}")
    console.print(f"query: {row.query!r}", markup=False, highlight=False)
    console.print(
        f"case: {row.case_id or '-'} ({row.matched_by}, score {row.match_score:.1f})",
        markup=False,
        highlight=False,
    )
    why = row.match.reason if row.match is not None else None
    if not row.case_id and why:  # unmatched or ambiguous: say why
        console.print(f"  why: {why}", markup=False, highlight=False)
    note = row.match.note if row.match is not None else None
    if note:
        console.print(f"note: {note}", markup=False, highlight=False)
    inputs = {t.turn: t.user_input for t in row.turns}
    shown: list[Any] = []
    said: set[int] = set()

    def user_says(turn: int) -> None:
        if turn in said or turn not in inputs:
            return
        said.add(turn)
        console.print(
            f"turn {turn + 1} · user: {shorten_text(inputs[turn] or '(no user message)', RESPONSE_CHARS)}",
            markup=False,
            highlight=False,
            style="bold",
        )

    for c in row.criteria:
        state = (
            "skipped"
            if c.skipped
            else ("info" if c.informational else "[green]pass[/]" if c.passed else "[red]fail[/]")
        )
        reason = c.details.get("reason") or c.error or ""
        measure = measure_label(c.details)
        score = terminal_score(None if c.skipped else c.score)
        console.print(
            f"  {escape(c.criterion)}: {state} score={score} threshold={c.threshold}"
            + (f" measure={escape(measure)}" if measure else "")
            + (f" {escape(reason)}" if reason else "")
        )
        if is_response_criterion(c) and not c.skipped and not c.passed:
            for line in response_lines(c):
                console.print("    " + line, markup=False, highlight=False)
    for c in row.criteria:
        if not is_trajectory_criterion(c):
            continue
        for turn in c.details.get("per_turn") or []:
            rows = trajectory_rows(turn)
            if (turn.get("turn"), rows) in shown:  # another criterion over the same alignment: shown already
                continue
            shown.append((turn.get("turn"), rows))
            user_says(int(turn.get("turn", 0)))
            # Calls keep their arguments whole, over several lines, broken between words.
            columns = [
                Column(""),
                Column("expected", min_width=16, wrap=True),
                Column("actual", min_width=16, wrap=True),
                Column("note", min_width=10, max_width=24, wrap=True),
            ]
            cells = [[r["mark"], call_text(r["expected"]), call_text(r["actual"]), r["note"]] for r in rows]
            console.print(
                fit_table(
                    f"{c.criterion} · turn {turn.get('turn', 0) + 1}: expected vs actual",
                    columns,
                    cells,
                    console.width,
                    priority=[0, 1, 2, 3],
                )
            )
    for turn in sorted(inputs):  # turns no trajectory was compared for still say what the user asked
        user_says(turn)
    for t in row.turns:
        if t.answer_source:
            console.print(
                f"turn {t.turn + 1} · answer read from: {t.answer_source}",
                markup=False,
                highlight=False,
                style="dim",
            )
    render_unread([item.to_dict() for item in row.unread], console)


def render_unread(unread: list[dict[str, Any]], console: Any) -> None:
    """What the session's spans carried that no rule read (:mod:`otel_eval.unread`): for a
    framework otel-eval does not know, where the missing data is."""
    if not unread:
        return
    console.print(
        "not read (content on the spans that no rule read; --session-attribute / docs/conventions-table.md):",
        markup=False,
        highlight=False,
        style="yellow",
    )
    for item in unread:
        what = {"attribute": "attribute", "event": "span event", "problem": "could not read"}[item["kind"]]
        console.print(
            f"  {what} {item['name']} on {item['spans']} span(s), e.g. {item['example_span']!r}",
            markup=False,
            highlight=False,
        )
