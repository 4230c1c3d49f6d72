"""``otel-eval label SESSION agree|disagree [--note TEXT] [--db D] [--by NAME]``: a reviewer's word on
a session's verdict.

``agree``: the session's current verdict is right; ``disagree``: it is wrong (a pass that should
have failed, or the other way round). Stored with who (``--by``, default ``$USER``) and when, in
the database the collector writes, beside it while it runs (one short transaction; SQLite's busy
timeout waits out the collector's commits). Every label is kept and the latest counts; ``report``
and the dashboard show how often each criterion agrees with them (:mod:`otel_eval.read.labels`).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sqlite3

from .errors import InputError
from .read.database import open_database
from .read.evaluations import recent_sessions
from .read.labels import corrected_verdict
from .store import Store
from .store.labels import LABELS, UnlabellableSession

#: Seconds the label's write waits for the collector's writer (as long as ``rescore``'s writes).
WRITE_TIMEOUT_S = 30.0


def add_label_arguments(parser: argparse.ArgumentParser) -> None:
    """``otel-eval label``'s arguments: the session, agree or disagree, and who says so with a note."""
    parser.add_argument("session", metavar="SESSION", help="the session id (as `otel-eval report` lists it)")
    parser.add_argument(
        "label",
        choices=LABELS,
        metavar="agree|disagree",
        help="agree: the session's current verdict is right; disagree: it is wrong",
    )
    parser.add_argument("--note", metavar="TEXT", help="why, in a sentence or two")
    parser.add_argument("--db", default="otel-eval.db", help="database the session is in (default otel-eval.db)")
    parser.add_argument("--by", metavar="NAME", help="who labels (default $USER)")


def reviewer(name: str | None) -> str:
    """``--by``, else the login name."""
    if name and name.strip():
        return name.strip()
    found = os.environ.get("USER") or os.environ.get("USERNAME")
    if not found:
        try:
            found = getpass.getuser()
        except Exception:  # no login name at all (a container without a passwd entry)
            found = "unknown"
    return found


def why_not(session_id: str, state: str | None, recent: list[str]) -> str:
    """Why a session cannot be labelled, and what to try instead."""
    if state in ("open", "ended"):
        why = "it is still open" if state == "open" else "it has ended and is waiting to be scored"
        return f"session {session_id!r} has no verdict to label yet: {why}; label it once it is scored"
    hint = f"; recent sessions: {', '.join(recent)}" if recent else "; no session has been scored yet"
    return f"no session {session_id!r}{hint}"


def label_main(args: argparse.Namespace) -> int:
    """Store the label; exit 0. An unknown session (or one not scored yet), a missing database or
    a write that fails raise :class:`InputError`, which the CLI prints as one line, exit 2."""
    db = args.db
    open_database(db).close()  # the same checks (and migration of an older file) as every reader
    who = reviewer(args.by)
    try:
        store = Store(db, timeout=WRITE_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise InputError(db, f"cannot open the database to write the label: {exc}") from None
    try:
        stored = store.add_label(args.session, args.label, note=args.note, who=who, source="cli")
    except UnlabellableSession as exc:
        raise InputError(db, why_not(args.session, exc.state, recent_sessions([db])), "SESSION") from None
    except ValueError as exc:
        raise InputError("--note", str(exc)) from None
    except sqlite3.Error as exc:  # locked past the timeout, read-only file, disk full
        raise InputError(db, f"the label was not stored: {exc}") from None
    finally:
        store.close()
    labelled = stored.verdict if stored.case_id else "unmatched"
    corrected = corrected_verdict(stored.verdict, stored.label)
    meaning = (
        (f"the verdict stands ({corrected})" if stored.label == "agree" else f"it should be {corrected}")
        if corrected
        else "no pass/fail verdict to correct, kept with its note"
    )
    case = f", case {stored.case_id}" if stored.case_id else ""
    print(
        f"labelled session {stored.session_id} (revision {stored.revision}, {labelled}{case}): {stored.label}, "
        f"{meaning}; by {stored.who}"
    )
    return 0
