"""The pages in Dutch and English: a complete catalog, the language each page is made in,
and where the language comes from (`--lang`, else project.yaml's `language`, else English)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po
from starlette.applications import Starlette

from soev_pipeline.cli.viewing import LANGUAGES as CLI_LANGUAGES
from soev_pipeline.probes import CriterionProbes, ProbeFigures
from soev_pipeline.project import load
from soev_pipeline.run.results import GroupFigures, PairedGroup
from soev_pipeline.view import create_app, i18n, render_html_report, write_html_report
from soev_pipeline.view.probe_pages import SUMMARIES, SUMMARIES_SHOWN, summary, verdict_line
from soev_pipeline.view.store import RunStore
from soev_pipeline.view.tables import (
    GROUP_COLUMNS,
    GROUP_HIDDEN,
    OTHER_FIELDS,
    PAIRED_COLUMNS,
    PAIRED_HIDDEN,
    p_value,
    pct,
    points,
)
from tests.support.cli import invoke
from tests.view.conftest import TwoRuns
from tests.view.test_app import call

ROOT = Path(__file__).resolve().parents[2]
LOCALES = ROOT / "soev_pipeline" / "view" / "locales"
PLACEHOLDER = re.compile(r"%\((\w+)\)[sr]|\{(\w+)(?:![rs])?\}")


def _extracted() -> set[str | tuple[str, str]]:
    """Every string the templates and the view's modules mark, as `make messages` finds it."""
    with (ROOT / "babel.cfg").open(encoding="utf-8") as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)
    found: set[str | tuple[str, str]] = set()
    keywords = {"_": None, "gettext": None, "ngettext": (1, 2), "N_": None}
    for _file, _line, message, _comments, _context in extract_from_dir(
        str(ROOT), method_map, options_map, keywords=keywords
    ):
        found.add(message if isinstance(message, str) else (message[0], message[1]))
    return found


def _catalog(path: Path) -> dict[str | tuple[str, str], object]:
    with path.open("rb") as source:
        catalog = read_po(source)
    return {
        (m.id if isinstance(m.id, str) else (m.id[0], m.id[1])): m
        for m in catalog
        if m.id and not m.fuzzy
    }


def test_every_marked_string_has_its_dutch_and_the_catalog_holds_no_other() -> None:
    extracted = _extracted()
    dutch = _catalog(LOCALES / "nl" / "LC_MESSAGES" / "messages.po")
    untranslated = sorted(
        str(key)
        for key in extracted
        if key not in dutch or not all(getattr(dutch[key], "string", None) or [""])
    )
    assert untranslated == [], "strings without Dutch (run `make messages`, then translate)"
    assert sorted(map(str, set(dutch) - extracted)) == [], "Dutch of strings no page uses"
    template = _catalog(LOCALES / "messages.pot")
    assert set(template) == extracted, "messages.pot is behind the code: run `make messages`"


def _names(text: str) -> set[str]:
    return {a or b for a, b in PLACEHOLDER.findall(text)}


def test_every_translation_keeps_the_placeholders_of_its_string() -> None:
    with (LOCALES / "nl" / "LC_MESSAGES" / "messages.po").open("rb") as source:
        catalog = read_po(source)
    for message in catalog:
        if not message.id:
            continue
        ids = [message.id] if isinstance(message.id, str) else list(message.id)
        strings = [message.string] if isinstance(message.string, str) else list(message.string)
        for translated in strings:
            assert _names(translated) == _names(ids[-1]), (message.id, translated)
            assert translated.count("%%") == ids[-1].count("%%"), (message.id, translated)


def test_the_command_line_offers_the_languages_of_the_pages() -> None:
    assert CLI_LANGUAGES == i18n.LANGUAGES
    assert i18n.LANGUAGES[0] == i18n.DEFAULT_LANGUAGE


