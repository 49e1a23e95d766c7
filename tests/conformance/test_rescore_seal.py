"""`rescore` and `seal` (SPEC.md sections 7 and 8, the cli reference)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.conformance.conftest import CLI
from tests.conformance.support import (
    SECRET,
    FakeChatServer,
    FakeThreadSystem,
    edit_yaml,
    snapshot,
)

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def kern_file(project: Path) -> Path:
    return project.parent / "suites" / "kern" / "awb.yaml"


def privacy_file(project: Path) -> Path:
    return project.parent / "suites" / "privacy" / "persoonsgegevens.yaml"


def change_test_case(project: Path) -> None:
    def change(data: dict) -> None:
        case = next(c for c in data["cases"] if c["id"] == "kern-t01")
        case["input"] = case["input"] + " Graag snel antwoord."

    edit_yaml(kern_file(project), change)


# --------------------------------------------------------------------------- rescore


def test_rescore_asks_the_system_nothing_and_keeps_earlier_scorings(
    ran: Path, project: Path, cli: CLI, system: FakeThreadSystem
) -> None:
    before = snapshot(ran)
    requests = len(system.requests)
    result = cli("rescore", "r1", "--project", project)
    assert result.status == 0, result.err
    result.assert_no_test_content()
    assert len(system.requests) == requests
    after = snapshot(ran)
    for name, content in before.items():
        assert after[name] == content, f"{name} changed"
    assert len(after) > len(before), "the rescore added no scoring"


def test_rescore_grades_with_the_criteria_as_they_are_now(
    ran: Path, project: Path, cli: CLI
) -> None:
    def change(data: dict) -> None:
        data["cases"][0]["criteria"].append({"kind": "reply.contains", "substrings": ["dagen"]})

    edit_yaml(kern_file(project), change)
    assert cli("rescore", "r1", "--project", project).status == 0
    report = cli("report", "r1", "--json", "--project", project).json()
    assert report["criteria"]["reply.contains"]["fail"] == 1
    kern1 = next(case for case in report["cases"] if case["case_id"] == "kern-001")
    assert kern1["attempts"][0]["passed"] is False


def test_rescore_offline_calls_neither_the_system_nor_the_judge(
    ran: Path, project: Path, cli: CLI, system: FakeThreadSystem, judge: FakeChatServer
) -> None:
    requests, judged = len(system.requests), len(judge.bodies)
    result = cli("rescore", "r1", "--offline", "--project", project)
    assert result.status == 0, result.err
    result.assert_no_test_content()
    assert len(system.requests) == requests
    assert len(judge.bodies) == judged


def test_rescore_offline_works_without_the_system_running(
    project: Path, cli: CLI, system: FakeThreadSystem, judge: FakeChatServer
) -> None:
    assert cli("run", "--project", project, "--run-id", "r1", "--suite", "privacy").status == 0
    system.__exit__(None, None, None)
    judge.__exit__(None, None, None)
    result = cli("rescore", "r1", "--offline", "--project", project)
    assert result.status == 0, result.err


def test_a_cut_evidence_line_is_ignored_by_rescore_and_report(
    ran: Path, project: Path, cli: CLI
) -> None:
    evidence = ran / "evidence.jsonl"
    lines = evidence.read_text().splitlines(keepends=True)
    evidence.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    result = cli("rescore", "r1", "--project", project)
    assert result.status == 0, result.err
    report = cli("report", "r1", "--json", "--project", project)
    assert report.status == 0
    total = sum(figures["attempts"] for figures in report.json()["suites"].values())
    assert total == len(lines) - 1


def test_rescore_of_an_unknown_run_is_a_one_line_error(project: Path, cli: CLI) -> None:
    result = cli("rescore", "nooit", "--project", project)
    assert result.status == 1
    assert "nooit" in result.error_line()


def test_a_broken_project_stops_rescore_and_loses_nothing(
    ran: Path, project: Path, cli: CLI
) -> None:
    before = snapshot(ran)
    edit_yaml(project, lambda data: data.update(sytem={"base_url": "x"}))
    result = cli("rescore", "r1", "--project", project)
    assert result.status == 1
    line = result.error_line()
    assert "project.yaml" in line and "sytem" in line
    assert snapshot(ran) == before


# --------------------------------------------------------------------------- seal


def test_seal_records_each_test_case_digest(project: Path, cli: CLI) -> None:
    result = cli("seal", "--project", project)
    assert result.status == 0, result.err
    result.assert_no_test_content()
    sealed = yaml.safe_load((project.parent / "sealed-test.yaml").read_text())
    assert isinstance(sealed, dict)
    assert set(sealed) == {"kern-t01", "priv-t01"}
    assert all(isinstance(v, str) and HEX64.match(v) for v in sealed.values())
    assert cli("run", "--project", project, "--run-id", "r1", "--split", "test").status == 0


def test_seal_digests_are_stable(project: Path, cli: CLI) -> None:
    assert cli("seal", "--project", project).status == 0
    first = (project.parent / "sealed-test.yaml").read_text()
    assert cli("seal", "--project", project).status == 0
    assert (project.parent / "sealed-test.yaml").read_text() == first


@pytest.mark.parametrize(
    "command", ["run", "run --split dev", "run --suite privacy", "rescore", "seal --append"]
)
def test_a_changed_sealed_case_stops_commands_naming_no_case(
    project: Path, cli: CLI, command: str
) -> None:
    assert cli("run", "--project", project, "--run-id", "r1", "--suite", "privacy").status == 0
    assert cli("seal", "--project", project).status == 0
    change_test_case(project)
    args = {
        "run": ("run", "--run-id", "r2"),
        "run --split dev": ("run", "--run-id", "r2", "--split", "dev"),
        "run --suite privacy": ("run", "--run-id", "r2", "--suite", "privacy"),
        "rescore": ("rescore", "r1"),
        "seal --append": ("seal", "--append"),
    }[command]
    result = cli(*args, "--project", project)
    assert result.status == 1
    line = result.error_line()
    result.assert_no_test_content()
    assert "1" in line
    assert not (project.parent / "runs" / "r2").exists()


def test_the_seal_message_counts_removed_and_changed_cases(project: Path, cli: CLI) -> None:
    assert cli("seal", "--project", project).status == 0
    change_test_case(project)
    edit_yaml(
        privacy_file(project),
        lambda data: data.update(cases=[c for c in data["cases"] if c["id"] != "priv-t01"]),
    )
    result = cli("run", "--project", project, "--run-id", "r1")
    assert result.status == 1
    line = result.error_line()
    result.assert_no_test_content()
    assert "2" in line


def test_seal_append_adds_new_test_cases_only(project: Path, cli: CLI) -> None:
    assert cli("seal", "--project", project).status == 0
    sealed = project.parent / "sealed-test.yaml"
    before = yaml.safe_load(sealed.read_text())

    def add(data: dict) -> None:
        data["cases"].append(
            {
                "id": "priv-t02",
                "split": "test",
                "input": f"Nog een vraag {SECRET}",
                "behaviour": "refuse",
            }
        )

    edit_yaml(privacy_file(project), add)
    refused = cli("run", "--project", project, "--run-id", "r1")
    assert refused.status == 1
    refused.error_line()
    assert SECRET not in refused.text and "priv-t02" not in refused.text
    result = cli("seal", "--append", "--project", project)
    assert result.status == 0, result.err
    assert SECRET not in result.text and "priv-t02" not in result.text
    after = yaml.safe_load(sealed.read_text())
    assert set(after) == {"kern-t01", "priv-t01", "priv-t02"}
    assert {key: after[key] for key in before} == before
    assert cli("run", "--project", project, "--run-id", "r1", "--split", "test").status == 0
