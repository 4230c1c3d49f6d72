"""The dashboard's production-loop pages over real HTTP (issue 33.1, 33.2, 33.5): Coverage,
Unmatched clusters, Labels, and the session page's label form, whose POST is the dashboard's one
write: refused without the token when one is set, refused from another site, refused without the
CSRF cookie and field; GET never writes. Also ``otel-eval ui`` on its own refusing a rebound Host.

A real collector (``--ui``, a bearer token) receives the example agent's spans and an app's user
feedback over OTLP/HTTP; the tests read what a person would see.
"""

from __future__ import annotations

import re
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from examples.weather_agent import run_session

from .polling import wait_until
from .test_labels import feedback_logger
from .test_ui import GOLDEN, TOKEN, wait_for_scored

ROOT = Path(__file__).resolve().parent.parent
TOKYO = "What's the weather in Tokyo?"
#: Unmatched traffic: a cluster of four (two phrasings), one of two, and a lone query.
UNMATCHED = (
    ["What's the weather in New York?"] * 3
    + ["what's the weather in new york"]
    + ["Tell me a joke"] * 2
    + ["Sing me a song"]
)
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    from collector.app import Collector
    from collector.config import CollectorConfig, Endpoint

    folder = tmp_path_factory.mktemp("ui-labels")
    collector = Collector(
        CollectorConfig(
            db=str(folder / "eval.db"),
            golden=GOLDEN,
            grpc=None,
            http=Endpoint("127.0.0.1", 0),
            trace_quiet=0.2,
            session_idle=0.3,
            ui=True,
            auth_token=TOKEN,
        )
    ).start()
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", headers=BEARER)
        )
    )
    run_session(provider, "ok-1", [TOKYO], version="1.0.0", mark_end=True)
    run_session(provider, "bad-1", [TOKYO], version="2.0.0", mark_end=True)
    for i, query in enumerate(UNMATCHED):
        run_session(provider, f"other-{i}", [query], mark_end=True)
    provider.shutdown()
    client = httpx.Client(base_url=f"http://127.0.0.1:{collector.http_port}", timeout=20, headers=BEARER)
    wait_for_scored(client, 2 + len(UNMATCHED), timeout=30)
    yield collector, client
    client.close()
    collector.stop(grace=1.0)


def labels_in(collector) -> list[tuple]:
    conn = sqlite3.connect(collector.config.db)
    rows = conn.execute("SELECT session_id, label, note, who, source FROM labels ORDER BY id").fetchall()
    conn.close()
    return rows


def form_of(page: str) -> dict[str, str]:
    form = re.search(r'<form class="label-form".*?</form>', page).group(0)
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form))


def browser(collector) -> httpx.Client:
    """A client that keeps cookies, as a browser does, and sends what a browser's same-origin form
    POST sends: the Origin of the page."""
    base = f"http://127.0.0.1:{collector.http_port}"
    return httpx.Client(base_url=base, timeout=20, headers={"Origin": base, "Sec-Fetch-Site": "same-origin"})


def test_every_page_is_in_the_navigation(dashboard):
    _, client = dashboard
    home = client.get("/ui/").text
    nav = dict(re.findall(r'<a href="([^"]*)" data-nav="(\w+)"', home))
    assert nav == {
        "/ui/": "sessions",
        "/ui/coverage": "coverage",
        "/ui/clusters": "clusters",
        "/ui/labels": "labels",
        "/ui/release": "release",
    }
    for href, key in nav.items():
        page = client.get(href)
        assert page.status_code == 200
        assert re.search(rf'data-nav="{key}" aria-current="page"', page.text), key


def test_coverage_page_shows_cases_by_version_and_day_the_never_exercised_and_the_unmatched_share(dashboard):
    _, client = dashboard
    page = client.get("/ui/coverage").text
    total = 2 + len(UNMATCHED)
    share = f"{len(UNMATCHED) / total:.0%}"
    assert f"unmatched {share} ({len(UNMATCHED)} of {total} sessions)" in page
    assert re.search(rf'data-stat="unmatched"><a href="/ui/\?result=unmatched">{share}</a>', page)
    row = re.search(r'<tr data-case="weather_tokyo">.*?</tr>', page).group(0)
    assert '<td class="num">2</td>' in row
    assert "<li>1.0.0 1</li><li>2.0.0 1</li>" in row
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert f'<time datetime="{today}">{today}</time> 2' in row
    never = re.search(r'<section class="never">.*?</section>', page).group(0)
    assert 'data-case="refund_policy"' in never and 'data-case="weather_tokyo"' not in never
    assert client.get("/ui/coverage", params={"since": "2099-01-01"}).text.count("<tr data-case=") == 0
    bad = client.get("/ui/coverage", params={"since": "last week"})
    assert bad.status_code == 400 and "query string (since): not an ISO-8601 time" in bad.text


