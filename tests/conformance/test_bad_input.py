"""Bad input: each gives one line naming the file, the case and the field, exit 1, no
traceback, no test case content, and loses nothing already archived (SPEC.md sections 2-4,
7, 8; the cli reference)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conformance.conftest import CLI, Baseline
from tests.conformance.support import SECRET, TEST_IDS, FakeThreadSystem, edit_yaml, snapshot


def kern(project: Path) -> Path:
    return project.parent / "suites" / "kern" / "awb.yaml"


def privacy(project: Path) -> Path:
    return project.parent / "suites" / "privacy" / "persoonsgegevens.yaml"


def case_of(data: dict, case_id: str) -> dict:
    return next(case for case in data["cases"] if case["id"] == case_id)


def edit_case(path_of: Callable[[Path], Path], case_id: str, change: Callable[[dict], None]):
    def apply(project: Path) -> None:
        edit_yaml(path_of(project), lambda data: change(case_of(data, case_id)))

    return apply


def append_corpus(line: str):
    def apply(project: Path) -> None:
        with (project.parent / "corpus.jsonl").open("a") as stream:
            stream.write(line + "\n")

    return apply


def write(relative: str, text: str):
    def apply(project: Path) -> None:
        (project.parent / relative).write_text(text)

    return apply


def set_key(*path: str, value: object):
    def apply(project: Path) -> None:
        def change(data: dict) -> None:
            target = data
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value

        edit_yaml(project, change)

    return apply


@dataclass
class Bad:
    name: str
    apply: Callable[[Path], None]
    mentions: tuple[str, ...]


CASES = [
    Bad("project unknown key", set_key("sytem", value={"a": 1}), ("project.yaml", "sytem")),
    Bad(
        "project nested unknown key",
        set_key("system", "timeout", value=3),
        ("project.yaml", "system", "timeout"),
    ),
    Bad(
        "project wrong type",
        set_key("system", "timeout_s", value="snel"),
        ("project.yaml", "timeout_s"),
    ),
    Bad(
        "project secret key",
        set_key("judge", "api_key", value="sk-geheim"),
        ("project.yaml", "api_key"),
    ),
    Bad(
        "project kind",
        set_key("system", "kind", value="soev-threads"),
        ("project.yaml", "kind"),
    ),
    Bad(
        "suite entry unknown key",
        lambda p: edit_yaml(p, lambda d: d["suites"][0].update(glob="x")),
        ("project.yaml", "suites", "glob"),
    ),
    Bad(
        "scoring unknown key",
        set_key("scoring", "threshold", value=1),
        ("project.yaml", "threshold"),
    ),
    Bad(
        "citations unknown key",
        set_key("citations", "field", value="ref"),
        ("project.yaml", "citations", "field"),
    ),
    Bad("judge unknown key", set_key("judge", "modell", value="x"), ("project.yaml", "modell")),
    Bad(
        "duplicate case id in one file",
        lambda p: edit_yaml(kern(p), lambda d: d["cases"][1].update(id="kern-001")),
        ("awb.yaml", "kern-001"),
    ),
    Bad(
        "suite unknown key",
        edit_case(kern, "kern-001", lambda c: c.update(vraag="x")),
        ("awb.yaml", "kern-001", "vraag"),
    ),
    Bad(
        "suite top-level unknown key",
        lambda p: edit_yaml(kern(p), lambda d: d.update(criterium=[])),
        ("awb.yaml", "criterium"),
    ),
    Bad(
        "input and turns",
        edit_case(kern, "kern-001", lambda c: c.update(turns=["a", "b"])),
        ("awb.yaml", "kern-001"),
    ),
    Bad(
        "bad behaviour",
        edit_case(privacy, "priv-001", lambda c: c.update(behaviour="weiger")),
        ("persoonsgegevens.yaml", "priv-001", "behaviour"),
    ),
    Bad(
        "bad split",
        edit_case(kern, "kern-002", lambda c: c.update(split="train")),
        ("awb.yaml", "kern-002", "split"),
    ),
    Bad(
        "unknown message code",
        edit_case(privacy, "priv-001", lambda c: c.update(message="geheim")),
        ("persoonsgegevens.yaml", "priv-001", "message", "geheim"),
    ),
    Bad(
        "unknown criterion kind",
        edit_case(kern, "kern-002", lambda c: c["criteria"].append({"kind": "citations.requird"})),
        ("awb.yaml", "kern-002", "citations.requird"),
    ),
    Bad(
        "bad parameter value",
        edit_case(
            kern,
            "kern-001",
            lambda c: c["criteria"].append({"kind": "nuggets.coverage", "min": "veel"}),
        ),
        ("awb.yaml", "kern-001", "min"),
    ),
    Bad(
        "unknown parameter",
        edit_case(
            kern,
            "kern-002",
            lambda c: c["criteria"].append({"kind": "citations.required", "mach": "exact"}),
        ),
        ("awb.yaml", "kern-002", "mach"),
    ),
    Bad(
        "parameter of a kind without parameters",
        edit_case(
            privacy,
            "priv-001",
            lambda c: c["criteria"].append({"kind": "refusal.code", "strict": True}),
        ),
        ("persoonsgegevens.yaml", "priv-001", "strict"),
    ),
    Bad(
        "missing required parameter",
        edit_case(kern, "kern-002", lambda c: c["criteria"].append({"kind": "usage.max_tokens"})),
        ("awb.yaml", "kern-002", "max"),
    ),
    Bad(
        "bad rubric labels",
        edit_case(
            kern,
            "kern-001",
            lambda c: c["criteria"].append(
                {
                    "kind": "rubric.judge",
                    "rubric": "rubrics/termijn.md",
                    "labels": ["a"],
                    "pass_labels": ["b"],
                }
            ),
        ),
        ("awb.yaml", "kern-001", "pass_labels"),
    ),
    Bad(
        "missing rubric file",
        edit_case(
            kern,
            "kern-001",
            lambda c: c["criteria"].append(
                {
                    "kind": "rubric.judge",
                    "rubric": "rubrics/weg.md",
                    "labels": ["a"],
                    "pass_labels": ["a"],
                }
            ),
        ),
        ("rubrics/weg.md",),
    ),
    Bad(
        "duplicate case id across suites",
        edit_case(privacy, "priv-001", lambda c: c.update(id="kern-002")),
        ("kern-002",),
    ),
    Bad(
        "suite file of another suite",
        lambda p: edit_yaml(
            p.parent / "suites" / "kern" / "extra.yaml", lambda d: d.update(suite="privacy")
        ),
        ("extra.yaml", "suite"),
    ),
    Bad(
        "suite glob matches nothing",
        lambda p: edit_yaml(p, lambda d: d["suites"][1].update(files="suites/leeg/*.yaml")),
        ("privacy", "suites/leeg/*.yaml"),
    ),
    Bad(
        "suite YAML syntax",
        write("suites/kern/extra.yaml", "suite: kern\ncases: [\n"),
        ("extra.yaml",),
    ),
    Bad("project YAML syntax", write("project.yaml", "name: x\nsystem: [\n"), ("project.yaml",)),
    Bad("corpus line not a unit", append_corpus('{"text": "zonder id"}'), ("corpus.jsonl", "5")),
    Bad("corpus line not JSON", append_corpus("geen json"), ("corpus.jsonl", "5")),
    Bad(
        "corpus line without text",
        append_corpus('{"id": "BWBR1/artikel-1"}'),
        ("corpus.jsonl", "5"),
    ),
    Bad(
        "corpus line not an object",
        append_corpus('["BWBR1/artikel-1", "tekst"]'),
        ("corpus.jsonl", "5"),
    ),
    Bad(
        "corpus duplicate id",
        append_corpus(json.dumps({"id": "BWBR0005537/artikel-6:7", "text": "nogmaals"})),
        ("corpus.jsonl", "5"),
    ),
    Bad("hooks do not import", write("hooks.py", "import bestaat_niet_module\n"), ("hooks",)),
    Bad(
        "hooks kind clashes with a built-in",
        write(
            "hooks.py",
            "from soev_pipeline.criteria import Builtin, NoParams, outcome\n"
            "async def f(case, evidence, *, params, ctx):\n    return outcome(passed=True)\n"
            "CRITERIA = [Builtin('reply.contains', NoParams, f)]\n",
        ),
        ("reply.contains",),
    ),
]


@pytest.fixture
def archived(project: Path, baseline: Baseline) -> Path:
    """An earlier run of the project, copied into its runs folder."""
    target = project.parent / "runs" / "r0"
    shutil.copytree(baseline.run, target)
    return target


@pytest.mark.parametrize("bad", CASES, ids=[bad.name for bad in CASES])
@pytest.mark.parametrize("command", ["run", "rescore"])
def test_bad_input_gives_one_line_and_keeps_the_archive(
    project: Path, archived: Path, cli: CLI, bad: Bad, command: str, system: FakeThreadSystem
) -> None:
    before = snapshot(archived)
    bad.apply(project)
    args = ("run", "--run-id", "r1") if command == "run" else ("rescore", "r0")
    result = cli(*args, "--project", project)
    assert result.status == 1, result.text
    line = result.error_line()
    for mention in bad.mentions:
        assert mention in line, f"{mention!r} not in {line!r}"
    result.assert_no_test_content()
    assert system.requests == []  # validated before any attempt runs
    assert snapshot(archived) == before
    assert not (project.parent / "runs" / "r1").exists() or not any(
        (project.parent / "runs" / "r1").iterdir()
    )


TEST_CASE_PROBLEMS = [
    Bad(
        "unknown key in a test case",
        edit_case(kern, "kern-t01", lambda c: c.update(vraag="x")),
        ("awb.yaml",),
    ),
    Bad(
        "bad parameter in a test case",
        edit_case(
            kern,
            "kern-t01",
            lambda c: c["criteria"].append({"kind": "reply.max_length", "max": "lang"}),
        ),
        ("awb.yaml",),
    ),
    Bad(
        "unknown kind in a test case",
        edit_case(kern, "kern-t01", lambda c: c["criteria"].append({"kind": "geheim.soort"})),
        ("awb.yaml",),
    ),
    Bad(
        "duplicate id of a test case",
        edit_case(privacy, "priv-t01", lambda c: c.update(id="kern-t01")),
        (),
    ),
]


@pytest.mark.parametrize("bad", TEST_CASE_PROBLEMS, ids=[bad.name for bad in TEST_CASE_PROBLEMS])
def test_a_bad_test_case_is_reported_without_its_content(project: Path, cli: CLI, bad: Bad) -> None:
    bad.apply(project)
    result = cli("run", "--project", project, "--run-id", "r1")
    assert result.status == 1
    line = result.error_line()
    for mention in bad.mentions:
        assert mention in line
    assert SECRET not in result.text
    for case_id in TEST_IDS:
        assert case_id not in result.text


def test_missing_project_file(tmp_path: Path, cli: CLI) -> None:
    result = cli("run", "--project", tmp_path / "nergens" / "project.yaml")
    assert result.status == 1
    assert "project.yaml" in result.error_line()


def test_unreachable_system_is_one_line_naming_the_place(
    project: Path, archived: Path, cli: CLI
) -> None:
    before = snapshot(archived)
    edit_yaml(project, lambda d: d["system"].update(base_url="http://127.0.0.1:9/"))
    result = cli("run", "--project", project, "--run-id", "r1")
    assert result.status == 1
    line = result.error_line()
    assert "project.yaml" in line and "base_url" in line
    assert snapshot(archived) == before


def test_resume_against_an_unreachable_system_keeps_the_evidence(
    project: Path, archived: Path, cli: CLI
) -> None:
    lines = (archived / "evidence.jsonl").read_text().splitlines(keepends=True)
    (archived / "evidence.jsonl").write_text("".join(lines[:3]))
    before = snapshot(archived)
    edit_yaml(project, lambda d: d["system"].update(base_url="http://127.0.0.1:9/"))
    result = cli("run", "--project", project, "--resume", "r0")
    assert result.status == 1
    result.error_line()
    assert snapshot(archived) == before


UNSET_VARIABLES = {
    "system.api_key_env": lambda d: d["system"].update(api_key_env="NIET_GEZET"),
    "system.headers": lambda d: d["system"].update(headers={"X-Tenant": "${NIET_GEZET}"}),
    "judge.api_key_env": lambda d: d["judge"].update(api_key_env="NIET_GEZET"),
}


@pytest.mark.parametrize("where", sorted(UNSET_VARIABLES))
def test_an_unset_variable_is_one_line_naming_it(project: Path, cli: CLI, where: str) -> None:
    edit_yaml(project, UNSET_VARIABLES[where])
    result = cli("run", "--project", project, "--run-id", "r1", "--suite", "privacy")
    assert result.status == 1
    line = result.error_line()
    assert "NIET_GEZET" in line and where.split(".")[0] in line


@pytest.mark.parametrize("where", sorted(UNSET_VARIABLES))
def test_an_unset_variable_names_the_project_file(project: Path, cli: CLI, where: str) -> None:
    edit_yaml(project, UNSET_VARIABLES[where])
    result = cli("run", "--project", project, "--run-id", "r1", "--suite", "privacy")
    assert result.status == 1
    assert "project.yaml" in result.error_line()


@pytest.mark.parametrize("where", sorted(UNSET_VARIABLES))
def test_a_run_stopped_by_an_unset_variable_leaves_no_run(
    project: Path, cli: CLI, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit_yaml(project, UNSET_VARIABLES[where])
    assert cli("run", "--project", project, "--run-id", "r1", "--suite", "privacy").status == 1
    assert not (project.parent / "runs" / "r1").exists()


PLACES = {
    "suite glob matches nothing": (
        lambda p: edit_yaml(p, lambda d: d["suites"][1].update(files="suites/leeg/*.yaml")),
        ("project.yaml",),
    ),
    "hooks kind clashes with a built-in": (
        next(bad for bad in CASES if bad.name == "hooks kind clashes with a built-in").apply,
        ("hooks",),
    ),
    "missing rubric file": (
        next(bad for bad in CASES if bad.name == "missing rubric file").apply,
        ("awb.yaml", "kern-001"),
    ),
}


@pytest.mark.parametrize("name", sorted(PLACES))
def test_the_message_names_the_file_that_holds_the_mistake(
    project: Path, cli: CLI, name: str
) -> None:
    apply, mentions = PLACES[name]
    apply(project)
    line = cli("run", "--project", project, "--run-id", "r1").error_line()
    for mention in mentions:
        if mention == "hooks":
            assert "hooks.py" in line or "project.yaml" in line
        else:
            assert mention in line


def test_debug_shows_the_traceback(project: Path, cli: CLI) -> None:
    set_key("sytem", value={"a": 1})(project)
    result = cli("--debug", "run", "--project", project, "--run-id", "r1")
    assert result.status == 1
    assert "Traceback" in result.err


@pytest.mark.parametrize(
    "args",
    [
        ["frobnicate"],
        ["run", "--k", "veel"],
        ["run", "--split", "train"],
        ["run", "--resume", "a", "--run-id", "b"],
        ["report"],
        ["rescore"],
        ["seal", "--appendix"],
        [],
    ],
    ids=lambda args: " ".join(args) or "nothing",
)
def test_usage_errors_exit_2(project: Path, cli: CLI, args: list[str]) -> None:
    result = cli(*args)
    assert result.status == 2
    assert "Traceback" not in result.text


def test_rescore_of_a_run_without_attempts_prints_a_report(
    project: Path, cli: CLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOEV_API_KEY")
    assert cli("run", "--project", project, "--run-id", "r1").status == 1
    monkeypatch.setenv("SOEV_API_KEY", "systeem-token")
    result = cli("rescore", "r1", "--project", project)
    assert "DataFrame" not in result.text
