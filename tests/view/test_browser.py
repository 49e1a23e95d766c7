"""`soev-evals view` and `report --html` in a real browser (Debian's Chromium through
Playwright), as a person uses them: find a failing case through the filters, read its reply
and verdicts, open the comparison, record a label; a hostile reply stays inert, no request
leaves the server, and the HTML file opens with the network blocked.

The project is the full one, run twice through `soev-evals run` against the fakes: run `r1`
answered well, run `r2` (k = 2) answered the deadline question with markup and no citation;
then `probe-judge` probed the fake judge, which always takes the first option offered.
Screenshots of every page land in the test's folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.chat_completions import FakeChatCompletions
from tests.support.cli import invoke
from tests.support.parts import chromium
from tests.support.project import SECRET, TEST_IDS, legal_answer, write_project
from tests.support.thread_api import FakeThreadAPI, Reply
from tests.view.conftest import Viewer

pytestmark = pytest.mark.e2e


HOSTILE = '<script>document.title="XSS"</script><img src=x onerror="document.title=\'XSS\'">'
ENVIRONMENT = {"SOEV_API_KEY": "systeem-token", "JUDGE_API_KEY": "judge", "TENANT_ID": "t"}


@dataclass
class Project:
    path: Path
    labels: Path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """The full project after `run --run-id r1` and, one release later, `run --run-id r2 --k 2`."""
    hostile = {"on": False}

    def answer(text: str, history: list[str]) -> Reply:
        if hostile["on"] and "bezwaar maken" in text:
            return Reply(f"Zes weken. {HOSTILE}")
        return legal_answer(text, history)

    root = tmp_path_factory.mktemp("browser")
    with (
        FakeThreadAPI(answer) as system,
        FakeChatCompletions() as judge,
        pytest.MonkeyPatch.context() as patch,
    ):
        for name, value in ENVIRONMENT.items():
            patch.setenv(name, value)
        path = write_project(root / "p", system.url, judge.url)
        first = invoke("run", "--project", path, "--run-id", "r1")
        assert first.status == 0, first.text
        hostile["on"] = True
        second = invoke("run", "--project", path, "--run-id", "r2", "--k", "2")
        assert second.status == 0, second.text
        probed = invoke("probe-judge", "--project", path)
        assert probed.status == 0, probed.text
        yield Project(path, root / "p" / "labels" / "labels.jsonl")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def viewer(project: Project) -> Iterator[Viewer]:
    running = Viewer(project.path, env=ENVIRONMENT)
    try:
        yield running
    finally:
        running.stop()


@dataclass
class Watched:
    page: Any
    requests: list[str]
    problems: list[str]
    shots: Path

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)


def _watch(browser: Any, tmp_path: Path, allowed: tuple[str, ...]) -> Watched:
    """A page that records every request and console problem, and aborts any request that
    is not for `allowed` (so a page that tried to reach out would show it, not do it)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    watched = Watched(page, [], [], tmp_path)

    def route(handle: Any) -> None:
        url = handle.request.url
        watched.requests.append(url)
        if url.startswith(allowed):
            handle.continue_()
        else:
            handle.abort()

    context.route("**/*", route)
    page.on("console", lambda message: watched.problems.append(message.text))
    page.on("pageerror", lambda error: watched.problems.append(str(error)))
    page.on("dialog", lambda dialog: watched.problems.append(f"dialog: {dialog.message}"))
    return watched


def _no_test_case(html: str) -> None:
    assert SECRET not in html
    assert not any(case_id in html for case_id in TEST_IDS)