def test_clusters_page_ranks_unmatched_queries_with_their_phrasings_and_sessions(dashboard):
    _, client = dashboard
    page = client.get("/ui/clusters").text
    clusters = re.findall(r'<article class="cluster" data-sessions="(\d+)" data-query="([^"]*)">(.*?)</article>', page)
    assert [(n, q) for n, q, _ in clusters] == [("4", "What&#x27;s the weather in New York?"), ("2", "Tell me a joke")]
    body = clusters[0][2]
    assert re.findall(r"<li><q>([^<]*)</q> <span class=\"muted\">×(\d+)</span>", body) == [
        ("What&#x27;s the weather in New York?", "3"),
        ("what&#x27;s the weather in new york", "1"),
    ]
    examples = set(re.findall(r'<a href="/ui/sessions/([^"]+)"', body))
    assert examples == {"other-0", "other-1", "other-2", "other-3"}
    assert (
        f"{len(UNMATCHED)} unmatched session(s), {len(UNMATCHED)} with a query; 6 of them in 2 cluster(s) of at least 2"
        in page
    )
    assert "otel-eval golden suggest --min-sessions 2" in page
    lone = client.get("/ui/clusters", params={"min": "1"}).text
    assert re.findall(r'data-sessions="(\d+)"', lone) == ["4", "2", "1"]
    assert client.get("/ui/clusters", params={"min": "0"}).status_code == 400


