"""HTML of the dashboard pages, rendered on the server.

Every value that comes from a span, a golden file or the query string is untrusted: it goes
through :func:`esc` (or :func:`attr_url`) before it reaches the markup, and nothing is ever
inserted as raw HTML. The pages carry no inline script or style, so the strict
Content-Security-Policy the app sends holds; ``static/ui.js`` only re-fetches pages for live
updates.
"""

from __future__ import annotations

import json
import time
from html import escape
from typing import Any, Mapping, Optional, Sequence
from urllib.parse import quote, urlencode

from ..read.coverage import CaseCoverage, Coverage
from ..read.labels import Calibration, CriterionAgreement
from ..read.sessions import RESULT_FILTERS, VERDICT_WORDS, SessionFilter
from ..read.spans import TraceTree
from ..read.unmatched import UnmatchedQueries
from ..report import (calibration_line, coverage_line, is_response_criterion, is_trajectory_criterion, measure_label,
                      response_turns, trajectory_rows)
from ..store.labels import MAX_NOTE_CHARS
from ..tablefit import middle_ellipsis
from .chart import pass_rate_series, render_chart

#: Longest value shown inline; longer ones are cut with a note of how much was left out.
MAX_SHOWN_CHARS = 4000
#: Session ids longer than this are shown with their middle elided (the whole id is the link's
#: title and target): ids that share a long prefix stay tellable apart by their ends.
SESSION_ID_CHARS = 36
VERDICT_LABELS = {"pass": "PASS", "fail": "FAIL", "not_evaluated": "NOT EVALUATED", "unmatched": "unmatched",
                  "pending": "pending"}
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


def esc(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def shorten(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit} more characters)"


def as_display(value: Any) -> str:
    """Text for any stored value: strings as they are, the rest as indented JSON."""
    if isinstance(value, str):
        return shorten(value)
    return shorten(json.dumps(value, ensure_ascii=False, indent=2, default=str))


class Links:
    """URLs of the dashboard under its mount point (``/ui`` in the collector)."""

    def __init__(self, prefix: str):
        self.prefix = prefix.rstrip("/")

    def home(self, params: Optional[Mapping[str, str]] = None) -> str:
        query = urlencode(params or {})
        return f"{self.prefix}/" + (f"?{query}" if query else "")

    def session(self, session_id: str) -> str:
        return f"{self.prefix}/sessions/{quote(session_id, safe='')}"

    def static(self, name: str) -> str:
        return f"{self.prefix}/static/{name}"

    def stamp(self) -> str:
        return f"{self.prefix}/api/stamp"

    def coverage(self, params: Optional[Mapping[str, str]] = None) -> str:
        query = urlencode({k: v for k, v in (params or {}).items() if v})
        return f"{self.prefix}/coverage" + (f"?{query}" if query else "")

    def clusters(self, params: Optional[Mapping[str, str]] = None) -> str:
        query = urlencode({k: v for k, v in (params or {}).items() if v})
        return f"{self.prefix}/clusters" + (f"?{query}" if query else "")

    def labels(self) -> str:
        return f"{self.prefix}/labels"

    def label_post(self) -> str:
        return f"{self.prefix}/label"


#: The pages in the header's navigation: (key a page passes as ``current``, link text).
NAV = (("sessions", "Sessions"), ("coverage", "Coverage"), ("clusters", "Unmatched clusters"), ("labels", "Labels"),
       ("release", "Release"))


def _nav(links: Links, current: str) -> str:
    targets = {"sessions": links.home(), "coverage": links.coverage(), "clusters": links.clusters(),
               "labels": links.labels(), "release": f"{links.prefix}/release"}
    items = []
    for key, text in NAV:
        mark = ' aria-current="page"' if key == current else ""
        items.append(f'<a href="{esc(targets[key])}" data-nav="{key}"{mark}>{esc(text)}</a>')
    return f'<nav class="site">{"".join(items)}</nav>'


def layout(links: Links, title: str, main: str, *, stamp: str = "", poll_seconds: float = 2.0,
           current: str = "") -> str:
    live = ('<span id="live" class="live" title="the page refreshes itself when new data arrives">live</span>'
            if stamp else "")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)} · otel-eval</title><link rel=\"icon\" href=\"data:,\">"
        f"<link rel=\"stylesheet\" href=\"{esc(links.static('ui.css'))}\">"
        f"<script defer src=\"{esc(links.static('ui.js'))}\"></script></head>"
        f"<body data-stamp=\"{esc(stamp)}\" data-stamp-url=\"{esc(links.stamp())}\" data-poll=\"{poll_seconds:g}\">"
        f"<header><a class=\"brand\" href=\"{esc(links.home())}\">otel-eval</a>{_nav(links, current)}"
        f"<span class=\"where\">{esc(title)}</span>{live}</header>"
        f"<main>{main}</main></body></html>\n"
    )


def _verdict_badge(verdict: str) -> str:
    return f'<span class="badge v-{esc(verdict)}">{esc(VERDICT_LABELS.get(verdict, verdict))}</span>'


