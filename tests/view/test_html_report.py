"""`report RUN --html FILE` as a function: one self-contained file, safe to open and to mail."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run import RunArchive
from soev_pipeline.run.service import aggregate_run
from soev_pipeline.view import html_report, store, write_html_report, write_scoring_pages
from soev_pipeline.view.plots import BAND, GRID, Point, forest, trend
from soev_pipeline.view.render import anchor, csp_hash, stylesheet
from tests.support.project import SECRET, TEST_IDS
from tests.view.conftest import MOMENT, TwoRuns


@pytest.fixture(scope="module")
def html(two_runs: TwoRuns, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("html") / "out" / "report.html"
    written = write_html_report(two_runs.loaded, two_runs.b1, path)
    assert written == path and not path.with_name("report.html.tmp").exists()
    return path.read_text(encoding="utf-8")


def test_the_file_allows_only_its_own_stylesheet_and_data_images(html: str) -> None:
    (policy,) = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    policy = policy.replace("&#39;", "'")
    assert policy.startswith("default-src 'none'; ")
    assert f"style-src {csp_hash(stylesheet())};" in policy and "img-src data:;" in policy
    (style,) = re.findall(r"<style>(.*?)</style>", html, flags=re.S)
    assert style == stylesheet()  # the hash in the policy is of exactly this text
    assert "<script" not in html and "<link" not in html
    references = re.findall(r'(?:src|href|action)="([^"]*)"', html)
    assert references
    assert all(ref.startswith(("#", "data:image/svg+xml;base64,")) for ref in references)


def test_every_anchor_leads_to_a_section_of_the_file(html: str) -> None:
    ids = set(re.findall(r' id="([^"]+)"', html))
    targets = {ref[1:] for ref in re.findall(r'href="(#[^"]*)"', html)}
    assert targets and targets <= ids


def test_the_file_holds_the_run_its_comparison_and_its_failing_dev_cases(html: str) -> None:
    assert 'id="run"' in html and 'id="comparison"' in html
    for case_id in ("kern-001", "kern-003", "priv-001"):
        assert f'id="{anchor("case", case_id)}"' in html
    assert f'id="{anchor("case", "kern-002")}"' not in html  # it passed
    assert f'id="{anchor("unit", "BWBR0005537/artikel-6:7")}"' in html
    assert "De termijn voor het indienen van een bezwaarschrift" in html
    assert "Label this verdict" not in html  # a file takes no labels


def test_the_file_shows_replies_as_text_and_no_test_case(html: str) -> None:
    assert "&lt;script&gt;document.title=" in html and "<img src=x" not in html
    assert SECRET not in html
    assert not any(case_id in html for case_id in TEST_IDS)


def test_a_run_without_a_previous_run_says_so(two_runs: TwoRuns, tmp_path: Path) -> None:
    path = write_html_report(two_runs.loaded, two_runs.b0, tmp_path / "b0.html")
    text = path.read_text(encoding="utf-8")
    assert 'id="comparison"' in text and "no earlier run" in text
    assert 'href="#comparison"' not in text.split('id="comparison"')[0].split("Contents:")[0]


def test_a_missing_or_ungraded_run_is_a_project_error(two_runs: TwoRuns, tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match="no run 'nope'"):
        write_html_report(two_runs.loaded, RunArchive(two_runs.runs, "nope"), tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()


def _svg(uri: str) -> str:
    prefix = "data:image/svg+xml;base64,"
    assert uri.startswith(prefix)
    return base64.b64decode(uri[len(prefix) :]).decode("utf-8")


def test_plots_are_svg_that_load_and_run_nothing() -> None:
    moments = [MOMENT.replace(day=day) for day in (1, 2, 3)]
    points = [Point(0.5, 0.3, 0.7), Point(None, None, None), Point(0.0, 0.0, 0.2)]
    plotted = trend("Overall pass rate", moments, points, wide=True)
    assert "latest 0.0 % (95 % CI 0.0–20.0 %)" in plotted.alt
    for plot in (plotted, forest("Pass rate", [("overall", points[0]), ("suite x", points[1])])):
        svg = _svg(plot.uri)
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
        assert "<script" not in svg and "http://" not in svg.replace(
            "http://www.w3.org/", ""
        ).replace("http://purl.org/dc/", "").replace("http://creativecommons.org/ns#", "")


def test_past_its_size_budget_the_file_lists_the_rest_of_the_failing_cases(
    two_runs: TwoRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from soev_pipeline.view import html_report

    monkeypatch.setattr(html_report, "CASE_BYTES", 1)
    monkeypatch.setattr(html_report, "UNIT_CHARS", 0)
    text = write_html_report(two_runs.loaded, two_runs.b1, tmp_path / "r.html").read_text()
    assert text.count('<section class="case"') == 1  # the first is always written
    assert "2 more failing case(s) are in the table but not written out" in text
    assert 'id="corpus"' not in text and "#unit-" not in text
    ids = set(re.findall(r' id="([^"]+)"', text))
    assert {ref[1:] for ref in re.findall(r'href="(#[^"]*)"', text)} <= ids
    for case_id in ("kern-003", "priv-001"):
        assert case_id in text  # still listed in the table


def test_warm_compiles_the_report_templates_ahead() -> None:
    from soev_pipeline.view.html_report import warm
    from soev_pipeline.view.render import environment

    environment.cache_clear()
    env = environment()
    assert env.cache is not None and len(env.cache) == 0
    warm()
    compiled = env.get_template("report.html")
    assert len(env.cache) >= 4
    assert env.get_template("report.html") is compiled  # from the cache, not compiled again


def test_a_new_scorings_pages_reuse_what_its_aggregate_step_compared(
    own_runs: TwoRuns, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given the attempts and the comparison of the aggregate step, the pages of a new
    scoring read neither run's attempts again nor look for the previous run, and the HTML
    report is the same."""
    monkeypatch.setattr(html_report, "when", lambda _: "then")
    run, loaded = own_runs.b1, own_runs.loaded
    scoring = run.latest_report_path()
    assert scoring is not None
    made = aggregate_run(run, scoring.parent)
    assert made.previous is not None and made.report.previous is not None
    assert made.report.previous.regressions  # their cases read both runs' attempts
    write_scoring_pages(loaded, run, scoring.parent)
    read_back = (scoring.parent / "report.html").read_bytes()
    assert b"b0" in _unplotted(read_back)  # the comparison with the previous run

    def unread(*_: object, **__: object) -> None:
        raise AssertionError("read again")

    for name in ("read_attempts", "compare_runs", "previous_run"):
        monkeypatch.setattr(store, name, unread)
    known = [made.attempts, made.previous]
    write_scoring_pages(loaded, run, scoring.parent, known=known, comparison=made.report.previous)
    again = (scoring.parent / "report.html").read_bytes()
    assert _unplotted(again) == _unplotted(read_back)