def test_a_label_from_the_session_page_is_stored_and_shown(dashboard):
    collector, _ = dashboard
    with browser(collector) as client:
        page = client.get("/ui/sessions/bad-1", headers=BEARER)
        cookie = page.headers["set-cookie"]
        assert cookie.startswith("otel_eval_csrf=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert page.headers["referrer-policy"] == "same-origin"
        form = form_of(page.text)
        assert form["session"] == "bad-1" and len(form["csrf"]) == 64
        assert "Agree: FAIL is right" in page.text and "Disagree: it should be PASS" in page.text
        answer = client.post(
            "/ui/label",
            headers=BEARER,
            data={**form, "label": "disagree", "by": "grace", "note": "Tokyo's forecast is <b>fine</b>"},
        )
        assert answer.status_code == 303 and answer.headers["location"] == "/ui/sessions/bad-1#labels"
        shown = client.get("/ui/sessions/bad-1", headers=BEARER).text
    assert ("bad-1", "disagree", "Tokyo's forecast is <b>fine</b>", "grace", "dashboard") in labels_in(collector)
    latest = re.search(r'<p class="latest-label" data-label="disagree">.*?</p>', shown).group(0)
    assert "on FAIL by grace" in latest and "&lt;b&gt;fine&lt;/b&gt;" in latest
    # The Labels page counts it: the verdict (FAIL) was wrong, the session should have passed.
    labels_page = client_get(collector, "/ui/labels")
    verdict_row = re.search(r'<tr data-criterion="verdict" class="verdict">(.*?)</tr>', labels_page).group(1)
    assert re.findall(r'<td class="num">(?:<b>)?([^<]*)', verdict_row) == ["1", "0", "0%", "0", "1"]


def client_get(collector, path: str) -> str:
    with httpx.Client(base_url=f"http://127.0.0.1:{collector.http_port}", timeout=20, headers=BEARER) as c:
        return c.get(path).text


def test_a_browser_logged_in_with_the_cookie_labels_without_the_bearer_header(dashboard):
    collector, _ = dashboard
    with browser(collector) as client:
        login = client.post("/ui/login", data={"token": TOKEN})
        assert login.status_code == 303
        form = form_of(client.get("/ui/sessions/ok-1").text)
        answer = client.post("/ui/label", data={**form, "label": "agree"})
        assert answer.status_code == 303
    assert labels_in(collector)[-1] == ("ok-1", "agree", None, "dashboard", "dashboard")


def test_a_post_without_the_token_is_refused_when_a_token_is_set(dashboard):
    collector, _ = dashboard
    before = labels_in(collector)
    with browser(collector) as client:
        form = form_of(client.get("/ui/sessions/ok-1", headers=BEARER).text)  # a valid form and CSRF cookie
        refused = client.post("/ui/label", data={**form, "label": "disagree"})
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == 'Bearer realm="otel-eval"'
        wrong = client.post("/ui/label", data={**form, "label": "disagree"}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
    assert labels_in(collector) == before


def test_a_cross_site_post_is_refused(dashboard):
    collector, _ = dashboard
    before = labels_in(collector)
    with browser(collector) as client:
        form = {**form_of(client.get("/ui/sessions/ok-1", headers=BEARER).text), "label": "disagree"}
        # A page on another site posting the form (even with the token and the cookie, which a
        # browser would not send cross-site: SameSite=Strict) is refused by its Origin ...
        evil = client.post(
            "/ui/label", data=form, headers={**BEARER, "Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"}
        )
        assert evil.status_code == 403 and "Origin &#x27;http://evil.example&#x27; is not this dashboard" in evil.text
        # ... by the browser's own word that it is cross-site ...
        site = client.post("/ui/label", data=form, headers={**BEARER, "Sec-Fetch-Site": "cross-site"})
        assert site.status_code == 403 and "cross-site request cannot write here" in site.text
        # ... and by an opaque origin (a sandboxed frame, a data: page).
        opaque = client.post("/ui/label", data=form, headers={**BEARER, "Origin": "null"})
        assert opaque.status_code == 403
        # A same-origin post whose CSRF field does not match its cookie: another browser's form.
        with browser(collector) as other:
            theirs = form_of(other.get("/ui/sessions/ok-1", headers=BEARER).text)
        stolen = client.post("/ui/label", data={**theirs, "label": "disagree"}, headers=BEARER)
        assert stolen.status_code == 403 and "reload the session page" in stolen.text
        missing = client.post("/ui/label", data={"session": "ok-1", "label": "disagree"}, headers=BEARER)
        assert missing.status_code == 403
    # No cookie at all (a script that never loaded the page), with the token:
    with httpx.Client(base_url=f"http://127.0.0.1:{collector.http_port}", timeout=20) as bare:
        assert bare.post("/ui/label", data=form, headers=BEARER).status_code == 403
        as_json = bare.post("/ui/label", json=form, headers=BEARER)
        assert as_json.status_code == 415
    assert labels_in(collector) == before


def test_get_never_writes_and_bad_labels_are_refused(dashboard):
    collector, client = dashboard
    before = labels_in(collector)
    assert client.get("/ui/label", params={"session": "ok-1", "label": "agree"}).status_code == 405
    assert client.post("/ui/", content=b"x").status_code == 405
    with browser(collector) as b:
        form = form_of(b.get("/ui/sessions/ok-1", headers=BEARER).text)
        assert b.post("/ui/label", data={**form, "label": "maybe"}, headers=BEARER).status_code == 400
        assert (
            b.post("/ui/label", data={**form, "label": "agree", "session": "nobody"}, headers=BEARER).status_code == 404
        )
        long_note = b.post("/ui/label", data={**form, "label": "agree", "note": "x" * 4001}, headers=BEARER)
        assert long_note.status_code == 400 and "at most 4000" in long_note.text
    assert labels_in(collector) == before


def test_user_feedback_shows_on_the_session_page_and_per_verdict(dashboard):
    collector, client = dashboard
    provider, logger = feedback_logger(collector.http_port, headers=BEARER)  # the receiver wants the token too
    logger.emit(
        event_name="gen_ai.evaluation.result",
        attributes={
            "gen_ai.evaluation.name": "user_rating",
            "gen_ai.evaluation.score.label": "thumbs_down",
            "session.id": "bad-1",
            "gen_ai.evaluation.explanation": "wrong city",
        },
    )
    provider.shutdown()
    page = client.get("/ui/sessions/bad-1").text
    row = re.search(r'<table class="feedback">.*?</table>', page).group(0)
    assert "user_rating" in row and "<b>thumbs_down</b>" in row and "wrong city" in row
    assert client.get(f"/ui/api/sessions/{quote('bad-1')}").json()["feedback"][0]["value"] == "thumbs_down"
    counts = re.search(r'<table class="feedback-counts">.*?</table>', client.get("/ui/labels").text).group(0)
    assert re.search(
        r'<tr data-outcome="failed"><td>failed</td><td>user_rating</td><td>thumbs_down</td>'
        r'<td class="num">1</td></tr>',
        counts,
    )


def _answers(url: str) -> bool:
    """Does a server answer at ``url`` (whatever its status)?"""
    try:
        httpx.get(url, timeout=2)
    except httpx.TransportError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_standalone_dashboard_refuses_a_rebound_host_and_takes_a_token_less_label(dashboard, tmp_path):
    collector, _ = dashboard
    db = tmp_path / "copy.db"
    with sqlite3.connect(collector.config.db) as source, sqlite3.connect(db) as copy:
        source.backup(copy)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "otel_eval.cli", "ui", "--db", str(db), "--listen", f"127.0.0.1:{port}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _answers(f"{base}/ui/static/ui.css"), timeout=20, what="otel-eval ui to start")
        rebound = httpx.get(f"{base}/ui/", headers={"Host": f"attacker.example:{port}"})
        assert rebound.status_code == 403 and "DNS rebinding" in rebound.text
        with httpx.Client(base_url=base, timeout=20) as client:
            form = form_of(client.get("/ui/sessions/ok-1").text)
            assert (
                client.post(
                    "/ui/label", data={**form, "label": "agree"}, headers={"Origin": "http://localhost:1"}
                ).status_code
                == 403
            )
            assert (
                client.post("/ui/label", data={**form, "label": "agree"}, headers={"Origin": base}).status_code == 303
            )
        conn = sqlite3.connect(db)
        assert conn.execute("SELECT session_id, label, source FROM labels ORDER BY id DESC LIMIT 1").fetchone() == (
            "ok-1",
            "agree",
            "dashboard",
        )
        conn.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
