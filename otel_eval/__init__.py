"""otel-eval: live evaluation of AI agents from their OpenTelemetry traces.

from otel_eval import EvalSpanProcessor
provider.add_span_processor(EvalSpanProcessor(db="otel-eval.db", golden=["cases.evalset.json"]))
"""

__version__ = "0.1.0"

from .engine import Engine, EngineSettings, EvaluationStored, IngestResult, QueueFull
from .mapping import map_span
from .models import AgentData, EvalCaseResult, EvalConfig, EvalReport, EvalSet
from .offline import evaluate
from .processor import EvalSpanProcessor

__all__ = [
    "Engine",
    "EngineSettings",
    "EvaluationStored",
    "IngestResult",
    "QueueFull",
    "evaluate",
    "map_span",
    "AgentData",
    "EvalCaseResult",
    "EvalConfig",
    "EvalReport",
    "EvalSet",
    "EvalSpanProcessor",
    "__version__",
]
