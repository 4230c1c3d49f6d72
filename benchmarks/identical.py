"""Same results before and after a speed change: a canonical dump of what scoring stores.

Run by hand, not in CI::

    .venv/bin/python -m benchmarks.identical --out before.json      # on the code before
    .venv/bin/python -m benchmarks.identical --against before.json  # on the code after

It stores the scoring benchmark's sessions (same generator and seed as ``benchmarks.scoring``:
half OpenInference, half GenAI, 10,000-case golden set) in a temp SQLite file, scores and commits
every one through :mod:`otel_eval.pipeline` (as the engine's writer would), then also runs
``evaluate()`` over the real captures in ``/work/shared/fixtures`` (or ``--fixtures``) with the
repository's test golden sets. The dump holds every stored evaluation (all columns but id and
time), criterion result, ``agent_data`` row (as a reader of the table sees it), session row and
span type, sorted, so two dumps compare equal exactly when the stored outcome is the same.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import scoring

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path("/work/shared/fixtures")


def dump_database(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:

        def rows(sql: str, drop: Sequence[str] = ()) -> list[dict[str, Any]]:
            out = [{k: r[k] for k in r.keys() if k not in drop} for r in conn.execute(sql)]
            return sorted(out, key=lambda d: json.dumps(d, sort_keys=True, default=str))

        evaluations = rows("SELECT * FROM evaluations", drop=("id", "created_at"))
        criteria = rows(
            "SELECT e.session_id, e.revision, c.* FROM criterion_results c"
            " JOIN evaluations e ON e.id = c.evaluation_id",
            drop=("id", "evaluation_id"),
        )
        agent = rows("SELECT * FROM agent_data", drop=("id",))
        sessions = rows(
            "SELECT session_id, status, keyed_by, end_requested, revision, span_count, trace_count,"
            " user_id, agent_version, service_name, query FROM sessions"
        )
        spans = rows("SELECT trace_id, span_id, session_id, convention, span_type FROM spans")
    finally:
        conn.close()
    return {
        "evaluations": evaluations,
        "criterion_results": criteria,
        "agent_data": agent,
        "sessions": sessions,
        "spans": spans,
    }


def benchmark_dump(sessions: int, golden_cases: int, seed: int, workdir: Path) -> dict[str, Any]:
    from otel_eval import pipeline
    from otel_eval.golden import GoldenIndex, load_golden
    from otel_eval.models.evalset import EvalConfig
    from otel_eval.store import Store

    db = workdir / "bench.db"
    golden, session_ids, _ = scoring.build_database(db, sessions, golden_cases, seed)
    ctx = pipeline.ScoringContext(index=GoldenIndex([load_golden(golden)]), config=EvalConfig.default())
    store = Store(db)
    results = []
    group: list[Any] = []

    def commit() -> None:
        # In writer rounds of up to 64, through the writer's own grouped path where it has one.
        with store.transaction():
            if hasattr(pipeline, "commit_evaluations"):
                pipeline.commit_evaluations(store, group)
            else:
                for finished in group:
                    pipeline.commit_evaluation(store, finished)
        group.clear()

    try:
        for sid in session_ids:
            finished = pipeline.score_stored_session(store, sid, ctx)
            if finished is None:
                continue
            results.append(finished.result.model_dump(mode="json"))
            group.append(finished)
            if len(group) == 64:
                commit()
        if group:
            commit()
    finally:
        store.close()
    return {"results": results, **dump_database(db)}


def fixture_dumps(fixtures: Path, workdir: Path) -> dict[str, Any]:
    from otel_eval.offline import evaluate

    golden_dir = REPO / "tests" / "data" / "golden"
    golden = [golden_dir / "seed_weather.evalset.json", golden_dir / "seed_revenue.trajectory.json"]
    out: dict[str, Any] = {}
    files = sorted(fixtures.glob("realclients/*.otlp.json")) + [
        p for p in sorted(fixtures.glob("noveum/dataset*.json"))
    ]
    for path in files:
        db = workdir / f"{path.stem}.db"
        results = evaluate([path], golden=golden, db=db)
        out[str(path.relative_to(fixtures))] = {
            "results": sorted(
                (r.model_dump(mode="json") for r in results), key=lambda d: json.dumps(d, sort_keys=True, default=str)
            ),
            **dump_database(db),
        }
    return out


VOLATILE = {"duration_seconds"}
"""Keys whose values are timings, not outcomes."""


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, str) and value[:1] in ("{", "["):
        # JSON text stored in a column: compared as the value it holds, not its spacing (the
        # encoder may change; what a reader gets back may not).
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return json.dumps(_scrub(parsed), sort_keys=True)
    return value


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{path}: {a!r:.200} != {b!r:.200}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return f"{path}.{key}: only in {'after' if key not in a else 'before'}"
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r:.300} != {b!r:.300}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.identical", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--golden-cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--out", type=Path, help="write the dump here")
    parser.add_argument("--against", type=Path, help="compare with a dump written earlier")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="otel-eval-identical-") as tmp:
        dump = {"benchmark": benchmark_dump(args.sessions, args.golden_cases, args.seed, Path(tmp))}
        if args.fixtures.is_dir():
            dump["fixtures"] = fixture_dumps(args.fixtures, Path(tmp))
    dump = _scrub(json.loads(json.dumps(dump, default=str)))  # tuples and lists compare alike
    if args.out:
        args.out.write_text(json.dumps(dump, sort_keys=True))
    counts = {k: len(v) for k, v in dump["benchmark"].items()}
    print(f"benchmark: {counts}; fixtures: {len(dump.get('fixtures', {}))} files")
    if args.against:
        before = _scrub(json.loads(args.against.read_text()))
        found = first_difference(before, dump)
        if found:
            print(f"DIFFERENT at {found}")
            return 1
        print(f"identical to {args.against}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
