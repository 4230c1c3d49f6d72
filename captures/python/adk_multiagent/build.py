"""Rebuild ``tests/data/captures/adk_multiagent/``: every scenario of ``run.py``, in both of ADK's
telemetry schemas, run under the reference environment, then packed as the other captures are.

Run in otel-eval's virtualenv, after ``make reference`` built ``.venv-reference``::

    .venv/bin/python captures/python/adk_multiagent/build.py [SCENARIO ...]

For each capture ``<name>`` (``transfer``, ``transfer-legacy``, ...) it writes
``<name>.traces.pb`` (the run's spans, :mod:`captures.pack`'s format) and ``<name>.adk.json``
(google-adk's side of the same run: its invocations' tool calls, the calls per user message and
its ``TrajectoryEvaluator`` scores; see ``run.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from captures.pack import pack  # noqa: E402  (the repository root is on the path only now)

DEST = REPO / "tests" / "data" / "captures" / "adk_multiagent"
RUN = Path(__file__).with_name("run.py")


def reference_python() -> Path:
    named = os.environ.get("OTEL_EVAL_REFERENCE_PYTHON")
    return Path(named) if named else REPO / ".venv-reference" / "bin" / "python"


def build(scenarios: list[str], dest: Path = DEST) -> list[Path]:
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp)
        subprocess.run(
            [str(reference_python()), "-W", "ignore", str(RUN), "--out", str(raw), *scenarios], check=True, cwd=REPO
        )
        dest.mkdir(parents=True, exist_ok=True)
        for side in sorted(raw.glob("*.adk.json")):
            name = side.name[: -len(".adk.json")]
            written += pack(raw / name, name, dest)
            written.append(Path(shutil.copyfile(side, dest / side.name)))
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", help="default: all")
    parser.add_argument("--dest", type=Path, default=DEST)
    args = parser.parse_args()
    for path in build(args.scenarios, args.dest):
        print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


if __name__ == "__main__":
    main()
