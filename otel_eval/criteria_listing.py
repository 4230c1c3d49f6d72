"""``otel-eval criteria``: every criterion a config may name, from the registry, with its
one-line description, default threshold, what it needs from a golden case and its options.
docs/metrics.md ("Every criterion") has a section for each; a test keeps the three in step."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_criteria_arguments(parser: argparse.ArgumentParser) -> None:
    """``otel-eval criteria``'s one option, ``--json``."""
    parser.add_argument("--json", action="store_true", help="print as JSON")


def describe_criteria() -> list[dict[str, Any]]:
    """One entry a registered criterion, in registration order."""
    from .criteria.registry import REGISTRY  # imported when asked: building the CLI parser stays light

    return [
        {
            "kind": c.kind,
            "aliases": REGISTRY.aliases_of(c.kind),
            "description": c.description,
            "default_threshold": c.default_threshold,
            "needs": c.expectation.field if c.expectation is not None else None,
            "options": sorted(c.option_names()),
            "judge": c.judge,
            "informational": c.informational,
            "every_session": c.reference_free,
            "google_adk": c.adk,
        }
        for c in REGISTRY
    ]


def _traits(entry: dict[str, Any]) -> str:
    traits = ["no threshold" if entry["informational"] else f"default threshold {entry['default_threshold']:g}"]
    if entry["needs"]:
        traits.append(f"needs {entry['needs']}")
    if entry["judge"]:
        traits.append("LLM judge")
    if entry["informational"]:
        traits.append("informational")
    if entry["every_session"]:
        traits.append("every session")
    if entry["google_adk"]:
        traits.append(f"google-adk metric ({entry['google_adk']})")
    return "; ".join(traits)


def criteria_main(args: argparse.Namespace) -> int:
    """``otel-eval criteria``: every criterion a config may name, with what it measures, its
    default threshold and what it needs from a case, so a config is written without reading the code."""
    entries = describe_criteria()
    if args.json:
        print(json.dumps(entries, indent=2))
        return 0
    for entry in entries:
        also = f" (also: {', '.join(entry['aliases'])})" if entry["aliases"] else ""
        print(f"{entry['kind']}{also}: {entry['description']}")
        print(f"    {_traits(entry)}")
        options = [o for o in entry["options"] if o != "kind"]
        if options:
            print(f"    options: {', '.join(options)}")
    print(
        "\nAny criterion may be configured under a name of its own with options.kind; docs/metrics.md describes each."
    )
    return 0
