"""The label form and the production-loop pages in headless Chromium (as tests/test_ui_browser.py
drives it): a real browser's same-origin form POST passes the dashboard's Origin and CSRF checks
and stores the label; a page of another origin posting the same form is refused; and at a phone's
width (375 px) no page scrolls sideways: wide tables scroll inside their box."""

from __future__ import annotations

import sqlite3

import httpx

from examples.weather_agent import run_session

from .test_ui import GOLDEN, exporting_provider, wait_for_scored
from .test_ui_browser import CHROMIUM, LAUNCH_ARGS, _require_browser

TOKYO = "What's the weather in Tokyo?"


def test_label_form_and_narrow_pages_in_a_real_browser(tmp_path):
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
    long_id = "checkout-assistant-session-2027-01-15-eu-west-1-0000000042"
    try:
        provider = exporting_provider(collector.http_port)
        run_session(provider, "browser-fail", [TOKYO], version="2.0.0", mark_end=True)
        run_session(provider, long_id, [TOKYO], version="1.0.0", mark_end=True)
        for i in range(3):
            run_session(
                provider, f"joke-{i}", ["Tell me a joke about a very long distributed tracing pipeline"], mark_end=True
            )
        provider.shutdown()
        with httpx.Client(base_url=base, timeout=10) as client:
            wait_for_scored(client, 5)

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
            try:
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                problems: list[str] = []
                page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: problems.append(str(e)))

                page.goto(f"{base}/ui/sessions/browser-fail")
                page.fill("form.label-form textarea[name=note]", "the agent was right to ask for the forecast")
                page.fill("form.label-form input[name=by]", "heidi")
                page.click("form.label-form button.disagree")
                page.wait_for_url("**/ui/sessions/browser-fail#labels")
                latest = page.locator("p.latest-label")
                assert latest.get_attribute("data-label") == "disagree"
                assert "on FAIL by heidi" in latest.inner_text()

                # A page of another site, open in the same browser (so the dashboard's cookies are
                # there), posting the same form with a token it read somehow: refused.
                csrf = page.locator("form.label-form input[name=csrf]").get_attribute("value")
                evil_html = (
                    f'<form method="post" action="{base}/ui/label"><input name="session" value="browser-fail">'
                    f'<input name="csrf" value="{csrf}"><input name="label" value="agree"></form>'
                )
                other = context.new_page()
                other.route("http://evil.test/", lambda route: route.fulfill(body=evil_html, content_type="text/html"))
                other.goto("http://evil.test/")
                with other.expect_navigation():
                    other.evaluate("document.forms[0].submit()")
                assert "a cross-site request cannot write here" in other.content()
                other.close()

                # A phone's width: the header wraps, tables scroll in their box, the page does not.
                page.set_viewport_size({"width": 375, "height": 800})
                for path in (
                    "/ui/",
                    "/ui/coverage",
                    "/ui/clusters?min=1",
                    "/ui/labels",
                    "/ui/release",
                    "/ui/sessions/browser-fail",
                    f"/ui/sessions/{long_id}",
                ):
                    page.goto(f"{base}{path}")
                    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                    assert overflow <= 0, f"{path} scrolls sideways by {overflow}px at 375px"
                assert page.locator("nav.site a").count() == 5
                assert problems == [], f"browser console errors: {problems}"
            finally:
                browser.close()
    finally:
        collector.stop(grace=1.0)
    conn = sqlite3.connect(tmp_path / "eval.db")
    assert conn.execute("SELECT session_id, label, note, who, source FROM labels").fetchall() == [
        ("browser-fail", "disagree", "the agent was right to ask for the forecast", "heidi", "dashboard")
    ]
    conn.close()
