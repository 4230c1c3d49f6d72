"""A session's spans on its page: per trace a tree of spans with a waterfall bar each, every span
opening to its AgentData, attributes and events. Values are escaped as :mod:`.markup` says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..read.spans import AgentDataKey, TraceTree
from .markup import as_display, esc, shorten


def _ms(ns: int) -> str:
    ms = ns / 1e6
    return f"{ms:.0f} ms" if ms >= 100 else f"{ms:.2f} ms"


def _bar(start: int, end: int, tree: TraceTree, status: str) -> str:
    """A waterfall bar as SVG geometry (no inline style, so the strict CSP holds)."""
    span_total = max(1, tree.end_ns - tree.start_ns)
    x = 1000 * (start - tree.start_ns) / span_total
    width = max(3.0, 1000 * max(0, end - start) / span_total)
    return (
        f'<svg class="bar" viewBox="0 0 1000 10" preserveAspectRatio="none" aria-hidden="true">'
        f'<rect class="s-{esc(status)}" x="{min(x, 997):.1f}" y="0" width="{width:.1f}" height="10"/></svg>'
    )


def _fields_list(fields: Mapping[str, object]) -> str:
    if not fields:
        return '<p class="empty">empty</p>'
    return (
        "<dl class=\"fields\">"
        + "".join(f"<dt>{esc(k)}</dt><dd><pre>{esc(as_display(v))}</pre></dd>" for k, v in fields.items())
        + "</dl>"
    )


def spans_section(traces: Sequence[TraceTree], agent_data: Mapping[AgentDataKey, Mapping[str, object]]) -> str:
    """The Spans section, a span tree per trace; ``agent_data`` as
    :func:`~otel_eval.read.spans.session_agent_data` reads it."""
    out = ['<section class="spans"><h2>Spans</h2>']
    if not traces:
        out.append('<p class="empty">no spans stored for this session</p>')
    for number, tree in enumerate(traces, 1):
        trace_level = agent_data.get(AgentDataKey(tree.trace_id, "", "trace"))
        if trace_level is None:
            trace_level = next(
                (v for (t, _, level), v in agent_data.items() if t == tree.trace_id and level == "trace"), None
            )
        out.append(
            f'<h3>trace {number} <code>{esc(tree.trace_id)}</code> '
            f'<span class="muted">{len(tree.rows)} spans, {_ms(tree.end_ns - tree.start_ns)}</span></h3>'
        )
        if trace_level:
            out.append(
                f'<details class="trace-agent-data" id="ad-{esc(tree.trace_id)}"><summary>trace AgentData '
                f'(aggregated)</summary>{_fields_list(trace_level)}</details>'
            )
        rows = []
        for row in tree.rows:
            s = row.span
            data = agent_data.get(AgentDataKey(s.trace_id, s.span_id, "span"), {})
            kind = row.span_type or "span"
            message = f' <span class="error">{esc(shorten(s.status_message, 200))}</span>' if s.status_message else ""
            events = ""
            if s.events:
                events = "<h4>events</h4>" + "".join(
                    f"<p><b>{esc(e.name)}</b> at +{_ms(e.time_ns - s.start_ns)}</p>{_fields_list(dict(e.attributes))}"
                    for e in s.events
                )
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
        out.append(
            '<table class="span-tree"><thead><tr><th>span (click for AgentData and attributes)</th>'
            '<th>duration</th><th>timeline</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>"
        )
    return "".join(out) + "</section>"
