"""``otel-eval report``: summaries, per-case tables and one session's detail, drawn from the rows
of :mod:`otel_eval.read` (:func:`~otel_eval.read.evaluations.current_evaluations`,
:func:`~otel_eval.read.sessions.session_detail`). The ``--json`` shapes produced here are
documented in README and stable."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .models.results import FAILED, NOT_EVALUATED, PASSED
from .read.evaluations import failing_criteria, judge_state


def _rate(passed: int, evaluated: int) -> float | None:
    return round(passed / evaluated, 4) if evaluated else None


def _tally(into: dict[str, Any], row: dict[str, Any]) -> None:
    """Count one session by verdict; only evaluated (passed or failed) ones carry a score."""
    into["sessions"] += 1
    into["passed"] += int(row["verdict"] == PASSED)
    into["failed"] += int(row["verdict"] == FAILED)
    into["not_evaluated"] += int(row["verdict"] == NOT_EVALUATED)
    if row["verdict"] != NOT_EVALUATED:
        into["score_sum"] += row["score"] or 0.0


def _finish(tally: dict[str, Any]) -> dict[str, Any]:
    """pass_rate and avg_score over the evaluated sessions: not_evaluated ones are in neither."""
    total = tally.pop("score_sum")
    evaluated = tally["passed"] + tally["failed"]
    tally.update(
        pass_rate=_rate(tally["passed"], evaluated), avg_score=round(total / evaluated, 4) if evaluated else None
    )
    return tally


def summarize_sessions(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Totals, per-criterion and per-case aggregates over current evaluations.

    Sessions matched to a case are passed, failed or not_evaluated (nothing checked); the pass
    rate is passed / (passed + failed), so not_evaluated sessions are counted apart, not as
    failures and never as passes. Unmatched sessions are counted apart too."""
    rows = list(rows)
    matched = [r for r in rows if r["case_id"]]
    criteria: dict[str, dict[str, Any]] = {}
    for r in matched:
        for c in r["criteria"]:
            stat = criteria.setdefault(
                c["criterion"], {"evaluated": 0, "passed": 0, "skipped": 0, "errors": 0, "score_sum": 0.0}
            )
            if c["skipped"]:
                stat["skipped"] += 1
                continue
            if (c.get("details") or {}).get("informational") is True:  # ADK's efficiency metrics: a value only
                stat["informational"] = True
            stat["evaluated"] += 1
            stat["passed"] += int(c["passed"])
            stat["errors"] += int(bool(c["error"]))
            stat["score_sum"] += c["score"]
    for stat in criteria.values():
        n = stat.pop("evaluated")
        total = stat.pop("score_sum")
        stat.update(
            evaluated=n,
            pass_rate=round(stat["passed"] / n, 4) if n and not stat.get("informational") else None,
            avg_score=round(total / n, 4) if n else None,
        )

    def empty() -> dict[str, Any]:
        return {"sessions": 0, "passed": 0, "failed": 0, "not_evaluated": 0, "score_sum": 0.0}

    cases: dict[str, dict[str, Any]] = {}
    versions: dict[str, dict[str, Any]] = {}
    overall = empty()
    for r in matched:
        _tally(cases.setdefault(r["case_id"], {"case_id": r["case_id"], "eval_set_id": r["eval_set_id"], **empty()}), r)
        _tally(versions.setdefault(r["agent_version"] or "unknown", empty()), r)
        _tally(overall, r)
    overall = _finish(overall)
    return {
        "sessions": len(rows),
        "matched": len(matched),
        "unmatched": len(rows) - len(matched),
        "passed": overall["passed"],
        "failed": overall["failed"],
        "not_evaluated": overall["not_evaluated"],
        "pass_rate": overall["pass_rate"],
        "avg_score": overall["avg_score"],
        "criteria": criteria,
        "cases": [_finish(c) for c in sorted(cases.values(), key=lambda c: c["case_id"])],
        "versions": {v: _finish(t) for v, t in versions.items()},
    }


