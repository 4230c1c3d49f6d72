"""The web dashboard (--ui) served by a real collector, read with httpx.

The example weather agent sends its spans over OTLP/HTTP to a collector on a free loopback port;
the collector scores them against the example golden set, and the tests read what a person
would see: the sessions list and its filters, one session's trajectory diff and spans, the JSON
API, the token check and the escaping of hostile span values.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from examples.weather_agent import run_session
from otel_eval.read.spans import build_tree
from otel_eval.spans import SpanRecord
from otel_eval.ui.chart import Bucket, bucket_width, pass_rate_series, render_chart
from tests.polling import wait_until

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = [str(ROOT / "examples" / "golden" / "weather.evalset.json")]
HOSTILE_SESSION = '<b>"hostile"</b>&co'
HOSTILE_INPUT = "<script>alert('pwned')</script>"
TOKEN = "s3cret-token"


def exporting_provider(port: int) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")))
    return provider


def send_hostile_session(provider: TracerProvider) -> None:
    """An agent span whose session id and input are HTML/script, as a malicious client could send."""
    tracer = provider.get_tracer("tests.hostile")
    with tracer.start_as_current_span(
        HOSTILE_INPUT,
        attributes={
            "openinference.span.kind": "AGENT",
            "session.id": HOSTILE_SESSION,
            "input.value": HOSTILE_INPUT,
            "output.value": "<img src=x onerror=alert(1)>",
            "otel_eval.session.end": True,
        },
    ):
        pass


def wait_for_scored(client: httpx.Client, count: int, timeout: float = 20.0, **auth) -> dict:
    def scored() -> dict | None:
        data = client.get("/ui/api/sessions", **auth).json()
        return data if sum(1 for s in data["sessions"] if s["verdict"] != "pending") >= count else None

    return wait_until(
        scored,
        timeout=timeout,
        what=lambda: f"{count} scored sessions in {client.get('/ui/api/sessions', **auth).json()['sessions']}",
    )


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    """A collector with --ui holding four scored sessions: pass, fail (v2), unmatched, hostile."""
    from collector.app import Collector
    from collector.config import CollectorConfig, Endpoint

    folder = tmp_path_factory.mktemp("ui")
    collector = Collector(
        CollectorConfig(
            db=str(folder / "eval.db"),
            golden=GOLDEN,
            grpc=None,
            http=Endpoint("127.0.0.1", 0),
            trace_quiet=0.2,
            session_idle=0.3,
            ui=True,
        )
    ).start()
    provider = exporting_provider(collector.http_port)
    run_session(provider, "ui-pass", ["What's the weather in Tokyo?"], version="1.0.0", mark_end=True)
    run_session(provider, "ui-fail", ["What's the weather in Tokyo?"], version="2.0.0", mark_end=True)
    run_session(provider, "ui-unmatched", ["Tell me a joke"], version="1.0.0", mark_end=True)
    send_hostile_session(provider)
    provider.shutdown()
    client = httpx.Client(base_url=f"http://127.0.0.1:{collector.http_port}", timeout=10)
    wait_for_scored(client, 4)
    yield collector, client
    client.close()
    collector.stop(grace=1.0)


def session_ids(data: dict) -> set[str]:
    return {s["session_id"] for s in data["sessions"]}


def test_sessions_page_lists_every_session_with_its_verdict(dashboard):
    _, client = dashboard
    page = client.get("/ui/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    rows = {
        session: verdict for verdict, session in re.findall(r'<tr class="row-(\w+)" data-session="([^"]*)"', page.text)
    }
    assert rows == {
        "ui-pass": "pass",
        "ui-fail": "fail",
        "ui-unmatched": "unmatched",
        "&lt;b&gt;&quot;hostile&quot;&lt;/b&gt;&amp;co": "unmatched",
    }
    # The failing session names the criterion that failed, the result tabs count each result.
    fail_row = re.search(r'data-session="ui-fail">.*?</tr>', page.text).group(0)
    assert "trajectory_match" in fail_row and "weather_tokyo" in fail_row and "2.0.0" in fail_row
    tabs = dict(re.findall(r'data-result="(\w+)" href="[^"]*">[\w ]+ <span class="count">(\d+)</span>', page.text))
    assert tabs == {"all": "4", "passed": "1", "failed": "1", "not_evaluated": "0", "unmatched": "2", "pending": "0"}
    # /ui without the slash is the same page; nothing refers to another host.
    assert client.get("/ui").status_code == 200
    assert not re.search(r'(src|href)="(https?:)?//', page.text)


def test_filters_by_result_case_version_and_text(dashboard):
    _, client = dashboard

    def ids(**params) -> set[str]:
        return session_ids(client.get("/ui/api/sessions", params=params).json())

    assert ids(result="failed") == {"ui-fail"}
    assert ids(result="passed") == {"ui-pass"}
    assert ids(result="unmatched") == {"ui-unmatched", HOSTILE_SESSION}
    assert ids(result="pending") == set()
    assert ids(case="weather_tokyo") == {"ui-pass", "ui-fail"}
    assert ids(version="2.0.0") == {"ui-fail"}
    assert ids(case="weather_tokyo", version="1.0.0") == {"ui-pass"}
    assert ids(q="joke") == {"ui-unmatched"}
    assert ids(q="%") == set()  # LIKE wildcards in the search text are literal
    page = client.get("/ui/", params={"result": "failed"}).text
    assert re.findall(r'data-session="([^"]*)"', page) == ["ui-fail"]
    assert '<option value="failed" selected>' in page


def test_bad_filter_is_a_400_naming_the_parameter(dashboard):
    _, client = dashboard
    api = client.get("/ui/api/sessions", params={"result": "great"})
    assert api.status_code == 400
    assert api.json() == {
        "error": "query string (result): result must be one of passed, failed, not_evaluated, "
        "unmatched, pending, got 'great'"
    }
    page = client.get("/ui/", params={"page_size": "0"})
    assert page.status_code == 400
    assert "page_size must be a whole number from 1 to 500, got &#x27;0&#x27;" in page.text


def test_pages_follow_the_session_list(dashboard):
    _, client = dashboard
    data = client.get("/ui/api/sessions", params={"page_size": 3}).json()
    assert (data["total"], len(data["sessions"])) == (4, 3)
    second = client.get("/ui/api/sessions", params={"page_size": 3, "page": 2}).json()
    assert len(second["sessions"]) == 1
    assert session_ids(data) | session_ids(second) == {"ui-pass", "ui-fail", "ui-unmatched", HOSTILE_SESSION}


def test_session_page_marks_each_trajectory_mismatch(dashboard):
    _, client = dashboard
    page = client.get("/ui/sessions/ui-fail")
    assert page.status_code == 200
    rows = re.findall(r'<tr class="traj-(\w+)" data-kind="\w+">.*?</tr>', page.text)
    assert rows == ["missing", "extra"]
    missing = re.search(r'<tr class="traj-missing".*?</tr>', page.text).group(0)
    extra = re.search(r'<tr class="traj-extra".*?</tr>', page.text).group(0)
    assert (
        "✗</span> missing" in missing and "get_weather(city=&quot;Tokyo&quot;)" in missing and "not called" in missing
    )
    assert "get_forecast(city=&quot;Tokyo&quot;, days=1)" in extra and "not expected" in extra
    assert re.search(
        r'data-criterion="trajectory_match"><td>trajectory_match</td><td><span class="badge c-fail">fail'
        r'</span></td><td class="num">0.00</td><td class="num">0.8</td><td>1 missing, 1 extra call</td>',
        page.text,
    )
    # The passing version of the same case: one matched row and no mismatch.
    ok = client.get("/ui/sessions/ui-pass").text
    assert re.findall(r'<tr class="traj-(\w+)"', ok) == ["match"]


def test_session_page_shows_the_spans_tree_with_timings_and_agent_data(dashboard):
    _, client = dashboard
    page = client.get("/ui/sessions/ui-fail").text
    spans = re.findall(
        r'<td class="name depth-(\d+)"><details id="[^"]*"><summary>([^<]*) <span class="tag">(\w+)</span>', page
    )
    assert spans == [
        ("0", "agent.invoke", "agent"),
        ("1", "ChatCompletion", "llm"),
        ("1", "get_forecast", "tool"),
        ("1", "ChatCompletion", "llm"),
    ]
    assert len(re.findall(r'<td class="num">\d+(\.\d+)? ms</td><td class="timeline"><svg class="bar"', page)) == 4
    # AgentData from the agent_data table: the tool span's call and the root's task and response.
    assert "<dt>agent_task</dt><dd><pre>What&#x27;s the weather in Tokyo?</pre></dd>" in page
    assert "<dt>agent_response</dt><dd><pre>Tomorrow in Tokyo: 24°C and sunny.</pre></dd>" in page
    assert "trace AgentData (aggregated)" in page
    assert "&quot;tool_name&quot;: &quot;get_forecast&quot;" in page


def test_session_json_and_missing_session(dashboard):
    _, client = dashboard
    data = client.get("/ui/api/sessions/ui-fail").json()
    assert (data["case_id"], data["verdict"], data["agent_version"]) == ("weather_tokyo", "fail", "2.0.0")
    assert data["failing_criteria"] == ["trajectory_match", "response_match"]
    assert data["match"]["method"] == "exact"
    assert client.get("/ui/api/sessions/nope").status_code == 404
    missing = client.get("/ui/sessions/nope")
    assert missing.status_code == 404 and "no session &#x27;nope&#x27;" in missing.text


def test_hostile_span_values_are_escaped(dashboard):
    _, client = dashboard
    listing = client.get("/ui/").text
    detail = client.get("/ui/sessions/" + quote(HOSTILE_SESSION, safe=""))
    assert detail.status_code == 200
    for page in (listing, detail.text):
        assert "<script>alert" not in page and "<b>\"hostile\"" not in page and "<img src=x" not in page
    assert "&lt;b&gt;&quot;hostile&quot;&lt;/b&gt;&amp;co" in listing
    assert 'href="/ui/sessions/%3Cb%3E%22hostile%22%3C%2Fb%3E%26co"' in listing
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in detail.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in detail.text


def test_stamp_changes_when_a_new_session_arrives(start_collector):
    collector = start_collector(grpc=None, ui=True, golden=GOLDEN)
    client = httpx.Client(base_url=f"http://127.0.0.1:{collector.http_port}", timeout=10)
    before = client.get("/ui/api/stamp").json()["stamp"]
    assert client.get("/ui/api/stamp").json()["stamp"] == before
    provider = exporting_provider(collector.http_port)
    run_session(provider, "ui-late", ["What is your refund policy?"], mark_end=True)
    provider.shutdown()
    wait_until(
        lambda: client.get("/ui/api/stamp").json()["stamp"] != before,
        what="the stamp to change after a new session was stored",
    )
    data = wait_for_scored(client, 1)
    assert [(s["session_id"], s["verdict"]) for s in data["sessions"]] == [("ui-late", "pass")]
    client.close()


def test_dashboard_is_read_only_and_serves_only_its_own_assets(dashboard):
    _, client = dashboard
    assert client.post("/ui/", content=b"x").status_code == 405
    assert client.get("/ui/static/ui.js").headers["content-type"] == "text/javascript; charset=utf-8"
    assert client.get("/ui/static/ui.css").status_code == 200
    assert client.get("/ui/static/../app.py").status_code == 404
    assert client.get("/ui/static/app.py").status_code == 404
    assert client.get("/ui/api/nothing").json() == {"error": "no such API route /api/nothing"}


def test_ui_is_off_unless_asked(start_collector):
    collector = start_collector(grpc=None)
    response = httpx.get(f"http://127.0.0.1:{collector.http_port}/ui/")
    assert response.status_code == 404
    assert response.json() == {"error": "the dashboard is off; start the collector with --ui"}


def test_token_protects_the_dashboard_like_the_receiver(start_collector):
    collector = start_collector(grpc=None, ui=True, auth_token=TOKEN)
    base = f"http://127.0.0.1:{collector.http_port}"
    assert any(line.endswith("/ui/ (bearer token required)") for line in collector.banner())
    page = httpx.get(f"{base}/ui/")
    assert page.status_code == 401
    assert page.headers["www-authenticate"] == 'Bearer realm="otel-eval"'
    assert '<form class="login" method="post" action="/ui/login">' in page.text
    api = httpx.get(f"{base}/ui/api/sessions")
    assert (api.status_code, api.json()) == (401, {"error": "missing or wrong bearer token"})
    assert httpx.get(f"{base}/ui/api/stamp", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(f"{base}/ui/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    # A browser logs in once with the token; the cookie it gets holds a digest, never the token.
    wrong = httpx.post(f"{base}/ui/login", data={"token": "guess"})
    assert wrong.status_code == 401 and "wrong token" in wrong.text and "set-cookie" not in wrong.headers
    login = httpx.post(f"{base}/ui/login", data={"token": TOKEN})
    assert login.status_code == 303 and login.headers["location"] == "/ui/"
    cookie = login.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui" in cookie and TOKEN not in cookie
    with httpx.Client(base_url=base, cookies=login.cookies) as browser:
        assert browser.get("/ui/api/stamp").status_code == 200
    # The receiver keeps its own check.
    assert httpx.get(f"{base}/metrics").status_code == 401


def test_pass_rate_buckets_adapt_to_the_time_covered():
    assert bucket_width(0, 59) == 60
    assert bucket_width(0, 23 * 60) == 60
    assert bucket_width(0, 24 * 60) == 300
    assert bucket_width(0, 3 * 86400) == 6 * 3600
    width, series = pass_rate_series(
        [
            ("2026-01-01T10:00:05.000Z", "1.0", True),
            ("2026-01-01T10:00:50.000Z", "1.0", False),
            ("2026-01-01T10:03:00.000Z", "1.0", True),
            ("2026-01-01T10:03:10.000Z", "2.0", False),
        ]
    )
    minute = 1767261600.0
    assert width == 60
    assert series == {"1.0": [Bucket(minute, 2, 1), Bucket(minute + 180, 1, 1)], "2.0": [Bucket(minute + 180, 1, 0)]}
    assert [b.pass_rate for b in series["1.0"]] == [0.5, 1.0]


def test_chart_draws_one_line_per_version_and_escapes_labels():
    width, series = pass_rate_series(
        [
            ("2026-01-01T10:00:00Z", "<v1>", True),
            ("2026-01-01T11:00:00Z", "<v1>", False),
            ("2026-01-01T11:00:00Z", "v2", True),
        ]
    )
    svg = render_chart(width, series, title="case <x>")
    assert svg.startswith('<svg class="chart"') and svg.endswith("</svg>")
    assert svg.count("<polyline") == 1  # v1 has two points; v2's single point is a dot only
    assert re.findall(r'data-version="([^"]*)" data-rate="([\d.]+)"', svg) == [
        ("&lt;v1&gt;", "1.0000"),
        ("&lt;v1&gt;", "0.0000"),
        ("v2", "1.0000"),
    ]
    assert "<v1>" not in svg and "<title>case &lt;x&gt;</title>" in svg
    assert "no evaluations yet" in render_chart(60, {}, title="empty")


def test_span_tree_keeps_orphans_and_survives_parent_cycles():
    def span(sid, parent, start):
        return (SpanRecord("t", sid, parent, f"s{sid}", start, start + 10), "genai", "llm")

    tree = build_tree(
        "t",
        [
            span("a", None, 0),
            span("b", "a", 1),
            span("c", "b", 2),
            span("d", "lost", 3),
            span("x", "y", 4),
            span("y", "x", 5),
        ],
    )
    assert [(r.span.span_id, r.depth) for r in tree.rows] == [
        ("a", 0),
        ("b", 1),
        ("c", 2),
        ("d", 0),
        ("x", 0),
        ("y", 0),
    ]
    assert (tree.start_ns, tree.end_ns) == (0, 15)


def test_standalone_dashboard_refuses_a_missing_database(tmp_path, capsys):
    import argparse

    from otel_eval.ui import add_ui_arguments, ui_main

    parser = argparse.ArgumentParser()
    add_ui_arguments(parser)
    missing = tmp_path / "none.db"
    assert ui_main(parser.parse_args(["--db", str(missing)])) == 2
    assert capsys.readouterr().err == f"otel-eval ui: error: {missing}: database file not found\n"
    assert ui_main(parser.parse_args(["--db", str(missing), "--listen", "nowhere"])) == 2
    assert "--listen: expected HOST:PORT or 'off', got 'nowhere'" in capsys.readouterr().err
