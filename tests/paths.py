"""Where the shared fixtures are: ``../shared/fixtures`` beside the checkout (as in CI), or
``OTEL_EVAL_FIXTURES``."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _fixtures() -> Path:
    if os.environ.get("OTEL_EVAL_FIXTURES"):
        return Path(os.environ["OTEL_EVAL_FIXTURES"])
    for candidate in (REPO.parent / "shared" / "fixtures", Path("/work/shared/fixtures")):
        if candidate.is_dir():
            return candidate
    return REPO.parent / "shared" / "fixtures"


FIXTURES = _fixtures()
