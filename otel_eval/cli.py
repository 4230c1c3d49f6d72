"""The ``otel-eval`` command."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from .embedding_options import add_embedding_arguments, embedding_backend
from .errors import OtelEvalError

DEFAULT_DB = "otel-eval.db"

EPILOG = """\
examples:
  otel-eval evaluate traces/dataset.json --golden cases.evalset.json
  otel-eval watch --db otel-eval.db
  otel-eval compare --baseline 1.0.0 --candidate 2.0.0
  otel-eval export --format vertex -o sessions.jsonl
  otel-eval collect --golden cases.evalset.json          # OTLP on 127.0.0.1:4317 (gRPC) and :4318 (HTTP)
  otel-eval report --db otel-eval.db
  otel-eval report --session my-session-42
  otel-eval label my-session-42 disagree --note "the refund amount is wrong"
  otel-eval golden validate cases.json
  otel-eval datasette-metadata prod.db > metadata.json && datasette prod.db -m metadata.json
"""


# Commands whose module provides add_<name>_arguments(parser) and <name>_main(args) -> int.
SUBCOMMANDS = (
    (
        "inspect",
        "inspection",
        "show which convention and attribute fed each AgentData field",
        "Per span: the detected convention, span type, and for every AgentData field its value and the attribute it "
        "came from (empty fields listed too); per session: where the session id came from and the trajectory.",
    ),
    (
        "rescore",
        "rescore",
        "re-evaluate stored sessions after a golden set or config changed (new revisions)",
        "Score stored sessions again, as new revisions; earlier evaluations are kept, marked superseded.",
    ),
    (
        "compare",
        "compare",
        "compare two agent versions per case and per criterion",
        "Pass rate and mean score of a baseline and a candidate agent version, per case and per criterion: "
        "what improved, what regressed.",
    ),
    (
        "export",
        "export",
        "write sessions as Vertex-native JSONL, an EvalSet (otel-eval's or ADK's) or a Big Sky dataset",
        "Export stored sessions: --format vertex (Vertex AI evaluation JSONL), evalset (promote sessions to golden "
        "cases), adk (the same cases for google-adk's `adk eval`) or bigsky.",
    ),
    (
        "watch",
        "watch",
        "live terminal view of sessions as they are scored",
        "Pass rate per case and agent version over a sliding window, the latest sessions with their failing "
        "criteria, unmatched and unhealthy sessions, and ingest rate; refreshed from the SQLite file(s).",
    ),
    (
        "ui",
        "ui",
        "serve the web dashboard over a database (the collector serves it with --ui)",
        "The dashboard on its own HTTP server, reading a database file read-only.",
    ),
    (
        "label",
        "labels",
        "mark a session's verdict right (agree) or wrong (disagree), with a note",
        "A reviewer's label of a session's current verdict, stored with who and when; report and the dashboard "
        "show how often each criterion agrees with the labels (judge calibration).",
    ),
    (
        "criteria",
        "criteria_listing",
        "list every criterion a config may name, with what it measures",
        "Every criterion (and google-adk metric name) a config may name: its one-line description, default "
        "threshold, what it needs from a golden case and its options. docs/metrics.md describes each.",
    ),
)


def _command_module(name: str):
    import importlib

    return importlib.import_module(f"otel_eval.{name}")


def build_parser() -> argparse.ArgumentParser:
    """The ``otel-eval`` parser: evaluate, report and golden here, every other command's options from
    its own module (SUBCOMMANDS), so a command's flags live beside its code."""
    parser = argparse.ArgumentParser(
        prog="otel-eval",
        description="Evaluate AI agents from their OpenTelemetry traces: map spans to AgentData, match each "
        "session to a golden case, score its trajectory and response, store everything in SQLite.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--log-level", default="WARNING", help="logging level (DEBUG, INFO, WARNING; default WARNING)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    ev = sub.add_parser(
        "evaluate",
        help="evaluate span files offline (Noveum dataset.json, OTLP JSON / JSON lines / .pb)",
        description="Run captured spans through the whole pipeline: every session in the files is "
        "mapped, ended, matched to a golden case and scored; results go to --db.",
    )
    ev.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="span files: Noveum dataset.json, OTLP JSON, JSON lines, or .pb captures; OTLP logs "
        "captures (*.logs.pb, or JSON with resourceLogs) join their spans' content",
    )
    ev.add_argument(
        "--golden",
        action="append",
        default=[],
        metavar="PATH",
        help="golden set (EvalSet, trajectory-golden, Big Sky or ADK format); repeatable",
    )
    ev.add_argument(
        "--db", default=DEFAULT_DB, help=f"SQLite file to store spans, AgentData and results (default {DEFAULT_DB})"
    )
    ev.add_argument(
        "--config",
        metavar="FILE",
        help="evaluation criteria: a TOML file ([criteria.NAME] tables) or "
        "google-adk's test_config.json; without it, a test_config.json beside a --golden .evalset.json / "
        ".test.json is used, as adk eval does (see docs/adk.md)",
    )
    ev.add_argument(
        "--fuzzy-threshold",
        type=float,
        default=90.0,
        metavar="SCORE",
        help="lowest rapidfuzz score (0-100) for a fuzzy query match to a golden case (default 90)",
    )
    add_embedding_arguments(ev)
    ev.add_argument(
        "--session-attribute",
        action="append",
        default=[],
        metavar="KEY",
        help="also take a span's session id from this attribute key, ahead of the built-in ones "
        "(session.id, gen_ai.conversation.id, ...); repeatable",
    )
    ev.add_argument(
        "--user-attribute",
        action="append",
        default=[],
        metavar="KEY",
        help="also take a span's user id from this attribute key, ahead of the built-in ones; repeatable",
    )
    ev.add_argument("--json", action="store_true", help="print results as JSON instead of tables")

    rp = sub.add_parser(
        "report",
        help="summary and per-case results of one or more databases",
        description="Print the latest evaluation of every session: totals, per-criterion and per-case "
        "pass rates; with --session, one session's criteria and aligned trajectory.",
    )
    rp.add_argument(
        "--db",
        action="append",
        default=[],
        metavar="PATH",
        help=f"database file; repeat to aggregate several collectors (default {DEFAULT_DB})",
    )
    rp.add_argument("--session", metavar="ID", help="show one session in detail")
    rp.add_argument("--json", action="store_true", help="print as JSON")
    rp.add_argument(
        "--since",
        metavar="ISO-TIME",
        help="golden coverage counts sessions scored since then (e.g. "
        "2025-01-31 or 2025-01-31T12:00:00Z; default: every stored session)",
    )
    add_timing_arguments(rp)

    for name, module, help_text, description in SUBCOMMANDS:
        command = sub.add_parser(name, help=help_text, description=description)
        _command_module(module).__dict__[f"add_{name}_arguments"](command)

    dm = sub.add_parser(
        "datasette-metadata",
        help="print Datasette metadata (canned queries) for database files",
        description="Print the Datasette metadata (table descriptions and canned queries) keyed "
        "by the names Datasette gives these files, for: datasette FILE... -m metadata.json",
    )
    dm.add_argument("files", nargs="+", metavar="DB", help="database file(s), in the order given to datasette")

    col = sub.add_parser("collect", help="run the sidecar collector (OTLP gRPC :4317 and HTTP :4318)", add_help=False)
    col.add_argument("args", nargs=argparse.REMAINDER)

    gold = sub.add_parser("golden", help="check or convert golden sets")
    gsub = gold.add_subparsers(dest="golden_command", metavar="ACTION")
    gv = gsub.add_parser(
        "validate",
        help="report every problem in golden files (file, JSON path, reason)",
        description="List every problem of each golden file: file, JSON path and reason; an unknown "
        "key is named with the closest known one. Exit 1 if there is any error. Warnings (a case with "
        "nothing to check) are listed too but do not change the exit status.",
    )
    gv.add_argument("files", nargs="+", metavar="FILE")
    gv.add_argument("--json", action="store_true")
    gc = gsub.add_parser(
        "convert",
        help="write any supported golden format as an .evalset.json (otel-eval's "
        "schema, or google-adk's with --to adk)",
    )
    gc.add_argument("source", metavar="FILE")
    gc.add_argument("output", metavar="OUT")
    gc.add_argument(
        "--to",
        choices=("evalset", "adk"),
        default="evalset",
        help="evalset: otel-eval's EvalSet (default; keeps every otel-eval expectation); adk: "
        "google-adk's EvalSet, for `adk eval` (see docs/exports.md)",
    )
    gs = gsub.add_parser(
        "suggest",
        help="draft golden cases for the traffic no case describes (clusters of unmatched sessions)",
        description="Cluster the queries of unmatched sessions and write one draft case per cluster "
        "of at least --min-sessions sessions, as a google-adk EvalSet: the most representative "
        "query, the most common tool path (arguments that vary across the cluster written as "
        "IGNORE), a representative answer, and example session ids in the case's metadata. Each "
        "draft is checked with the golden matcher: rescoring with it matches its sessions.",
    )
    _command_module("golden_suggest").add_suggest_arguments(gs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``otel-eval`` entry point: parse ``argv``, run the command, and return its exit code; an input
    error is one ``otel-eval: error:`` line per problem (exit 2), never a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["collect"]:
        from collector.app import main as collect_main

        return collect_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.command:
        parser.print_help()
        return 2
    try:
        if args.command == "evaluate":
            _refuse_bad_golden(args.golden)
            return cmd_evaluate(args)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "datasette-metadata":
            from .datasette import metadata_for

            print(json.dumps(metadata_for(args.files), indent=2, ensure_ascii=False))
            return 0
        for name, module, _, _ in SUBCOMMANDS:
            if args.command == name:
                return _command_module(module).__dict__[f"{name}_main"](args)
        if args.command == "golden":
            return cmd_golden(args, parser)
    except OtelEvalError as exc:
        # A bad golden file (GoldenFileError) has several problems: one line each.
        for line in exc.lines() if hasattr(exc, "lines") else [str(exc)]:
            print(f"otel-eval: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    parser.print_help()
    return 2


def _refuse_bad_golden(paths: Sequence[str]) -> None:
    """Before any work: a golden file with a problem (an unknown key, say) would make criteria skip
    silently, so the command does not start (:class:`GoldenFileError` lists every problem)."""
    if paths:
        from .golden import load_golden_files

        load_golden_files(paths)


def cmd_evaluate(args: argparse.Namespace) -> int:
    """``otel-eval evaluate``: span files through a real engine into ``--db``, then the report (or JSON)
    of the sessions those files held, for a first look without a collector."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .adk_config.resolve import config_for_command
    from .engine.settings import EngineSettings
    from .mapping import use_identity_attributes
    from .offline import evaluate
    from .read.evaluations import current_evaluations
    from .readers import is_logs_file, read_log_events, read_spans
    from .report import render_report, summarize_sessions

    # TOML criteria or google-adk's test_config.json; with no --config, the test_config.json beside
    # a golden .evalset.json / .test.json, as adk eval does (docs/adk.md).
    config = config_for_command(args.config, args.golden)
    embed = embedding_backend(args)
    use_identity_attributes(args.session_attribute, args.user_attribute)
    spans: list = []
    logs: list = []
    for path in args.files:  # a logs capture holds content some instrumentations send as log events
        if is_logs_file(path):
            logs.extend(read_log_events(path))
        else:
            spans.extend(read_spans(path))
    err = Console(stderr=True)
    with Progress(
        TextColumn("ingesting spans"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
        disable=args.json or not err.is_terminal,
    ) as progress:
        task = progress.add_task("spans", total=len(spans))
        settings = EngineSettings(
            session_attributes=tuple(args.session_attribute),
            user_attributes=tuple(args.user_attribute),
            fuzzy_threshold=args.fuzzy_threshold,
        )
        results = evaluate(
            [*logs, *spans],
            golden=args.golden,
            config=config,
            db=args.db,
            settings=settings,
            embedding_threshold=args.embedding_threshold,
            embed=embed,
            progress=lambda n: progress.advance(task, n),
        )
    scored = {res.session_id for res in results}
    rows = [r for r in current_evaluations([args.db]) if r.session_id in scored]
    if args.json:
        print(
            json.dumps(
                {
                    "db": args.db,
                    "spans": len(spans),
                    "summary": summarize_sessions(rows),
                    "sessions": [r.to_dict() for r in rows],
                },
                indent=2,
                default=str,
            )
        )
    else:
        out = Console()
        with_logs = f" and {len(logs)} log records" if logs else ""
        out.print(f"{len(spans)} spans{with_logs} from {len(args.files)} file(s) → {args.db}")
        render_report(rows, out)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``otel-eval report``: the summary and latest sessions, one session (``--session``), coverage and
    calibration, or all of it as JSON; says what is not scored yet."""
    import time

    from rich.console import Console

    from .errors import InputError
    from .read.backlog import backlog_of, describe
    from .read.coverage import coverage
    from .read.evaluations import current_evaluations, recent_sessions
    from .read.labels import calibration
    from .read.sessions import session_detail, session_state
    from .read.times import iso_utc, parse_since
    from .report import render_calibration, render_coverage, render_report, render_session, summarize_sessions

    dbs = args.db or [DEFAULT_DB]
    timing = session_timing(args)
    if args.session:
        row = session_detail(dbs, args.session)
        if row is None:
            raise InputError(
                ", ".join(dbs),
                _no_evaluation(args.session, session_state(dbs, args.session), recent_sessions(dbs), timing),
                "--session",
            )
        if args.json:
            print(json.dumps(row.to_dict(), indent=2, default=str))
        else:
            render_session(row, Console())
        return 0
    since_ns = parse_since(getattr(args, "since", None))
    rows = current_evaluations(dbs)
    backlog = backlog_of(dbs, timing)
    cov = coverage(dbs, None if since_ns is None else iso_utc(since_ns / 1e9))
    cal = calibration(dbs)
    now_ns = time.time_ns()
    if args.json:
        print(
            json.dumps(
                {
                    "dbs": dbs,
                    "summary": summarize_sessions(rows),
                    "pending": backlog.to_dict(now_ns),
                    "coverage": cov.to_dict(),
                    "calibration": cal.to_dict(),
                    "sessions": [r.to_dict() for r in rows],
                },
                indent=2,
                default=str,
            )
        )
    else:
        console = Console()
        render_report(rows, console, pending=describe(backlog.to_dict(now_ns), timing))
        render_coverage(cov, console)
        render_calibration(cal, console)
    return 0


def session_timing(args: argparse.Namespace) -> Any:
    """``--trace-quiet``/``--session-idle`` of report and watch: the timing of the collector (or
    EvalSpanProcessor) writing the database, to tell when the next session is due."""
    from .sessions import Timing

    return Timing(
        getattr(args, "trace_quiet", None) or Timing.trace_quiet,
        getattr(args, "session_idle", None) or Timing.session_idle,
    )


def add_timing_arguments(parser: argparse.ArgumentParser) -> None:
    """``--trace-quiet`` and ``--session-idle``: the collector's own timings, so ``report`` can say when a
    session still open will end and be scored."""
    parser.add_argument(
        "--trace-quiet",
        type=_positive_seconds,
        metavar="SECONDS",
        help="the writer's trace_quiet, to tell when the next session ends (default 5)",
    )
    parser.add_argument(
        "--session-idle",
        type=_positive_seconds,
        metavar="SECONDS",
        help="the writer's session_idle, to tell when the next session ends (default 60)",
    )


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a positive number of seconds, got {text!r}")
    return value


def _no_evaluation(session_id: str, state: str | None, recent: Sequence[str], timing: Any) -> str:
    """Why ``report --session`` has nothing to show, and what to try instead."""
    if state in ("open", "ended"):
        why = (
            "it is still open: it is scored once it ends"
            if state == "open"
            else "it has ended and is waiting to be scored"
        )
        return (
            f"session {session_id!r} has no evaluation yet: {why} (a session ends "
            f"{timing.session_idle:g} s after its last span, or {timing.trace_quiet:g} s after it when ended "
            "explicitly)"
        )
    hint = f"; recent sessions: {', '.join(recent)}" if recent else "; no session has been scored yet"
    return f"no session {session_id!r}{hint}"


def cmd_golden(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``otel-eval golden validate|suggest|convert``: check golden files (exit 1 on any error, every
    problem listed), suggest cases from unmatched traffic, or convert a set to another format."""
    from .golden import convert, validate_golden

    if args.golden_command == "validate":
        found: list[Any] = []
        for path in args.files:
            found.extend(validate_golden(path, warnings=True))
        errors = [p for p in found if p.severity == "error"]
        warnings = len(found) - len(errors)
        if args.json:
            print(
                json.dumps(
                    [
                        {"source": p.source, "location": p.location, "reason": p.reason, "severity": p.severity}
                        for p in found
                    ],
                    indent=2,
                )
            )
        else:
            for p in found:
                print(str(p))
            print(
                f"{len(errors)} problem(s) in {len(args.files)} file(s)"
                + (f", {warnings} warning(s)" if warnings else "")
            )
        return 1 if errors else 0
    if args.golden_command == "suggest":
        return _command_module("golden_suggest").suggest_main(args)
    if args.golden_command == "convert":
        if getattr(args, "to", "evalset") == "adk":
            from .export.adk_eval_set import write_adk_file

            for lost in write_adk_file(args.source, args.output):
                print(f"otel-eval: warning: not in the ADK file: {lost}", file=sys.stderr)
        else:
            convert(args.source, args.output)
        print(f"wrote {args.output}")
        return 0
    parser.parse_args(["golden", "--help"])
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
