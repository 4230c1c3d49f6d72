"""``otel-eval inspect``: which convention read each span, and which attribute fed each AgentData field.

The question this answers is "why is ``agent_response`` empty?" (or "why was the session keyed by
trace id?"): for every span it lists the fields that were found with their source attribute, and
the fields that were *not* found, then how the session id was decided and the trajectory the
scorer would see. :func:`inspect_spans` builds a JSON-ready report (``--json`` prints it as is);
:func:`render_inspection` draws it with rich. The CLI only parses arguments and calls
:func:`inspect_main`.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import InputError
from .json_text import as_text
from .mapping import MappedSpan, identity_attributes
from .models.agent_data import AgentData
from .pipeline import map_session
from .read.database import open_database
from .read.spans import recently_received_sessions, stored_spans
from .report import render_unread
from .spans import LogEvent, SpanRecord
from .trajectory import build_trajectory
from .unread import unread_in_session

DEFAULT_VALUE_WIDTH = 80

#: AgentData fields a span never fills (they come from golden data or the caller), so listing them
#: as "empty" on every span would only hide the fields that really went missing.
NOT_FROM_SPANS = ("ground_truth", "expected_tool_call", "metadata")

#: Fields the mapper fills from the span itself rather than from a convention's attributes.
_MAPPER_SOURCES = {
    "task_id": "trace id",
    "turn_id": "span id",
    "exit_status": "span status",
    "agent_role": "span type",
}

TRACE_ID_SOURCE = "trace id"


# --- building the report ---------------------------------------------------------------------


def inspect_spans(
    spans: Sequence[SpanRecord],
    *,
    span_id: str | None = None,
    limit: int | None = None,
    value_width: int | None = DEFAULT_VALUE_WIDTH,
    log_events: Sequence[LogEvent] = (),
    source: str = "<spans>",
) -> dict[str, Any]:
    """A JSON-ready report: sessions → traces → spans in tree order, each span with its convention,
    span type, found fields ``{name: {value, source}}`` and ``empty_fields``; per session the id's
    source and the trajectory ``build_trajectory`` makes of it.

    ``span_id`` (a full id or an unambiguous prefix) keeps that one span and drops the trajectory;
    ``limit`` keeps the first N spans in display order; ``value_width=None`` keeps values whole.
    ``source`` names the input in errors.
    """
    mapped = map_session(_unique_spans(spans), log_events)
    wanted = _resolve_span_id(mapped, span_id, source) if span_id else None

    sessions = _group_sessions(mapped)
    report_sessions: list[dict[str, Any]] = []
    shown = 0
    for session_id, origin, traces in sessions:
        trace_reports = []
        for trace_id, members in traces:
            rows = []
            for depth, m in _tree_order(members):
                if wanted is not None and m.span.span_id != wanted:
                    continue
                if limit is not None and shown >= limit:
                    break
                rows.append(_span_report(m, depth, value_width))
                shown += 1
            if rows:
                trace_reports.append({"trace_id": trace_id, "span_count": len(members), "spans": rows})
        if not trace_reports:
            continue
        entry: dict[str, Any] = {
            "session_id": session_id,
            "session_source": origin["source"],
            "session_source_span": origin.get("span"),
            "traces": trace_reports,
            "trajectory": None,
            "trajectory_error": None,
        }
        if wanted is None:
            members = [m for _, ms in traces for m in ms]
            try:
                entry["trajectory"] = trajectory_report(session_id, members, value_width)
            except Exception as exc:  # a diagnostic tool still shows the spans when assembly fails
                entry["trajectory_error"] = f"{type(exc).__name__}: {exc}"
            entry["unread"] = [item.to_dict() for item in unread_in_session(members)]
        report_sessions.append(entry)
    return {"spans_total": len(mapped), "spans_shown": shown, "sessions": report_sessions}


def _unique_spans(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """First copy of each (trace id, span id): a retried export must not show a span twice."""
    seen: dict[tuple[str, str], SpanRecord] = {}
    for span in spans:
        seen.setdefault((span.trace_id, span.span_id), span)
    return list(seen.values())


def _resolve_span_id(mapped: list[MappedSpan], wanted: str, source: str) -> str:
    key = wanted.strip().lower()
    exact = {m.span.span_id for m in mapped if m.span.span_id.lower() == key}
    if exact:
        return exact.pop()
    prefixed = sorted({m.span.span_id for m in mapped if m.span.span_id.lower().startswith(key)})
    if len(prefixed) == 1:
        return prefixed[0]
    if not prefixed:
        raise InputError(source, f"no span with id {wanted!r} among {len(mapped)} span(s)", "--span")
    raise InputError(source, f"span id prefix {wanted!r} is ambiguous: {', '.join(prefixed[:5])}", "--span")


def _group_sessions(mapped: list[MappedSpan]) -> list[tuple[str, dict[str, Any], list[tuple[str, list[MappedSpan]]]]]:
    """Sessions as the engine forms them: a session id on any span of a trace names the session
    of the whole trace (the one named nearest the root wins); a trace without one is its own session."""
    by_trace: dict[str, list[MappedSpan]] = {}
    for m in mapped:
        by_trace.setdefault(m.span.trace_id, []).append(m)

    sessions: dict[str, tuple[dict[str, Any], list[tuple[str, list[MappedSpan]]]]] = {}
    for trace_id, members in by_trace.items():
        members.sort(key=lambda m: (m.span.start_ns, m.span.end_ns, m.span.span_id))
        # Nearest the root wins, as in the engine: a nested agent's own conversation id never names the turn.
        depths = [(depth, m.span.start_ns, m.span.span_id, m) for depth, m in _tree_order(members) if m.session_id]
        named = min(depths, key=lambda d: d[:3])[3] if depths else None
        origin: dict[str, Any]
        if named is not None:
            session_id = named.session_id or trace_id
            origin = {"source": session_source(named), "span": {"span_id": named.span.span_id, "name": named.span.name}}
        else:
            session_id, origin = trace_id, {"source": TRACE_ID_SOURCE, "span": None}
        slot = sessions.setdefault(session_id, (origin, []))
        slot[1].append((trace_id, members))

    def first_start(item: tuple[str, tuple[dict[str, Any], list[tuple[str, list[MappedSpan]]]]]) -> tuple[int, str]:
        return min(m.span.start_ns for _, ms in item[1][1] for m in ms), item[0]

    out = []
    for session_id, (origin, traces) in sorted(sessions.items(), key=first_start):
        traces.sort(key=lambda t: (min(m.span.start_ns for m in t[1]), t[0]))
        out.append((session_id, origin, traces))
    return out


def session_source(m: MappedSpan) -> str:
    """Which attribute gave the span its session id, by the precedence of ``session_id_of``."""
    found = _attribute_source(m, identity_attributes()[0])
    if found:
        return found
    if m.reading.session_id:
        return m.reading.sources.get("session_id") or f"{m.reading.convention} convention"
    return TRACE_ID_SOURCE


def _tree_order(members: list[MappedSpan]) -> list[tuple[int, MappedSpan]]:
    """(depth, span) parents before children, siblings by start time; a span whose parent is not
    in the trace is shown as a root, and a parent loop cannot hang the walk."""
    ids = {m.span.span_id for m in members}
    children: dict[str | None, list[MappedSpan]] = {}
    for m in members:
        parent = (
            m.span.parent_span_id if m.span.parent_span_id in ids and m.span.parent_span_id != m.span.span_id else None
        )
        children.setdefault(parent, []).append(m)
    for group in children.values():
        group.sort(key=lambda m: (m.span.start_ns, m.span.end_ns, m.span.span_id))
    out: list[tuple[int, MappedSpan]] = []
    visited: set[str] = set()

    def walk(m: MappedSpan, depth: int) -> None:
        stack = [(m, depth)]
        while stack:
            node, level = stack.pop()
            if node.span.span_id in visited:
                continue
            visited.add(node.span.span_id)
            out.append((level, node))
            for child in reversed(children.get(node.span.span_id, [])):
                stack.append((child, level + 1))

    for root in children.get(None, []):
        walk(root, 0)
    for m in members:  # spans caught in a parent loop: nothing reached them from a root
        if m.span.span_id not in visited:
            walk(m, 0)
    return out


def _span_report(m: MappedSpan, depth: int, width: int | None) -> dict[str, Any]:
    fields: dict[str, dict[str, Any]] = {}
    empty: list[str] = []
    for name in AgentData.model_fields:
        if name in NOT_FROM_SPANS:
            continue
        value = getattr(m.data, name)
        if _is_empty(value):
            empty.append(name)
            continue
        fields[name] = {"value": one_line(_field_text(name, value), width), "source": field_source(m, name)}
    tool = None
    if m.reading.tool is not None:
        t = m.reading.tool
        tool = {
            "name": t.name,
            "name_source": m.reading.sources.get("tool_calls", "-"),
            "arguments_source": m.reading.sources.get("parameters_passed", "-"),
            "call_id": t.call_id,
            "error": one_line(t.error, width) if t.error else None,
        }
    return {
        "span_id": m.span.span_id,
        "parent_span_id": m.span.parent_span_id,
        "depth": depth,
        "name": m.span.name,
        "status": m.span.status,
        "duration_ms": round(m.span.duration_ns / 1e6, 3),
        "convention": m.reading.convention,
        "span_type": m.reading.span_type,
        "typed_by": m.reading.sources.get("span_type"),
        "is_wrapper": m.reading.is_wrapper,
        "session_id": m.session_id,
        "tool": tool,
        "fields": fields,
        "empty_fields": empty,
    }


def field_source(m: MappedSpan, name: str) -> str:
    """The attribute an AgentData field came from; "-" when neither convention nor mapper says."""
    if name == "user_id":  # the mapper's own precedence comes before the convention's
        found = _attribute_source(m, identity_attributes()[1])
        if found:
            return found
    found = m.reading.sources.get(name)
    if found:
        return found
    if name == "agent_name" and not m.reading.agent_name:
        return "span type"
    return _MAPPER_SOURCES.get(name, "-")


def _attribute_source(m: MappedSpan, keys: Sequence[str]) -> str | None:
    """The first of ``keys`` set on the span, else on its resource (``resource KEY``), as the
    mapper looks them up; None when none is set."""
    for key in keys:
        if m.span.attributes.get(key) not in (None, ""):
            return key
    for key in keys:
        if m.span.resource.get(key) not in (None, ""):
            return f"resource {key}"
    return None


def _is_empty(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, (str, list, dict)) and not value)


def _field_text(name: str, value: Any) -> str:
    """A field as one readable line: tools by name, calls as ``name(args)``, results by outcome."""
    if name == "tools_available":
        return ", ".join(schema.name for schema in value)
    if name == "tool_calls":
        return "; ".join(f"{call.tool_name}({_args_text(call.parameters)})" for call in value)
    if name == "tool_call_results":
        return "; ".join(
            (as_text(r.result) or "") if r.success else f"error: {r.error_message or as_text(r.result) or ''}"
            for r in value
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    return as_text(value) or ""


def _args_text(args: dict[str, Any]) -> str:
    return ", ".join(f"{key}={json.dumps(val, ensure_ascii=False, default=str)}" for key, val in args.items())


def one_line(text: str | None, width: int | None = DEFAULT_VALUE_WIDTH) -> str | None:
    """One line of at most ``width`` characters (whitespace runs collapsed, "…" marks a cut)."""
    if text is None or width is None:
        return text
    line = re.sub(r"\s+", " ", text).strip()
    return line if len(line) <= width else line[: max(1, width - 1)].rstrip() + "…"


def trajectory_report(
    session_id: str, mapped: Sequence[MappedSpan], width: int | None = DEFAULT_VALUE_WIDTH
) -> dict[str, Any]:
    """What the scorer sees of a session: ``build_trajectory`` as a JSON-ready dict."""
    trajectory = build_trajectory(session_id, list(mapped))
    return {
        "query": one_line(trajectory.query, width),
        "final_response": one_line(trajectory.final_response, width),
        "user_id": trajectory.user_id,
        "agent_version": trajectory.agent_version,
        "service_name": trajectory.service_name,
        "case_hint": trajectory.case_hint,
        "turns": [
            {
                "index": turn.index,
                "trace_id": turn.trace_id,
                "user_input": one_line(turn.user_input, width),
                "final_response": one_line(turn.final_response, width),
                "answer_source": turn.answer_source,
                "llm_calls": turn.llm_calls,
                "span_count": turn.span_count,
                "retrieved_documents": len(turn.retrieved_documents),
                "calls": [
                    {
                        "name": call.name,
                        "args": call.args,
                        "call_id": call.call_id,
                        "result": one_line(as_text(call.result), width),
                        "error": one_line(call.error, width),
                        "span_id": call.span_id,
                        "group": call.group,
                        "agent": call.agent,
                        "depth": call.depth,
                    }
                    for call in turn.calls
                ],
            }
            for turn in trajectory.turns
        ],
    }


# --- inputs ----------------------------------------------------------------------------------


def inspect_file(path: str | Path, **options: Any) -> dict[str, Any]:
    """Inspect a span file (Noveum ``dataset.json``, OTLP JSON / JSON lines / ``.pb``)."""
    from .readers import read_spans

    if not Path(path).exists():
        raise InputError(str(path), "file not found")
    spans = read_spans(path)
    report = inspect_spans(spans, source=str(path), **options)
    report["input"] = str(path)
    return report


def read_session(db: str | Path, session_id: str) -> tuple[list[SpanRecord], list[LogEvent]]:
    """The stored spans and span-linked log records of one session, read without writing to the
    file (a collector may be writing to it right now)."""
    conn = open_database(db)
    try:
        try:
            spans, events = stored_spans(conn, db, session_id)
        except sqlite3.DatabaseError as exc:
            raise InputError(str(db), f"not an otel-eval database ({exc})", "spans") from exc
        if not spans:
            known = recently_received_sessions(conn)
            hint = f"; recent sessions: {', '.join(known)}" if known else "; the database holds no spans"
            raise InputError(str(db), f"no spans for session {session_id!r}{hint}", "spans.session_id")
        return spans, events
    finally:
        conn.close()


def inspect_session(db: str | Path, session_id: str, **options: Any) -> dict[str, Any]:
    """Inspect one stored session of an otel-eval database."""
    spans, events = read_session(db, session_id)
    report = inspect_spans(spans, log_events=events, source=str(db), **options)
    report["input"] = f"{db} session {session_id}"
    return report


# --- CLI glue ----------------------------------------------------------------------------------


def add_inspect_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``inspect`` subcommand's options, for the CLI to attach to its subparser."""
    parser.add_argument(
        "file", nargs="?", metavar="FILE", help="span file: Noveum dataset.json, OTLP JSON, JSON lines or .pb capture"
    )
    parser.add_argument("--db", metavar="PATH", help="otel-eval SQLite database (with --session)")
    parser.add_argument("--session", metavar="ID", help="session to inspect in --db")
    parser.add_argument("--span", metavar="ID", help="show one span only (full id or unique prefix)")
    parser.add_argument("--limit", type=int, metavar="N", help="show the first N spans only")
    parser.add_argument("--full", action="store_true", help="do not shorten values")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def inspect_main(args: argparse.Namespace, console: Any = None) -> int:
    """Run ``otel-eval inspect`` from parsed arguments; returns the exit code.

    Input errors are raised as :class:`InputError` for the CLI's usual error line."""
    # "" for an option not given: the checks below read them as true or false, the calls as text
    file: str = getattr(args, "file", None) or ""
    db: str = getattr(args, "db", None) or ""
    session: str = getattr(args, "session", None) or ""
    if file and (db or session):
        raise InputError("inspect", "give either FILE or --db with --session, not both", "arguments")
    if not file and not (db and session):
        raise InputError("inspect", "give a span FILE, or --db PATH --session ID", "arguments")
    limit = getattr(args, "limit", None)
    if limit is not None and limit < 1:
        raise InputError("inspect", f"--limit must be at least 1, got {limit}", "--limit")
    options = {
        "span_id": getattr(args, "span", None),
        "limit": limit,
        "value_width": None if getattr(args, "full", False) else DEFAULT_VALUE_WIDTH,
    }
    report = inspect_file(file, **options) if file else inspect_session(db, session, **options)
    if getattr(args, "json", False):
        print(json.dumps(report, indent=2, ensure_ascii=False, default=str))
        return 0
    if console is None:
        from rich.console import Console

        console = Console()
    render_inspection(report, console)
    return 0


