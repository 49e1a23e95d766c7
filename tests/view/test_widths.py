"""The viewer's pages and the HTML report at the widths a reviewer's window has, in Chromium:
nothing makes the page body scroll sideways (a wide table scrolls inside its own box), and
the three attempt cards of a k = 3 case sit side by side, whole, in a 1280 px window.

Boxes are measured, not pixels compared. Run `w1` (k = 3) answered kern-001 with markup
twice and got an HTTP 404 once; run `w0` (k = 1) is its baseline. Screenshots of every
page at each width land in the test's folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.core import Evidence, Failure
from soev_pipeline.judges import LangidDetector
from soev_pipeline.project import LoadedProject, load
from soev_pipeline.view import write_html_report
from tests.support.parts import chromium
from tests.support.project import write_project
from tests.view.conftest import MOMENT, Viewer, evidence_of, make_run

pytestmark = pytest.mark.e2e

ENVIRONMENT = {"SOEV_API_KEY": "systeem-token", "JUDGE_API_KEY": "judge", "TENANT_ID": "t"}
NOT_FOUND = Failure(code="http_404", detail="Not Found", http_status=404)
UNIT = "/corpus/BWBR0005537%2Fartikel-6%3A7?run=w1&case=kern-001"
PAGES = (
    "/",
    "/runs/w1",
    "/runs/w1/cases/kern-001",
    "/runs/w1/compare?baseline=previous",
    UNIT,
    "/probes",
)

ESCAPES = """() => {
  const width = document.documentElement.clientWidth;
  const escaped = [];
  for (const element of document.body.querySelectorAll('*')) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.right <= width + 0.5) continue;
    let box_of = element.parentElement;
    while (box_of && !['auto', 'scroll'].includes(getComputedStyle(box_of).overflowX)) {
      box_of = box_of.parentElement;
    }
    if (!box_of) escaped.push(`${element.tagName}.${element.className} to ${box.right}`);
  }
  return {body: document.documentElement.scrollWidth, width, escaped: escaped.slice(0, 5)};
}"""
"""How wide the page body is, and the elements past the window's right edge that no box of
their own lets scroll into view."""

CARDS = """() => {
  const row = document.querySelector('.attempts').getBoundingClientRect();
  const cards = [...document.querySelectorAll('.attempts > .attempt')];
  return {row: [row.left, row.right], cards: cards.map(card => {
    const box = card.getBoundingClientRect();
    return [box.left, box.right, box.top];
  })};
}"""


def _answers(loaded: LoadedProject, run: str, attempt: int) -> list[Evidence]:
    if run == "w0":
        return evidence_of(loaded, "b0", attempt)
    found = evidence_of(loaded, "b1", attempt)
    if attempt != 1:
        return found
    failed = []
    for evidence in found:
        if evidence.case_id == "kern-001":
            turn = evidence.turns[0].model_copy(
                update={"reply": None, "citations": (), "failure": NOT_FOUND}
            )
            evidence = evidence.model_copy(
                update={"reply": None, "citations": (), "turns": (turn,), "variants": ()}
            )
        failed.append(evidence)
    return failed


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, detector: LangidDetector) -> Path:
    root = tmp_path_factory.mktemp("widths")
    path = write_project(root / "p", "http://127.0.0.1:9/", "http://127.0.0.1:9/v1/")
    loaded = load(path)
    runs = loaded.directory / "runs"
    make_run(loaded, runs, "w0", k=1, at=MOMENT, detector=detector, answers=_answers)
    w1 = make_run(
        loaded, runs, "w1", k=3, at=MOMENT + timedelta(days=1), detector=detector, answers=_answers
    )
    write_html_report(loaded, w1, root / "report.html")
    return path


@pytest.fixture(scope="module")
def browser(project: Path) -> Iterator[Any]:
    """Chromium, started after the runs are made: Playwright's loop would stop theirs."""
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def viewer(project: Path) -> Iterator[Viewer]:
    running = Viewer(project, env=ENVIRONMENT)
    try:
        yield running
    finally:
        running.stop()


def _fits(page: Any, where: str) -> None:
    found = page.evaluate(ESCAPES)
    assert found["body"] <= found["width"], (where, found)
    assert not found["escaped"], (where, found)


@pytest.mark.parametrize("width", [1280, 1024])
def test_no_page_scrolls_sideways_and_the_attempts_sit_whole(
    browser: Any, viewer: Viewer, project: Path, width: int, tmp_path: Path
) -> None:
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(30_000)
    for path in PAGES:
        page.goto(viewer.origin + path)
        _fits(page, f"{path} at {width} px")
        name = re.sub(r"[^A-Za-z0-9-]+", "_", path).strip("_") or "runs"
        page.screenshot(path=str(tmp_path / f"{width}_{name}.png"), full_page=True)
    page.goto(viewer.origin + "/runs/w1/cases/kern-001")
    cards = page.evaluate(CARDS)
    (left, right) = cards["row"]
    assert len(cards["cards"]) == 3 and right <= width
    for card_left, card_right, _top in cards["cards"]:
        assert left - 0.5 <= card_left and card_right <= right + 0.5, cards
    assert len({top for _l, _r, top in cards["cards"]}) == 1, cards  # one row, side by side
    report = project.parent.parent / "report.html"
    page.goto(report.as_uri())
    _fits(page, f"the HTML report at {width} px")
    page.screenshot(path=str(tmp_path / f"{width}_report.png"), full_page=True)
    page.close()


def test_the_way_back_from_a_unit_leads_to_the_case(browser: Any, viewer: Viewer) -> None:
    page = browser.new_page(viewport={"width": 1024, "height": 900})
    page.goto(viewer.origin + "/runs/w1/cases/kern-001")
    page.get_by_role("link", name="BWBR0005537/artikel-6:7").first.click()
    page.get_by_role("link", name="← case kern-001").click()
    assert page.url == viewer.origin + "/runs/w1/cases/kern-001"
    page.close()
