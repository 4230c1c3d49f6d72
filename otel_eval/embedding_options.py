"""The embedding match step's command-line options, shared by ``evaluate`` and ``rescore``
(the collector has its own, with TOML and environment variables: ``collector/config.py``)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .errors import InputError


def add_embedding_arguments(parser: argparse.ArgumentParser) -> None:
    """``--embedding-threshold`` and the embeddings server's options, the same for every command that
    matches sessions to cases."""
    parser.add_argument(
        "--embedding-threshold",
        type=float,
        metavar="SCORE",
        help="turn on the embedding match step at this similarity (0-100, e.g. 60): character "
        "n-grams, or the model of --embedding-url",
    )
    parser.add_argument(
        "--embedding-url",
        metavar="URL",
        help="OpenAI-compatible embeddings server (base URL, e.g. http://127.0.0.1:11434/v1); the "
        "key, if any, comes from OTEL_EVAL_EMBEDDING_API_KEY",
    )
    parser.add_argument("--embedding-model", metavar="NAME", help="model for --embedding-url (e.g. nomic-embed-text)")
    parser.add_argument(
        "--embedding-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds per embeddings request (default 10)",
    )


def embedding_backend(args: argparse.Namespace) -> Any:
    """``--embedding-url``/``--embedding-model``: the model for the embedding match step (None:
    the built-in n-grams)."""
    url, model = getattr(args, "embedding_url", None), getattr(args, "embedding_model", None)
    if not url and not model:
        return None
    if not (url and model):
        raise InputError(
            "--embedding-url" if not url else "--embedding-model", "--embedding-url and --embedding-model go together"
        )
    if getattr(args, "embedding_threshold", None) is None:
        raise InputError("--embedding-url", "an embedding model needs --embedding-threshold (0-100) to match with")
    from .golden.embedding import OpenAIEmbeddings

    try:
        return OpenAIEmbeddings(
            url, model, api_key=os.environ.get("OTEL_EVAL_EMBEDDING_API_KEY") or None, timeout=args.embedding_timeout
        )
    except ValueError as exc:
        raise InputError("--embedding-url", str(exc)) from None
