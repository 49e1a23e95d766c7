"""`soev-evals run` and the run archive (SPEC.md sections 6-8), from the outside."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from importlib.metadata import version
from pathlib import Path

import pytest

from soev_pipeline.judges import load_prompts, prompt_shas
from tests.conformance.conftest import CLI, Baseline
from tests.conformance.support import (
    RUBRIC,
    SECRET,
    FakeThreadSystem,
    edit_yaml,
    snapshot,
)

EVIDENCE_KEYS = {
    "case_id",
    "suite",
    "split",
    "attempt",
    "turns",
    "reply",
    "citations",
    "refusal_code",
    "variants",
    "started_at",
    "finished_at",
}
TURN_KEYS = {"input", "reply", "citations", "usage", "duration_s", "failure"}
VARIANT_KEYS = {"id", "reply", "citations", "turns"}
ALL_CASES = {"kern-001", "kern-002", "kern-003", "kern-t01", "priv-001", "priv-t01"}
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def evidence(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "evidence.jsonl").read_text().splitlines()]


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0
    return moment


# --------------------------------------------------------------------------- the archive


def test_manifest_records_what_section_7_lists(baseline: Baseline) -> None:
    data = manifest(baseline.run)
    assert data["run_id"] == "r1"
    utc(data["created_at"])
    assert data["project"] == "wetwijzer"
    assert sorted(data["suites"]) == ["kern", "privacy"]
    assert "split" in data and data["k"] == 2
    assert set(data["cases"]) == ALL_CASES
    assert all(HEX64.match(value) for value in data["cases"].values())
    prompts = data["prompts"]
    shas = prompt_shas(load_prompts())
    for task in ("behaviour.expected", "nuggets.coverage", "rubric.judge"):
        assert prompts[task] == shas[task]
    rubric_sha = hashlib.sha256(RUBRIC.encode()).hexdigest()
    assert rubric_sha in prompts.values()
    assert "runtime" in data
    assert data["version"] == version("soev-pipeline")


def test_evidence_has_one_line_per_attempt_with_the_fields_of_section_7(baseline: Baseline) -> None:
    lines = evidence(baseline.run)
    assert sorted((line["case_id"], line["attempt"]) for line in lines) == sorted(
        (case, attempt) for case in ALL_CASES for attempt in (0, 1)
    )
    by_id = {line["case_id"]: line for line in lines if line["attempt"] == 0}
    for line in lines:
        assert set(line) == EVIDENCE_KEYS
        assert utc(line["started_at"]) <= utc(line["finished_at"])
        for turn in line["turns"]:
            assert set(turn) == TURN_KEYS
        for variant in line["variants"]:
            assert set(variant) == VARIANT_KEYS
    kern1 = by_id["kern-001"]
    assert kern1["suite"] == "kern" and kern1["split"] == "dev"
    assert kern1["citations"] == ["BWBR0005537/artikel-6:7/lid-1"]
    assert kern1["reply"].startswith("De bezwaartermijn is zes weken")
    assert kern1["turns"][0]["usage"] == {"prompt_tokens": 10, "completion_tokens": 20}
    assert kern1["turns"][0]["failure"] is None
    assert kern1["turns"][0]["duration_s"] >= 0
    assert [v["id"] for v in kern1["variants"]] == ["kern-001-a"]
    assert kern1["variants"][0]["citations"] == ["BWBR0005537/artikel-6:7/lid-1"]
    assert by_id["kern-t01"]["split"] == "test"
    kern2 = by_id["kern-002"]
    assert [turn["input"] for turn in kern2["turns"]] == [
        "Ik wil iets vragen over een besluit.",
        "Hoe lang heb ik voor bezwaar?",
    ]
    assert kern2["reply"] == kern2["turns"][-1]["reply"]
    assert by_id["priv-001"]["refusal_code"] == "privacy"
    assert kern1["refusal_code"] is None
    failed = by_id["kern-003"]
    assert failed["turns"][-1]["failure"]["code"] == "service_unavailable"


def test_the_thread_api_is_spoken_as_section_6_says(baseline: Baseline) -> None:
    system = baseline.system
    opens = system.opens()
    # k=2 of: kern-001 (+1 variant), kern-002, kern-003, kern-t01, priv-001, priv-t01
    assert len(opens) == 14
    for request in system.posts():
        assert request.headers["Accept"] == "text/event-stream"
        assert request.headers["Authorization"] == "Bearer systeem-token"
    for request in opens:
        assert request.body["agent"] == "wetwijzer"
        assert "model" not in request.body or request.body["model"] is None
        assert isinstance(request.body["input"]["text"], str)
        assert request.body["input"]["knowledge"] == ["wetwijzer"]  # the hooks' SETUP
    follow_ups = [r for r in system.posts() if r.path.endswith("/inputs")]
    assert len(follow_ups) == 2
    assert follow_ups[0].body == {"input": {"text": "Hoe lang heb ik voor bezwaar?"}}
    for request in system.deletes():
        assert request.headers["Authorization"] == "Bearer systeem-token"
    assert len(system.deletes()) == len(opens)
    assert {r.path.rsplit("/", 1)[-1] for r in system.deletes()} == {f"t{n}" for n in range(1, 15)}


def test_model_headers_and_env_expansion_reach_the_system(
    project: Path, cli: CLI, system: FakeThreadSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENANT_ID", "gemeente-x")

    def change(data: dict) -> None:
        data["system"]["model"] = "wetwijzer-large"
        data["system"]["headers"] = {"X-Tenant": "${TENANT_ID}"}

    edit_yaml(project, change)
    assert cli("run", "--project", project, "--run-id", "r1", "--suite", "privacy").status == 0
    for request in system.posts():
        assert request.headers["X-Tenant"] == "gemeente-x"
    for request in system.opens():
        assert request.body["model"] == "wetwijzer-large"


def test_citation_source_field_is_configurable(
    project: Path, cli: CLI, system: FakeThreadSystem
) -> None:
    edit_yaml(project, lambda data: data["citations"].update(source_field="bwb"))
    assert cli("run", "--project", project, "--run-id", "r1", "--suite", "kern").status == 0
    lines = {line["case_id"]: line for line in evidence(project.parent / "runs" / "r1")}
    assert lines["kern-001"]["citations"] == ["bwb:BWBR0005537/artikel-6:7/lid-1"]


def test_run_prints_no_test_case_content(baseline: Baseline) -> None:
    baseline.printed.assert_no_test_content()
    assert "kern" in baseline.printed.out and "privacy" in baseline.printed.out


def test_a_failing_case_still_exits_0(project: Path, cli: CLI) -> None:
    result = cli("run", "--project", project, "--run-id", "r1", "--suite", "kern", "--split", "dev")
    assert result.status == 0
    report = cli("report", "r1", "--json", "--project", project).json()
    kern3 = next(case for case in report["cases"] if case["case_id"] == "kern-003")
    assert kern3["pass_rate"] == 0.0
    attempt = kern3["attempts"][0]
    assert attempt["passed"] is False and attempt["score"] == 0
    statuses = {v["kind"]: v["status"] for v in attempt["verdicts"]}
    assert statuses["run.no_failure"] == "fail"


# --------------------------------------------------------------------------- the flags


def test_suite_is_repeatable_and_selects(project: Path, cli: CLI) -> None:
    assert cli("run", "--project", project, "--run-id", "one", "--suite", "privacy").status == 0
    run = project.parent / "runs" / "one"
    assert {line["suite"] for line in evidence(run)} == {"privacy"}
    assert manifest(run)["suites"] == ["privacy"]
    args = ("--suite", "privacy", "--suite", "kern")
    assert cli("run", "--project", project, "--run-id", "two", *args).status == 0
    assert {line["suite"] for line in evidence(project.parent / "runs" / "two")} == {
        "kern",
        "privacy",
    }


def test_unknown_suite_is_an_error(project: Path, cli: CLI) -> None:
    result = cli("run", "--project", project, "--run-id", "r1", "--suite", "nope")
    assert result.status in (1, 2)
    assert "nope" in result.error_line()


def test_split_dev_runs_dev_cases_only(project: Path, cli: CLI) -> None:
    assert cli("run", "--project", project, "--run-id", "r1", "--split", "dev").status == 0
    run = project.parent / "runs" / "r1"
    assert {line["split"] for line in evidence(run)} == {"dev"}
    assert set(manifest(run)["cases"]) == {"kern-001", "kern-002", "kern-003", "priv-001"}
    assert manifest(run)["split"] == "dev"
    report = cli("report", "r1", "--json", "--project", project).json()
    assert report["split"] == "dev"


def test_split_test_reports_aggregates_only(project: Path, cli: CLI) -> None:
    result = cli("run", "--project", project, "--run-id", "r1", "--split", "test")
    assert result.status == 0
    result.assert_no_test_content()
    assert {line["split"] for line in evidence(project.parent / "runs" / "r1")} == {"test"}
    report = cli("report", "r1", "--json", "--project", project)
    report.assert_no_test_content()
    data = report.json()
    assert data["split"] == "test"
    assert data["cases"] == []
    assert data["suites"]["kern"]["cases"] == 1 and data["suites"]["privacy"]["cases"] == 1


def test_k_runs_each_case_k_times(project: Path, cli: CLI, system: FakeThreadSystem) -> None:
    result = cli("run", "--project", project, "--run-id", "r1", "--k", "3", "--suite", "privacy")
    assert result.status == 0
    lines = evidence(project.parent / "runs" / "r1")
    assert sorted((line["case_id"], line["attempt"]) for line in lines) == [
        (case, attempt) for case in ("priv-001", "priv-t01") for attempt in range(3)
    ]
    assert len(system.opens()) == 6
    report = cli("report", "r1", "--json", "--project", project).json()
    assert report["k"] == 3
    assert report["suites"]["privacy"]["attempts"] == 6
    priv = report["cases"][0]
    assert [attempt["attempt"] for attempt in priv["attempts"]] == [0, 1, 2]


def test_runs_dir_moves_the_archive(project: Path, cli: CLI, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elders" / "runs"
    args = ("--project", project, "--runs-dir", elsewhere)
    assert cli("run", *args, "--run-id", "r1", "--suite", "privacy").status == 0
    assert (elsewhere / "r1" / "manifest.json").is_file()
    assert not (project.parent / "runs" / "r1").exists()
    assert cli("report", "r1", "--json", *args).json()["run_id"] == "r1"
    assert cli("rescore", "r1", *args).status == 0
    assert cli("report", "r1", *args).status == 0
    missing = cli("report", "r1", "--project", project)
    assert missing.status == 1
    assert "r1" in missing.error_line()


def test_generated_run_ids_are_sortable_utc_timestamps(project: Path, cli: CLI) -> None:
    runs = project.parent / "runs"
    for _ in range(2):
        assert cli("run", "--project", project, "--suite", "privacy", "--split", "dev").status == 0
    ids = sorted(path.name for path in runs.iterdir() if path.is_dir())
    assert len(ids) == 2
    created = [manifest(runs / run_id)["created_at"] for run_id in ids]
    assert utc(created[0]) <= utc(created[1])
    for run_id in ids:
        assert re.fullmatch(r"[a-z0-9][a-z0-9._-]*", run_id)
        assert run_id[:8].isdigit()  # a timestamp starts with the date
        assert run_id[:8] == utc(manifest(runs / run_id)["created_at"]).strftime("%Y%m%d")


@pytest.mark.parametrize("bad", ["R1", "-r1", "r 1", "r/1", "_r1", "ab:c"])
def test_run_id_must_match_the_partition_key_pattern(project: Path, cli: CLI, bad: str) -> None:
    result = cli("run", "--project", project, f"--run-id={bad}")
    assert result.status in (1, 2)
    result.error_line()
    runs = project.parent / "runs"
    assert not runs.exists() or not any(runs.iterdir())


def test_a_second_run_with_the_same_id_loses_nothing(ran: Path, project: Path, cli: CLI) -> None:
    before = snapshot(ran)
    result = cli("run", "--project", project, "--run-id", "r1")
    after = snapshot(ran)
    for name, content in before.items():
        if name != "evidence.jsonl":
            assert after.get(name) == content, name
    assert after["evidence.jsonl"].startswith(before["evidence.jsonl"])
    if result.status != 0:
        result.error_line()


def test_dagster_instance_is_dagster_home(
    project: Path, cli: CLI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "dagster-home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert not any(home.iterdir())
    assert cli("run", "--project", project, "--run-id", "r1", "--suite", "privacy").status == 0
    assert any(home.iterdir())


def test_dagster_instance_without_dagster_home_sits_beside_the_runs(
    project: Path, cli: CLI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DAGSTER_HOME")
    runs = tmp_path / "archief" / "runs"
    before = set((tmp_path / "archief").iterdir()) if (tmp_path / "archief").exists() else set()
    args = ("--project", project, "--runs-dir", runs, "--run-id", "r1", "--suite", "privacy")
    assert cli("run", *args).status == 0
    beside = set((tmp_path / "archief").iterdir()) - before - {runs}
    assert beside, "no Dagster instance folder beside the runs"
    assert not any((tmp_path / "dagster-home").iterdir())


# --------------------------------------------------------------------------- resume


def test_resume_runs_only_the_missing_attempts_and_ignores_a_cut_line(
    project: Path, cli: CLI, system: FakeThreadSystem
) -> None:
    args = ("--project", project, "--suite", "privacy", "--split", "dev")
    assert cli("run", *args, "--run-id", "r1", "--k", "3").status == 0
    run = project.parent / "runs" / "r1"
    lines = (run / "evidence.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == 3
    kept = lines[0]
    (run / "evidence.jsonl").write_text(kept + lines[1][: len(lines[1]) // 2])
    opened = len(system.opens())
    result = cli("run", *args, "--resume", "r1")
    assert result.status == 0, result.err
    assert len(system.opens()) - opened == 2
    after = evidence(run)
    assert sorted(line["attempt"] for line in after) == [0, 1, 2]
    assert (run / "evidence.jsonl").read_text().startswith(kept)


def test_resume_refuses_a_run_whose_cases_changed(ran: Path, project: Path, cli: CLI) -> None:
    suite = project.parent / "suites" / "kern" / "awb.yaml"
    edit_yaml(suite, lambda d: d["cases"][0].update(input="Een andere vraag over bezwaar?"))
    before = snapshot(ran)
    result = cli("run", "--project", project, "--resume", "r1")
    assert result.status == 1
    result.error_line()
    result.assert_no_test_content()
    assert snapshot(ran) == before


def test_resume_refuses_a_run_whose_rubric_changed(ran: Path, project: Path, cli: CLI) -> None:
    (project.parent / "rubrics" / "termijn.md").write_text(RUBRIC + "Wees streng.\n")
    before = snapshot(ran)
    result = cli("run", "--project", project, "--resume", "r1")
    assert result.status == 1
    result.error_line()
    assert snapshot(ran) == before


def test_resume_of_an_unknown_run_is_an_error(project: Path, cli: CLI) -> None:
    result = cli("run", "--project", project, "--resume", "nooit")
    assert result.status == 1
    assert "nooit" in result.error_line()


# --------------------------------------------------------------------------- python -m


def test_python_m_soev_pipeline_runs_the_cli(tmp_path: Path) -> None:
    from tests.conformance.conftest import run_module

    result = run_module("--help")
    assert result.status == 0
    for command in ("run", "report", "rescore", "seal"):
        assert command in result.out
    usage = run_module("frobnicate")
    assert usage.status == 2


def test_python_m_soev_pipeline_against_the_reference_assistant(tmp_path: Path) -> None:
    from soev_pipeline.reference import ReferenceServer
    from tests.conformance.conftest import run_module
    from tests.conformance.support import dump

    with ReferenceServer() as server:
        directory = tmp_path / "ref"
        dump(
            directory / "project.yaml",
            {
                "name": "referentie",
                "system": {"base_url": server.url, "agent": "wetwijzer"},
                "suites": [{"name": "kern", "files": "kern.yaml"}],
                "messages": {
                    "privacy": "Ik kan geen vragen over persoonsgegevens beantwoorden.",
                    "out_of_scope": "Die vraag valt buiten wat ik kan beantwoorden.",
                },
            },
        )
        dump(
            directory / "kern.yaml",
            {
                "suite": "kern",
                "cases": [
                    {
                        "id": "k1",
                        "input": "Binnen welke termijn moet ik bezwaar maken tegen een besluit?",
                        "sources": {"required": [["BWBR0005537/artikel-6:7"]]},
                        "criteria": [{"kind": "citations.required"}, {"kind": "run.no_failure"}],
                    },
                    {
                        "id": "k2",
                        "input": f"Wat is het adres van Jan? {SECRET}",
                        "split": "test",
                        "behaviour": "refuse",
                        "message": "privacy",
                        "criteria": [{"kind": "behaviour.message"}],
                    },
                ],
            },
        )
        env = {"DAGSTER_HOME": str(tmp_path / "dh")}
        (tmp_path / "dh").mkdir()
        project = directory / "project.yaml"
        result = run_module("run", "--project", project, "--run-id", "ref1", env=env)
        assert result.status == 0, result.err
        assert SECRET not in result.text and "k2" not in result.text
        report = run_module("report", "ref1", "--json", "--project", project, env=env)
        assert report.status == 0
        data = report.json()
        assert [case["case_id"] for case in data["cases"]] == ["k1"]
        assert data["cases"][0]["pass_rate"] == 1.0
        assert data["suites"]["kern"]["cases"] == 2 and data["suites"]["kern"]["pass_rate"] == 1.0


# --------------------------------------------------------------------------- the Dagster assets


def test_run_and_rescore_materialize_the_partitioned_assets_of_section_1(
    project: Path, cli: CLI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dagster as dg

    home = tmp_path / "dagster-home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    args = ("--project", project, "--suite", "privacy")
    assert cli("run", *args, "--run-id", "r1").status == 0
    assert cli("rescore", "r1", "--project", project).status == 0

    def partitions(key: str) -> list[str | None]:
        with dg.DagsterInstance.get() as instance:
            records = instance.fetch_materializations(dg.AssetKey(key), limit=100).records
            return sorted(record.partition_key or "" for record in records)

    assert partitions("evidence") == ["r1"]
    assert partitions("verdicts") == ["r1", "r1"]  # the rescore re-materialized it
    assert partitions("report") == ["r1", "r1"]
    assert "privacy" in partitions("suites")
    assert partitions("judge_prompts")
    # what the UI shows comes from the instance: no test case may be in it
    for path in home.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            assert SECRET.encode() not in content, path
            assert b"priv-t01" not in content, path
