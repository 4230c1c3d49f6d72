"""What every dashboard page shares: escaping, the dashboard's URLs, the page frame and its
navigation, the verdict badges, and the short page that says why something cannot be shown.

Every value that comes from a span, a golden file or the query string is untrusted: it goes
through :func:`esc` before it reaches the markup, and nothing is ever inserted as raw HTML. The
pages carry no inline script or style, so the strict Content-Security-Policy the app sends holds;
``static/ui.js`` only re-fetches pages for live updates.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

#: Longest value shown inline; longer ones are cut with a note of how much was left out.
MAX_SHOWN_CHARS = 4000
#: Session ids longer than this are shown with their middle elided (the whole id is the link's
#: title and target): ids that share a long prefix stay tellable apart by their ends.
SESSION_ID_CHARS = 36
#: A session's verdict → the word its badge shows.
VERDICT_LABELS = {
    "pass": "PASS",
    "fail": "FAIL",
    "not_evaluated": "NOT EVALUATED",
    "unmatched": "unmatched",
    "pending": "pending",
}
#: A human label → the word its badge shows.
LABEL_WORDS = {"agree": "AGREE", "disagree": "DISAGREE"}
#: A stored verdict (what a label was given on) → the word the pages show.
STORED_VERDICT_WORDS = {"passed": "PASS", "failed": "FAIL", "not_evaluated": "NOT EVALUATED", "unmatched": "unmatched"}


def esc(value: Any) -> str:
    """``value`` as HTML text or attribute value (None as empty): the one way a value reaches a page."""
    return escape("" if value is None else str(value), quote=True)


def shorten(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` cut at ``limit`` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit} more characters)"


def as_display(value: Any) -> str:
    """Text for any stored value: strings as they are, the rest as indented JSON."""
    if isinstance(value, str):
        return shorten(value)
    return shorten(json.dumps(value, ensure_ascii=False, indent=2, default=str))


class Links:
    """URLs of the dashboard under its mount point (``/ui`` in the collector)."""

    def __init__(self, prefix: str):
        self.prefix = prefix.rstrip("/")

    def home(self, params: Mapping[str, str] | None = None) -> str:
        """The sessions page, with its filters as the query string."""
        query = urlencode(params or {})
        return f"{self.prefix}/" + (f"?{query}" if query else "")

    def session(self, session_id: str) -> str:
        """One session's page (the id quoted whole: ids may hold ``/``)."""
        return f"{self.prefix}/sessions/{quote(session_id, safe='')}"

    def static(self, name: str) -> str:
        """A static asset (stylesheet, script), served without a token so the login page is styled."""
        return f"{self.prefix}/static/{name}"

    def stamp(self) -> str:
        """The API answering what changed last: the page polls it and reloads when it moves."""
        return f"{self.prefix}/api/stamp"

    def coverage(self, params: Mapping[str, str] | None = None) -> str:
        """The golden coverage page, with its filters (empty ones left out of the URL)."""
        query = urlencode({k: v for k, v in (params or {}).items() if v})
        return f"{self.prefix}/coverage" + (f"?{query}" if query else "")

    def clusters(self, params: Mapping[str, str] | None = None) -> str:
        """The unmatched-query clusters page, with its filters (empty ones left out of the URL)."""
        query = urlencode({k: v for k, v in (params or {}).items() if v})
        return f"{self.prefix}/clusters" + (f"?{query}" if query else "")

    def labels(self) -> str:
        """The page of recent human labels."""
        return f"{self.prefix}/labels"

    def label_post(self) -> str:
        """Where the session page's label form posts."""
        return f"{self.prefix}/label"


#: The pages in the header's navigation: (key a page passes as ``current``, link text).
NAV = (
    ("sessions", "Sessions"),
    ("coverage", "Coverage"),
    ("clusters", "Unmatched clusters"),
    ("labels", "Labels"),
    ("release", "Release"),
)


def _nav(links: Links, current: str) -> str:
    targets = {
        "sessions": links.home(),
        "coverage": links.coverage(),
        "clusters": links.clusters(),
        "labels": links.labels(),
        "release": f"{links.prefix}/release",
    }
    items = []
    for key, text in NAV:
        mark = ' aria-current="page"' if key == current else ""
        items.append(f'<a href="{esc(targets[key])}" data-nav="{key}"{mark}>{esc(text)}</a>')
    return f'<nav class="site">{"".join(items)}</nav>'


def layout(
    links: Links, title: str, main: str, *, stamp: str = "", poll_seconds: float = 2.0, current: str = ""
) -> str:
    """A whole page: ``main`` in the frame with the navigation (``current`` marked); with a
    ``stamp`` of the data shown, ``static/ui.js`` polls every ``poll_seconds`` and re-fetches the
    page when the data changes."""
    live = (
        '<span id="live" class="live" title="the page refreshes itself when new data arrives">live</span>'
        if stamp
        else ""
    )
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)} · otel-eval</title><link rel=\"icon\" href=\"data:,\">"
        f"<link rel=\"stylesheet\" href=\"{esc(links.static('ui.css'))}\">"
        f"<script defer src=\"{esc(links.static('ui.js'))}\"></script></head>"
        f"<body data-stamp=\"{esc(stamp)}\" data-stamp-url=\"{esc(links.stamp())}\" data-poll=\"{poll_seconds:g}\">"
        f"<header><a class=\"brand\" href=\"{esc(links.home())}\">otel-eval</a>{_nav(links, current)}"
        f"<span class=\"where\">{esc(title)}</span>{live}</header>"
        f"<main>{main}</main></body></html>\n"
    )


def verdict_badge(verdict: str) -> str:
    """A session's verdict (pass, fail, not_evaluated, unmatched, pending) as a badge."""
    return f'<span class="badge v-{esc(verdict)}">{esc(VERDICT_LABELS.get(verdict, verdict))}</span>'


def judge_badge(state: str | None) -> str:
    """ "judge pending" (the verdict is the deterministic one until the judge answers) or "not
    sampled", marked apart from the verdict."""
    if not state:
        return ""
    kind = "pending" if state == "judge pending" else "not-sampled"
    return f' <span class="badge j-{kind}">{esc(state)}</span>'


def score_text(value: float | None) -> str:
    """A 0-1 score to two places, or a dash when there is none."""
    return "–" if value is None else f"{value:.2f}"


def time_cell(received_ns: int | None) -> str:
    """When a session last received a span: a ``<time>`` in UTC, to the second."""
    if not received_ns:
        return "–"
    seconds = int(received_ns) // 1_000_000_000
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
    return f'<time datetime="{stamp}">{time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))}</time>'


def message_page(links: Links, title: str, message: str, *, login: bool = False) -> str:
    """A whole page saying why something cannot be shown; with ``login``, the token form too."""
    body = f'<h1>{esc(title)}</h1><p>{esc(message)}</p>'
    if login:
        body += (
            f'<form class="login" method="post" action="{esc(links.prefix)}/login">'
            '<label>token <input type="password" name="token" autocomplete="current-password" autofocus></label>'
            '<button type="submit">open the dashboard</button></form>'
        )
    body += f'<p><a href="{esc(links.home())}">back to the sessions</a></p>'
    return layout(links, title, body)