def verdict_markup(row: dict[str, Any]) -> str:
    """PASS, FAIL or NOT EVALUATED for a matched session; unmatched ones say so."""
    word, style = verdict_word(row)
    return f"[{style}]{word}[/]"


VERDICT_STYLES = {PASSED: ("PASS", "green"), FAILED: ("FAIL", "red"), NOT_EVALUATED: ("NOT EVALUATED", "yellow")}


def verdict_word(row: dict[str, Any]) -> tuple[str, str]:
    """The verdict as a word and its colour: PASS, FAIL, NOT EVALUATED or unmatched; "· judge
    pending" while the judge's answer is awaited (the verdict is the deterministic criteria's so
    far), "· not sampled" when the judge sampled the session out."""
    if not row["case_id"]:
        return "unmatched", "yellow"
    word, style = VERDICT_STYLES[row["verdict"]]
    state = judge_state(row.get("criteria") or [])
    return (f"{word} · {state}", style) if state else (word, style)


def shows_score(row: dict[str, Any]) -> bool:
    """A session's score means something only when it matched a case and something was checked."""
    return bool(row["case_id"]) and row["verdict"] != NOT_EVALUATED


def _score(value: float | None) -> str:
    """A score, or ``-`` where there is none (a skipped criterion, a session not evaluated)."""
    return "-" if value is None else f"{value:.2f}"


#: Session table columns, most important first: the verdict is never dropped or cut, then what
#: tells sessions apart and why one failed; the rest shows when the terminal has room.
_SESSION_COLUMNS = ("result", "session", "score", "failing criteria", "case", "version", "query", "matched by")


def sessions_table(rows: Sequence[dict[str, Any]], width: int, title: str | None = "Sessions") -> Any:
    """The sessions as a table no wider than ``width``: columns dropped (least useful first) or
    abbreviated (ids by their middle, lists by whole items) rather than cut mid-word."""
    from .tablefit import Column, fit_table, middle_ellipsis

    columns = {
        "session": Column("session", min_width=12, shorten=middle_ellipsis, max_width=24),
        "query": Column("query", min_width=12, max_width=60),
        "case": Column("case", min_width=10, shorten=middle_ellipsis, max_width=24),
        "matched by": Column("matched by"),
        "version": Column("version", min_width=8, shorten=middle_ellipsis),
        "result": Column("result"),
        "score": Column("score", justify="right"),
        "failing criteria": Column("failing criteria", min_width=16, is_list=True, max_width=34),
    }
    layout = ("session", "query", "case", "matched by", "version", "result", "score", "failing criteria")
    cells = []
    for r in rows:
        word, style = verdict_word(r)
        cells.append(
            [
                r["session_id"],
                r["query"] or "-",
                r["case_id"] or "-",
                r["matched_by"] or "-",
                r["agent_version"] or "-",
                (word, style),
                _score(r["score"] if shows_score(r) else None),
                failing_criteria(r) or ["-"],
            ]
        )
    return fit_table(
        title, [columns[c] for c in layout], cells, width, priority=[layout.index(c) for c in _SESSION_COLUMNS]
    )


