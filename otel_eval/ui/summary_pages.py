"""The pages over many sessions: golden coverage, unmatched query clusters, and human labels with
the judge's calibration against them. Values are escaped as :mod:`.markup` says.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..read.coverage import CaseCoverage, Coverage
from ..read.labels import Calibration, CriterionAgreement, RecentLabel
from ..read.unmatched import UnmatchedQueries
from ..report import calibration_line, coverage_line
from ..tablefit import middle_ellipsis
from .markup import LABEL_WORDS, SESSION_ID_CHARS, STORED_VERDICT_WORDS, Links, esc, shorten

#: Days listed per case on the coverage page (the most recent; the JSON of ``report`` has them all).
COVERAGE_DAYS = 7
#: Example sessions linked per cluster.
CLUSTER_EXAMPLES = 5


def _since_form(action: str, since: str, extra: str = "") -> str:
    return (
        f'<form class="filters" method="get" action="{esc(action)}">'
        f'<label>since <input type="date" name="since" value="{esc(since[:10])}"></label>{extra}'
        '<button type="submit">apply</button>'
        + (f' <a class="reset" href="{esc(action)}">all time</a>' if since else "")
        + "</form>"
    )


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
        f'<span class="muted">({cov.unmatched} of {cov.sessions})</span></dd></div></dl>'
    )
    rows = "".join(_coverage_row(links, c) for c in cov.exercised)
    table = (
        '<div class="scroll"><table class="coverage"><thead><tr><th>case</th><th>sessions</th>'
        f'<th>by agent version</th><th>by day (last {COVERAGE_DAYS})</th><th class="wide-only">last seen</th>'
        '<th class="wide-only">eval set</th></tr></thead><tbody>'
        + (rows or '<tr><td colspan="6" class="empty">no session matched a golden case in this window</td></tr>')
        + "</tbody></table></div>"
    )
    never = cov.never_exercised
    never_list = "".join(
        f'<li data-case="{esc(c.eval_id)}"><a href="{esc(links.home({"case": c.eval_id}))}">{esc(c.eval_id)}</a>'
        + (f' <span class="muted">{esc(shorten(c.query or c.name or "", 160))}</span>' if (c.query or c.name) else "")
        + (f' <span class="tag">{esc(c.eval_set_id)}</span>' if c.eval_set_id else "")
        + "</li>"
        for c in never
    )
    never_section = (
        '<section class="never"><h2>Never exercised '
        f'<span class="count">{len(never)}</span></h2>'
        + (
            f'<ul class="cases">{never_list}</ul>'
            if never
            else '<p class="empty">every golden case was matched at least once</p>'
        )
        + "</section>"
    )
    return (
        f'<h1>Golden coverage</h1>{_since_form(links.coverage(), since)}'
        f'<p class="summary">{esc(coverage_line(cov))}</p>{stats}'
        f'<section><h2>Cases live traffic exercises</h2>{table}</section>{never_section}'
    )


def _coverage_row(links: Links, c: CaseCoverage) -> str:
    days = sorted(c.by_day.items(), reverse=True)
    shown = "".join(f'<li><time datetime="{esc(d)}">{esc(d)}</time> {n}</li>' for d, n in days[:COVERAGE_DAYS])
    more = f'<li class="muted">+{len(days) - COVERAGE_DAYS} earlier day(s)</li>' if len(days) > COVERAGE_DAYS else ""
    versions = "".join(f"<li>{esc(v)} {n}</li>" for v, n in sorted(c.by_version.items()))
    gone = "" if c.in_golden_set else ' <span class="tag">no longer in a golden set</span>'
    return (
        f'<tr data-case="{esc(c.eval_id)}"><td class="case"><a href="{esc(links.home({"case": c.eval_id}))}">'
        f'{esc(c.eval_id)}</a>{gone}</td><td class="num">{c.sessions}</td>'
        f'<td><ul class="inline">{versions}</ul></td><td><ul class="inline days">{shown}{more}</ul></td>'
        f'<td class="wide-only when">{esc((c.last_seen or "–")[:16].replace("T", " "))}</td>'
        f'<td class="wide-only">{esc(c.eval_set_id or "–")}</td></tr>'
    )


def clusters_page(links: Links, clusters: Sequence[Any], found: UnmatchedQueries, least: int, since: str = "") -> str:
    """Unmatched sessions clustered by query (:func:`otel_eval.golden_suggest.cluster_sessions`),
    most sessions first: each with its phrasings and example sessions."""
    clustered = sum(len(c.sessions) for c in clusters)
    window = f" since {since}" if since else ""
    capped = (
        f" (the {len(found.sessions)} most recent of {found.with_query} with a query are clustered)"
        if found.capped
        else ""
    )
    summary = (
        f"{found.total} unmatched session(s){window}, {found.with_query} with a query{capped}; {clustered} of "
        f"them in {len(clusters)} cluster(s) of at least {least}"
    )
    extra = f'<label>at least <input type="number" name="min" min="1" max="1000" value="{least}"> sessions</label>'
    items = []
    for rank, c in enumerate(clusters, 1):
        phrasings = "".join(
            f'<li><q>{esc(shorten(q, 300))}</q> <span class="muted">×{n}</span></li>' for q, n in c.phrasings
        )
        examples = "".join(
            f'<li><a href="{esc(links.session(s.session_id))}" title="{esc(s.session_id)}">'
            f'{esc(middle_ellipsis(s.session_id, SESSION_ID_CHARS))}</a></li>'
            for s in list(reversed(c.sessions))[:CLUSTER_EXAMPLES]
        )
        items.append(
            f'<article class="cluster" data-sessions="{len(c.sessions)}" data-query="{esc(c.query)}">'
            f'<h3><span class="rank">#{rank}</span> <q>{esc(shorten(c.query, 300))}</q> '
            f'<span class="count">{len(c.sessions)} session{"s" if len(c.sessions) != 1 else ""}</span></h3>'
            f'<h4>phrasings</h4><ul class="phrasings">{phrasings}</ul>'
            f'<h4>example sessions</h4><ul class="inline examples">{examples}</ul></article>'
        )
    body = "".join(items) or (f'<p class="empty">no cluster of at least {least} unmatched sessions{window}</p>')
    hint = (
        f'<p class="muted">Draft golden cases from these: <code>otel-eval golden suggest --min-sessions '
        f'{least}{" --since " + esc(since) if since else ""} -o draft.evalset.json</code></p>'
    )
    return (
        f'<h1>Unmatched clusters</h1>{_since_form(links.clusters(), since, extra)}'
        f'<p class="summary">{esc(summary)}</p><div class="clusters">{body}</div>{hint}'
    )


def labels_page(links: Links, cal: Calibration, recent: Sequence[RecentLabel]) -> str:
    """Judge calibration per criterion, user feedback per verdict, and the latest labels."""

    def row(c: CriterionAgreement, kind: str = "") -> str:
        rate = "–" if c.rate is None else f"{c.rate:.0%}"
        return (
            f'<tr data-criterion="{esc(c.criterion)}"{kind}><td>{esc(c.criterion)}</td>'
            f'<td class="num">{c.sessions}</td><td class="num">{c.agree}</td><td class="num"><b>{rate}</b></td>'
            f'<td class="num">{c.false_pass}</td><td class="num">{c.false_fail}</td></tr>'
        )

    table = ""
    if cal.verdict.sessions or cal.criteria:
        table = (
            '<div class="scroll"><table class="calibration"><thead><tr><th>criterion</th>'
            '<th title="labelled sessions where it ran">labelled</th><th>agree</th><th>agreement</th>'
            '<th title="it passed; the label says the session failed">passed, should fail</th>'
            '<th title="it failed; the label says the session passed">failed, should pass</th></tr></thead>'
            '<tbody>'
            + row(cal.verdict, ' class="verdict"')
            + "".join(row(c) for c in cal.criteria)
            + "</tbody></table></div>"
        )
    feedback = ""
    if cal.feedback:
        rows = "".join(
            f'<tr data-outcome="{esc(f.outcome)}"><td>{esc(f.outcome.replace("_", " "))}</td>'
            f'<td>{esc(f.name)}</td><td>{esc(f.value)}</td><td class="num">{f.count}</td></tr>'
            for f in cal.feedback
        )
        feedback = (
            '<section><h2>User feedback by verdict</h2><div class="scroll"><table class="feedback-counts">'
            '<thead><tr><th>verdict</th><th>feedback</th><th>value</th><th>count</th></tr></thead>'
            f'<tbody>{rows}</tbody></table></div></section>'
        )
    latest = "".join(
        f'<tr data-session="{esc(r.session_id)}"><td class="when">{esc(r.created_at[:16].replace("T", " "))}</td>'
        f'<td class="sid"><a href="{esc(links.session(r.session_id))}" title="{esc(r.session_id)}">'
        f'{esc(middle_ellipsis(r.session_id, SESSION_ID_CHARS))}</a></td>'
        f'<td><span class="badge l-{esc(r.label)}">{LABEL_WORDS.get(r.label, "")}</span></td>'
        f'<td>{esc(STORED_VERDICT_WORDS.get(r.verdict, r.verdict))}</td><td>{esc(r.who)}</td>'
        f'<td>{esc(shorten(r.note or "", 300)) or "–"}</td></tr>'
        for r in (item.stored for item in recent)
    )
    latest_section = (
        '<section><h2>Latest labels</h2>'
        + (
            '<div class="scroll"><table class="labels"><thead><tr><th>when</th><th>session</th>'
            '<th>label</th><th>on verdict</th><th>by</th><th>note</th></tr></thead>'
            f'<tbody>{latest}</tbody></table></div>'
            if recent
            else '<p class="empty">no label yet: label a session from its page, or with '
            '<code>otel-eval label SESSION agree|disagree</code></p>'
        )
        + "</section>"
    )
    return (
        '<h1>Human labels</h1>'
        f'<p class="summary">{esc(calibration_line(cal))}</p>'
        '<section><h2>Judge calibration</h2><p class="muted">Per criterion, of the labelled sessions where it '
        'ran: how often its pass/fail agrees with the verdict the label says is right (agree: the verdict '
        'stands; disagree: the opposite), against each session\'s current evaluation.</p>'
        + (table or '<p class="empty">no labelled session with a pass/fail verdict yet</p>')
        + "</section>"
        + feedback
        + latest_section
    )
