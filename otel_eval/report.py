"""Reading results back out of one or more otel-eval databases: summaries, per-case tables,
one session's detail. The ``--json`` shapes produced here are documented in README and stable."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

from .models.results import FAILED, NOT_EVALUATED, PASSED
from .store import upgrade_if_older

DbPath = Union[str, Path]


def _connect(path: DbPath) -> sqlite3.Connection:
    if not Path(path).exists():
        from .errors import InputError

        raise InputError(str(path), "database file not found")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    upgrade_if_older(conn, path)
    conn.row_factory = sqlite3.Row
    return conn


def current_evaluations(db_paths: Sequence[DbPath]) -> list[dict[str, Any]]:
    """The latest revision of every session's evaluation, with its criteria, across databases."""
    rows: list[dict[str, Any]] = []
    for path in db_paths:
        conn = _connect(path)
        try:
            evaluations = conn.execute(
                "SELECT e.*, s.user_id, s.service_name, s.end_reason FROM evaluations e"
                " LEFT JOIN sessions s ON s.session_id = e.session_id"
                " WHERE e.superseded = 0 ORDER BY e.created_at, e.id"
            ).fetchall()
            criteria: dict[int, list[dict[str, Any]]] = {}
            for c in conn.execute(
                "SELECT c.* FROM criterion_results c JOIN evaluations e ON e.id = c.evaluation_id"
                " WHERE e.superseded = 0 ORDER BY c.id"
            ):
                criteria.setdefault(c["evaluation_id"], []).append({
                    "criterion": c["criterion"], "score": c["score"], "passed": bool(c["passed"]),
                    "threshold": c["threshold"], "skipped": bool(c["skipped"]), "error": c["error"],
                    "details": json.loads(c["details"]) if c["details"] else {},
                })
            for e in evaluations:
                rows.append({
                    "db": str(path), "session_id": e["session_id"], "revision": e["revision"],
                    "case_id": e["case_id"], "eval_set_id": e["eval_set_id"], "matched_by": e["matched_by"],
                    "match_score": e["match_score"], "passed": bool(e["passed"]), "verdict": e["verdict"],
                    "score": e["score"],
                    "agent_version": e["agent_version"], "query": e["query"], "created_at": e["created_at"],
                    "error": e["error"], "user_id": e["user_id"], "end_reason": e["end_reason"],
                    "criteria": criteria.get(e["id"], []),
                })
        finally:
            conn.close()
    return rows


def _rate(passed: int, evaluated: int) -> Optional[float]:
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
    tally.update(pass_rate=_rate(tally["passed"], evaluated),
                 avg_score=round(total / evaluated, 4) if evaluated else None)
    return tally


