"""One session's page: verdict and match, the human label form, criteria, the aligned trajectory,
final responses and revisions (the spans come from :mod:`.span_tree`). Values are escaped as
:mod:`.markup` says.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..read.evaluations import Revision, StoredCriterion
from ..read.labels import UserFeedback
from ..read.sessions import VERDICT_WORDS, SessionOverview
from ..read.spans import AgentDataKey, TraceTree
from ..report import is_response_criterion, is_trajectory_criterion, measure_label, response_turns, trajectory_rows
from ..store.labels import MAX_NOTE_CHARS
from .markup import (
    LABEL_WORDS,
    STORED_VERDICT_WORDS,
    VERDICT_LABELS,
    Links,
    esc,
    judge_badge,
    score_text,
    shorten,
    time_cell,
    verdict_badge,
)
from .span_tree import spans_section

#: Trajectory row kinds (from otel_eval.report.trajectory_rows) → symbol and words for the mark column.
TRAJECTORY_MARKS = {
    "match": ("✓", "matched"),
    "order": ("↕", "out of order"),
    "args": ("≠", "arguments differ"),
    "missing": ("✗", "missing"),
    "extra": ("+", "extra call"),
    "retry": ("↻", "failed, retried"),
    "passed_over": ("·", "not counted"),
}


def session_page(
    links: Links,
    overview: SessionOverview,
    traces: Sequence[TraceTree],
    agent_data: Mapping[AgentDataKey, Mapping[str, object]],
    *,
    csrf: str = "",
) -> str:
    """One session: verdict and match, the human label form with the labels and user feedback,
    criteria, the aligned trajectory, responses, revisions, spans. ``csrf``: the label form's token."""
    o = overview
    reason = o.match.reason if o.match is not None else None
    facts = [
        (
            "result",
            verdict_badge(o.verdict)
            + (f" score {score_text(o.score)}" if o.verdict in ("pass", "fail") else "")
            + judge_badge(o.judge),
        ),
        (
            "golden case",
            esc(o.case_id or "none matched")
            + (f' <span class="muted">({esc(o.eval_set_id)})</span>' if o.eval_set_id else ""),
        ),
        (
            "matched by",
            esc(o.matched_by or "–")
            + (f' <span class="muted">score {float(o.match_score):.1f}</span>' if o.match_score is not None else "")
            + (f' <span class="muted">— {esc(reason)}</span>' if reason else ""),
        ),
        *([("note", esc(o.match.note))] if o.match is not None and o.match.note else []),
        ("query", esc(o.query or "–")),
        ("agent version", esc(o.agent_version or "–")),
        ("user", esc(o.user_id or "–")),
        (
            "status",
            f"{esc(o.status)} (revision {esc(o.revision)}"
            + (f", ended by {esc(o.end_reason)}" if o.end_reason else "")
            + ")",
        ),
        ("spans / traces", f"{esc(o.span_count)} / {esc(o.trace_count)}"),
    ]
    if o.error:
        facts.append(("error", f'<span class="error">{esc(o.error)}</span>'))
    parts = ['<section class="facts"><dl>' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl></section>"]
    parts.append(_review_section(links, o, csrf))
    parts.append(_criteria_section(o.criteria))
    parts.append(_trajectory_section(o.criteria, o))
    parts.append(_responses_section(o.criteria, o))
    parts.append(spans_section(traces, agent_data))
    if len(o.revisions) > 1:
        parts.append(_revisions_section(o.revisions))
    return f'<h1 class="session-title">{esc(o.session_id)}</h1>' + "".join(parts)


def _review_section(links: Links, o: SessionOverview, csrf: str) -> str:
    """The human label: the latest one and the earlier ones, the form, and what users said."""
    head = '<section class="review" id="labels"><h2>Human label</h2>'
    feedback = _feedback_table(o.feedback)
    if o.evaluation_id is None:
        return head + '<p class="empty">not scored yet: there is no verdict to label</p>' + feedback + "</section>"
    verdict = VERDICT_LABELS.get(o.verdict, o.verdict)
    other = {"pass": "FAIL", "fail": "PASS"}.get(o.verdict)
    wrong = f"it should be {other}" if other else "say why in the note"
    out = [head]
    history = o.labels
    if history:
        latest = history[0]
        stale = (
            f' <span class="muted">(given on revision {esc(latest.revision)}; scored again since)</span>'
            if latest.revision != o.revision
            else ""
        )
        note = f": <q>{esc(shorten(latest.note, 1000))}</q>" if latest.note else ""
        out.append(
            f'<p class="latest-label" data-label="{esc(latest.label)}">latest: '
            f'<span class="badge l-{esc(latest.label)}">{LABEL_WORDS.get(latest.label, "")}</span> '
            f"on {esc(STORED_VERDICT_WORDS.get(latest.verdict, latest.verdict))} by {esc(latest.who)} at "
            f"{esc(latest.created_at)}{stale}{note}</p>"
        )
        if len(history) > 1:
            items = "".join(
                f'<li><span class="badge l-{esc(h.label)}">{LABEL_WORDS.get(h.label, "")}</span> on '
                f"{esc(STORED_VERDICT_WORDS.get(h.verdict, h.verdict))} (revision {esc(h.revision)}) by "
                f"{esc(h.who)} at {esc(h.created_at)}"
                + (f": <q>{esc(shorten(h.note, 400))}</q>" if h.note else "")
                + "</li>"
                for h in history[1:]
            )
            out.append(
                f'<details class="label-history"><summary>{len(history) - 1} earlier label(s); '
                f'the latest counts</summary><ul>{items}</ul></details>'
            )
    else:
        out.append('<p class="muted">no label yet</p>')
    out.append(
        f'<form class="label-form" method="post" action="{esc(links.label_post())}">'
        f'<input type="hidden" name="session" value="{esc(o.session_id)}">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        f'<label class="note">note <textarea name="note" rows="2" maxlength="{MAX_NOTE_CHARS}" '
        'placeholder="why (optional)"></textarea></label>'
        '<label class="by">your name <input name="by" maxlength="200" autocomplete="name"></label>'
        '<div class="buttons">'
        f'<button type="submit" name="label" value="agree" class="agree">Agree: {esc(verdict)} is right</button>'
        f'<button type="submit" name="label" value="disagree" class="disagree">Disagree: {esc(wrong)}</button>'
        "</div></form>"
    )
    return "".join(out) + feedback + "</section>"


def _feedback_table(feedback: Sequence[UserFeedback]) -> str:
    """User feedback the app sent about the session (gen_ai.evaluation.result log records)."""
    if not feedback:
        return ""
    rows = "".join(
        f'<tr data-feedback="{esc(f.value)}">'
        f'<td class="when">{time_cell(f.time_ns or f.received_ns)}</td>'
        f'<td>{esc(f.name or "(unnamed)")}</td><td><b>{esc(f.value)}</b></td>'
        f'<td>{esc(shorten(f.explanation or "", 400)) or "–"}</td></tr>'
        for f in feedback
    )
    return (
        '<h3>User feedback <span class="muted">(sent by the app as gen_ai.evaluation.result)</span></h3>'
        '<div class="scroll"><table class="feedback"><thead><tr><th>when</th><th>feedback</th><th>value</th>'
        f'<th>explanation</th></tr></thead><tbody>{rows}</tbody></table></div>'
    )


def _criteria_section(criteria: Sequence[StoredCriterion]) -> str:
    """The Criteria table: each criterion's state, score, threshold, why, and what its score measures."""
    if not criteria:
        return '<section><h2>Criteria</h2><p class="empty">not scored yet</p></section>'
    rows = []
    for c in criteria:
        state = "skipped" if c.skipped else ("error" if c.error else ("pass" if c.passed else "fail"))
        details = c.details
        reason = c.error or details.get("reason") or ""
        if not reason and is_trajectory_criterion(c):
            reason = _trajectory_summary(details)
        if not reason and is_response_criterion(c) and not c.skipped:
            reason = _response_summary(c)
        rows.append(
            f'<tr class="crit-{state}" data-criterion="{esc(c.criterion)}"><td>{esc(c.criterion)}</td>'
            f'<td><span class="badge c-{state}">{state}</span></td>'
            f'<td class="num">{"–" if c.skipped else score_text(c.score)}</td>'
            f'<td class="num">{esc(c.threshold)}</td><td>{esc(shorten(str(reason), 400))}</td>'
            f'<td class="measure">{esc(measure_label(details))}</td></tr>'
        )
    return (
        '<section><h2>Criteria</h2><table class="criteria"><thead><tr><th>criterion</th><th>state</th>'
        '<th>score</th><th>threshold</th><th>why</th><th>measure</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table></section>"
    )


def _response_summary(criterion: StoredCriterion) -> str:
    """Per turn what the response score measures, e.g. "turn 1: rouge1 precision 0.71 recall 0.56,
    score 0.62": the why of a response score, with the texts under Final responses."""
    parts = []
    for t in response_turns(criterion):
        head = "response" if t["turn"] is None else f"turn {int(t['turn']) + 1}"
        parts.append(f"{head}: {t['why']}, score {score_text(t['score'])}")
    if parts and not criterion.passed:
        parts[-1] += " (expected vs actual below, under Final responses)"
    return "; ".join(parts)


def _trajectory_summary(details: Mapping[str, Any]) -> str:
    """ "1 missing, 1 extra call" over all turns: the why of a trajectory score at a glance."""
    counts: dict[str, int] = {}
    for turn in details.get("per_turn") or []:
        for row in trajectory_rows(turn):
            counts[row["kind"]] = counts.get(row["kind"], 0) + 1
    parts = [
        f"{counts[kind]} {TRAJECTORY_MARKS[kind][1]}"
        for kind in ("missing", "extra", "args", "order", "match")
        if counts.get(kind)
    ]
    return ", ".join(parts)


def _call_text(call: Any) -> str:
    if not call:
        return ""
    if isinstance(call, dict):
        args = call.get("args") or {}
        inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in args.items())
        return shorten(f"{call.get('name')}({inner})", 600)
    return shorten(str(call), 600)