def _judge_badge(state: Optional[str]) -> str:
    """"judge pending" (the verdict is the deterministic one until the judge answers) or "not
    sampled", marked apart from the verdict."""
    if not state:
        return ""
    kind = "pending" if state == "judge pending" else "not-sampled"
    return f' <span class="badge j-{kind}">{esc(state)}</span>'


def _score(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.2f}"


def _options(name: str, label: str, values: Sequence[str], chosen: str, all_label: str) -> str:
    items = [f'<option value=""{" selected" if not chosen else ""}>{esc(all_label)}</option>']
    if chosen and chosen not in values:
        values = [chosen, *values]
    for v in values:
        items.append(f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(v)}</option>')
    return f'<label>{esc(label)} <select name="{name}">{"".join(items)}</select></label>'


def sessions_page(links: Links, f: SessionFilter, rows: list[dict[str, Any]], total: int,
                  counts: Mapping[str, int], options: Mapping[str, list[str]],
                  pass_rates: Mapping[str, list[tuple[str, str, bool]]]) -> str:
    """The dashboard: result tabs with counts, filters, the sessions table and a chart per case."""
    tabs = []
    for name in ("", *RESULT_FILTERS):
        label = "all" if not name else name.replace("_", " ")
        count = counts.get(name or "all", 0)
        current = ' aria-current="page" class="tab current"' if name == f.result else ' class="tab"'
        href = links.home(f.query_params(result=name, page=""))
        tabs.append(f'<a{current} data-result="{name or "all"}" href="{esc(href)}">{esc(label)} '
                    f'<span class="count">{count}</span></a>')
    result_choices = "".join(
        f'<option value="{name}"{" selected" if name == f.result else ""}>{name or "any result"}</option>'
        for name in ("", *RESULT_FILTERS))
    filters = (
        f'<form class="filters" method="get" action="{esc(links.home())}">'
        + _options("case", "case", options.get("cases", []), f.case, "any case")
        + _options("version", "version", options.get("versions", []), f.version, "any version")
        + f'<label>result <select name="result">{result_choices}</select></label>'
        + f'<label>search <input type="search" name="q" value="{esc(f.text)}" placeholder="session id or query"></label>'
        + '<button type="submit">apply</button>'
        + (f' <a class="reset" href="{esc(links.home())}">reset</a>' if f.query_params() else "")
        + "</form>"
    )
    if rows:
        body = "".join(_session_row(links, r) for r in rows)
    else:
        body = '<tr><td colspan="9" class="empty">no sessions match these filters</td></tr>'
    table = (
        '<div class="scroll"><table class="sessions"><thead><tr><th title="last span received, UTC">last activity</th>'
        '<th>session</th><th>query</th><th>case</th><th>version</th>'
        '<th>result</th><th>score</th><th>failing criteria</th><th>status</th></tr></thead>'
        f'<tbody id="session-rows">{body}</tbody></table></div>'
    )
    first = (f.page - 1) * f.page_size + 1 if rows else 0
    pager = [f'<span class="shown">sessions {first}–{first + len(rows) - 1 if rows else 0} of {total}</span>']
    if f.page > 1:
        pager.append(f'<a href="{esc(links.home(f.query_params(page=f.page - 1)))}">← newer</a>')
    if f.page * f.page_size < total:
        pager.append(f'<a href="{esc(links.home(f.query_params(page=f.page + 1)))}">older →</a>')
    charts = []
    for case_id, points in pass_rates.items():
        width, series = pass_rate_series(points)
        passed = sum(1 for _, _, ok in points if ok)
        href = links.home({"case": case_id})
        charts.append(
            f'<figure class="case-chart" data-case="{esc(case_id)}"><figcaption><a href="{esc(href)}">{esc(case_id)}</a> '
            f'<span class="muted">{passed}/{len(points)} passed</span></figcaption>'
            f'{render_chart(width, series, title=f"pass rate over time of {case_id}")}</figure>'
        )
    chart_section = (
        '<section class="charts"><h2>Pass rate over time, per case</h2>'
        + ("".join(charts) if charts else '<p class="empty">no session has matched a golden case yet</p>')
        + "</section>"
    )
    return (f'<nav class="tabs">{"".join(tabs)}</nav>{filters}{table}<p class="pager">{" ".join(pager)}</p>'
            f'{chart_section}')


def _session_row(links: Links, r: Mapping[str, Any]) -> str:
    failing = ", ".join(r.get("failing_criteria") or []) or ("–" if r["verdict"] != "fail" else "")
    case = r.get("case_id") or "–"
    sid = r["session_id"]
    return (
        f'<tr class="row-{esc(r["verdict"])}" data-session="{esc(sid)}">'
        f'<td class="when">{_time_cell(r.get("last_received_ns"))}</td>'
        f'<td class="sid"><a href="{esc(links.session(sid))}" title="{esc(sid)}">'
        f'{esc(middle_ellipsis(sid, SESSION_ID_CHARS))}</a></td>'
        f'<td class="query">{esc(shorten(r.get("query") or "", 160)) or "–"}</td>'
        f'<td>{esc(case)}</td><td>{esc(r.get("agent_version") or "–")}</td>'
        f'<td>{_verdict_badge(r["verdict"])}{_judge_badge(r.get("judge"))}</td><td class="num">{_score(r.get("score") if r.get("case_id") else None)}</td>'
        f'<td class="failing">{esc(failing)}</td><td class="muted">{esc(r.get("status"))}</td></tr>'
    )


