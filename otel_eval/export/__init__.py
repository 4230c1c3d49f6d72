"""Exports of stored sessions: Vertex-native JSON lines, EvalSet (promotion to golden cases) in the
seed's schema or in google-adk's, Big Sky.

Every format starts from the same place: the sessions chosen in one or more otel-eval databases
(:func:`select_sessions`), loaded the way the scorer sees them (:func:`load_sessions`: stored spans
→ mapping, log-event content → trajectory). The format modules are pure functions of that.

``otel-eval export`` is :func:`add_export_arguments` / :func:`export_main`; shapes are in
docs/exports.md. Results going back into OpenTelemetry (log records, span forwarding) live in
:mod:`otel_eval.export.otel`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..pipeline import load_session
from ..read.database import DbPath, open_database, open_store, require_tables
from ..read.evaluations import OUTCOMES, current_outcome
from ..read.sessions import session_outcomes
from ..read.times import SINCE_EXAMPLES, parse_since
from ..trajectory import Trajectory, build_trajectory
from ..vertex_record import intermediate_texts

FORMATS = ("vertex", "evalset", "adk", "bigsky")
RESULTS = OUTCOMES


@dataclass
class SessionSelection:
    """Which sessions to export. Empty lists mean "no filter"; filters combine with AND."""

    session_ids: list[str] = field(default_factory=list)
    since_ns: int | None = None
    """Only sessions whose first span started at or after this time."""
    results: list[str] = field(default_factory=list)
    """Outcome of the current evaluation: passed, failed, not_evaluated (matched, nothing checked),
    unmatched (no golden case), unscored."""
    versions: list[str] = field(default_factory=list)
    include_open: bool = False
    """Open sessions are still receiving spans; left out unless asked for."""


@dataclass
class SessionForExport:
    """One stored session as every exporter takes it: its trajectory, intermediate data and
    current result (``pipeline.LoadedSession`` is its spans, as loaded for scoring)."""

    db: str
    session_id: str
    trajectory: Trajectory
    intermediate: dict[str, list[str]]
    created_ns: int | None
    result: str = "unscored"
    """The current evaluation's outcome, one of :data:`RESULTS`."""


def select_sessions(db: DbPath, selection: SessionSelection) -> list[str]:
    """Session ids in ``db`` matching ``selection``, oldest first (by first span start).

    A ``--session`` id that is not in the database is an error naming it, so a typo never
    silently exports nothing."""
    conn = open_database(db)
    try:
        require_tables(conn, db)
        sessions = session_outcomes(conn)
    finally:
        conn.close()
    known = {s.session_id for s in sessions}
    missing = [s for s in selection.session_ids if s not in known]
    if missing:
        raise InputError(str(db), f"no session {missing[0]!r} in this database", "--session")
    wanted = set(selection.session_ids)
    chosen: list[str] = []
    for s in sessions:
        if wanted and s.session_id not in wanted:
            continue
        if s.status == "open" and not selection.include_open and not wanted:
            continue
        if selection.since_ns is not None and (s.started_ns or 0) < selection.since_ns:
            continue
        if selection.versions and s.agent_version not in selection.versions:
            continue
        if selection.results and s.outcome not in selection.results:
            continue
        chosen.append(s.session_id)
    return chosen


def load_sessions(db: DbPath, session_ids: Sequence[str], max_value_chars: int = 65536) -> list[SessionForExport]:
    """Each session's trajectory (and the LLM texts between tool calls), as the scorer builds it."""
    store = open_store(db)
    try:
        require_tables(store.conn, db)
        out = []
        for session_id in session_ids:
            loaded = load_session(store, session_id, max_value_chars)
            mapped = loaded.mapped if loaded is not None else []
            out.append(
                SessionForExport(
                    db=str(db),
                    session_id=session_id,
                    trajectory=build_trajectory(session_id, mapped),
                    intermediate=intermediate_texts(mapped),
                    created_ns=min((m.span.start_ns for m in mapped), default=None),
                    result=current_outcome(store.conn, session_id),
                )
            )
        return out
    finally:
        store.close()


def collect(dbs: Sequence[DbPath], selection: SessionSelection) -> list[SessionForExport]:
    """The chosen sessions of every database, loaded for export, in database order."""
    sessions: list[SessionForExport] = []
    for db in dbs:
        sessions.extend(load_sessions(db, select_sessions(db, selection)))
    return sessions