def _user_message(overview: SessionOverview, turn: Any) -> str:
    """The turn's user message, shown above its trajectory (empty when the session has no such turn)."""
    inputs = {t.turn: t.user_input for t in overview.turns}
    if turn not in inputs:
        return ""
    text = inputs[turn]
    label = f"turn {int(turn) + 1} · user: "
    return (
        f'<p class="user-msg" data-turn="{esc(turn)}">{esc(label)}<q>{esc(shorten(text, 1000))}</q></p>'
        if text
        else f'<p class="user-msg muted" data-turn="{esc(turn)}">{esc(label)}no user message in this turn</p>'
    )


def _trajectory_section(criteria: Sequence[StoredCriterion], overview: SessionOverview) -> str:
    """Expected vs actual, per turn, for each trajectory criterion (one table per distinct alignment:
    criteria computed over the same alignment share it), captioned with the measure the score is."""
    compared = [c for c in criteria if is_trajectory_criterion(c) and not c.skipped and c.details.get("per_turn")]
    head = '<section class="trajectory"><h2>Trajectory: expected vs actual</h2>'
    if not compared:
        why = (
            "no golden case matched this session"
            if overview.verdict in ("unmatched", "pending") and not overview.case_id
            else "the trajectory was not compared"
        )
        return head + f'<p class="empty">{esc(why)}</p></section>'
    out = [head]
    shown: list[Any] = []
    said: set[Any] = set()
    for trajectory in compared:
        details = trajectory.details
        measure = measure_label(details)
        for turn in details["per_turn"]:
            kinds = trajectory_rows(turn)
            if (turn.get("turn"), kinds) in shown:
                continue
            shown.append((turn.get("turn"), kinds))
            label = f"turn {int(turn.get('turn', 0)) + 1}"
            if len(compared) > 1:
                label = f"{trajectory.criterion} · {label}"
            if measure:
                label += f" · {measure}"
            elif turn.get("match_type"):
                label += f" · {turn['match_type']}"
            if turn.get("score") is not None:
                label += f" · score {float(turn['score']):.2f}"
            if turn.get("turn_present") is False:
                label += " · the session has no such turn"
            rows = []
            for r in kinds:
                symbol, words = TRAJECTORY_MARKS[r["kind"]]
                rows.append(
                    f'<tr class="traj-{r["kind"]}" data-kind="{r["kind"]}"><td class="mark" title="{words}">'
                    f'<span aria-hidden="true">{symbol}</span> {words}</td>'
                    f'<td class="call">{esc(_call_text(r["expected"]))}</td><td class="call">{esc(_call_text(r["actual"]))}</td>'
                    f'<td>{esc(r["note"])}</td></tr>'
                )
            number = turn.get("turn", 0)
            if number not in said:  # the user's message once per turn, above its first table
                said.add(number)
                out.append(_user_message(overview, number))
            out.append(
                f'<table class="traj" data-turn="{esc(number)}" data-criterion="{esc(trajectory.criterion)}">'
                f'<caption>{esc(label)}</caption>'
                '<thead><tr><th></th><th>expected</th><th>actual</th><th>difference</th></tr></thead><tbody>'
                + ("".join(rows) or '<tr><td colspan="4" class="empty">no tool calls expected or made</td></tr>')
                + "</tbody></table>"
            )
    gaps = compared[0].details.get("turns") or {}
    if gaps.get("missing_turns") or gaps.get("unscored_extra_turns"):
        out.append(
            f'<p class="warn">turns: expected {esc(gaps.get("expected"))}, actual {esc(gaps.get("actual"))}'
            f'; missing {esc(gaps.get("missing_turns"))}; extra {esc(gaps.get("unscored_extra_turns"))}</p>'
        )
    return "".join(out) + "</section>"