def _time_cell(received_ns: Optional[int]) -> str:
    """When a session last received a span: a ``<time>`` in UTC, to the second."""
    if not received_ns:
        return "–"
    seconds = int(received_ns) // 1_000_000_000
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
    return f'<time datetime="{stamp}">{time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))}</time>'


def session_page(links: Links, overview: Mapping[str, Any], traces: Sequence[TraceTree],
                 agent_data: Mapping[tuple[str, str, str], Mapping[str, Any]], *, csrf: str = "") -> str:
    """One session: verdict and match, the human label form with the labels and user feedback,
    criteria, the aligned trajectory, responses, revisions, spans. ``csrf``: the label form's token."""
    o = overview
    match = o.get("match") or {}
    evidence = match.get("evidence") or {}
    facts = [
        ("result", _verdict_badge(o["verdict"]) + (f' score {_score(o.get("score"))}'
                                                   if o["verdict"] in ("pass", "fail") else "")
         + _judge_badge(o.get("judge"))),
        ("golden case", esc(o.get("case_id") or "none matched")
         + (f' <span class="muted">({esc(o.get("eval_set_id"))})</span>' if o.get("eval_set_id") else "")),
        ("matched by", esc(o.get("matched_by") or "–")
         + (f' <span class="muted">score {float(o["match_score"]):.1f}</span>' if o.get("match_score") is not None else "")
         + (f' <span class="muted">— {esc(evidence.get("reason"))}</span>' if evidence.get("reason") else "")),
        ("query", esc(o.get("query") or "–")),
        ("agent version", esc(o.get("agent_version") or "–")),
        ("user", esc(o.get("user_id") or "–")),
        ("status", f'{esc(o.get("status"))} (revision {esc(o.get("revision"))}'
                   + (f', ended by {esc(o.get("end_reason"))}' if o.get("end_reason") else "") + ")"),
        ("spans / traces", f'{esc(o.get("span_count"))} / {esc(o.get("trace_count"))}'),
    ]
    if o.get("error"):
        facts.append(("error", f'<span class="error">{esc(o["error"])}</span>'))
    parts = ['<section class="facts"><dl>'
             + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl></section>"]
    parts.append(_review_section(links, o, csrf))
    parts.append(_criteria_section(o.get("criteria") or []))
    parts.append(_trajectory_section(o.get("criteria") or [], o))
    parts.append(_responses_section(o.get("criteria") or [], o))
    parts.append(_spans_section(traces, agent_data))
    if len(o.get("revisions") or []) > 1:
        parts.append(_revisions_section(o["revisions"]))
    return f'<h1 class="session-title">{esc(o["session_id"])}</h1>' + "".join(parts)


LABEL_WORDS = {"agree": "AGREE", "disagree": "DISAGREE"}
#: A stored verdict (what a label was given on) → the word the pages show.
_STORED_WORDS = {"passed": "PASS", "failed": "FAIL", "not_evaluated": "NOT EVALUATED", "unmatched": "unmatched"}


def _review_section(links: Links, o: Mapping[str, Any], csrf: str) -> str:
    """The human label: the latest one and the earlier ones, the form, and what users said."""
    head = '<section class="review" id="labels"><h2>Human label</h2>'
    feedback = _feedback_table(o.get("feedback") or [])
    if o.get("evaluation_id") is None:
        return head + '<p class="empty">not scored yet: there is no verdict to label</p>' + feedback + "</section>"
    verdict = VERDICT_LABELS.get(o["verdict"], o["verdict"])
    other = {"pass": "FAIL", "fail": "PASS"}.get(o["verdict"])
    wrong = f"it should be {other}" if other else "say why in the note"
    out = [head]
    history = list(o.get("labels") or [])
    if history:
        latest = history[0]
        stale = (f' <span class="muted">(given on revision {esc(latest["revision"])}; scored again since)</span>'
                 if latest.get("revision") != o.get("revision") else "")
        note = f': <q>{esc(shorten(latest["note"], 1000))}</q>' if latest.get("note") else ""
        out.append(f'<p class="latest-label" data-label="{esc(latest["label"])}">latest: '
                   f'<span class="badge l-{esc(latest["label"])}">{LABEL_WORDS.get(latest["label"], "")}</span> '
                   f'on {esc(_STORED_WORDS.get(latest["verdict"], latest["verdict"]))} by {esc(latest["who"])} at '
                   f'{esc(latest["created_at"])}{stale}{note}</p>')
        if len(history) > 1:
            items = "".join(
                f'<li><span class="badge l-{esc(h["label"])}">{LABEL_WORDS.get(h["label"], "")}</span> on '
                f'{esc(_STORED_WORDS.get(h["verdict"], h["verdict"]))} (revision {esc(h["revision"])}) by '
                f'{esc(h["who"])} at {esc(h["created_at"])}'
                + (f': <q>{esc(shorten(h["note"], 400))}</q>' if h.get("note") else "") + "</li>"
                for h in history[1:])
            out.append(f'<details class="label-history"><summary>{len(history) - 1} earlier label(s); '
                       f'the latest counts</summary><ul>{items}</ul></details>')
    else:
        out.append('<p class="muted">no label yet</p>')
    out.append(
        f'<form class="label-form" method="post" action="{esc(links.label_post())}">'
        f'<input type="hidden" name="session" value="{esc(o["session_id"])}">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        f'<label class="note">note <textarea name="note" rows="2" maxlength="{MAX_NOTE_CHARS}" '
        'placeholder="why (optional)"></textarea></label>'
        '<label class="by">your name <input name="by" maxlength="200" autocomplete="name"></label>'
        '<div class="buttons">'
        f'<button type="submit" name="label" value="agree" class="agree">Agree: {esc(verdict)} is right</button>'
        f'<button type="submit" name="label" value="disagree" class="disagree">Disagree: {esc(wrong)}</button>'
        "</div></form>")
    return "".join(out) + feedback + "</section>"


def _feedback_table(feedback: Sequence[Mapping[str, Any]]) -> str:
    """User feedback the app sent about the session (gen_ai.evaluation.result log records)."""
    if not feedback:
        return ""
    rows = "".join(
        f'<tr data-feedback="{esc(f.get("value"))}">'
        f'<td class="when">{_time_cell(f.get("time_ns") or f.get("received_ns"))}</td>'
        f'<td>{esc(f.get("name") or "(unnamed)")}</td><td><b>{esc(f.get("value"))}</b></td>'
        f'<td>{esc(shorten(f.get("explanation") or "", 400)) or "–"}</td></tr>'
        for f in feedback)
    return ('<h3>User feedback <span class="muted">(sent by the app as gen_ai.evaluation.result)</span></h3>'
            '<div class="scroll"><table class="feedback"><thead><tr><th>when</th><th>feedback</th><th>value</th>'
            f'<th>explanation</th></tr></thead><tbody>{rows}</tbody></table></div>')


def _criteria_section(criteria: Sequence[Mapping[str, Any]]) -> str:
    if not criteria:
        return '<section><h2>Criteria</h2><p class="empty">not scored yet</p></section>'
    rows = []
    for c in criteria:
        state = "skipped" if c["skipped"] else ("error" if c.get("error") else ("pass" if c["passed"] else "fail"))
        details = c.get("details") or {}
        reason = c.get("error") or (details.get("reason") if isinstance(details, dict) else "") or ""
        if not reason and is_trajectory_criterion(c):
            reason = _trajectory_summary(details)
        if not reason and is_response_criterion(dict(c)) and not c["skipped"]:
            reason = _response_summary(c)
        rows.append(
            f'<tr class="crit-{state}" data-criterion="{esc(c["criterion"])}"><td>{esc(c["criterion"])}</td>'
            f'<td><span class="badge c-{state}">{state}</span></td>'
            f'<td class="num">{"–" if c["skipped"] else _score(c.get("score"))}</td>'
            f'<td class="num">{esc(c.get("threshold"))}</td><td>{esc(shorten(str(reason), 400))}</td>'
            f'<td class="measure">{esc(measure_label(details))}</td></tr>'
        )
    return ('<section><h2>Criteria</h2><table class="criteria"><thead><tr><th>criterion</th><th>state</th>'
            '<th>score</th><th>threshold</th><th>why</th><th>measure</th></tr></thead><tbody>' + "".join(rows)
            + "</tbody></table></section>")


def _response_summary(criterion: Mapping[str, Any]) -> str:
    """Per turn what the response score measures, e.g. "turn 1: rouge1 precision 0.71 recall 0.56,
    score 0.62": the why of a response score, with the texts under Final responses."""
    parts = []
    for t in response_turns(dict(criterion)):
        head = "response" if t["turn"] is None else f"turn {int(t['turn']) + 1}"
        parts.append(f"{head}: {t['why']}, score {_score(t['score'])}")
    if parts and not criterion.get("passed"):
        parts[-1] += " (expected vs actual below, under Final responses)"
    return "; ".join(parts)


def _trajectory_summary(details: Mapping[str, Any]) -> str:
    """"1 missing, 1 extra call" over all turns: the why of a trajectory score at a glance."""
    counts: dict[str, int] = {}
    for turn in details.get("per_turn") or []:
        for row in trajectory_rows(turn):
            counts[row["kind"]] = counts.get(row["kind"], 0) + 1
    parts = [f"{counts[kind]} {TRAJECTORY_MARKS[kind][1]}" for kind in ("missing", "extra", "args", "order", "match")
             if counts.get(kind)]
    return ", ".join(parts)


def _call_text(call: Any) -> str:
    if not call:
        return ""
    if isinstance(call, dict):
        args = call.get("args") or {}
        inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in args.items())
        return shorten(f"{call.get('name')}({inner})", 600)
    return shorten(str(call), 600)