def summarize(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Totals, per-criterion and per-case aggregates over current evaluations.

    Sessions matched to a case are passed, failed or not_evaluated (nothing checked); the pass
    rate is passed / (passed + failed), so not_evaluated sessions are counted apart, not as
    failures and never as passes. Unmatched sessions are counted apart too."""
    rows = list(rows)
    matched = [r for r in rows if r["case_id"]]
    criteria: dict[str, dict[str, Any]] = {}
    for r in matched:
        for c in r["criteria"]:
            stat = criteria.setdefault(c["criterion"], {"evaluated": 0, "passed": 0, "skipped": 0, "errors": 0,
                                                        "score_sum": 0.0})
            if c["skipped"]:
                stat["skipped"] += 1
                continue
            stat["evaluated"] += 1
            stat["passed"] += int(c["passed"])
            stat["errors"] += int(bool(c["error"]))
            stat["score_sum"] += c["score"]
    for stat in criteria.values():
        n = stat.pop("evaluated")
        total = stat.pop("score_sum")
        stat.update(evaluated=n, pass_rate=round(stat["passed"] / n, 4) if n else None,
                    avg_score=round(total / n, 4) if n else None)

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


def failing_criteria(row: dict[str, Any]) -> list[str]:
    return [c["criterion"] for c in row["criteria"] if not c["skipped"] and not c["passed"] and c["criterion"] != "health"]


def session_detail(db_paths: Sequence[DbPath], session_id: str) -> Optional[dict[str, Any]]:
    for row in current_evaluations(db_paths):
        if row["session_id"] == session_id:
            return row
    return None


VERDICT_MARKUP = {PASSED: "[green]PASS[/]", FAILED: "[red]FAIL[/]", NOT_EVALUATED: "[yellow]NOT EVALUATED[/]"}


def verdict_markup(row: dict[str, Any]) -> str:
    """PASS, FAIL or NOT EVALUATED for a matched session; unmatched ones say so."""
    if not row["case_id"]:
        return "[yellow]unmatched[/]"
    return VERDICT_MARKUP[row["verdict"]]


def shows_score(row: dict[str, Any]) -> bool:
    """A session's score means something only when it matched a case and something was checked."""
    return bool(row["case_id"]) and row["verdict"] != NOT_EVALUATED


def _score(value: Optional[float]) -> str:
    """A score, or ``-`` where there is none (a skipped criterion, a session not evaluated)."""
    return "-" if value is None else f"{value:.2f}"


def render_report(rows: list[dict[str, Any]], console: Any = None, limit: int = 50) -> None:
    """Summary, per-case table and the latest sessions, for a terminal."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    summary = summarize(rows)
    rate = "-" if summary["pass_rate"] is None else f"{summary['pass_rate']:.0%}"
    console.print(
        f"[bold]{summary['sessions']}[/] sessions, {summary['matched']} matched a golden case, "
        f"[green]{summary['passed']} passed[/], [red]{summary['failed']} failed[/], "
        f"[yellow]{summary['not_evaluated']} not evaluated[/], "
        f"{summary['unmatched']} unmatched; pass rate [bold]{rate}[/]"
    )
    # Narrow terminals get the columns that decide what to look at next; wide ones get all.
    wide = console.width >= 150
    sessions = Table(title="Sessions", show_lines=False)
    sessions.add_column("session", min_width=12, max_width=36 if wide else 24, no_wrap=True, overflow="ellipsis")
    if wide:
        sessions.add_column("query", min_width=12, max_width=40, no_wrap=True, overflow="ellipsis")
    sessions.add_column("case", max_width=None if wide else 18, no_wrap=True, overflow="ellipsis")
    if wide:
        sessions.add_column("matched by", no_wrap=True)
        sessions.add_column("version", no_wrap=True)
    sessions.add_column("result", no_wrap=True)
    sessions.add_column("score", no_wrap=True)
    sessions.add_column("failing criteria", overflow="fold")
    for r in rows[-limit:]:
        cells = [r["session_id"]]
        if wide:
            cells.append(r["query"] or "-")
        cells.append(r["case_id"] or "-")
        if wide:
            cells += [r["matched_by"] or "-", r["agent_version"] or "-"]
        cells += [verdict_markup(r), _score(r["score"] if shows_score(r) else None),
                  ", ".join(failing_criteria(r)) or "-"]
        sessions.add_row(*cells)
    console.print(sessions)
    if summary["criteria"]:
        crit = Table(title="Criteria")
        for col in ("criterion", "evaluated", "passed", "skipped", "pass rate", "avg score"):
            crit.add_column(col)
        for name, s in summary["criteria"].items():
            crit.add_row(name, str(s["evaluated"]), str(s["passed"]), str(s["skipped"]),
                         "-" if s["pass_rate"] is None else f"{s['pass_rate']:.0%}",
                         "-" if s["avg_score"] is None else f"{s['avg_score']:.2f}")
        console.print(crit)


def render_session(row: dict[str, Any], console: Any = None) -> None:
    """One session: its match, every criterion with its explanation, the aligned trajectory."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    console.print(f"[bold]session {row['session_id']}[/] (revision {row['revision']}): {verdict_markup(row)}")
    console.print(f"query: {row['query']!r}")
    console.print(f"case: {row['case_id'] or '-'} ({row['matched_by']}, score {row['match_score']:.1f})")
    shown: list[Any] = []
    for c in row["criteria"]:
        state = "skipped" if c["skipped"] else ("[green]pass[/]" if c["passed"] else "[red]fail[/]")
        reason = c["details"].get("reason") or c["error"] or ""
        measure = measure_label(c["details"])
        score = _score(None if c["skipped"] else c["score"])
        console.print(f"  {c['criterion']}: {state} score={score} threshold={c['threshold']}"
                      + (f" measure={measure}" if measure else "") + (f" {reason}" if reason else ""))
        if not is_trajectory_criterion(c):
            continue
        for turn in c["details"].get("per_turn") or []:
            rows = trajectory_rows(turn)
            if (turn.get("turn"), rows) in shown:  # another criterion over the same alignment: shown already
                continue
            shown.append((turn.get("turn"), rows))
            table = Table(title=f"{c['criterion']} · turn {turn.get('turn', 0) + 1}: expected vs actual",
                          show_header=True)
            for col in ("", "expected", "actual", "note"):
                table.add_column(col, overflow="fold")
            for r in rows:
                table.add_row(r["mark"], _call_text(r["expected"]), _call_text(r["actual"]), r["note"])
            console.print(table)


def is_trajectory_criterion(criterion: dict[str, Any]) -> bool:
    """A criterion whose details align expected and actual tool calls turn by turn."""
    details = criterion.get("details") or {}
    if not isinstance(details, dict):
        return False
    turns = details.get("per_turn") or []
    return criterion.get("criterion") == "trajectory_match" or any(
        isinstance(t, dict) and "expected_calls" in t for t in turns)


def measure_label(details: Any) -> str:
    """What a trajectory criterion's score is, e.g. ``adk_match_avg (EXACT)`` or ``recall``."""
    if not isinstance(details, dict) or not details.get("measure"):
        return ""
    measure = str(details["measure"])
    return f"{measure} ({details['match_type']})" if details.get("match_type") else measure


_MARKS = {"match": "[green]✓[/]", "order": "[yellow]↕[/]", "args": "[red]≠[/]", "missing": "[red]✗[/]",
          "extra": "[yellow]+[/]", "retry": "[dim]↻[/]"}


def trajectory_rows(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """One turn's alignment as side-by-side rows, in expected order, then the extra calls.

    Each row has ``kind`` (match, order, args, missing, extra, retry), the expected and actual call,
    and a note saying what differs.
    """
    expected = turn.get("expected_calls") or [{"name": n, "args": {}} for n in turn.get("expected", [])]
    actual = turn.get("actual_calls") or [{"name": n, "args": {}} for n in turn.get("actual", [])]
    by_expected: dict[int, dict[str, Any]] = {}
    used_actual: set[int] = set()
    for m in turn.get("matched", []):
        kind = "match" if m.get("in_order", True) else "order"
        by_expected[m["expected_index"]] = {"kind": kind, "actual": m["actual_index"],
                                            "note": "" if kind == "match" else "out of order"}
        used_actual.add(m["actual_index"])
    for mm in turn.get("argument_mismatches", []):
        differing = [d for d in mm.get("arguments", []) if d.get("status") not in ("equal", "ignored")]
        note = "; ".join(f"{d.get('key')}: expected {d.get('expected')!r}, got {d.get('actual')!r}" for d in differing)
        by_expected[mm["expected_index"]] = {"kind": "args", "actual": mm["actual_index"], "note": note or "arguments differ"}
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
        rows.append({"kind": "retry", "expected": None, "actual": {"name": r.get("name"), "args": r.get("args") or {}},
                     "note": note})
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