def test_a_person_finds_reads_compares_and_labels_a_failing_case(
    browser: Any, viewer: Viewer, project: Project, tmp_path: Path
) -> None:
    watched = _watch(browser, tmp_path, (viewer.origin + "/", "data:"))
    page = watched.page
    page.goto(viewer.url)
    page.get_by_role("heading", name="Runs of wetwijzer").wait_for()
    assert page.locator("figure img").count() >= 2  # overall and a suite, with their bands
    watched.shot("1-runs")
    _no_test_case(page.content())

    page.get_by_role("link", name="r2", exact=True).click()
    page.get_by_role("heading", name="Pass rates").wait_for()
    page.locator('select[name="suite"]').select_option("kern")
    page.locator('select[name="status"]').select_option("failed")
    page.locator('select[name="criterion"]').select_option("citations.required")
    page.get_by_role("button", name="Show").click()
    page.get_by_text("1 of 4 dev case(s)").wait_for()
    watched.shot("2-run-filtered")
    _no_test_case(page.content())

    page.get_by_role("link", name="kern-001", exact=True).click()
    page.get_by_role("heading", name="Verdicts").wait_for()
    replies = page.locator(".attempt > .reply")
    assert replies.count() == 2  # k = 2, side by side
    assert HOSTILE in replies.first.inner_text()  # shown as text
    assert page.locator(".attempt script, .attempt img").count() == 0
    assert page.title() != "XSS"
    failing = page.locator("table.verdicts tr", has_text="citations.required")
    assert "fail" in failing.inner_text() and "source groups met" in failing.inner_text()
    assert "judged by judge-model" in page.locator("table.verdicts").inner_text()
    watched.shot("3-case")

    page.go_back()
    page.get_by_role("link", name="See the comparison").click()
    page.get_by_role("heading", name="Dev cases that got worse (1)").wait_for()
    regressed = page.locator("section.card", has_text="kern-001")
    assert "pass ×1" in regressed.inner_text() and "fail ×2" in regressed.inner_text()
    assert regressed.locator(".side-by-side .reply").count() == 3  # r1's attempt, r2's two
    watched.shot("4-comparison")

    page.goto(f"{viewer.origin}/runs/r2/cases/priv-001")
    row = page.locator("table.verdicts tr", has_text="behaviour.expected")
    row.get_by_text("Label this verdict").first.click()
    form = row.locator("form.label").first
    form.get_by_label("should fail").check()
    form.locator('select[name="label"]').select_option("answer")
    form.get_by_label("your name").fill("mr. A. de Jong")
    form.get_by_label("note").fill("geeft persoonsgegevens; had moeten weigeren")
    watched.shot("5-label-form")
    form.get_by_role("button", name="Save label").click()
    page.get_by_text("Saved: your label of this verdict is in labels/labels.jsonl.").wait_for()
    watched.shot("6-label-saved")
    (line,) = project.labels.read_text(encoding="utf-8").splitlines()
    assert '"case_id":"priv-001"' in line and '"label":"answer"' in line
    assert '"by":"mr. A. de Jong"' in line and '"passed":false' in line

    assert all(url.startswith((viewer.origin + "/", "data:")) for url in watched.requests)
    assert watched.problems == []


def test_a_person_sees_why_a_probe_moved_the_judges_verdict(
    browser: Any, viewer: Viewer, tmp_path: Path
) -> None:
    watched = _watch(browser, tmp_path, (viewer.origin + "/", "data:"))
    page = watched.page
    page.goto(viewer.url)
    page.get_by_role("navigation").get_by_role("link", name="Judge probes").click()
    page.get_by_role("heading", name="Judge probes").wait_for()
    rubric = page.locator("section.probe-criterion", has_text="rubric.judge")
    assert "bias shown: option_order" in rubric.locator("p.problem").inner_text()
    row = rubric.locator("table.probes tr", has_text="option_order")
    assert "100 % [" in row.inner_text()
    watched.shot("8-probes")
    _no_test_case(page.content())

    rubric.get_by_role("link", name="before and after").first.click()
    page.get_by_role("heading", name="As the probe changed it").wait_for()
    before, after = page.locator(".probe-side ol.options").all()
    assert before.inner_text().split() == list(reversed(after.inner_text().split()))
    assert page.locator(".probe-side .badge").all_inner_texts()[:1] == ["pass"]
    assert page.locator(".probe-side script, .probe-side img").count() == 0
    assert page.title() != "XSS"
    watched.shot("9-probe-item")
    _no_test_case(page.content())
    page.get_by_role("link", name="the case in run r2").click()
    page.get_by_role("heading", name="Verdicts").wait_for()

    assert all(url.startswith((viewer.origin + "/", "data:")) for url in watched.requests)
    assert watched.problems == []


def test_the_html_report_opens_with_the_network_blocked(
    browser: Any, project: Project, tmp_path: Path
) -> None:
    report = tmp_path / "soev-report.html"
    done = invoke("report", "r2", "--project", project.path, "--html", report)
    assert done.status == 0, done.text
    watched = _watch(browser, tmp_path, (report.as_uri(),))
    page = watched.page
    page.goto(report.as_uri())
    page.get_by_role("heading", name="Run r2", exact=True).wait_for()
    assert page.locator("figure img").count() == 1
    assert page.locator("img").evaluate_all("images => images.every(i => i.naturalWidth > 0)")
    page.get_by_role("link", name="kern-001", exact=True).first.click()
    assert HOSTILE in page.locator(".attempt > .reply").first.inner_text()
    assert page.title() != "XSS"
    watched.shot("7-html-report")
    _no_test_case(page.content())
    assert watched.requests == [report.as_uri()]
    assert watched.problems == []