def _user_message(overview: Mapping[str, Any], turn: Any) -> str:
    """The turn's user message, shown above its trajectory (empty when the session has no such turn)."""
    inputs = {t.get("turn"): t.get("user_input") for t in overview.get("turns") or []}
    if turn not in inputs:
        return ""
    text = inputs[turn]
    label = f"turn {int(turn) + 1} · user: "
    return (f'<p class="user-msg" data-turn="{esc(turn)}">{esc(label)}<q>{esc(shorten(text, 1000))}</q></p>' if text
            else f'<p class="user-msg muted" data-turn="{esc(turn)}">{esc(label)}no user message in this turn</p>')


def _trajectory_section(criteria: Sequence[Mapping[str, Any]], overview: Mapping[str, Any]) -> str:
    """Expected vs actual, per turn, for each trajectory criterion (one table per distinct alignment:
    criteria computed over the same alignment share it), captioned with the measure the score is."""
    compared = [c for c in criteria if is_trajectory_criterion(dict(c)) and not c.get("skipped")
                and (c.get("details") or {}).get("per_turn")]
    head = '<section class="trajectory"><h2>Trajectory: expected vs actual</h2>'
    if not compared:
        why = ("no golden case matched this session" if overview.get("verdict") in ("unmatched", "pending")
               and not overview.get("case_id") else "the trajectory was not compared")
        return head + f'<p class="empty">{esc(why)}</p></section>'
    out = [head]
    shown: list[Any] = []
    said: set[Any] = set()
    for trajectory in compared:
        details = trajectory["details"]
        measure = measure_label(details)
        for turn in details["per_turn"]:
            kinds = trajectory_rows(turn)
            if (turn.get("turn"), kinds) in shown:
                continue
            shown.append((turn.get("turn"), kinds))
            label = f"turn {int(turn.get('turn', 0)) + 1}"
            if len(compared) > 1:
                label = f"{trajectory['criterion']} · {label}"
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
                f'<table class="traj" data-turn="{esc(number)}" data-criterion="{esc(trajectory["criterion"])}">'
                f'<caption>{esc(label)}</caption>'
                '<thead><tr><th></th><th>expected</th><th>actual</th><th>difference</th></tr></thead><tbody>'
                + ("".join(rows) or '<tr><td colspan="4" class="empty">no tool calls expected or made</td></tr>')
                + "</tbody></table>"
            )
    gaps = compared[0]["details"].get("turns") or {}
    if gaps.get("missing_turns") or gaps.get("unscored_extra_turns"):
        out.append(f'<p class="warn">turns: expected {esc(gaps.get("expected"))}, actual {esc(gaps.get("actual"))}'
                   f'; missing {esc(gaps.get("missing_turns"))}; extra {esc(gaps.get("unscored_extra_turns"))}</p>')
    return "".join(out) + "</section>"