def render_report(rows: list[dict[str, Any]], console: Any = None, limit: int = 50, pending: str = "") -> None:
    """Summary, the latest sessions and the criteria, for a terminal of any width (80 columns of
    a CI log included). ``pending`` says what is not scored yet (:func:`otel_eval.read.backlog.describe`)."""
    from rich.console import Console

    from .tablefit import Column, fit_table, middle_ellipsis

    console = console or Console()
    summary = summarize_sessions(rows)
    rate = "-" if summary["pass_rate"] is None else f"{summary['pass_rate']:.0%}"
    console.print(
        f"[bold]{summary['sessions']}[/] sessions, {summary['matched']} matched a golden case, "
        f"[green]{summary['passed']} passed[/], [red]{summary['failed']} failed[/], "
        f"[yellow]{summary['not_evaluated']} not evaluated[/], "
        f"{summary['unmatched']} unmatched; pass rate [bold]{rate}[/]"
    )
    if pending:
        console.print(pending, style="yellow", markup=False, highlight=False)
    if not rows:
        return
    console.print(sessions_table(rows[-limit:], console.width))
    if summary["criteria"]:
        columns = [
            Column("criterion", min_width=12, shorten=middle_ellipsis, max_width=32),
            Column("pass rate", justify="right"),
            Column("avg score", justify="right"),
            Column("evaluated", justify="right"),
            Column("passed", justify="right"),
            Column("skipped", justify="right"),
        ]
        cells = [
            [
                name,
                "-" if s["pass_rate"] is None else f"{s['pass_rate']:.0%}",
                "-" if s["avg_score"] is None else f"{s['avg_score']:.2f}",
                str(s["evaluated"]),
                str(s["passed"]),
                str(s["skipped"]),
            ]
            for name, s in summary["criteria"].items()
        ]
        console.print(fit_table("Criteria", columns, cells, console.width, priority=[0, 1, 2, 3, 4, 5]))


def coverage_line(cov: Any) -> str:
    """One line: how much of the golden set live traffic exercises, and how much traffic no case
    describes (:class:`otel_eval.read.coverage.Coverage`)."""
    golden = [c for c in cov.cases if c.in_golden_set]
    exercised = sum(1 for c in golden if c.sessions)
    share = "-" if cov.unmatched_share is None else f"{cov.unmatched_share:.0%}"
    window = f" since {cov.since}" if cov.since else ""
    return (
        f"golden coverage{window}: {exercised} of {len(golden)} cases exercised, {len(golden) - exercised} never; "
        f"unmatched {share} ({cov.unmatched} of {cov.sessions} sessions)"
    )


def render_coverage(cov: Any, console: Any, limit: int = 30) -> None:
    """The coverage line, then the cases: sessions, per agent version, days seen, last seen;
    cases never exercised are listed last, so the set's blind spots are in view."""
    from .tablefit import Column, fit_table, middle_ellipsis

    console.print(coverage_line(cov), markup=False, highlight=False)
    if not cov.cases:
        return
    shown = cov.exercised[:limit] + cov.never_exercised[:limit]
    columns = [
        Column("case", min_width=12, shorten=middle_ellipsis, max_width=30),
        Column("sessions", justify="right"),
        Column("by version", min_width=12, is_list=True),
        Column("days", justify="right"),
        Column("last seen"),
        Column("eval set", min_width=8, shorten=middle_ellipsis, max_width=24),
    ]
    cells = [
        [
            c.eval_id,
            str(c.sessions) if c.sessions else ("never", "yellow"),
            [f"{v} {n}" for v, n in sorted(c.by_version.items())] or ["-"],
            str(len(c.by_day)),
            (c.last_seen or "-")[:16].replace("T", " "),
            c.eval_set_id or "-",
        ]
        for c in shown
    ]
    hidden = len(cov.cases) - len(shown)
    title = "Golden coverage" + (f" ({hidden} more in --json)" if hidden > 0 else "")
    console.print(fit_table(title, columns, cells, console.width, priority=[0, 1, 2, 4, 3, 5]))


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({part / whole:.0%})" if whole else "-"


def calibration_line(cal: Any) -> str:
    """One line: how many sessions people labelled, and how often the verdict agrees with them
    (:class:`otel_eval.read.labels.Calibration`)."""
    if not cal.labelled_sessions:
        return "human labels: none yet (otel-eval label SESSION agree|disagree, or the dashboard's session page)"
    apart = f", {cal.without_verdict} without a pass/fail verdict" if cal.without_verdict else ""
    agreeing = _share(cal.verdict.agree, cal.verdict.sessions)
    return (
        f"human labels: {cal.labelled_sessions} session(s) labelled ({cal.agree} agree, {cal.disagree} disagree"
        f"{apart}); the current verdict agrees with the labels in {agreeing}"
    )


