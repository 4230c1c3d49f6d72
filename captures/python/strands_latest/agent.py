"""The ``strands_default`` agent with Strands' latest GenAI conventions
(``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``), set before Strands is imported."""

import os
import runpy
from pathlib import Path

os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
runpy.run_path(str(Path(__file__).resolve().parents[1] / "strands_default" / "agent.py"), run_name="__main__")