def _responses_section(criteria: Sequence[Mapping[str, Any]], overview: Mapping[str, Any]) -> str:
    """Expected and actual final response per turn, with the user message, for every response
    criterion (``response_match``, ADK's ``response_match_score``, any of kind response_match)."""
    tables = []
    compared = [c for c in criteria if is_response_criterion(dict(c)) and not c.get("skipped")]
    for c in compared:
        turns = response_turns(dict(c))
        if not turns:
            continue
        inputs = {t.get("turn"): t.get("user_input") for t in overview.get("turns") or []}
        rows = "".join(
            f'<tr data-turn="{esc(t["turn"])}"><td>{"–" if t["turn"] is None else int(t["turn"]) + 1}</td>'
            f'<td class="user">{esc(shorten(str(inputs.get(t["turn"]) or "–"), 1000))}</td>'
            f'<td>{esc(shorten(str(t["expected"] or ""), 1000))}</td>'
            f'<td>{esc(shorten(str(t["actual"] or ""), 1000))}</td><td class="num">{_score(t["score"])}</td>'
            f'<td class="measure">{esc(t["why"])}</td></tr>'
            for t in turns
        )
        state = "pass" if c.get("passed") else ("error" if c.get("error") else "fail")
        tables.append(
            f'<table class="responses" data-criterion="{esc(c["criterion"])}"><caption>{esc(c["criterion"])} '
            f'<span class="badge c-{state}">{state}</span></caption><thead><tr><th>turn</th><th>user</th>'
            f'<th>expected</th><th>actual</th><th>score</th><th>measure</th></tr></thead><tbody>{rows}</tbody></table>')
    if not tables:
        return ""
    return '<section><h2>Final responses</h2>' + "".join(tables) + "</section>"


def _revisions_section(revisions: Sequence[Mapping[str, Any]]) -> str:
    rows = "".join(
        f'<tr{" class=superseded" if r["superseded"] else ""}><td>{esc(r["revision"])}</td><td>{esc(r["created_at"])}</td>'
        f'<td>{esc(r["case_id"] or "–")}</td><td>{esc(_revision_verdict(r))}</td>'
        f'<td class="num">{_score(r["score"])}</td></tr>'
        for r in revisions
    )
    return ('<section><h2>Revisions</h2><p class="muted">a span that arrived after scoring re-opened the session; '
            'earlier results are kept</p><table><thead><tr><th>revision</th><th>scored at</th><th>case</th>'
            f'<th>result</th><th>score</th></tr></thead><tbody>{rows}</tbody></table></section>')


