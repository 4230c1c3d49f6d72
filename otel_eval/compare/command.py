"""``otel-eval compare``'s options and entry points: list what changed between two versions, or
with ``--gate`` decide a rollout, as the exit code CI reads."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import InputError
from ..gate import DEFAULT_CONFIDENCE, DEFAULT_MARGIN, DEFAULT_MIN_SESSIONS, EXIT_CODES, NOT_ENOUGH_EVIDENCE, gate
from ..read.verdicts import verdict_counts
from .comparison import compare
from .render import render_comparison, render_gate


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``compare`` subcommand's options, for the CLI to attach to its subparser."""
    parser.add_argument("--baseline", required=True, metavar="VERSION", help="agent version to compare against")
    parser.add_argument("--candidate", required=True, metavar="VERSION", help="agent version being judged")
    parser.add_argument(
        "--db",
        action="append",
        default=[],
        metavar="PATH",
        help="database file; repeat to combine several collectors (default otel-eval.db)",
    )
    parser.add_argument(
        "--min-delta",
        type=float,
        default=0.0,
        metavar="X",
        help="mean-score change (at an equal pass rate) below which a case is unchanged (default 0)",
    )
    parser.add_argument(
        "--fail-on-regression", action="store_true", help="exit with status 1 when any case regressed (for CI)"
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON (docs/compare.md)")
    gate = parser.add_argument_group(
        "release gate",
        "--gate decides a rollout from the two versions' verdicts on the same golden cases, with "
        "confidence sequences valid however often it is asked (docs/compare.md#release-gate). Exit 0 promote, "
        "1 roll back, 3 not enough evidence yet.",
    )
    gate.add_argument(
        "--gate", action="store_true", help="decide promote / roll back / wait instead of listing changes"
    )
    gate.add_argument(
        "--margin",
        type=float,
        default=DEFAULT_MARGIN,
        metavar="X",
        help=f"largest pass-rate drop still acceptable (default {DEFAULT_MARGIN})",
    )
    gate.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        metavar="C",
        help=f"confidence of every decision together (default {DEFAULT_CONFIDENCE})",
    )
    gate.add_argument(
        "--min-sessions",
        type=int,
        default=DEFAULT_MIN_SESSIONS,
        metavar="N",
        help="sessions per version a case needs to be judged on its own; smaller cases count "
        f"overall only (default {DEFAULT_MIN_SESSIONS})",
    )


def gate_main(args: argparse.Namespace, console: Any = None) -> int:
    """``compare --gate``: the gate's decision as its exit code (0 promote, 1 roll back, 3 wait)."""
    if not 0.0 < args.confidence < 1.0 or not 0.0 <= args.margin < 1.0 or args.min_sessions < 1:
        raise InputError(
            "--gate",
            "--confidence must be in (0, 1), --margin in [0, 1) and --min-sessions ≥ 1; got "
            f"{args.confidence}, {args.margin}, {args.min_sessions}",
            "options",
        )
    counts = verdict_counts(args.db or ["otel-eval.db"])
    unknown = [v for v in (args.baseline, args.candidate) if v not in counts.sessions]
    if unknown:  # for a gate, a version not seen yet is "wait", not a usage error
        known = ", ".join(f"{v} ({n} sessions)" for v, n in counts.sessions.items()) or "none"
        print(
            f"otel-eval: not enough evidence yet: no evaluations of agent version {' or '.join(map(repr, unknown))}; "
            f"versions known: {known}",
            file=sys.stderr,
        )
        return EXIT_CODES[NOT_ENOUGH_EVIDENCE]
    result = gate(
        counts,
        args.baseline,
        args.candidate,
        margin=args.margin,
        confidence=args.confidence,
        min_sessions=args.min_sessions,
    )
    if getattr(args, "json", False):
        print(json.dumps(result.to_dict(), indent=2))
    else:
        render_gate(result, console)
    return result.exit_code


def compare_main(args: argparse.Namespace, console: Any = None) -> int:
    """Run ``otel-eval compare``; exit code 1 with --fail-on-regression and a regressed case, else 0.
    With ``--gate``, the gate's exit code (:func:`gate_main`)."""
    if getattr(args, "gate", False):
        return gate_main(args, console)
    comparison = compare(args.db or ["otel-eval.db"], args.baseline, args.candidate, getattr(args, "min_delta", 0.0))
    if getattr(args, "json", False):
        print(json.dumps(comparison.to_dict(), indent=2, default=str))
    else:
        render_comparison(comparison, console)
    return 1 if getattr(args, "fail_on_regression", False) and comparison.regressed else 0
