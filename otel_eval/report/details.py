"""Reading one criterion's details for display: a response criterion's expected and actual text
per turn, a trajectory criterion's alignment as side-by-side rows. Shared by ``report --session``
and the dashboard's session page."""

from __future__ import annotations

from typing import Any

from ..read.evaluations import StoredCriterion
from .verdicts import terminal_score

#: Longest expected or actual response shown in ``report --session`` (the JSON has them whole).
RESPONSE_CHARS = 300


RESPONSE_KINDS = ("response_match",)


def is_response_criterion(criterion: StoredCriterion) -> bool:
    """A criterion comparing the final response with the expected one: ``response_match``,
    ADK's ``response_match_score``, or any criterion whose kind is response_match."""
    if criterion.criterion in ("response_match", "response_match_score"):
        return True
    return criterion.details.get("kind") in RESPONSE_KINDS


def response_turns(criterion: StoredCriterion) -> list[dict[str, Any]]:
    """Per turn: ``turn`` (0-based), ``expected``, ``actual``, ``score`` and ``why`` (method and
    what the score measures). A regex criterion has one entry: the pattern against the response."""
    details = criterion.details
    method = details.get("method") or ""
    if method == "regex":
        return [
            {
                "turn": None,
                "expected": f"/{details.get('pattern')}/",
                "actual": details.get("response"),
                "score": criterion.score,
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


def response_lines(criterion: StoredCriterion, limit: int = RESPONSE_CHARS) -> list[str]:
    """``report --session``'s lines for a response criterion: expected vs actual per turn."""
    lines = []
    for t in response_turns(criterion):
        head = "response" if t["turn"] is None else f"turn {int(t['turn']) + 1}"
        lines.append(f"{head}: score={terminal_score(t['score'])} {t['why']}".rstrip())
        lines.append(f"  expected: {shorten_text(t['expected'], limit)}")
        lines.append(f"  actual:   {shorten_text(t['actual'], limit)}")
    return lines


def shorten_text(value: Any, limit: int) -> str:
    """A stored text on one line (whitespace runs made one space), quoted, cut at a word boundary
    with the number of characters left out; ``(none)`` when there is no text."""
    from ..tablefit import end_ellipsis

    if value is None:
        return "(none)"
    text = " ".join(str(value).split())
    if len(text) <= limit:
        return repr(text)
    cut = end_ellipsis(text, limit)
    return f"{cut[:-1]!r}… ({len(text) - len(cut) + 1} more characters)"


def is_trajectory_criterion(criterion: StoredCriterion) -> bool:
    """A criterion whose details align expected and actual tool calls turn by turn."""
    turns = criterion.details.get("per_turn") or []
    return criterion.criterion == "trajectory_match" or any(
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


def call_text(call: Any) -> str:
    """A tool call as ``name(key=value, ...)``, or the value as text when it is not a call."""
    if not call:
        return ""
    if isinstance(call, dict):
        args = call.get("args") or {}
        return f"{call.get('name')}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
    return str(call)
