"""The dashboard's home: result tabs with counts, filters, the sessions table and a pass-rate
chart per golden case. Values are escaped as :mod:`.markup` says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..read.sessions import RESULT_FILTERS, FilterOptions, SessionFilter, SessionSummary
from ..tablefit import middle_ellipsis
from .chart import pass_rate_series, render_chart
from .markup import SESSION_ID_CHARS, Links, esc, judge_badge, score_text, shorten, time_cell, verdict_badge


def _options(name: str, label: str, values: Sequence[str], chosen: str, all_label: str) -> str:
    items = [f'<option value=""{" selected" if not chosen else ""}>{esc(all_label)}</option>']
    if chosen and chosen not in values:
        values = [chosen, *values]
    for v in values:
        items.append(f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(v)}</option>')
    return f'<label>{esc(label)} <select name="{name}">{"".join(items)}</select></label>'


def sessions_page(
    links: Links,
    f: SessionFilter,
    rows: Sequence[SessionSummary],
    total: int,
    counts: Mapping[str, int],
    options: FilterOptions,
    pass_rates: Mapping[str, list[tuple[str, str, bool]]],
) -> str:
    """The dashboard: result tabs with counts, filters, the sessions table and a chart per case."""
    tabs = []
    for name in ("", *RESULT_FILTERS):
        label = "all" if not name else name.replace("_", " ")
        count = counts.get(name or "all", 0)
        current = ' aria-current="page" class="tab current"' if name == f.result else ' class="tab"'
        href = links.home(f.query_params(result=name, page=""))
        tabs.append(
            f'<a{current} data-result="{name or "all"}" href="{esc(href)}">{esc(label)} '
            f'<span class="count">{count}</span></a>'
        )
    result_choices = "".join(
        f'<option value="{name}"{" selected" if name == f.result else ""}>{name or "any result"}</option>'
        for name in ("", *RESULT_FILTERS)
    )
    filters = (
        f'<form class="filters" method="get" action="{esc(links.home())}">'
        + _options("case", "case", options.cases, f.case, "any case")
        + _options("version", "version", options.versions, f.version, "any version")
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
    return (
        f'<nav class="tabs">{"".join(tabs)}</nav>{filters}{table}<p class="pager">{" ".join(pager)}</p>{chart_section}'
    )


def _session_row(links: Links, r: SessionSummary) -> str:
    failing = ", ".join(r.failing_criteria) or ("–" if r.verdict != "fail" else "")
    case = r.case_id or "–"
    sid = r.session_id
    return (
        f'<tr class="row-{esc(r.verdict)}" data-session="{esc(sid)}">'
        f'<td class="when">{time_cell(r.last_received_ns)}</td>'
        f'<td class="sid"><a href="{esc(links.session(sid))}" title="{esc(sid)}">'
        f'{esc(middle_ellipsis(sid, SESSION_ID_CHARS))}</a></td>'
        f'<td class="query">{esc(shorten(r.query or "", 160)) or "–"}</td>'
        f'<td>{esc(case)}</td><td>{esc(r.agent_version or "–")}</td>'
        f'<td>{verdict_badge(r.verdict)}{judge_badge(r.judge)}</td><td class="num">{score_text(r.score if r.case_id else None)}</td>'
        f'<td class="failing">{esc(failing)}</td><td class="muted">{esc(r.status)}</td></tr>'
    )