# --- rendering ---------------------------------------------------------------------------------

_TYPE_STYLES = {
    "agent": "bold magenta",
    "llm": "bold blue",
    "tool": "bold green",
    "retriever": "bold cyan",
    "chain": "yellow",
    "unknown": "red",
}


def render_inspection(report: dict[str, Any], console: Any) -> None:
    """Draw the report: per session a span tree with each span's found and empty fields, then the
    session id's source and the trajectory."""
    from rich.console import Group
    from rich.text import Text
    from rich.tree import Tree

    header = f"{report.get('input', 'spans')}: {report['spans_shown']} of {report['spans_total']} span(s)"
    console.print(Text(header, style="bold"))
    if not report["sessions"]:
        console.print("no spans to show")
        return
    for session in report["sessions"]:
        console.print()
        console.print(
            Text.assemble(
                ("Session ", "bold"), (session["session_id"], "bold cyan"), ("  ← ", "dim"), _session_origin(session)
            )
        )
        for trace in session["traces"]:
            tree = Tree(Text(f"trace {trace['trace_id']} ({trace['span_count']} spans)", style="bold"))
            parents: dict[int, Any] = {-1: tree}
            for span in trace["spans"]:
                depth = span["depth"]
                parent = parents.get(depth - 1)
                if parent is None:  # an ancestor was cut by --span / --limit: hang it under the deepest shown
                    parent = parents[max(d for d in parents if d < depth)]
                room = console.width - TREE_INDENT * (depth + 1)
                node = parent.add(Group(_span_label(span, Text), _span_fields(span, room)))
                parents = {d: n for d, n in parents.items() if d < depth}
                parents[depth] = node
            console.print(tree)
        if session["trajectory_error"]:
            console.print(Text(f"trajectory could not be built: {session['trajectory_error']}", style="red"))
        elif session["trajectory"] is not None:
            _render_trajectory(session["trajectory"], console, Text)
        render_unread(session.get("unread") or [], console)


