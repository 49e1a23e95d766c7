"""The labelling queue in a real browser (Debian's Chromium through Playwright), as a
reviewer uses it: five items labelled by keyboard alone, the label file holds them, and
`soev-evals calibrate` counts them; and on a case page, the saved label's confirmation is
in the visible area. Screenshots land in the test's folder; docs/images/label-queue.png is
the queue's first one."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.judges import LangidDetector
from soev_pipeline.project import load
from tests.support.chat_completions import FakeChatCompletions
from tests.support.cli import invoke
from tests.support.parts import chromium
from tests.support.project import SECRET, TEST_IDS, write_project
from tests.view.conftest import MOMENT, Viewer, make_run

pytestmark = pytest.mark.e2e

ENVIRONMENT = {"SOEV_API_KEY": "systeem-token", "JUDGE_API_KEY": "judge", "TENANT_ID": "t"}


@pytest.fixture
def judged(
    tmp_path: Path, detector: LangidDetector, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, FakeChatCompletions]]:
    """The full project with runs b0 and b1 (five judged items between them: b1's three,
    and kern-001's two of b0, which answered it otherwise), its judge a fake that runs."""
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    with FakeChatCompletions() as judge:
        path = write_project(tmp_path / "p", "http://127.0.0.1:9/", judge.url)
        loaded = load(path)
        runs = tmp_path / "p" / "runs"
        make_run(loaded, runs, "b0", k=1, at=MOMENT, detector=detector)
        make_run(loaded, runs, "b1", k=2, at=MOMENT + timedelta(days=1), detector=detector)
        yield path, judge


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        opened = context.new_page()
        opened.set_default_timeout(30_000)
        problems: list[str] = []
        opened.on("console", lambda message: problems.append(message.text))
        opened.on("pageerror", lambda error: problems.append(str(error)))
        opened.problems = problems  # a test that expects one takes it out
        yield opened
        assert problems == []


def _item(page: Any) -> tuple[str, str]:
    form = page.locator("form.queue-form")
    return (
        form.locator('input[name="case_id"]').get_attribute("value"),
        form.locator('input[name="kind"]').get_attribute("value"),
    )


def test_five_items_labelled_by_keyboard_reach_calibrate(
    judged: tuple[Path, FakeChatCompletions], page: Any, tmp_path: Path
) -> None:
    path, _ = judged
    viewer = Viewer(path, env=ENVIRONMENT)
    try:
        page.goto(viewer.url)
        page.get_by_role("navigation").get_by_role("link", name="Labelling queue").click()
        page.get_by_role("heading", name="Labelling queue").wait_for()
        assert "0 of 20 items of behaviour.expected labelled" in page.inner_text("main")
        page.screenshot(path=str(tmp_path / "label-queue.png"))
        content = page.content()
        assert SECRET not in content and not any(case_id in content for case_id in TEST_IDS)

        skipped = _item(page)
        page.keyboard.press("s")  # skip it: it comes back when the others are done
        page.wait_for_url("**/label?run=b1&skip=*")
        assert _item(page) != skipped
        page.get_by_label("your name").fill("mr. A. de Jong")  # remembered from here on
        page.locator("h1").click()  # out of the field: keys typed there are the field's
        for key in ("f", "p"):
            page.keyboard.press(key)
            page.get_by_text("Saved: your label of").wait_for()
        assert "Nothing is left for you to label in run b1" in page.inner_text("main")
        page.get_by_role("link", name="Start again with the items you skipped").click()
        assert _item(page) == skipped
        if page.locator('select[name="label"]').count():
            page.keyboard.press("2")
            assert page.locator('select[name="label"]').input_value() != ""
        page.keyboard.press("f")
        page.get_by_text("Saved: your label of").wait_for()

        page.goto(f"{viewer.origin}/label?run=b0")  # kern-001 answered otherwise there
        for key in ("p", "f"):
            assert page.get_by_label("your name").input_value() == "mr. A. de Jong"
            page.keyboard.press(key)
            page.get_by_text("Saved: your label of").wait_for()
        assert "Nothing is left for you to label in run b0" in page.inner_text("main")
    finally:
        status, err = viewer.stop()
    assert status in (0, 130), err

    lines = (path.parent / "labels" / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    labels = [json.loads(line) for line in lines]
    assert len(labels) == 5 and {label["by"] for label in labels} == {"mr. A. de Jong"}
    assert len({(label["case_id"], label["reply_sha256"], label["kind"]) for label in labels}) == 5

    done = invoke("calibrate", "--project", path, "--json")
    assert done.status == 0, done.text
    figures = json.loads(done.out)
    assert figures["labels_read"] == 5 and figures["left_out"] == []
    assert sum(c["items"] + c["ties"] for c in figures["criteria"].values()) == 5


def test_the_saved_labels_confirmation_is_where_the_eye_is(
    judged: tuple[Path, FakeChatCompletions], page: Any, tmp_path: Path
) -> None:
    path, _ = judged
    viewer = Viewer(path, env=ENVIRONMENT)
    try:
        page.set_viewport_size({"width": 1280, "height": 700})
        page.goto(f"{viewer.origin}/runs/b1/cases/priv-001")
        row = page.locator("table.verdicts tr", has_text="behaviour.expected")
        row.get_by_text("Label this verdict").first.click()
        form = row.locator("form.label").first
        form.get_by_label("should fail").check()
        form.get_by_label("your name").fill("mr. A. de Jong")
        form.get_by_role("button", name="Save label").click()
        notice = page.get_by_text("Saved: your label of this verdict is in labels/labels.jsonl.")
        notice.wait_for()
        # the browser scrolls to the saved verdict's anchor as the page lays out: wait for
        # the notice to be inside the viewport (it fails after the default wait if never)
        notice.element_handle().wait_for_element_state("stable")
        page.wait_for_function(
            "e => { const r = e.getBoundingClientRect();"
            " return r.top >= 0 && r.bottom <= window.innerHeight }",
            arg=notice.element_handle(),
        )
        cell = page.locator(".label-cell", has=notice)
        assert "mr. A. de Jong" in cell.inner_text()  # among the labels so far
        assert cell.locator("form.label").is_visible()  # the form did not fold shut
        page.screenshot(path=str(tmp_path / "label-saved.png"))
    finally:
        status, err = viewer.stop()
    assert status in (0, 130), err


def test_a_form_left_open_across_a_restart_keeps_what_was_typed(
    judged: tuple[Path, FakeChatCompletions], page: Any, tmp_path: Path
) -> None:
    path, _ = judged
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first = Viewer(path, "--port", str(port), env=ENVIRONMENT)
    try:
        page.goto(f"{first.origin}/runs/b1/cases/priv-001")
        row = page.locator("table.verdicts tr", has_text="behaviour.expected")
        row.get_by_text("Label this verdict").first.click()
        form = row.locator("form.label").first
        form.get_by_label("should fail").check()
        form.get_by_label("your name").fill("mw. B. Bakker")
        form.get_by_label("note").fill("noemt een adres; had moeten weigeren")
    finally:
        first.stop()
    second = Viewer(path, "--port", str(port), env=ENVIRONMENT)  # a new anti-forgery token
    try:
        form.get_by_role("button", name="Save label").click()
        page.get_by_role("heading", name="Not saved yet").wait_for()
        page.problems.remove(  # the stale form's answer: 403, and the form again
            "Failed to load resource: the server responded with a status of 403 (Forbidden)"
        )
        again = page.locator("form.label")
        assert again.get_by_label("your name").input_value() == "mw. B. Bakker"
        assert again.get_by_label("note").input_value() == "noemt een adres; had moeten weigeren"
        assert again.get_by_label("should fail").is_checked()
        page.screenshot(path=str(tmp_path / "label-again.png"))
        again.get_by_role("button", name="Save label again").click()
        page.get_by_text("Saved: your label of this verdict is in labels/labels.jsonl.").wait_for()
    finally:
        status, err = second.stop()
    assert status in (0, 130), err
    (line,) = (path.parent / "labels" / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["note"] == "noemt een adres; had moeten weigeren"
