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

from ..read.sessions import RESULT_FILTERS, VERDICT_WORDS, SessionFilter
from ..read.spans import TraceTree
from ..report import is_response_criterion, is_trajectory_criterion, measure_label, response_turns, trajectory_rows
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


def layout(links: Links, title: str, main: str, *, stamp: str = "", poll_seconds: float = 2.0) -> str:
    live = ('<span id="live" class="live" title="the page refreshes itself when new data arrives">live</span>'
            if stamp else "")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)} · otel-eval</title><link rel=\"icon\" href=\"data:,\">"
        f"<link rel=\"stylesheet\" href=\"{esc(links.static('ui.css'))}\">"
        f"<script defer src=\"{esc(links.static('ui.js'))}\"></script></head>"
        f"<body data-stamp=\"{esc(stamp)}\" data-stamp-url=\"{esc(links.stamp())}\" data-poll=\"{poll_seconds:g}\">"
        f"<header><a class=\"brand\" href=\"{esc(links.home())}\">otel-eval</a>"
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
        '<table class="sessions"><thead><tr><th title="last span received, UTC">last activity</th>'
        '<th>session</th><th>query</th><th>case</th><th>version</th>'
        '<th>result</th><th>score</th><th>failing criteria</th><th>status</th></tr></thead>'
        f'<tbody id="session-rows">{body}</tbody></table>'
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
                 agent_data: Mapping[tuple[str, str, str], Mapping[str, Any]]) -> str:
    """One session: verdict and match, criteria, the aligned trajectory, responses, revisions, spans."""
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
    parts.append(_criteria_section(o.get("criteria") or []))
    parts.append(_trajectory_section(o.get("criteria") or [], o))
    parts.append(_responses_section(o.get("criteria") or [], o))
    parts.append(_spans_section(traces, agent_data))
    if len(o.get("revisions") or []) > 1:
        parts.append(_revisions_section(o["revisions"]))
    return f'<h1 class="session-title">{esc(o["session_id"])}</h1>' + "".join(parts)


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


def message_page(links: Links, title: str, message: str, *, login: bool = False) -> str:
    body = f'<h1>{esc(title)}</h1><p>{esc(message)}</p>'
    if login:
        body += (f'<form class="login" method="post" action="{esc(links.prefix)}/login">'
                 '<label>token <input type="password" name="token" autocomplete="current-password" autofocus></label>'
                 '<button type="submit">open the dashboard</button></form>')
    body += f'<p><a href="{esc(links.home())}">back to the sessions</a></p>'
    return layout(links, title, body)
