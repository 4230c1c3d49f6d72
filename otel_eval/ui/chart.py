"""Pass rate over time as an inline SVG, drawn on the server (no chart library, no script).

:func:`pass_rate_series` is the arithmetic (evaluations → per-version time buckets), kept apart
from :func:`render_chart` (buckets → SVG markup) so the numbers can be checked on their own.
The bucket width adapts to the time covered: a burst of test sessions gets minutes, a month of
production traffic gets days, and a chart never has more than :data:`MAX_BUCKETS` points per line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from html import escape

MAX_BUCKETS = 24
#: Candidate bucket widths in seconds, narrowest first.
BUCKET_WIDTHS = (60, 300, 900, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400)
#: Line colours per agent version (colour-blind-safe palette, Okabe–Ito).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")


@dataclass(frozen=True)
class Bucket:
    """One point of a version's line: the evaluations that began in one time bucket and how many passed."""

    start: float
    """Bucket start, seconds since the epoch (UTC)."""
    evaluations: int
    passed: int

    @property
    def pass_rate(self) -> float:
        """Passed / evaluations (a bucket exists only with at least one evaluation)."""
        return self.passed / self.evaluations


def parse_time(text: str) -> float:
    """Seconds since the epoch of an ISO-8601 timestamp as the store writes it (``...Z``)."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def bucket_width(first: float, last: float) -> int:
    """The narrowest width that covers ``first..last`` in at most :data:`MAX_BUCKETS` buckets."""
    for width in BUCKET_WIDTHS:
        if int(last // width) - int(first // width) + 1 <= MAX_BUCKETS:
            return width
    return BUCKET_WIDTHS[-1]


def pass_rate_series(points: Sequence[tuple[str, str, bool]]) -> tuple[int, dict[str, list[Bucket]]]:
    """``(created_at, agent_version, passed)`` → (bucket width, buckets per version, time order).

    All versions share the bucket grid so their points line up vertically.
    """
    if not points:
        return BUCKET_WIDTHS[0], {}
    timed = [(parse_time(t), version, passed) for t, version, passed in points]
    width = bucket_width(min(t for t, _, _ in timed), max(t for t, _, _ in timed))
    counts: dict[str, dict[float, list[int]]] = {}
    for t, version, passed in timed:
        cell = counts.setdefault(version, {}).setdefault((t // width) * width, [0, 0])
        cell[0] += 1
        cell[1] += int(passed)
    series = {
        version: [Bucket(start, n, ok) for start, (n, ok) in sorted(cells.items())]
        for version, cells in sorted(counts.items())
    }
    return width, series


def _label(seconds: float, width: int) -> str:
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    if width >= 86400:
        return moment.strftime("%Y-%m-%d")
    return moment.strftime("%m-%d %H:%M")


def render_chart(width: int, series: dict[str, list[Bucket]], *, title: str, size: tuple[int, int] = (360, 150)) -> str:
    """SVG markup: y = pass rate (0–100 %), x = time, one line per agent version, a dot per bucket
    whose tooltip gives the counts. Every text from the data is escaped."""
    w, h = size
    left, right, top, bottom = 34, 10, 10, 34
    plot_w, plot_h = w - left - right, h - top - bottom
    starts = sorted({b.start for buckets in series.values() for b in buckets})
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    for rate in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - rate)
        parts.append(
            f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{left - 4}" y="{y + 3:.1f}" text-anchor="end">{rate:.0%}</text>'
        )
    if not starts:
        parts.append(
            f'<text class="axis" x="{left + plot_w / 2:.1f}" y="{top + plot_h / 2:.1f}" '
            f'text-anchor="middle">no evaluations yet</text></svg>'
        )
        return "".join(parts)

    def x_of(start: float) -> float:
        if len(starts) == 1:
            return left + plot_w / 2
        return left + plot_w * (start - starts[0]) / (starts[-1] - starts[0])

    for index, (version, buckets) in enumerate(series.items()):
        colour = PALETTE[index % len(PALETTE)]
        coords = [(x_of(b.start), top + plot_h * (1 - b.pass_rate), b) for b in buckets]
        if len(coords) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in coords)
            parts.append(f'<polyline class="series" points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y, b in coords:
            parts.append(
                f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}" '
                f'data-version="{escape(version)}" data-rate="{b.pass_rate:.4f}">'
                f'<title>{escape(version)}: {b.passed}/{b.evaluations} passed ({b.pass_rate:.0%}) '
                f'from {_label(b.start, width)} UTC</title></circle>'
            )
        legend_x = left + index * 90
        parts.append(
            f'<rect x="{legend_x}" y="{h - 12}" width="10" height="4" fill="{colour}"/>'
            f'<text class="legend" x="{legend_x + 14}" y="{h - 7}">{escape(version[:14])}</text>'
        )
    parts.append(f'<text class="axis" x="{left}" y="{top + plot_h + 13}">{_label(starts[0], width)}</text>')
    if len(starts) > 1:
        parts.append(
            f'<text class="axis" x="{left + plot_w}" y="{top + plot_h + 13}" text-anchor="end">'
            f'{_label(starts[-1], width)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