def _responses_section(criteria: Sequence[StoredCriterion], overview: SessionOverview) -> str:
    """Expected and actual final response per turn, with the user message, for every response
    criterion (``response_match``, ADK's ``response_match_score``, any of kind response_match)."""
    tables = []
    compared = [c for c in criteria if is_response_criterion(c) and not c.skipped]
    for c in compared:
        turns = response_turns(c)
        if not turns:
            continue
        inputs: dict[int | None, str | None] = {t.turn: t.user_input for t in overview.turns}
        rows = "".join(
            f'<tr data-turn="{esc(t["turn"])}"><td>{"–" if t["turn"] is None else int(t["turn"]) + 1}</td>'
            f'<td class="user">{esc(shorten(str(inputs.get(t["turn"]) or "–"), 1000))}</td>'
            f'<td>{esc(shorten(str(t["expected"] or ""), 1000))}</td>'
            f'<td>{esc(shorten(str(t["actual"] or ""), 1000))}</td><td class="num">{score_text(t["score"])}</td>'
            f'<td class="measure">{esc(t["why"])}</td></tr>'
            for t in turns
        )
        state = "pass" if c.passed else ("error" if c.error else "fail")
        tables.append(
            f'<table class="responses" data-criterion="{esc(c.criterion)}"><caption>{esc(c.criterion)} '
            f'<span class="badge c-{state}">{state}</span></caption><thead><tr><th>turn</th><th>user</th>'
            f'<th>expected</th><th>actual</th><th>score</th><th>measure</th></tr></thead><tbody>{rows}</tbody></table>'
        )
    if not tables:
        return ""
    return '<section><h2>Final responses</h2>' + "".join(tables) + "</section>"


def _revisions_section(revisions: Sequence[Revision]) -> str:
    """Every revision of the session's evaluation, newest first, superseded ones marked."""
    rows = "".join(
        f'<tr{" class=superseded" if r.superseded else ""}><td>{esc(r.revision)}</td><td>{esc(r.created_at)}</td>'
        f'<td>{esc(r.case_id or "–")}</td><td>{esc(_revision_verdict(r))}</td>'
        f'<td class="num">{score_text(r.score)}</td></tr>'
        for r in revisions
    )
    return (
        '<section><h2>Revisions</h2><p class="muted">a span that arrived after scoring re-opened the session; '
        'earlier results are kept</p><table><thead><tr><th>revision</th><th>scored at</th><th>case</th>'
        f'<th>result</th><th>score</th></tr></thead><tbody>{rows}</tbody></table></section>'
    )


def _revision_verdict(r: Revision) -> str:
    """The revision's verdict as the page words it."""
    if not r.case_id:
        return "unmatched"
    return VERDICT_LABELS.get(VERDICT_WORDS.get(r.verdict, ""), r.verdict).lower()