def _revision_verdict(r: Mapping[str, Any]) -> str:
    if not r["case_id"]:
        return "unmatched"
    return VERDICT_LABELS.get(VERDICT_WORDS.get(r["verdict"], ""), r["verdict"]).lower()


def _ms(ns: int) -> str:
    ms = ns / 1e6
    return f"{ms:.0f} ms" if ms >= 100 else f"{ms:.2f} ms"


def _bar(start: int, end: int, tree: TraceTree, status: str) -> str:
    """A waterfall bar as SVG geometry (no inline style, so the strict CSP holds)."""
    span_total = max(1, tree.end_ns - tree.start_ns)
    x = 1000 * (start - tree.start_ns) / span_total
    width = max(3.0, 1000 * max(0, end - start) / span_total)
    return (f'<svg class="bar" viewBox="0 0 1000 10" preserveAspectRatio="none" aria-hidden="true">'
            f'<rect class="s-{esc(status)}" x="{min(x, 997):.1f}" y="0" width="{width:.1f}" height="10"/></svg>')


def _fields_list(fields: Mapping[str, Any]) -> str:
    if not fields:
        return '<p class="empty">empty</p>'
    return "<dl class=\"fields\">" + "".join(
        f"<dt>{esc(k)}</dt><dd><pre>{esc(as_display(v))}</pre></dd>" for k, v in fields.items()) + "</dl>"


