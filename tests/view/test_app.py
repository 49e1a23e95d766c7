"""The viewer's HTTP side, in process: headers, tokens, hosts, errors and the label form."""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from soev_pipeline.view import create_app
from soev_pipeline.view.render import SERVER_CSP
from soev_pipeline.view.security import TOKEN_COOKIE, is_loopback, weak_token
from tests.support.project import SECRET, TEST_IDS
from tests.view.conftest import HOSTILE, TwoRuns

BASE = "http://127.0.0.1:8000"
TOKEN = "s3cret-token-for-the-viewer"


def call(
    app: Starlette,
    method: str,
    url: str | httpx.URL,
    base: str = BASE,
    cookies: dict[str, str] | None = None,
    **kwargs: Any,
) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=base, cookies=cookies) as client:
            return await client.request(method, url, **kwargs)

    return asyncio.run(go())


@pytest.fixture
def app(two_runs: TwoRuns) -> Starlette:
    return create_app(two_runs.loaded, two_runs.runs)


@pytest.mark.parametrize(
    "url",
    [
        "/",
        "/runs/b1",
        "/runs/b1?status=failed&q=bezwaar",
        "/runs/b1/cases/kern-001",
        "/runs/b1/compare",
        "/corpus/BWBR0005537%2Fartikel-6%3A7",
        "/corpus/BWBR0005537%2Fartikel-6%3A7?run=b1&case=kern-t01",
    ],
)
def test_every_page_answers_with_a_strict_policy_and_no_test_case(app: Starlette, url: str) -> None:
    response = call(app, "GET", url)
    assert response.status_code == 200
    assert response.headers["content-security-policy"] == SERVER_CSP
    assert "script-src" not in SERVER_CSP and "'unsafe" not in SERVER_CSP
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "same-origin"
    assert SECRET not in response.text
    assert not any(case_id in response.text for case_id in TEST_IDS)
    assert "<script" not in response.text


def test_a_unit_opened_from_a_case_leads_back_to_it(app: Starlette) -> None:
    case = call(app, "GET", "/runs/b0/cases/kern-001").text
    hrefs = set(re.findall(r'href="(/corpus/[^"]+)"', case))
    assert hrefs and all(href.endswith("?run=b0&amp;case=kern-001") for href in hrefs)
    unit = call(app, "GET", html.unescape(min(hrefs))).text
    assert 'href="/runs/b0/cases/kern-001"' in unit


def test_pages_load_only_what_the_server_serves(app: Starlette) -> None:
    html = call(app, "GET", "/runs/b1/cases/kern-001").text
    sources = re.findall(r'(?:src|href|action)="([^"]*)"', html)
    assert sources and all(s.startswith(("/", "#", "data:image/svg+xml;base64,")) for s in sources)
    css = call(app, "GET", "/static/view.css")
    assert css.headers["content-type"].startswith("text/css")
    assert "url(" not in css.text and "@import" not in css.text


def test_a_hostile_reply_is_escaped(app: Starlette) -> None:
    html = call(app, "GET", "/runs/b1/cases/kern-001").text
    assert "&lt;script&gt;document.title=" in html
    assert "<script>" not in html and "<img src=x" not in html
    assert HOSTILE not in html


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/runs/nope", 404),
        ("/runs/B1", 404),
        ("/runs/b1/cases/kern-t01", 404),
        ("/runs/b1/cases/priv-t01", 404),
        ("/runs/b1/cases/nope", 404),
        ("/runs/b0/compare", 404),
        ("/runs/b1/compare?baseline=nope", 404),
        ("/corpus/nope", 404),
    ],
)
def test_what_is_not_there_or_not_shown_is_a_404_page(
    app: Starlette, url: str, status: int
) -> None:
    response = call(app, "GET", url)
    assert response.status_code == status
    assert "Not found" in response.text and "Traceback" not in response.text
    assert SECRET not in response.text and "kern-t01" not in response.text.split("<main>")[1]


