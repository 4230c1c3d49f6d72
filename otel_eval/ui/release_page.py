"""The dashboard's *Release* page: may the candidate roll out (the release gate), and did it
change the path it takes through a case (trajectory drift)? The same numbers as ``otel-eval
compare --gate`` and ``compare``'s Path changes, for two versions picked on the page."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

from ..drift import DriftResult
from ..gate import METHOD, NOT_ENOUGH_EVIDENCE, PROMOTE, ROLL_BACK, GateResult
from .markup import Links, esc

_DECISION = {
    PROMOTE: ("promote", "pass"),
    ROLL_BACK: ("roll back", "fail"),
    NOT_ENOUGH_EVIDENCE: ("not enough evidence yet", "none"),
}


def release_link(links: Links, baseline: str = "", candidate: str = "") -> str:
    """The release page comparing ``baseline`` and ``candidate`` (either left out when empty)."""
    query = urlencode({k: v for k, v in (("baseline", baseline), ("candidate", candidate)) if v})
    return f"{links.prefix}/release" + (f"?{query}" if query else "")


def _version_form(links: Links, versions: Sequence[str], baseline: str, candidate: str) -> str:
    def select(name: str, chosen: str) -> str:
        options = "".join(
            f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(v)}</option>' for v in versions
        )
        return f'<label>{name} <select name="{name}">{options}</select></label>'

    return (
        f'<form class="filters" method="get" action="{esc(release_link(links))}">'
        f'{select("baseline", baseline)} {select("candidate", candidate)} <button type="submit">Compare</button></form>'
    )


def release_page(
    links: Links,
    versions: dict[str, int],
    baseline: str,
    candidate: str,
    gate: GateResult | None,
    drift: Sequence[DriftResult],
) -> str:
    """``versions``: agent version → sessions; ``gate`` None when fewer than two versions exist."""
    head = "<h1>Release</h1>"
    if gate is None:
        return head + '<p class="empty">two agent versions are needed (service.version / gen_ai.agent.version)</p>'
    form = _version_form(links, list(versions), baseline, candidate)
    word, css = _DECISION[gate.decision]
    verdict = (
        f'<p class="summary"><span class="badge {css}" data-decision="{esc(gate.decision)}">{esc(word)}</span> '
        f'{esc(candidate)} against {esc(baseline)}: {esc(gate.reason)}</p>'
        f'<p class="muted">{esc(METHOD)}; margin {gate.margin:.0%}, confidence {gate.confidence:.0%}</p>'
    )
    rows = []
    for t in [gate.overall, *gate.cases]:
        if t is None:
            continue

        def rate(p: int, n: int) -> str:
            return f"{p / n:.0%} ({p}/{n})" if n else "–"

        decision = _DECISION[t.decision][0] if t.examined else f"fewer than {gate.min_sessions} sessions"
        rows.append(
            f'<tr data-case="{esc(t.key)}"><td>{esc(t.key)}</td><td>{rate(t.baseline_passed, t.baseline_total)}'
            f'</td><td>{rate(t.candidate_passed, t.candidate_total)}</td>'
            f'<td>[{t.interval[0]:+.2f}, {t.interval[1]:+.2f}]</td><td>{esc(decision)}</td></tr>'
        )
    gate_table = (
        '<div class="scroll"><table><thead><tr><th>case</th><th>baseline pass</th><th>candidate pass</th>'
        '<th>Δ interval</th><th>decision</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table></div>"
    )
    changed = [r for r in drift if r.significant]
    tested = sum(1 for r in drift if r.p_value is not None)
    drift_rows = "".join(
        f'<tr data-drift="{esc(r.key)}"><td>{esc(r.key)}</td><td>{r.p_value:.1e}</td>'
        f'<td>{esc(r.changed_paths[0]["path"])}</td>'
        f'<td>{(r.changed_paths[0]["baseline_share"] or 0):.0%} → {(r.changed_paths[0]["candidate_share"] or 0):.0%}</td></tr>'
        for r in changed
    )
    drift_section = (
        f'<section><h2>Tool paths <span class="count">{len(changed)} of {tested} changed</span></h2>'
        '<p class="muted">Pearson\'s chi-square test of homogeneity per case, Benjamini-Hochberg at 5% '
        'across cases: a changed path is not a failure, it says where to look.</p>'
        + (
            '<div class="scroll"><table><thead><tr><th>case</th><th>p</th><th>path that moved most</th>'
            f'<th>share</th></tr></thead><tbody>{drift_rows}</tbody></table></div>'
            if changed
            else '<p class="empty">no case changed its tool paths significantly</p>'
        )
        + "</section>"
    )
    return f'{head}{form}{verdict}<section><h2>Release gate</h2>{gate_table}</section>{drift_section}'
