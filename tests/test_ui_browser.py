"""The dashboard end to end in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

The example agent sends a passing and a failing session over OTLP/HTTP to a collector started
with the dashboard on; a real browser opens /ui, sees a third session appear live, filters to the
failures, opens the failing session and finds the trajectory mismatch marked. The screenshot of
that page is checked for content; with OTEL_EVAL_SAVE_SCREENSHOT=1 it is saved as
docs/images/dashboard.png for the README (off by default so a test run leaves the tree clean).

Playwright only drives the system Chromium (``executable_path``); it never downloads a browser.
Without Chromium the test fails under CI (CI=true: .ci/run installs it) and skips elsewhere.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import httpx
import pytest

from examples.weather_agent import run_session

from .test_ui import GOLDEN, exporting_provider, wait_for_scored

CHROMIUM = os.environ.get("OTEL_EVAL_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
SCREENSHOT = Path(__file__).resolve().parent.parent / "docs" / "images" / "dashboard.png"


def _require_browser():
    reason = None
    if not os.path.exists(CHROMIUM):
        reason = f"{CHROMIUM} not found (apt-get install chromium, as .ci/run does)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = reason or "the playwright package is not installed (pip install -e '.[test]')"
        sync_playwright = None
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser test cannot run in CI: {reason}")
        pytest.skip(reason)
    return sync_playwright


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the raw RGB(A) rows of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header  # type: ignore[misc]
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unexpected PNG format {header}"
    bpp = 4 if colour == 6 else 3
    raw, stride = zlib.decompress(idat), width * bpp
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def luminance_stats(data: bytes) -> tuple[float, int]:
    """(variance of pixel luminance, number of distinct colours) over a sample of pixels."""
    width, height, rows = png_pixels(data)
    bpp = len(rows[0]) // width
    values, colours = [], set()
    for y in range(0, height, 4):
        row = rows[y]
        for x in range(0, width, 4):
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            values.append(0.299 * r + 0.587 * g + 0.114 * b)
            colours.add((r, g, b))
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / len(values), len(colours)


def test_png_reader_measures_a_blank_and_a_busy_image():
    def png(width, height, pixel_of):
        raw = b"".join(b"\x00" + b"".join(bytes(pixel_of(x, y)) for x in range(width)) for y in range(height))

        def chunk(kind, body):
            return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b"")
        )

    assert luminance_stats(png(16, 16, lambda x, y: (255, 255, 255))) == (0.0, 1)
    variance, colours = luminance_stats(png(16, 16, lambda x, y: (0, 0, 0) if x < 8 else (255, 255, 255)))
    assert (round(variance), colours) == (16256, 2)


def test_dashboard_in_a_real_browser(tmp_path):
    sync_playwright = _require_browser()
    from collector.app import Collector
    from collector.config import CollectorConfig, Endpoint

    collector = Collector(
        CollectorConfig(
            db=str(tmp_path / "eval.db"),
            golden=GOLDEN,
            grpc=None,
            http=Endpoint("127.0.0.1", 0),
            trace_quiet=0.2,
            session_idle=0.3,
            ui=True,
        )
    ).start()
    base = f"http://127.0.0.1:{collector.http_port}"
    try:
        provider = exporting_provider(collector.http_port)
        run_session(provider, "browser-pass", ["What's the weather in Tokyo?"], version="1.0.0", mark_end=True)
        run_session(provider, "browser-fail", ["What's the weather in Tokyo?"], version="2.0.0", mark_end=True)
        provider.force_flush()
        with httpx.Client(base_url=base, timeout=10) as client:
            wait_for_scored(client, 2)

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                problems: list[str] = []
                foreign: list[str] = []
                page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: problems.append(str(e)))
                page.on("request", lambda r: None if r.url.startswith(base) else foreign.append(r.url))

                page.goto(f"{base}/ui/")
                rows = page.locator("tbody#session-rows tr[data-session]")
                assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.session)")) == [
                    "browser-fail",
                    "browser-pass",
                ]
                assert page.locator('tr[data-session="browser-fail"] .badge').inner_text() == "FAIL"
                assert page.locator("figure.case-chart[data-case=weather_tokyo] svg circle").count() == 2

                # Live: a session that ends while the page is open shows up without a reload.
                run_session(provider, "browser-live", ["Tell me a joke"], mark_end=True)
                provider.force_flush()
                page.wait_for_selector('tr[data-session="browser-live"]', timeout=20_000)
                assert page.locator('tr[data-session="browser-live"] .badge').inner_text() == "unmatched"
                assert page.locator("#live").inner_text() == "live"

                # Filter to the failures with the menu (the page applies it on change).
                page.select_option("form.filters select[name=result]", "failed")
                page.wait_for_url("**/ui/?*result=failed*")
                assert rows.evaluate_all("rs => rs.map(r => r.dataset.session)") == ["browser-fail"]
                assert page.locator('a.tab.current').get_attribute("data-result") == "failed"

                page.click('tr[data-session="browser-fail"] td.sid a')
                page.wait_for_url("**/ui/sessions/browser-fail")
                assert page.locator("h1.session-title").inner_text() == "browser-fail"
                marks = page.locator("table.traj tbody tr")
                assert marks.evaluate_all("rs => rs.map(r => r.dataset.kind)") == ["missing", "extra"]
                missing = page.locator('table.traj tr[data-kind="missing"]')
                assert missing.locator("td.mark").inner_text().strip() == "✗ missing"
                assert 'get_weather(city="Tokyo")' in missing.inner_text()
                assert 'get_forecast(city="Tokyo", days=1)' in page.locator('tr[data-kind="extra"]').inner_text()
                # The mismatch is marked visibly, not only in the markup: its row is tinted.
                tint = missing.evaluate("r => getComputedStyle(r).backgroundColor")
                assert tint not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")

                shot = page.screenshot(full_page=True)

                # A span's AgentData opens with a click.
                tool = page.locator('tr.span[data-name="get_forecast"]')
                tool.locator("summary").click()
                passed = tool.locator("dl.fields dt", has_text="parameters_passed").first
                assert passed.is_visible()
                assert '"days": 1' in passed.locator("xpath=following-sibling::dd[1]").inner_text()

                assert problems == [], f"browser console errors: {problems}"
                assert foreign == [], f"the dashboard requested other hosts: {foreign}"
            finally:
                browser.close()
        provider.shutdown()
    finally:
        collector.stop(grace=1.0)

    variance, colours = luminance_stats(shot)
    assert variance > 100 and colours > 20, f"screenshot looks blank (variance {variance:.1f}, {colours} colours)"
    if os.environ.get("OTEL_EVAL_SAVE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        SCREENSHOT.write_bytes(shot)