def test_figures_take_the_decimal_sign_of_the_language() -> None:
    assert (pct(0.765), points(-0.125), p_value(0.0123)) == ("76.5 %", "−12.5", "0.012")
    with i18n.speaking("nl"):
        assert (pct(0.765), points(-0.125), p_value(0.0123)) == ("76,5 %", "−12,5", "0,012")
        assert p_value(0.0001) == "< 0,001"
    assert i18n.current() == "en"


def _english_left(html: str) -> list[str]:
    """The catalog's English strings that a Dutch page still shows as they are, outside
    the replies, questions, details and law texts it quotes."""
    dutch = _catalog(LOCALES / "nl" / "LC_MESSAGES" / "messages.po")
    data = r'<div class="(?:detail|reply|question|unit-text)[^"]*">.*?</div>'
    text = re.sub(r"<[^>]+>", " ", re.sub(data, " ", html, flags=re.S))
    left = []
    for key, message in dutch.items():
        if not isinstance(key, str) or _names(key) or "%%" in key or len(key) < 12:
            continue
        if getattr(message, "string", key) != key and key in text:
            left.append(key)
    return left


PAGES = (
    "/",
    "/label",
    "/runs/b1",
    "/runs/b1/cases/kern-001",
    "/runs/b1/compare?baseline=previous",
    "/probes",
    "/glossary",
    "/runs/nope",
)


@pytest.fixture(scope="module")
def dutch(two_runs: TwoRuns) -> Starlette:
    return create_app(two_runs.loaded, two_runs.runs, language="nl")


@pytest.mark.parametrize("url", PAGES)
def test_every_page_kind_speaks_dutch_when_asked(dutch: Starlette, url: str) -> None:
    response = call(dutch, "GET", url)
    assert response.status_code == (404 if url == "/runs/nope" else 200)
    assert '<html lang="nl">' in response.text
    assert ">Begrippen</a>" in response.text  # the glossary, from every page
    assert _english_left(response.text) == []


def test_the_dutch_pages_say_it_in_dutch(dutch: Starlette) -> None:
    run = call(dutch, "GET", "/runs/b1").text
    assert "Slagingspercentages" in run and "Ontwikkelcasussen" in run
    assert re.search(r"\d+,\d %", run)  # a decimal comma
    case = call(dutch, "GET", "/runs/b1/cases/kern-001").text
    assert ">voldoet niet</span>" in case and "Dit oordeel labelen" in case
    assert "Aantoonbare daling".lower() in call(dutch, "GET", "/glossary").text


def test_a_project_in_dutch_is_shown_in_dutch_unless_the_command_says_otherwise(
    own_runs: TwoRuns,
) -> None:
    english = call(create_app(own_runs.loaded, own_runs.runs), "GET", "/runs/b1").text
    assert '<html lang="en">' in english and "Pass rates" in english
    project = own_runs.directory / "project.yaml"
    project.write_text(project.read_text(encoding="utf-8") + "language: nl\n", encoding="utf-8")
    loaded = load(project)
    assert '<html lang="nl">' in call(create_app(loaded, own_runs.runs), "GET", "/").text
    chosen = create_app(loaded, own_runs.runs, language="en")
    assert '<html lang="en">' in call(chosen, "GET", "/").text


def test_an_unknown_language_is_one_line_naming_the_file_and_the_field(
    own_runs: TwoRuns, tmp_path: Path
) -> None:
    project = own_runs.directory / "project.yaml"
    project.write_text(project.read_text(encoding="utf-8") + "language: fr\n", encoding="utf-8")
    done = invoke("report", "b1", "--project", project, "--html", tmp_path / "r.html")
    assert done.status == 1, done.text  # a project error (docs/runs.md)
    assert done.err.strip().splitlines() == [
        f"soev-evals: error: {project}: language: Input should be 'en' or 'nl'"
    ]
    assert not (tmp_path / "r.html").exists()


def test_lang_takes_only_the_languages_of_the_pages(two_runs: TwoRuns, tmp_path: Path) -> None:
    done = invoke(
        "report",
        "b1",
        "--project",
        two_runs.loaded.directory / "project.yaml",
        "--html",
        tmp_path / "r.html",
        "--lang",
        "de",
    )
    assert done.status == 2 and "invalid choice: 'de'" in done.err