def _session_origin(session: dict[str, Any]) -> str:
    source = session["session_source"]
    if source == TRACE_ID_SOURCE:
        return f"{source} (no session attribute on any span)"
    span = session.get("session_source_span")
    return f"{source} (span {span['name']!r})" if span else source


def _span_label(span: dict[str, Any], Text: Any) -> Any:
    label = Text()
    label.append(span["name"] or "(unnamed)", style="bold")
    label.append("  ")
    label.append(span["convention"], style="italic")
    label.append(" · ")
    label.append(span["span_type"], style=_TYPE_STYLES.get(span["span_type"], ""))
    if span["is_wrapper"]:
        label.append(" (wrapper)", style="yellow")
    if span["status"] == "error":
        label.append(" status error", style="bold red")
    else:
        label.append(f" status {span['status']}", style="dim")
    label.append(f"  {span['span_id']}  {span['duration_ms']:g} ms", style="dim")
    return label


#: Cells a rich ``Tree`` indents each level by ("├── ").
TREE_INDENT = 4


def _span_fields(span: dict[str, Any], width: int) -> Any:
    """The span's fields as a grid: field name (whole), value and source, both wrapped between
    words in the ``width`` the tree leaves at the span's depth."""
    from .tablefit import NO_BREAK_SPACE as NBSP
    from .tablefit import Column, fit_grid, middle_ellipsis

    columns = [
        Column("", style="cyan"),
        Column("", min_width=16, wrap=True),
        Column("", min_width=20, wrap=True, shorten=middle_ellipsis, style="dim"),
    ]
    rows: list[list[Any]] = []
    tool = span["tool"]
    if tool is not None:
        rows.append(["tool", (tool["name"], "green"), f"←{NBSP}{tool['name_source']}"])
        if tool["error"]:
            rows.append(["tool error", (tool["error"], "red"), ""])
    for name, field in span["fields"].items():
        if name in _MAPPER_SOURCES:
            continue  # trace/span id, role and status are the span's own (label, trace header); --json has them
        rows.append([name, field["value"], f"←{NBSP}{field['source']}"])  # the arrow stays with its source
    if span["empty_fields"]:
        rows.append([("empty", "yellow"), (", ".join(span["empty_fields"]), "yellow"), ""])
    return fit_grid(columns, rows, width)