def render_calibration(cal: Any, console: Any) -> None:
    """The labels line, then per criterion how often its pass/fail agrees with the human-corrected
    verdict (judge calibration), then the user feedback per verdict."""
    from .tablefit import Column, fit_table, middle_ellipsis

    console.print(calibration_line(cal), markup=False, highlight=False)
    if cal.criteria:
        columns = [
            Column("criterion", min_width=12, shorten=middle_ellipsis, max_width=32),
            Column("labelled", justify="right"),
            Column("agree", justify="right"),
            Column("agreement", justify="right"),
            Column("passed, should fail", justify="right"),
            Column("failed, should pass", justify="right"),
        ]
        cells = [
            [
                c.criterion,
                str(c.sessions),
                str(c.agree),
                "-" if c.rate is None else f"{c.rate:.0%}",
                str(c.false_pass),
                str(c.false_fail),
            ]
            for c in cal.criteria
        ]
        console.print(
            fit_table(
                "Judge calibration (each criterion against the human labels)",
                columns,
                cells,
                console.width,
                priority=[0, 3, 1, 2, 4, 5],
            )
        )
    if cal.feedback:
        columns = [
            Column("verdict"),
            Column("feedback", min_width=10, max_width=30),
            Column("value", min_width=6, max_width=30),
            Column("count", justify="right"),
        ]
        cells = [[f.outcome, f.name, f.value, str(f.count)] for f in cal.feedback]
        console.print(
            fit_table(
                f"User feedback by verdict ({cal.feedback_total} records)",
                columns,
                cells,
                console.width,
                priority=[0, 2, 3, 1],
            )
        )


#: Longest expected or actual response shown in ``report --session`` (the JSON has them whole).
RESPONSE_CHARS = 300


def render_session(row: dict[str, Any], console: Any = None) -> None:
    """One session: its match, every criterion with its explanation (a failed response criterion
    with the expected and actual text), and per turn the user message and aligned trajectory."""
    from rich.console import Console
    from rich.markup import escape

    from .tablefit import Column, fit_table

    console = console or Console()
    console.print(f"[bold]session {escape(row['session_id'])}[/] (revision {row['revision']}): {verdict_markup(row)}")
    console.print(f"query: {row['query']!r}", markup=False, highlight=False)
    console.print(
        f"case: {row['case_id'] or '-'} ({row['matched_by']}, score {row['match_score']:.1f})",
        markup=False,
        highlight=False,
    )
    why = ((row.get("match") or {}).get("evidence") or {}).get("reason")
    if not row["case_id"] and why:  # unmatched or ambiguous: say why
        console.print(f"  why: {why}", markup=False, highlight=False)
    inputs = {t["turn"]: t.get("user_input") for t in row.get("turns") or []}
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

    for c in row["criteria"]:
        state = (
            "skipped"
            if c["skipped"]
            else (
                "info"
                if (c["details"] or {}).get("informational") is True
                else "[green]pass[/]"
                if c["passed"]
                else "[red]fail[/]"
            )
        )
        reason = c["details"].get("reason") or c["error"] or ""
        measure = measure_label(c["details"])
        score = _score(None if c["skipped"] else c["score"])
        console.print(
            f"  {escape(c['criterion'])}: {state} score={score} threshold={c['threshold']}"
            + (f" measure={escape(measure)}" if measure else "")
            + (f" {escape(reason)}" if reason else "")
        )
        if is_response_criterion(c) and not c["skipped"] and not c["passed"]:
            for line in response_lines(c):
                console.print("    " + line, markup=False, highlight=False)
    for c in row["criteria"]:
        if not is_trajectory_criterion(c):
            continue
        for turn in c["details"].get("per_turn") or []:
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
            cells = [[r["mark"], _call_text(r["expected"]), _call_text(r["actual"]), r["note"]] for r in rows]
            console.print(
                fit_table(
                    f"{c['criterion']} · turn {turn.get('turn', 0) + 1}: expected vs actual",
                    columns,
                    cells,
                    console.width,
                    priority=[0, 1, 2, 3],
                )
            )
    for turn in sorted(inputs):  # turns no trajectory was compared for still say what the user asked
        user_says(turn)
    for t in row.get("turns") or []:
        if t.get("answer_source"):
            console.print(
                f"turn {t['turn'] + 1} · answer read from: {t['answer_source']}",
                markup=False,
                highlight=False,
                style="dim",
            )
    render_unread(row.get("unread") or [], console)


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


