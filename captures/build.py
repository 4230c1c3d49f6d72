"""Rebuild one or all captures: a pinned environment, the scripted model, the sink, the agent.

For a Python framework ``captures/python/<name>/`` holds ``requirements.txt`` (pinned) and
``agent.py``; for a JavaScript one ``captures/js/<name>/`` holds ``package.json``,
``package-lock.json`` (pinned, installed with ``npm ci``) and ``agent.mjs``. The agent plays every scenario of :mod:`captures.scenarios`
against the scripted model (``OPENAI_BASE_URL``) and exports OTLP/HTTP to the sink
(``OTEL_EXPORTER_OTLP_ENDPOINT``); the session of a scenario is ``<name>-<scenario.session>``
(``CAPTURE_NAME`` in the environment). Needs PyPI and npm, never at test time::

    .venv/bin/python -m captures.build strands_default        # or: --all, --list
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import otlp_sink, scripted_model
from .pack import DEST, pack

HERE = Path(__file__).resolve().parent
VENVS = Path(os.environ.get("CAPTURE_VENVS", Path(tempfile.gettempdir()) / "otel-eval-capture-venvs"))


def python_captures() -> list[str]:
    return sorted(p.name for p in (HERE / "python").iterdir() if (p / "agent.py").exists())


def js_captures() -> list[str]:
    return sorted(p.name for p in (HERE / "js").iterdir() if (p / "agent.mjs").exists())


def agent_command(name: str) -> list[str]:
    if name in python_captures():
        folder = HERE / "python" / name
        venv = VENVS / name
        stamp = venv / ".installed"
        requirements = folder / "requirements.txt"
        if not stamp.exists() or stamp.read_text() != requirements.read_text():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "-r", str(requirements)], check=True)
            stamp.write_text(requirements.read_text())
        return [str(venv / "bin" / "python"), str(folder / "agent.py")]
    if name in js_captures():
        folder = HERE / "js" / name
        if not (folder / "node_modules").exists():
            subprocess.run(["npm", "ci", "--silent", "--no-audit", "--no-fund"], cwd=folder, check=True)
        return ["node", str(folder / "agent.mjs")]
    raise SystemExit(f"no capture named {name!r}; known: {', '.join(python_captures() + js_captures())}")


def build(name: str, extra_env: dict[str, str] | None = None) -> list[Path]:
    command = agent_command(name)
    with tempfile.TemporaryDirectory(prefix=f"capture-{name}-") as tmp:
        raw = Path(tmp) / "raw"
        sink = otlp_sink.serve(raw)
        model = scripted_model.serve(log_path=str(Path(tmp) / "model.jsonl"))
        endpoint = f"http://127.0.0.1:{sink.server_port}"
        env = {
            **os.environ,
            "CAPTURE_NAME": name,
            "OPENAI_BASE_URL": f"http://127.0.0.1:{model.server_port}/v1",
            "OPENAI_API_KEY": "sk-scripted",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_SERVICE_NAME": f"captures-{name}",
            "OTEL_RESOURCE_ATTRIBUTES": "service.version=1.0.0,deployment.environment.name=captures",
            "PYTHONPATH": str(HERE.parent),
            **(extra_env or {}),
        }
        subprocess.run(command, env=env, check=True, cwd=HERE.parent)
        sink.shutdown()
        model.shutdown()
        if not any(raw.glob("*.traces.*")):
            raise SystemExit(f"{name}: the agent ran but exported no spans")
        keep = os.environ.get("CAPTURE_KEEP_LOG")
        if keep:
            shutil.copy(Path(tmp) / "model.jsonl", keep)
        return pack(raw, name, DEST)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        print("\n".join(python_captures() + js_captures()))
        return
    names = python_captures() + js_captures() if args.all else args.names
    if not names:
        parser.error("name a capture, or --all")
    for name in names:
        for path in build(name):
            print(path)


if __name__ == "__main__":
    main()
