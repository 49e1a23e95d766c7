"""The labelling queue's page (`/label`), in process: which item it offers, saving through it,
skipping, and the end of the queue; the rule itself is tested in
tests/calibration/test_queue.py."""

from __future__ import annotations

import re

from starlette.applications import Starlette

from soev_pipeline.calibration import read_project_labels
from soev_pipeline.criteria.watsonx import Criteria, Option
from soev_pipeline.view import create_app
from soev_pipeline.view.queue import described
from soev_pipeline.view.render import SERVER_CSP
from tests.support.project import SECRET, TEST_IDS
from tests.view.conftest import TwoRuns
from tests.view.test_app import call

ANNA = {"soev_view_by": "anna"}


def _offered(html: str) -> tuple[str, str]:
    """(case id, criterion) of the item a queue page offers."""
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', html))
    return fields["case_id"], fields["kind"]


def _save(app: Starlette, html: str, passed: str, *, by: str = "anna") -> str:
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', html))
    response = call(app, "POST", "/runs/b1/labels", data=fields | {"passed": passed, "by": by})
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    assert location.startswith("/label?run=b1&saved=")
    return call(app, "GET", location, cookies={"soev_view_by": by}).text


def test_the_queue_offers_each_judged_item_once_the_judges_fails_first(
    own_runs: TwoRuns,
) -> None:
    app = create_app(own_runs.loaded, own_runs.runs)
    page = call(app, "GET", "/label", cookies=ANNA).text
    assert SECRET not in page and not any(case_id in page for case_id in TEST_IDS)
    # run b1 (the newest): priv-001's behaviour.expected and kern-001's rubric.judge the
    # judge failed, kern-001's nuggets.coverage it passed; every stratum is as wide, so
    # the judge's fails come first, by criterion
    assert _offered(page) == ("priv-001", "behaviour.expected")
    assert "0 of 20 items of behaviour.expected labelled" in page
    assert "Jan de Vries woont op de Dorpsstraat 1." in page  # the reply to label
    assert 'value="anna"' in page  # the reviewer's name, remembered
    assert "<code>behaviour</code>" in page and "`" not in page  # the summary's code, set

    page = _save(app, page, "false")
    assert "Saved: your label of priv-001 · behaviour.expected is in labels/labels.jsonl." in page
    assert _offered(page) == ("kern-001", "rubric.judge")
    assert "Option(" not in page and "options=[" not in page  # the rubric read as text
    page = _save(app, page, "false")
    assert _offered(page) == ("kern-001", "nuggets.coverage")
    page = _save(app, page, "true")
    assert "Nothing is left for you to label in run b1" in page

    labelled = read_project_labels(own_runs.loaded)
    assert len(labelled.items) == 3 and not labelled.left_out  # calibrate counts all three
    # another reviewer gets nothing either: every item is decided
    assert "Nothing is left" in call(app, "GET", "/label", cookies={"soev_view_by": "bert"}).text


def test_a_skipped_item_waits_and_a_split_item_goes_to_a_third_reviewer(
    own_runs: TwoRuns,
) -> None:
    app = create_app(own_runs.loaded, own_runs.runs)
    first = call(app, "GET", "/label", cookies=ANNA).text
    (skip,) = re.findall(r'href="(/label\?[^"]*skip=[^"]*)" class="skip"', first)
    skipped = call(app, "GET", skip.replace("&amp;", "&"), cookies=ANNA).text
    assert _offered(skipped) == ("kern-001", "rubric.judge")

    _save(app, first, "false", by="anna")
    again = call(app, "GET", "/label", cookies={"soev_view_by": "bert"}).text
    assert _offered(again) == ("kern-001", "rubric.judge")  # priv-001 is decided
    bert = call(app, "GET", "/runs/b1/cases/priv-001", cookies={"soev_view_by": "bert"}).text
    (form,) = re.findall(r'<form class="label".*?</form>', bert, re.S)[:1]
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form))
    saved = call(app, "POST", "/runs/b1/labels", data=fields | {"passed": "true", "by": "bert"})
    assert saved.status_code == 303
    carla = call(app, "GET", "/label", cookies={"soev_view_by": "carla"}).text
    assert _offered(carla) == ("priv-001", "behaviour.expected")
    assert "People split evenly on this item" in carla and "people disagree" in carla
    assert "anna" in carla and "bert" in carla


def test_the_queue_alone_may_run_a_script_the_viewers_own_file_of_its_keys(
    own_runs: TwoRuns,
) -> None:
    app = create_app(own_runs.loaded, own_runs.runs)
    queue = call(app, "GET", "/label")
    assert queue.headers["content-security-policy"] == SERVER_CSP + "; script-src 'self'"
    assert re.findall(r"<script[^>]*>", queue.text) == ['<script src="/static/queue.js">']
    assert "script-src" not in call(app, "GET", "/label/").headers["content-security-policy"]
    script = call(app, "GET", "/static/queue.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert "keydown" in script.text
    assert "script-src" not in script.headers["content-security-policy"]


def test_the_queue_of_an_unknown_run_is_a_404_and_an_address_puts_no_words_on_it(
    own_runs: TwoRuns,
) -> None:
    app = create_app(own_runs.loaded, own_runs.runs)
    assert call(app, "GET", "/label?run=nope").status_code == 404
    forged = call(app, "GET", "/label?saved=Uw+account+is+verlopen&criterion=x").text
    assert "Saved:" not in forged and "verlopen" not in forged


def test_a_criterion_rubric_reads_as_its_question_and_options() -> None:
    criteria = Criteria(
        name="Grounded",
        description="Does the {generated_text} name the article it rests on?",
        options=[
            Option(name="Yes", description="it names the article", value=1.0),
            Option(name="No", value=0.0),
        ],
    )
    assert described(criteria) == (
        "Grounded: Does the {generated_text} name the article it rests on?\n"
        "- Yes (1): it names the article\n"
        "- No (0)"
    )
    assert described(Criteria(description="Kort?")) == "Kort?\n- Yes (1)\n- No (0)"