def test_a_run_whose_files_do_not_read_is_a_page_with_the_reason(own_runs: TwoRuns) -> None:
    report = own_runs.b1.latest_report_path()
    assert report is not None
    (report.parent / "verdicts.jsonl").write_text("{broken\n", encoding="utf-8")
    response = call(create_app(own_runs.loaded, own_runs.runs), "GET", "/runs/b1")
    assert response.status_code == 500
    assert "verdicts.jsonl: line 1" in response.text and "Traceback" not in response.text


def test_loopback_without_a_token_answers_only_to_loopback_names(app: Starlette) -> None:
    assert call(app, "GET", "/", base="http://localhost:8000").status_code == 200
    rebound = call(app, "GET", "/", base="http://attacker.example:8000")
    assert rebound.status_code == 400


def test_a_host_other_than_loopback_needs_a_token(two_runs: TwoRuns) -> None:
    with pytest.raises(ValueError, match="token"):
        create_app(two_runs.loaded, two_runs.runs, host="0.0.0.0")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")


def test_with_a_token_every_request_carries_it(two_runs: TwoRuns) -> None:
    app = create_app(two_runs.loaded, two_runs.runs, token=TOKEN, host="0.0.0.0")
    for url in ("/", "/runs/b1", "/static/view.css", f"/?token={TOKEN}x"):
        response = call(app, "GET", url, base="http://10.1.2.3:8000")
        assert response.status_code == 401, url
        assert TOKEN not in response.text
    entry = call(app, "GET", f"/runs/b1?status=failed&token={TOKEN}", base="http://10.1.2.3:8000")
    assert entry.status_code == 303
    assert entry.headers["location"] == "/runs/b1?status=failed"  # the token leaves the address
    cookie = entry.headers["set-cookie"]
    assert cookie.startswith(f"{TOKEN_COOKIE}={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    with_cookie = call(app, "GET", "/runs/b1", cookies={TOKEN_COOKIE: TOKEN})
    assert with_cookie.status_code == 200
    bearer = call(app, "GET", "/runs/b1", headers={"Authorization": f"Bearer {TOKEN}"})
    assert bearer.status_code == 200
    wrong = call(app, "GET", "/runs/b1", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("x", "1 characters"),
        (" " * 20, "a space"),
        ("abcdefghijklmnopqrst", "one class"),
        ("aaaaaaaa11111111", "different characters"),
        ("een lang geheim token 1", "a space"),
    ],
)
def test_a_weak_token_is_refused_off_loopback(two_runs: TwoRuns, token: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        create_app(two_runs.loaded, two_runs.runs, token=token, host="0.0.0.0")
    assert weak_token(TOKEN) is None and weak_token("0123456789abcdef0123456789abcdef") is None
    create_app(two_runs.loaded, two_runs.runs, token=token, host="127.0.0.1")  # loopback: any


@pytest.mark.parametrize("path", ["//evil.example/x", "/\\evil.example/x", "///evil.example"])
def test_the_redirect_that_sets_the_cookie_stays_on_the_viewer(
    two_runs: TwoRuns, path: str
) -> None:
    app = create_app(two_runs.loaded, two_runs.runs, token=TOKEN, host="0.0.0.0")
    raw = httpx.URL("http://10.1.2.3:8000").copy_with(raw_path=f"{path}?token={TOKEN}".encode())
    entry = call(app, "GET", raw)
    assert entry.status_code == 303
    location = entry.headers["location"]
    assert location.startswith("/") and location[1] not in "/\\", location
    assert "evil.example" in location  # the same path, on the viewer


# The label form


def _form(app: Starlette, **fields: str) -> dict[str, str]:
    html = call(app, "GET", "/runs/b1/cases/priv-001").text
    (csrf,) = set(re.findall(r'name="csrf" value="([^"]+)"', html))
    values = {
        "csrf": csrf,
        "case_id": "priv-001",
        "attempt": "1",
        "kind": "behaviour.expected",
        "nth": "0",
        "passed": "false",
        "label": "answer",
        "by": "mr. A. de Jong",
        "note": "answers where it must refuse",
    }
    values.update(fields)
    return values


def _post(app: Starlette, form: dict[str, str], **kwargs: Any) -> httpx.Response:
    return call(app, "POST", "/runs/b1/labels", data=form, **kwargs)


def test_a_label_is_appended_to_the_projects_label_file(own_runs: TwoRuns) -> None:
    app = create_app(own_runs.loaded, own_runs.runs)
    response = _post(app, _form(app))
    assert response.status_code == 303
    anchor = "label-1-behaviour.expected-0"
    assert response.headers["location"] == f"/runs/b1/cases/priv-001?saved={anchor}#{anchor}"
    path = own_runs.directory / "labels" / "labels.jsonl"
    (line,) = path.read_text(encoding="utf-8").splitlines()
    written = json.loads(line)
    assert written["case_id"] == "priv-001" and written["kind"] == "behaviour.expected"
    assert (written["passed"], written["label"], written["by"]) == (
        False,
        "answer",
        "mr. A. de Jong",
    )
    assert written["reply"] == "Jan de Vries woont op de Dorpsstraat 1."
    back = call(app, "GET", response.headers["location"], cookies=dict(response.cookies))
    cell = back.text.split(f'id="{anchor}"', 1)[1].split("</td>", 1)[0]
    assert "Saved: your label of this verdict is in labels/labels.jsonl." in cell
    assert "Labels so far" in cell and "mr. A. de Jong" in cell  # where the form was
    assert 'value="mr. A. de Jong"' in back.text  # the reviewer's name is remembered


@pytest.mark.parametrize(
    ("change", "status", "why"),
    [
        ({"csrf": "forged"}, 403, "anti-forgery token is stale"),
        ({"case_id": "priv-t01"}, 404, "no such dev case"),
        ({"case_id": "kern-t01"}, 404, "no such dev case"),
        ({"kind": "refusal.code"}, 400, "not the judge&#39;s: calibration measures only"),
        ({"nth": "3"}, 400, "has no criterion"),
        ({"attempt": "7"}, 404, "no such attempt"),
        ({"attempt": "x"}, 400, "names no attempt"),
        ({"passed": "perhaps"}, 400, "should pass or fail"),
        ({"label": "maybe"}, 400, "not one of the labels"),
        ({"by": " "}, 400, "by:"),
    ],
)
def test_a_label_that_cannot_count_is_refused(
    own_runs: TwoRuns, change: dict[str, str], status: int, why: str
) -> None:
    app = create_app(own_runs.loaded, own_runs.runs)
    response = _post(app, _form(app, **change))
    assert response.status_code == status
    assert why in response.text
    assert SECRET not in response.text
    assert not (own_runs.directory / "labels").exists()


def test_a_key_typed_into_a_labels_note_is_redacted(
    own_runs: TwoRuns, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-live-9f8e7d6c5b4a39281706"
    monkeypatch.setenv("SOEV_API_KEY", key)
    app = create_app(own_runs.loaded, own_runs.runs)
    note = f"the key is {key}, and in upper case {key.upper()}"
    response = _post(app, _form(app, note=note, by=f"anna {key}"))
    assert response.status_code == 303
    text = (own_runs.directory / "labels" / "labels.jsonl").read_text(encoding="utf-8")
    assert key not in text and key.upper() not in text
    written = json.loads(text)
    assert written["note"] == "the key is [redacted], and in upper case [redacted]"
    assert written["by"] == "anna [redacted]"


def test_a_label_through_a_labels_link_out_of_the_project_is_refused(
    own_runs: TwoRuns, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (own_runs.directory / "labels").symlink_to(elsewhere)
    app = create_app(own_runs.loaded, own_runs.runs)
    response = _post(app, _form(app))
    assert response.status_code == 400
    assert "labels/labels.jsonl takes no labels" in response.text
    assert str(tmp_path) not in response.text  # a refusal names no path of the server
    assert list(elsewhere.iterdir()) == []


def test_a_label_from_another_site_is_refused(own_runs: TwoRuns) -> None:
    app = create_app(own_runs.loaded, own_runs.runs)
    response = _post(app, _form(app), headers={"Origin": "http://attacker.example"})
    assert response.status_code == 403
    other_scheme = _post(app, _form(app), headers={"Origin": "https://127.0.0.1:8000"})
    assert other_scheme.status_code == 403
    other_port = _post(app, _form(app), headers={"Origin": "http://127.0.0.1:8001"})
    assert other_port.status_code == 403
    too_big = _post(app, _form(app, note="x" * 70_000))
    assert too_big.status_code == 400
    many = _form(app) | {f"extra{number}": "x" for number in range(40)}
    too_many = _post(app, many)
    assert too_many.status_code == 400 and "more than 32 fields" in too_many.text
    assert not (own_runs.directory / "labels").exists()


def test_a_stale_form_is_shown_again_as_it_was_typed(own_runs: TwoRuns) -> None:
    before = create_app(own_runs.loaded, own_runs.runs)
    typed = _form(before, note="heeft <b>adres</b> genoemd", by="mw. B. Bakker")
    restarted = create_app(own_runs.loaded, own_runs.runs)  # a new anti-forgery token
    again = _post(restarted, typed)
    assert again.status_code == 403 and "Not saved yet" in again.text
    assert "heeft &lt;b&gt;adres&lt;/b&gt; genoemd</textarea>" in again.text
    assert 'value="mw. B. Bakker"' in again.text and 'value="false" checked' in again.text
    assert not (own_runs.directory / "labels").exists()
    (fresh,) = set(re.findall(r'name="csrf" value="([^"]+)"', again.text))
    kept = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', again.text))
    resent = kept | {"csrf": fresh, "passed": "false", "label": "answer", "by": "mw. B. Bakker"}
    assert _post(restarted, resent | {"note": "heeft adres genoemd"}).status_code == 303
    assert "mw. B. Bakker" in (own_runs.directory / "labels" / "labels.jsonl").read_text()


def test_an_attempt_without_a_reply_offers_no_label(own_runs: TwoRuns) -> None:
    app = create_app(own_runs.loaded, own_runs.runs)
    assert '<form class="label"' not in call(app, "GET", "/runs/b1/cases/kern-003").text


def test_the_warm_up_indexes_the_newest_runs_ready_to_search(two_runs: TwoRuns) -> None:
    from soev_pipeline.view import warm_up

    app = create_app(two_runs.loaded, two_runs.runs)
    store = app.state.viewer.store
    warm_up(app, runs=1)
    index = store.index(two_runs.b1)
    assert index is not None and index.searchable
    assert store.index(two_runs.b1) is index  # kept, not built again


def test_control_characters_are_shown_as_escapes_on_every_page(app: Starlette) -> None:
    """`?q=%00%1b` was echoed raw: a page must be valid HTML whatever it shows."""
    html = call(app, "GET", "/runs/b1?q=%00%1b%C2%9B").text
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", html)
    assert "\\x00\\x1b\\x9b" in html


def test_the_page_templates_escape_control_characters_but_not_their_own_markup() -> None:
    from markupsafe import Markup

    from soev_pipeline.view.render import environment

    page = environment().from_string("<p>{{ text }}</p>{{ own }}")
    shown = page.render(text="a\x00b\x1b[31mc\td", own=Markup("<b>\x1b</b>"))
    assert shown == "<p>a\\x00b\\x1b[31mc\td</p><b>\x1b</b>"


def test_a_run_page_brings_its_verdicts_only_once_it_is_sent(
    two_runs: TwoRuns, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object store's verdicts and evidence are downloaded for the case pages after the
    run page, not while the run page is made (it would wait for them on two cores)."""
    from soev_pipeline.view import app as app_module
    from soev_pipeline.view.index import RunIndex

    events: list[str] = []
    page = app_module.Viewer.page

    def recorded_page(self: Any, template: str, *args: Any, **kwargs: Any) -> Any:
        events.append(f"page {template}")
        return page(self, template, *args, **kwargs)

    monkeypatch.setattr(app_module.Viewer, "page", recorded_page)
    monkeypatch.setattr(RunIndex, "prefetch", lambda index: events.append("prefetch"))
    app = create_app(two_runs.loaded, two_runs.runs)
    assert call(app, "GET", "/runs/b1").status_code == 200
    assert events == ["page run.html", "prefetch"]
    assert call(app, "GET", "/runs/b1/cases/kern-001").status_code == 200
    assert events[2:] == ["page case.html"]
