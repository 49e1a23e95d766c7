"""The demo project: it loads, covers every family of rule kinds, and grades the reference
assistant."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from soev_pipeline.calibration import read_project_labels
from soev_pipeline.cli import load, main
from soev_pipeline.core import Case, CriterionContext
from soev_pipeline.corpus import load_corpus
from soev_pipeline.criteria import builtin_registry
from soev_pipeline.project import read_project
from soev_pipeline.reference import ReferenceServer
from tests.support.builders import make_case, make_evidence

DEMO = Path(__file__).parents[2] / "examples" / "demo"

REGISTRY = builtin_registry()
JUDGE_KINDS = {name for name in REGISTRY if "judge" in REGISTRY.needs(name)}
RULE_KINDS = set(REGISTRY) - JUDGE_KINDS


def _families(kinds: set[str]) -> set[str]:
    return {kind.split(".")[0] for kind in kinds}


# The dev cases the demo's suite files say fail, and the criteria that fail them.
EXPECTED_FAILURES = {
    "kern-006": {"citations.required", "demo.names_article"},
    "kern-011": {"citations.required", "citations.forbidden", "demo.names_article"},
    "kern-014": {"reply.max_length"},
    "kern-021": {"reply.contains"},
    "privacy-005": {"refusal.code", "citations.required"},
    "scope-004": {"behaviour.message", "refusal.code"},
    "scope-011": {"citations.required", "citations.forbidden"},
    "scope-012": {"usage.max_tokens"},
}


def test_the_demo_loads_and_uses_every_rule_kind_and_judge_kinds_that_do_not_count() -> None:
    loaded = load(DEMO / "project.yaml")

    assert [suite.name for suite in loaded.suites] == ["kern", "privacy", "scope"]
    cases = list(loaded.cases())
    assert 28 <= len(cases) <= 40
    tests = [case for case in cases if case.split == "test"]
    assert 3 <= len(tests) < len(cases) / 4
    kinds = {spec.kind for case in cases for spec in case.criteria}
    assert "demo.names_article" in kinds
    assert _families(kinds & RULE_KINDS) == _families(RULE_KINDS)
    assert len(kinds & RULE_KINDS) >= 17  # every rule kind of the criteria reference
    # the rule-based judge is not trusted: its kinds report, with weight 0, and count nowhere
    judged = [spec for case in cases for spec in case.criteria if spec.kind in JUDGE_KINDS]
    assert {spec.kind for spec in judged} == {
        "behaviour.expected",
        "nuggets.coverage",
        "privacy.names",
        "rubric.judge",
    }
    assert all(spec.weight == 0 and not spec.gate for spec in judged)
    assert loaded.project.judge is not None
    assert loaded.project.judge.url == loaded.project.system.url + "v1/"
    assert set(loaded.project.messages) == {"privacy", "out_of_scope"}
    assert loaded.context.corpus is not None
    assert any(len(case.turns) > 1 for case in cases)
    assert any(case.variants for case in cases)


def test_the_demo_labels_all_count() -> None:
    labelled = read_project_labels(load(DEMO / "project.yaml"))
    assert labelled.left_out == ()
    assert labelled.labels_read >= 40
    assert {item.kind for item in labelled.items} == {
        "behaviour.expected",
        "nuggets.coverage",
        "privacy.names",
    }
    assert any(len(item.labels) > 1 for item in labelled.items)  # two reviewers, here and there


def test_the_demo_finds_its_system_through_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SOEV_DEMO_URL", raising=False)
    default = read_project(DEMO / "project.yaml")
    monkeypatch.setenv("SOEV_DEMO_URL", "http://127.0.0.1:40123/")
    chosen = read_project(DEMO / "project.yaml")

    assert default.system.url == "http://127.0.0.1:8765/"
    assert chosen.system.url == "http://127.0.0.1:40123/"
    assert chosen.judge is not None
    assert chosen.judge.url == "http://127.0.0.1:40123/v1/"


@pytest.mark.e2e
def test_the_demo_run_fails_the_cases_its_suites_say_fail(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = str(tmp_path / "runs")
    with ReferenceServer() as server:
        monkeypatch.setenv("SOEV_DEMO_URL", server.url)
        status = main(["run", "--project", str(DEMO / "project.yaml"), "--runs-dir", runs])
        _, err = capsys.readouterr()
        assert status == 0, err
    assert server.counters.threads_opened == server.counters.threads_deleted > 30

    run_id = next(path.name for path in Path(runs).iterdir() if path.is_dir())
    report_argv = ["report", run_id, "--json", "--project", str(DEMO / "project.yaml")]
    assert main([*report_argv, "--runs-dir", runs]) == 0
    report = json.loads(capsys.readouterr().out)

    failed: dict[str, set[str]] = {}
    for case in report["cases"]:
        (attempt,) = case["attempts"]
        if not attempt["passed"]:
            failing = {
                v["kind"]
                for v in attempt["verdicts"]
                if v["status"] in {"fail", "error"} and v["weight"] > 0
            }
            failed[case["case_id"]] = failing
    assert failed == EXPECTED_FAILURES
    assert set(report["suites"]) == {"kern", "privacy", "scope"}
    assert all(counts["error"] == 0 for counts in report["criteria"].values())

    calibrate_argv = [
        "calibrate",
        "--run",
        run_id,
        "--json",
        "--project",
        str(DEMO / "project.yaml"),
    ]
    with ReferenceServer() as server:
        monkeypatch.setenv("SOEV_DEMO_URL", server.url)
        assert main([*calibrate_argv, "--runs-dir", runs]) == 0
    calibration = json.loads(capsys.readouterr().out)
    assert calibration["left_out"] == [] and calibration["labels_read"] >= 40
    assert set(calibration["criteria"]) == {
        "behaviour.expected",
        "nuggets.coverage",
        "privacy.names",
    }
    # a rule-based judge is not a good judge, and the figures say so
    assert calibration["overall"]["kappa"] < 0.6
    assert all(entry["judge_errors"] == 0 for entry in calibration["criteria"].values())
    criteria = calibration["criteria"]
    assert criteria["behaviour.expected"]["corrected_pass_rate"] is not None
    assert criteria["nuggets.coverage"]["corrected_pass_rate"] is not None
    # privacy.names on 7 items: the judge is not shown to be better than chance
    assert criteria["privacy.names"]["corrected_pass_rate"] is None
    assert "includes 0" in criteria["privacy.names"]["corrected_why"]

    # the rule-based judge picks a rubric's option by position: a probe shows it, and the
    # same replies laid out otherwise keep their verdicts
    probe_argv = ["probe-judge", "--run", run_id, "--json", "--project", str(DEMO / "project.yaml")]
    with ReferenceServer() as server:
        monkeypatch.setenv("SOEV_DEMO_URL", server.url)
        assert main([*probe_argv, "--runs-dir", runs]) == 0
    probes = json.loads(capsys.readouterr().out)["criteria"]
    rubric = probes["rubric.judge"]["probes"]
    assert rubric["option_order"]["flip_ci95"][0] > 0.05
    assert rubric["format"]["items"] > 0 and rubric["format"]["flipped"] == 0
    assert probes["behaviour.expected"]["probes"]["counterfactual"]["flip_rate"] == 1.0


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo_hooks_under_test", DEMO / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _grade(case: Case, reply: str | None, **params: Any) -> str:
    (kind,) = _hooks().CRITERIA
    ctx = CriterionContext(corpus=load_corpus(DEMO / "corpus.jsonl"))
    evaluation = kind.evaluate(
        case, make_evidence(reply), params=kind.params_model(**params), ctx=ctx
    )
    return str(asyncio.run(evaluation).status)


@pytest.mark.parametrize(
    ("reply", "params", "status"),
    [
        ('Volgens artikel 6:7 Awb: "De termijn ..."', {}, "pass"),
        ("Zie artikel 6:7 van de Algemene wet bestuursrecht.", {}, "pass"),
        ("Zie art. 6:7 Awb, eerste lid.", {}, "pass"),
        ("Volgens artikel 6:7 is de termijn zes weken.", {}, "fail"),
        ("Volgens artikel 6:7 is de termijn zes weken.", {"with_law": False}, "pass"),
        ("Volgens artikel 6:71 Awb geldt iets anders.", {}, "fail"),
        ("De termijn is zes weken (Awb).", {}, "fail"),
    ],
)
def test_names_article_reads_the_mention_in_the_reply(
    reply: str, params: dict[str, Any], status: str
) -> None:
    case = make_case(sources={"required": [["BWBR0005537/artikel-6:7/lid-1"]]})

    assert _grade(case, reply, **params) == status


def test_names_article_needs_each_required_group() -> None:
    case = make_case(sources={"required": ["BWBR0005537/artikel-6:7", "BWBR0005537/artikel-6:8"]})

    assert _grade(case, "Zie artikel 6:7 Awb en artikel 6:8 Awb.") == "pass"
    assert _grade(case, "Zie artikel 6:7 Awb.") == "fail"


def test_names_article_without_sources_or_reply() -> None:
    sourced = make_case(sources={"required": ["BWBR0005537/artikel-6:7"]})

    assert _grade(make_case(), "Iets.") == "not_applicable"
    assert _grade(sourced, None) == "error"
    assert _grade(make_case(sources={"required": ["BWBR0005537"]}), "x") == "error"