def _unplotted(html: bytes) -> bytes:
    """The page without its plots, whose SVG differs from one drawing to the next."""
    return re.sub(rb"data:image/svg\+xml;base64,[A-Za-z0-9+/=]+", b"plot", html)


def test_the_forest_shows_each_group_with_its_band_and_dot_on_a_0_to_100_axis() -> None:
    rows = [
        ("overall", Point(0.5, 0.25, 0.75)),
        ("suite <a&b>", Point(None, None, None)),
        ("test", Point(1.0, 0.9, 1.0)),
    ]
    plot = forest("Pass rate", rows)
    root = ElementTree.fromstring(_svg(plot.uri).encode("utf-8"))  # well-formed: escaped
    ns = "{http://www.w3.org/2000/svg}"
    texts = [element.text for element in root.iter(f"{ns}text")]
    assert texts[0] == "Pass rate"
    assert [text for text in texts if text and text.endswith(" %")] == [
        f"{tick} %" for tick in range(0, 101, 20)
    ]
    assert texts[-3:] == ["overall", "suite <a&b>", "test"]
    lines = list(root.iter(f"{ns}line"))
    grid = sorted(float(line.get("x1", "")) for line in lines if line.get("stroke") == GRID)
    zero, hundred = grid[0], grid[-1]
    bands = [
        (float(line.get("x1", "")), float(line.get("x2", "")))
        for line in lines
        if line.get("stroke") == BAND
    ]
    dots = [float(circle.get("cx", "")) for circle in root.iter(f"{ns}circle")]
    assert len(grid) == 6 and len(dots) == len(bands) == 2  # no rate: neither band nor dot
    assert zero < bands[0][0] < dots[0] < bands[0][1] < bands[1][0] < dots[1] == hundred
    assert dots[0] == pytest.approx((zero + hundred) / 2)
    assert bands[0][0] == pytest.approx(zero + (hundred - zero) / 4)
    assert plot.alt == "Pass rate: overall 50.0 %; test 100.0 %"