RESPONSE_KINDS = ("response_match",)


def is_response_criterion(criterion: dict[str, Any]) -> bool:
    """A criterion comparing the final response with the expected one: ``response_match``,
    ADK's ``response_match_score``, or any criterion whose kind is response_match."""
    details = criterion.get("details") or {}
    name = criterion.get("criterion")
    if name in ("response_match", "response_match_score"):
        return True
    return isinstance(details, dict) and details.get("kind") in RESPONSE_KINDS


def response_turns(criterion: dict[str, Any]) -> list[dict[str, Any]]:
    """Per turn: ``turn`` (0-based), ``expected``, ``actual``, ``score`` and ``why`` (method and
    what the score measures). A regex criterion has one entry: the pattern against the response."""
    details = criterion.get("details") or {}
    if not isinstance(details, dict):
        return []
    method = details.get("method") or ""
    if method == "regex":
        return [
            {
                "turn": None,
                "expected": f"/{details.get('pattern')}/",
                "actual": details.get("response"),
                "score": criterion.get("score"),
                "why": "regex: the final response must match the pattern",
            }
        ]
    out = []
    for t in details.get("per_turn") or []:
        if not isinstance(t, dict):
            continue
        why = method
        if "precision" in t and "recall" in t:
            why += f" precision {float(t['precision']):.2f} recall {float(t['recall']):.2f}"
        if t.get("turn_present") is False:
            why += " (the session has no such turn)"
        out.append(
            {
                "turn": t.get("turn"),
                "expected": t.get("expected"),
                "actual": t.get("actual"),
                "score": t.get("score"),
                "why": why.strip(),
            }
        )
    return out


def response_lines(criterion: dict[str, Any], limit: int = RESPONSE_CHARS) -> list[str]:
    """``report --session``'s lines for a response criterion: expected vs actual per turn."""
    lines = []
    for t in response_turns(criterion):
        head = "response" if t["turn"] is None else f"turn {int(t['turn']) + 1}"
        lines.append(f"{head}: score={_score(t['score'])} {t['why']}".rstrip())
        lines.append(f"  expected: {shorten_text(t['expected'], limit)}")
        lines.append(f"  actual:   {shorten_text(t['actual'], limit)}")
    return lines


def shorten_text(value: Any, limit: int) -> str:
    """A stored text on one line (whitespace runs made one space), quoted, cut at a word boundary
    with the number of characters left out; ``(none)`` when there is no text."""
    from .tablefit import end_ellipsis

    if value is None:
        return "(none)"
    text = " ".join(str(value).split())
    if len(text) <= limit:
        return repr(text)
    cut = end_ellipsis(text, limit)
    return f"{cut[:-1]!r}… ({len(text) - len(cut) + 1} more characters)"


def is_trajectory_criterion(criterion: dict[str, Any]) -> bool:
    """A criterion whose details align expected and actual tool calls turn by turn."""
    details = criterion.get("details") or {}
    if not isinstance(details, dict):
        return False
    turns = details.get("per_turn") or []
    return criterion.get("criterion") == "trajectory_match" or any(
        isinstance(t, dict) and "expected_calls" in t for t in turns
    )