def _render_trajectory(trajectory: dict[str, Any], console: Any, Text: Any) -> None:
    from .tablefit import Column, fit_grid

    console.print(Text(f"Trajectory: {len(trajectory['turns'])} turn(s)", style="bold"))
    for turn in trajectory["turns"]:
        # One line per row, shortened at the end: the label column is never cut.
        rows: list[list[Any]] = [
            [(f"turn {turn['index'] + 1}", "bold"), (f"trace {turn['trace_id']}", "dim")],
            ["  user", turn["user_input"] or ("(none found)", "yellow")],
        ]
        for number, call in enumerate(turn["calls"], 1):
            args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in call["args"].items())
            rows.append([f"  call {number}", (f"{call['name']}({args})", "green")])
            if call["error"]:
                rows.append(["", (f"✗ {call['error']}", "red")])
            elif call["result"] is not None:
                rows.append(["", f"→ {call['result']}"])
        if not turn["calls"]:
            rows.append(["  calls", ("(none)", "dim")])
        rows.append(["  final", turn["final_response"] or ("(none found)", "yellow")])
        if turn.get("answer_source"):
            rows.append(["", (f"read from the {turn['answer_source']}", "dim")])
        console.print(fit_grid([Column(""), Column("", min_width=12)], rows, console.width, gap=1))