def _spans_section(traces: Sequence[TraceTree], agent_data: Mapping[tuple[str, str, str], Mapping[str, Any]]) -> str:
    out = ['<section class="spans"><h2>Spans</h2>']
    if not traces:
        out.append('<p class="empty">no spans stored for this session</p>')
    for number, tree in enumerate(traces, 1):
        trace_level = agent_data.get((tree.trace_id, "", "trace"))
        if trace_level is None:
            trace_level = next((v for (t, _, level), v in agent_data.items() if t == tree.trace_id and level == "trace"),
                               None)
        out.append(f'<h3>trace {number} <code>{esc(tree.trace_id)}</code> '
                   f'<span class="muted">{len(tree.rows)} spans, {_ms(tree.end_ns - tree.start_ns)}</span></h3>')
        if trace_level:
            out.append(f'<details class="trace-agent-data" id="ad-{esc(tree.trace_id)}"><summary>trace AgentData '
                       f'(aggregated)</summary>{_fields_list(trace_level)}</details>')
        rows = []
        for row in tree.rows:
            s = row.span
            data = agent_data.get((s.trace_id, s.span_id, "span"), {})
            kind = row.span_type or "span"
            message = f' <span class="error">{esc(shorten(s.status_message, 200))}</span>' if s.status_message else ""
            events = ""
            if s.events:
                events = "<h4>events</h4>" + "".join(
                    f"<p><b>{esc(e.name)}</b> at +{_ms(e.time_ns - s.start_ns)}</p>{_fields_list(dict(e.attributes))}"
                    for e in s.events)
            rows.append(
                f'<tr class="span s-{esc(s.status)}" data-span="{esc(s.span_id)}" data-name="{esc(s.name)}">'
                f'<td class="name depth-{min(row.depth, 12)}">'
                f'<details id="sp-{esc(s.trace_id)}-{esc(s.span_id)}"><summary>{esc(shorten(s.name, 200))} '
                f'<span class="tag">{esc(kind)}</span>{message}</summary>'
                f'<h4>AgentData</h4>{_fields_list(data)}'
                f'<h4>attributes <span class="muted">({esc(row.convention or "no convention")})</span></h4>'
                f'{_fields_list(dict(s.attributes))}{events}</details></td>'
                f'<td class="num">{_ms(s.duration_ns)}</td><td class="timeline">{_bar(s.start_ns, s.end_ns, tree, s.status)}</td></tr>'
            )
        out.append('<table class="span-tree"><thead><tr><th>span (click for AgentData and attributes)</th>'
                   '<th>duration</th><th>timeline</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>")
    return "".join(out) + "</section>"


# --- coverage, clusters, labels -------------------------------------------------------------------

#: Days listed per case on the coverage page (the most recent; the JSON of ``report`` has them all).
COVERAGE_DAYS = 7
#: Example sessions linked per cluster.
CLUSTER_EXAMPLES = 5


def _since_form(action: str, since: str, extra: str = "") -> str:
    return (f'<form class="filters" method="get" action="{esc(action)}">'
            f'<label>since <input type="date" name="since" value="{esc(since[:10])}"></label>{extra}'
            '<button type="submit">apply</button>'
            + (f' <a class="reset" href="{esc(action)}">all time</a>' if since else "") + "</form>")


def coverage_page(links: Links, cov: Coverage, since: str = "") -> str:
    """Golden coverage: which cases live traffic exercises, by day and agent version, which it
    never does, and the unmatched share."""
    golden = [c for c in cov.cases if c.in_golden_set]
    exercised = [c for c in golden if c.sessions]
    share = "–" if cov.unmatched_share is None else f"{cov.unmatched_share:.0%}"
    unmatched_link = links.home({"result": "unmatched"})
    stats = (
        '<dl class="stats">'
        f'<div><dt>sessions</dt><dd data-stat="sessions">{cov.sessions}</dd></div>'
        f'<div><dt>cases exercised</dt><dd data-stat="exercised">{len(exercised)} of {len(golden)}</dd></div>'
        f'<div><dt>never exercised</dt><dd data-stat="never">{len(golden) - len(exercised)}</dd></div>'
        f'<div><dt>unmatched</dt><dd data-stat="unmatched"><a href="{esc(unmatched_link)}">{share}</a> '
        f'<span class="muted">({cov.unmatched} of {cov.sessions})</span></dd></div></dl>')
    rows = "".join(_coverage_row(links, c) for c in cov.exercised)
    table = ('<div class="scroll"><table class="coverage"><thead><tr><th>case</th><th>sessions</th>'
             f'<th>by agent version</th><th>by day (last {COVERAGE_DAYS})</th><th class="wide-only">last seen</th>'
             '<th class="wide-only">eval set</th></tr></thead><tbody>'
             + (rows or '<tr><td colspan="6" class="empty">no session matched a golden case in this window</td></tr>')
             + "</tbody></table></div>")
    never = cov.never_exercised
    never_list = "".join(
        f'<li data-case="{esc(c.eval_id)}"><a href="{esc(links.home({"case": c.eval_id}))}">{esc(c.eval_id)}</a>'
        + (f' <span class="muted">{esc(shorten(c.query or c.name or "", 160))}</span>' if (c.query or c.name) else "")
        + (f' <span class="tag">{esc(c.eval_set_id)}</span>' if c.eval_set_id else "") + "</li>"
        for c in never)
    never_section = ('<section class="never"><h2>Never exercised '
                     f'<span class="count">{len(never)}</span></h2>'
                     + (f'<ul class="cases">{never_list}</ul>' if never
                        else '<p class="empty">every golden case was matched at least once</p>') + "</section>")
    return (f'<h1>Golden coverage</h1>{_since_form(links.coverage(), since)}'
            f'<p class="summary">{esc(coverage_line(cov))}</p>{stats}'
            f'<section><h2>Cases live traffic exercises</h2>{table}</section>{never_section}')


def _coverage_row(links: Links, c: CaseCoverage) -> str:
    days = sorted(c.by_day.items(), reverse=True)
    shown = "".join(f'<li><time datetime="{esc(d)}">{esc(d)}</time> {n}</li>' for d, n in days[:COVERAGE_DAYS])
    more = f'<li class="muted">+{len(days) - COVERAGE_DAYS} earlier day(s)</li>' if len(days) > COVERAGE_DAYS else ""
    versions = "".join(f"<li>{esc(v)} {n}</li>" for v, n in sorted(c.by_version.items()))
    gone = "" if c.in_golden_set else ' <span class="tag">no longer in a golden set</span>'
    return (f'<tr data-case="{esc(c.eval_id)}"><td class="case"><a href="{esc(links.home({"case": c.eval_id}))}">'
            f'{esc(c.eval_id)}</a>{gone}</td><td class="num">{c.sessions}</td>'
            f'<td><ul class="inline">{versions}</ul></td><td><ul class="inline days">{shown}{more}</ul></td>'
            f'<td class="wide-only when">{esc((c.last_seen or "–")[:16].replace("T", " "))}</td>'
            f'<td class="wide-only">{esc(c.eval_set_id or "–")}</td></tr>')


def clusters_page(links: Links, clusters: Sequence[Any], found: UnmatchedQueries, least: int, since: str = "") -> str:
    """Unmatched sessions clustered by query (:func:`otel_eval.golden_suggest.cluster_sessions`),
    most sessions first: each with its phrasings and example sessions."""
    clustered = sum(len(c.sessions) for c in clusters)
    window = f" since {since}" if since else ""
    capped = (f" (the {len(found.sessions)} most recent of {found.with_query} with a query are clustered)"
              if found.capped else "")
    summary = (f"{found.total} unmatched session(s){window}, {found.with_query} with a query{capped}; {clustered} of "
               f"them in {len(clusters)} cluster(s) of at least {least}")
    extra = f'<label>at least <input type="number" name="min" min="1" max="1000" value="{least}"> sessions</label>'
    items = []
    for rank, c in enumerate(clusters, 1):
        phrasings = "".join(f'<li><q>{esc(shorten(q, 300))}</q> <span class="muted">×{n}</span></li>'
                            for q, n in c.phrasings)
        examples = "".join(
            f'<li><a href="{esc(links.session(s.session_id))}" title="{esc(s.session_id)}">'
            f'{esc(middle_ellipsis(s.session_id, SESSION_ID_CHARS))}</a></li>'
            for s in list(reversed(c.sessions))[:CLUSTER_EXAMPLES])
        items.append(
            f'<article class="cluster" data-sessions="{len(c.sessions)}" data-query="{esc(c.query)}">'
            f'<h3><span class="rank">#{rank}</span> <q>{esc(shorten(c.query, 300))}</q> '
            f'<span class="count">{len(c.sessions)} session{"s" if len(c.sessions) != 1 else ""}</span></h3>'
            f'<h4>phrasings</h4><ul class="phrasings">{phrasings}</ul>'
            f'<h4>example sessions</h4><ul class="inline examples">{examples}</ul></article>')
    body = "".join(items) or (f'<p class="empty">no cluster of at least {least} unmatched sessions'
                              f'{window}</p>')
    hint = (f'<p class="muted">Draft golden cases from these: <code>otel-eval golden suggest --min-sessions '
            f'{least}{" --since " + esc(since) if since else ""} -o draft.evalset.json</code></p>')
    return (f'<h1>Unmatched clusters</h1>{_since_form(links.clusters(), since, extra)}'
            f'<p class="summary">{esc(summary)}</p><div class="clusters">{body}</div>{hint}')


def labels_page(links: Links, cal: Calibration, recent: Sequence[Mapping[str, Any]]) -> str:
    """Judge calibration per criterion, user feedback per verdict, and the latest labels."""
    def row(c: CriterionAgreement, kind: str = "") -> str:
        rate = "–" if c.rate is None else f"{c.rate:.0%}"
        return (f'<tr data-criterion="{esc(c.criterion)}"{kind}><td>{esc(c.criterion)}</td>'
                f'<td class="num">{c.sessions}</td><td class="num">{c.agree}</td><td class="num"><b>{rate}</b></td>'
                f'<td class="num">{c.false_pass}</td><td class="num">{c.false_fail}</td></tr>')

    table = ""
    if cal.verdict.sessions or cal.criteria:
        table = ('<div class="scroll"><table class="calibration"><thead><tr><th>criterion</th>'
                 '<th title="labelled sessions where it ran">labelled</th><th>agree</th><th>agreement</th>'
                 '<th title="it passed; the label says the session failed">passed, should fail</th>'
                 '<th title="it failed; the label says the session passed">failed, should pass</th></tr></thead>'
                 '<tbody>' + row(cal.verdict, ' class="verdict"') + "".join(row(c) for c in cal.criteria)
                 + "</tbody></table></div>")
    feedback = ""
    if cal.feedback:
        rows = "".join(f'<tr data-outcome="{esc(f.outcome)}"><td>{esc(f.outcome.replace("_", " "))}</td>'
                       f'<td>{esc(f.name)}</td><td>{esc(f.value)}</td><td class="num">{f.count}</td></tr>'
                       for f in cal.feedback)
        feedback = ('<section><h2>User feedback by verdict</h2><div class="scroll"><table class="feedback-counts">'
                    '<thead><tr><th>verdict</th><th>feedback</th><th>value</th><th>count</th></tr></thead>'
                    f'<tbody>{rows}</tbody></table></div></section>')
    latest = "".join(
        f'<tr data-session="{esc(r["session_id"])}"><td class="when">{esc(r["created_at"][:16].replace("T", " "))}</td>'
        f'<td class="sid"><a href="{esc(links.session(r["session_id"]))}" title="{esc(r["session_id"])}">'
        f'{esc(middle_ellipsis(r["session_id"], SESSION_ID_CHARS))}</a></td>'
        f'<td><span class="badge l-{esc(r["label"])}">{LABEL_WORDS.get(r["label"], "")}</span></td>'
        f'<td>{esc(_STORED_WORDS.get(r["verdict"], r["verdict"]))}</td><td>{esc(r["who"])}</td>'
        f'<td>{esc(shorten(r.get("note") or "", 300)) or "–"}</td></tr>'
        for r in recent)
    latest_section = ('<section><h2>Latest labels</h2>'
                      + ('<div class="scroll"><table class="labels"><thead><tr><th>when</th><th>session</th>'
                         '<th>label</th><th>on verdict</th><th>by</th><th>note</th></tr></thead>'
                         f'<tbody>{latest}</tbody></table></div>' if recent
                         else '<p class="empty">no label yet: label a session from its page, or with '
                              '<code>otel-eval label SESSION agree|disagree</code></p>') + "</section>")
    return ('<h1>Human labels</h1>'
            f'<p class="summary">{esc(calibration_line(cal))}</p>'
            '<section><h2>Judge calibration</h2><p class="muted">Per criterion, of the labelled sessions where it '
            'ran: how often its pass/fail agrees with the verdict the label says is right (agree: the verdict '
            'stands; disagree: the opposite), against each session\'s current evaluation.</p>'
            + (table or '<p class="empty">no labelled session with a pass/fail verdict yet</p>') + "</section>"
            + feedback + latest_section)


def message_page(links: Links, title: str, message: str, *, login: bool = False) -> str:
    body = f'<h1>{esc(title)}</h1><p>{esc(message)}</p>'
    if login:
        body += (f'<form class="login" method="post" action="{esc(links.prefix)}/login">'
                 '<label>token <input type="password" name="token" autocomplete="current-password" autofocus></label>'
                 '<button type="submit">open the dashboard</button></form>')
    body += f'<p><a href="{esc(links.home())}">back to the sessions</a></p>'
    return layout(links, title, body)