def test_the_html_report_speaks_the_language_it_is_written_in(two_runs: TwoRuns) -> None:
    store = RunStore(two_runs.loaded, two_runs.runs)
    with i18n.speaking("nl"):
        html = render_html_report(store, "b1")
    assert '<html lang="nl">' in html and 'id="term-detectable-drop"' in html
    assert "Aangehaalde wetgeving" in html and 'href="#glossary"' in html
    assert _english_left(html) == []


def _figures(kind: str, items: int, flipped: int) -> ProbeFigures:
    rate = flipped / items if items else None
    bounds = (max(0.0, (rate or 0) - 0.2), min(1.0, (rate or 0) + 0.2)) if items else None
    return ProbeFigures(
        kind=kind,  # type: ignore[arg-type]
        items=items,
        flipped=flipped,
        to_pass=0,
        to_fail=flipped,
        judge_errors=0,
        flip_rate=rate,
        flip_ci95=bounds,
    )


@pytest.mark.parametrize(
    "probes",
    [
        {"verbosity": _figures("invariance", 10, 0)},
        {"option_order": _figures("invariance", 10, 8), "format": _figures("invariance", 10, 9)},
        {
            "verbosity": _figures("invariance", 10, 0),
            "counterfactual": _figures("sensitivity", 0, 0),
        },
        {"counterfactual": _figures("sensitivity", 5, 0)},
        {"counterfactual": _figures("sensitivity", 5, 3)},
        {"counterfactual": _figures("sensitivity", 5, 5)},
    ],
)
def test_the_probes_line_of_the_page_says_in_english_what_probe_judge_says(
    probes: dict[str, ProbeFigures],
) -> None:
    criterion = CriterionProbes(prompt_sha256={}, probes=probes)
    assert verdict_line(criterion, 0.05) == criterion.verdict_line(0.05)
    with i18n.speaking("nl"):
        assert verdict_line(criterion, 0.05) != criterion.verdict_line(0.05)


def test_the_probes_summaries_shown_are_probe_judges_in_english() -> None:
    assert SUMMARIES_SHOWN == SUMMARIES
    with i18n.speaking("nl"):
        assert all(summary(name) != SUMMARIES[name] for name in SUMMARIES)


def test_every_field_a_table_shows_by_its_own_name_has_a_name_to_translate() -> None:
    tables = (
        (GroupFigures, GROUP_COLUMNS, GROUP_HIDDEN),
        (PairedGroup, PAIRED_COLUMNS, PAIRED_HIDDEN),
    )
    for model, columns, hidden in tables:
        known = {column.key for column in columns} | hidden
        for name, field in model.model_fields.items():
            key = field.alias or name
            if key not in known:
                assert key.replace("_", " ") in OTHER_FIELDS, (model.__name__, key)


def test_a_refused_label_is_refused_in_the_language_of_the_pages(dutch: Starlette) -> None:
    form = {"csrf": dutch.state.viewer.csrf, "case_id": "no-such-case", "attempt": "0"}
    response = call(dutch, "POST", "/runs/b1/labels", data=form)
    assert response.status_code == 404
    assert "het project heeft zo&#39;n ontwikkelcasus niet" in response.text
    assert '<html lang="nl">' in response.text


def test_the_html_report_of_a_dutch_project_is_dutch_unless_asked_otherwise(
    own_runs: TwoRuns, tmp_path: Path
) -> None:
    project = own_runs.directory / "project.yaml"
    project.write_text(project.read_text(encoding="utf-8") + "language: nl\n", encoding="utf-8")
    loaded = load(project)
    dutch = write_html_report(loaded, own_runs.b1, tmp_path / "nl.html")
    assert '<html lang="nl">' in dutch.read_text(encoding="utf-8")
    english = write_html_report(loaded, own_runs.b1, tmp_path / "en.html", language="en")
    assert '<html lang="en">' in english.read_text(encoding="utf-8")
    assert i18n.current() == "en"