def measure_label(details: Any) -> str:
    """What a trajectory criterion's score is, e.g. ``adk_match_avg (EXACT)`` or ``recall``."""
    if not isinstance(details, dict) or not details.get("measure"):
        return ""
    measure = str(details["measure"])
    return f"{measure} ({details['match_type']})" if details.get("match_type") else measure


#: Row kind → (symbol, rich style) of the mark column.
_MARKS = {
    "match": ("✓", "green"),
    "order": ("↕", "yellow"),
    "args": ("≠", "red"),
    "missing": ("✗", "red"),
    "extra": ("+", "yellow"),
    "retry": ("↻", "dim"),
    "passed_over": ("·", "dim"),
}


def trajectory_rows(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """One turn's alignment as side-by-side rows, in expected order, then the extra calls.

    Each row has ``kind`` (match, order, args, missing, extra, retry, passed_over), the expected
    and actual call, and a note saying what differs.
    """
    expected = turn.get("expected_calls") or [{"name": n, "args": {}} for n in turn.get("expected", [])]
    actual = turn.get("actual_calls") or [{"name": n, "args": {}} for n in turn.get("actual", [])]
    by_expected: dict[int, dict[str, Any]] = {}
    used_actual: set[int] = set()
    for m in turn.get("matched", []):
        kind = "match" if m.get("in_order", True) else "order"
        by_expected[m["expected_index"]] = {
            "kind": kind,
            "actual": m["actual_index"],
            "note": "" if kind == "match" else "out of order",
        }
        used_actual.add(m["actual_index"])
    for mm in turn.get("argument_mismatches", []):
        differing = [d for d in mm.get("arguments", []) if d.get("status") not in ("equal", "ignored")]
        note = "; ".join(f"{d.get('key')}: expected {d.get('expected')!r}, got {d.get('actual')!r}" for d in differing)
        by_expected[mm["expected_index"]] = {
            "kind": "args",
            "actual": mm["actual_index"],
            "note": note or "arguments differ",
        }
        used_actual.add(mm["actual_index"])
    # Retried failed attempts: each is one of the actual calls (an ``actual_index``), shown once, as a retry.
    used_actual.update(r["actual_index"] for r in turn.get("retries", []) if "actual_index" in r)
    rows: list[dict[str, Any]] = []
    for i, exp in enumerate(expected):
        hit = by_expected.get(i)
        if hit is None:
            rows.append({"kind": "missing", "expected": exp, "actual": None, "note": "not called"})
        else:
            rows.append({"kind": hit["kind"], "expected": exp, "actual": actual[hit["actual"]], "note": hit["note"]})
    for j, act in enumerate(actual):
        if j in used_actual:
            continue
        rows.append({"kind": "extra", "expected": None, "actual": act, "note": "not expected"})
    # Failed attempts that a later model step retried and that pair with nothing: neutral, but shown.
    for r in turn.get("retries", []):
        note = f"failed ({r.get('error')}), retried" + (" successfully" if r.get("retry_succeeded") else "")
        rows.append(
            {
                "kind": "retry",
                "expected": None,
                "actual": {"name": r.get("name"), "args": r.get("args") or {}},
                "note": note,
            }
        )
    passed_over = turn.get("passed_over")
    if passed_over:  # first call only, none expected: a call without arguments is not an extra one
        rows.append(
            {
                "kind": "passed_over",
                "expected": None,
                "actual": passed_over,
                "note": "no call expected: only a first call with arguments would count (Big Sky)",
            }
        )
    for row in rows:
        row["mark"] = _MARKS[row["kind"]]
    return rows


def _call_text(call: Any) -> str:
    if not call:
        return ""
    if isinstance(call, dict):
        args = call.get("args") or {}
        return f"{call.get('name')}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
    return str(call)