@dataclass
class ExportResult:
    """What an export wrote: the format and file, the databases read, the sessions exported and
    the records written, and the sessions left out with why (``export --json`` prints it)."""

    format: str
    output: str | None
    dbs: list[str]
    sessions: list[str]
    records: int
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The result as ``export`` reports it (docs/exports.md), with ``count`` the sessions exported."""
        return {
            "format": self.format,
            "output": self.output,
            "dbs": self.dbs,
            "sessions": self.sessions,
            "count": len(self.sessions),
            "records": self.records,
            "skipped": self.skipped,
        }


def export_sessions(
    fmt: str,
    dbs: Sequence[DbPath],
    selection: SessionSelection,
    out: Any,
    eval_set_id: str = "promoted",
    name: str = "",
) -> ExportResult:
    """Write the chosen sessions in ``fmt`` to the text stream ``out``."""
    if fmt not in FORMATS:
        raise InputError("--format", f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", "--format")
    sessions = collect(dbs, selection)
    trajectories = [s.trajectory for s in sessions]
    skipped: list[dict[str, str]] = []
    if fmt == "vertex":
        from ..vertex_record import vertex_record

        for s in sessions:
            record = vertex_record(s.trajectory, s.intermediate, s.created_ns, verdict=s.result)
            out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        exported, records = [s.session_id for s in sessions], len(sessions)
    elif fmt in ("evalset", "adk"):
        from .evalset import promote_sessions

        if fmt == "adk":
            from .adk_eval_set import check_eval_set_id

            check_eval_set_id(eval_set_id)
        promotion = promote_sessions(
            trajectories,
            eval_set_id=eval_set_id,
            name=name,
            metadata={"exported_at": _now_iso(), "dbs": [str(d) for d in dbs]},
            verdicts={s.session_id: s.result for s in sessions},
        )
        if fmt == "evalset":
            out.write(promotion.eval_set.model_dump_json(indent=2) + "\n")
        else:
            from .adk_eval_set import adk_eval_set

            started = {s.session_id: s.created_ns / 1e9 for s in sessions if s.created_ns}
            case_times = {c.eval_id: started.get(c.metadata["session_id"], 0.0) for c in promotion.eval_set.eval_cases}
            out.write(
                json.dumps(adk_eval_set(promotion.eval_set, case_times), ensure_ascii=False, indent=2, default=str)
                + "\n"
            )
        skipped = [s.to_dict() for s in promotion.skipped]
        exported = [c.metadata["session_id"] for c in promotion.eval_set.eval_cases]
        records = len(promotion.eval_set.eval_cases)
    else:
        from .bigsky import bigsky_dataset

        bigsky = bigsky_dataset(trajectories, name=name or "otel-eval sessions")
        out.write(json.dumps(bigsky.dataset, ensure_ascii=False, indent=2, default=str) + "\n")
        skipped = [s.to_dict() for s in bigsky.skipped]
        exported = bigsky.sessions
        records = len(bigsky.dataset["data"])
    return ExportResult(fmt, None, [str(d) for d in dbs], exported, records, skipped)


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# --- CLI -------------------------------------------------------------------------------------


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``export`` subcommand's options, for the CLI to attach to its subparser."""
    parser.add_argument(
        "--format",
        required=True,
        choices=FORMATS,
        help="vertex: one Vertex-native JSON record per session (JSON lines); evalset: the "
        "sessions as golden cases (.evalset.json, otel-eval's schema); adk: the same cases in "
        "google-adk's EvalSet schema, for `adk eval`; bigsky: a Big Sky eval dataset",
    )
    parser.add_argument(
        "--db",
        action="append",
        default=[],
        metavar="PATH",
        help="otel-eval database; repeat to export from several collectors (default otel-eval.db)",
    )
    parser.add_argument(
        "--session",
        action="append",
        default=[],
        metavar="ID",
        help="export this session (repeatable); default: every ended session",
    )
    parser.add_argument(
        "--since",
        metavar="ISO-TIME",
        help=f"only sessions that started at/after this time (UTC unless it says otherwise; {SINCE_EXAMPLES})",
    )
    parser.add_argument(
        "--result",
        action="append",
        default=[],
        choices=RESULTS,
        help="only sessions whose current evaluation passed / failed / checked nothing "
        "(not_evaluated) / matched no case (unmatched) / has none yet (unscored); repeatable",
    )
    parser.add_argument(
        "--version", action="append", default=[], metavar="V", help="only sessions of this agent version (repeatable)"
    )
    parser.add_argument("--include-open", action="store_true", help="also export sessions still receiving spans")
    parser.add_argument(
        "--eval-set-id",
        default="promoted",
        help="eval_set_id of an evalset/adk export (default promoted; adk: letters, digits, '_')",
    )
    parser.add_argument("--name", default="", help="name of the exported set / dataset")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here (default: standard output)")
    parser.add_argument(
        "--json", action="store_true", help="print a JSON summary of the export (needs -o; see docs/exports.md)"
    )


def export_main(args: argparse.Namespace) -> int:
    """Run ``otel-eval export``; input errors raise :class:`InputError` for the CLI's error line."""
    output = getattr(args, "output", None)
    as_json = getattr(args, "json", False)
    if as_json and not output:
        raise InputError("export", "--json prints a summary on standard output, so the export needs -o FILE", "--json")
    selection = SessionSelection(
        session_ids=list(getattr(args, "session", None) or []),
        since_ns=parse_since(getattr(args, "since", None)),
        results=list(getattr(args, "result", None) or []),
        versions=list(getattr(args, "version", None) or []),
        include_open=bool(getattr(args, "include_open", False)),
    )
    dbs = list(getattr(args, "db", None) or []) or ["otel-eval.db"]
    kwargs = {"eval_set_id": getattr(args, "eval_set_id", "promoted"), "name": getattr(args, "name", "")}
    if output:
        target = Path(output)
        if not target.parent.is_dir():
            raise InputError(str(target), "the output directory does not exist", "-o")
        tmp = target.with_name(target.name + ".part")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                result = export_sessions(args.format, dbs, selection, fh, **kwargs)
            tmp.replace(target)  # never leave a half-written file under the real name
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        result.output = str(target)
    else:
        result = export_sessions(args.format, dbs, selection, sys.stdout, **kwargs)
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        where = result.output or "standard output"
        print(
            f"exported {len(result.sessions)} session(s) as {result.format} ({result.records} record(s)) to {where}",
            file=sys.stderr,
        )
        for s in result.skipped:
            print(f"  skipped {s['session_id']}: {s['reason']}", file=sys.stderr)
    return 0


__all__ = [
    "FORMATS",
    "ExportResult",
    "SessionForExport",
    "SessionSelection",
    "add_export_arguments",
    "collect",
    "export_main",
    "export_sessions",
    "load_sessions",
    "select_sessions",
]