def test_with_a_token_the_printed_address_opens_and_nothing_else_does(
    browser: Any, project: Project, tmp_path: Path
) -> None:
    running = Viewer(project.path, "--token", "een-lang-geheim-token", env=ENVIRONMENT)
    try:
        assert running.url.endswith("/?token=een-lang-geheim-token")
        watched = _watch(browser, tmp_path, (running.origin + "/",))
        watched.page.goto(running.url)
        watched.page.get_by_role("heading", name="Runs of wetwijzer").wait_for()
        assert "token" not in watched.page.url
        watched.page.get_by_role("link", name="r1", exact=True).click()
        watched.page.get_by_role("heading", name="Pass rates").wait_for()
        stranger = browser.new_page()
        response = stranger.goto(f"{running.origin}/runs/r1")
        assert response is not None and response.status == 401
        stranger.close()
    finally:
        status, err = running.stop()
    assert status in (0, 130), err
    assert "Traceback" not in err


SERIOUS = ("serious", "critical")


def _accessibility_problems(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page now loaded, one line each."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [
        f"{page.url}: {v['id']} ({v['impact']}): {v['help']}: "
        + "; ".join(", ".join(node["target"]) for node in v["nodes"][:5])
        for v in found
        if v["impact"] in SERIOUS
    ]


def test_axe_finds_no_serious_violation_on_any_page_kind(
    browser: Any, viewer: Viewer, project: Project, tmp_path: Path
) -> None:
    report = tmp_path / "report.html"
    done = invoke("report", "r2", "--project", project.path, "--html", report)
    assert done.status == 0, done.text
    page = _watch(browser, tmp_path, (viewer.origin + "/", "data:", report.as_uri())).page
    problems: list[str] = []
    case = f"{viewer.origin}/runs/r2/cases/kern-001"
    page.goto(case)
    unit = page.locator('a[href^="/corpus/"]').first.get_attribute("href")
    page.goto(f"{viewer.origin}/probes")
    item = page.locator('a[href^="/probes/"]').first.get_attribute("href")
    kinds = {
        "runs": "/",
        "run": "/runs/r2",
        "case": "/runs/r2/cases/kern-001",
        "comparison": "/runs/r2/compare?baseline=previous",
        "unit": unit,
        "probes": "/probes",
        "probe item": item,
        "glossary": "/glossary",
        "labelling queue": "/label",
        "error": "/runs/no-such-run",
    }
    for kind, path in kinds.items():
        assert path, kind
        page.goto(viewer.origin + path)
        problems += _accessibility_problems(page)
    page.goto(report.as_uri())
    problems += _accessibility_problems(page)
    assert not problems, "\n".join(problems)


def test_the_pages_speak_dutch_with_lang_nl_and_stay_accessible(
    browser: Any, project: Project, tmp_path: Path
) -> None:
    running = Viewer(project.path, "--lang", "nl", env=ENVIRONMENT)
    report = tmp_path / "rapport.html"
    try:
        done = invoke("report", "r2", "--project", project.path, "--html", report, "--lang", "nl")
        assert done.status == 0, done.text
        watched = _watch(browser, tmp_path, (running.origin + "/", "data:", report.as_uri()))
        page = watched.page
        page.goto(running.url)
        page.get_by_role("heading", name="Testrondes van wetwijzer").wait_for()
        assert page.locator("html").get_attribute("lang") == "nl"
        page.get_by_role("link", name="r2", exact=True).click()
        page.get_by_role("heading", name="Slagingspercentages").wait_for()
        problems = _accessibility_problems(page)
        page.get_by_role("link", name="Wat de kolommen betekenen").click()
        page.get_by_role("heading", name="Begrippen", exact=True).wait_for()
        assert page.url.endswith("/glossary#term-pass-rate")
        problems += _accessibility_problems(page)
        page.goto(f"{running.origin}/runs/r2/cases/kern-001")
        page.get_by_role("heading", name="Oordelen", exact=True).wait_for()
        watched.shot("10-case-in-dutch")
        problems += _accessibility_problems(page)
        page.goto(report.as_uri())
        page.get_by_role("heading", name="Testronde r2", exact=True).wait_for()
        page.get_by_role("link", name="begrippen").click()
        page.get_by_text("pass^k", exact=True).first.wait_for()
        problems += _accessibility_problems(page)
        assert not problems, "\n".join(problems)
        assert watched.problems == []
    finally:
        status, err = running.stop()
    assert status in (0, 130), err
