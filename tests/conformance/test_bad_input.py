"""Bad input through the CLI (docs/project.md, docs/runs.md): each class of mistake gives one
line naming the file, the case and the field, exit status 1 (2 for a usage error), no
traceback and no test case content; it asks the system nothing and loses nothing archived.

Each test works on a `copy` of the baseline project, whose finished run `b1` must survive.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import Result, invoke
from tests.support.project import RUBRIC, edit_yaml, snapshot
from tests.support.thread_api import FakeThreadAPI

pytestmark = pytest.mark.e2e


def kern(project: Path) -> Path:
    return project.parent / "suites" / "kern" / "awb.yaml"


def privacy(project: Path) -> Path:
    return project.parent / "suites" / "privacy" / "persoonsgegevens.yaml"


def case_of(data: dict[str, Any], case_id: str) -> dict[str, Any]:
    return next(case for case in data["cases"] if case["id"] == case_id)


def edit_case(
    path_of: Callable[[Path], Path], case_id: str, change: Callable[[dict[str, Any]], None]
) -> Callable[[Path], None]:
    def apply(project: Path) -> None:
        edit_yaml(path_of(project), lambda data: change(case_of(data, case_id)))

    return apply


def append_corpus(line: str) -> Callable[[Path], None]:
    def apply(project: Path) -> None:
        with (project.parent / "corpus.jsonl").open("a") as stream:
            stream.write(line + "\n")

    return apply


def write(relative: str, text: str) -> Callable[[Path], None]:
    def apply(project: Path) -> None:
        (project.parent / relative).write_text(text)

    return apply


def set_key(*path: str, value: object) -> Callable[[Path], None]:
    def apply(project: Path) -> None:
        def change(data: dict[str, Any]) -> None:
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
        ("rubrics/weg.md", "awb.yaml", "kern-001"),
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
        ("project.yaml", "privacy", "suites/leeg/*.yaml"),
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


@dataclass
class Archive:
    """The copy's finished run as it was before the bad command, and the copy's system."""

    run: Path
    files: dict[str, bytes]
    system: FakeThreadAPI

    def assert_kept(self) -> None:
        assert snapshot(self.run) == self.files
        assert self.system.requests == []  # the input is checked before any attempt
        assert not (self.run.parent / "r1" / "manifest.json").exists()


@pytest.fixture
def archive(copy: Path, system: FakeThreadAPI) -> Archive:
    run = copy.parent / "runs" / "b1"
    return Archive(run, snapshot(run), system)


def refused(result: Result, *mentions: str) -> str:
    """The one-line error of a command that stopped with status 1, naming `mentions`."""
    assert result.status == 1, result.text
    line = result.error_line()
    for mention in mentions:
        assert mention in line, f"{mention!r} not in {line!r}"
    result.assert_no_test_content()
    return line


@pytest.mark.parametrize("bad", CASES, ids=[bad.name for bad in CASES])
def test_bad_input_stops_a_run_with_one_line(copy: Path, archive: Archive, bad: Bad) -> None:
    bad.apply(copy)
    refused(invoke("run", "--project", copy, "--run-id", "r1"), *bad.mentions)
    archive.assert_kept()


def test_bad_input_stops_a_rescore_before_it_touches_the_run(copy: Path, archive: Archive) -> None:
    set_key("sytem", value={"a": 1})(copy)
    refused(invoke("rescore", "b1", "--project", copy), "project.yaml", "sytem")
    archive.assert_kept()


TEST_CASE_PROBLEMS = [
    Bad("unknown key", edit_case(kern, "kern-t01", lambda c: c.update(vraag="x")), ("awb.yaml",)),
    Bad(
        "bad parameter",
        edit_case(
            kern,
            "kern-t01",
            lambda c: c["criteria"].append({"kind": "reply.max_length", "max": "lang"}),
        ),
        ("awb.yaml",),
    ),
    Bad(
        "unknown kind",
        edit_case(kern, "kern-t01", lambda c: c["criteria"].append({"kind": "geheim.soort"})),
        ("awb.yaml",),
    ),
    Bad("duplicate id", edit_case(privacy, "priv-t01", lambda c: c.update(id="kern-t01")), ()),
]


@pytest.mark.parametrize("bad", TEST_CASE_PROBLEMS, ids=[bad.name for bad in TEST_CASE_PROBLEMS])
def test_a_bad_test_case_is_reported_without_its_content(copy: Path, bad: Bad) -> None:
    bad.apply(copy)
    refused(invoke("run", "--project", copy, "--run-id", "r1"), *bad.mentions)


def test_a_missing_project_file(tmp_path: Path) -> None:
    result = invoke("run", "--project", tmp_path / "nergens" / "project.yaml")
    refused(result, "project.yaml", "no such project file")


def test_an_unreachable_system_stops_a_resume_and_keeps_the_evidence(
    copy: Path, archive: Archive
) -> None:
    edit_yaml(copy, lambda data: data["system"].update(base_url="http://127.0.0.1:9/"))
    result = invoke("run", "--project", copy, "--resume", "b1")
    refused(result, "project.yaml", "system.base_url: cannot reach http://127.0.0.1:9/")
    archive.assert_kept()


UNSET_VARIABLES = {
    "system.api_key_env": lambda d: d["system"].update(api_key_env="NIET_GEZET"),
    "system.headers": lambda d: d["system"].update(headers={"X-Tenant": "${NIET_GEZET}"}),
    "judge.api_key_env": lambda d: d["judge"].update(api_key_env="NIET_GEZET"),
}


@pytest.mark.parametrize("where", sorted(UNSET_VARIABLES))
def test_an_unset_variable_is_one_line_naming_it_and_leaves_no_run(
    copy: Path, archive: Archive, where: str
) -> None:
    edit_yaml(copy, UNSET_VARIABLES[where])
    result = invoke("run", "--project", copy, "--run-id", "r1", "--suite", "privacy")
    refused(result, "project.yaml", "NIET_GEZET", where.split(".")[0])
    archive.assert_kept()


@pytest.mark.parametrize(
    ("change", "mentions"),
    [
        (
            lambda p: edit_yaml(kern(p), lambda d: d["cases"][0].update(input="Anders?")),
            ("cannot be resumed", "kern-001"),
        ),
        (
            lambda p: (p.parent / "rubrics" / "termijn.md").write_text(RUBRIC + "Streng.\n"),
            ("judge prompts or rubrics changed: rubrics/termijn.md",),
        ),
    ],
    ids=["a case", "a rubric"],
)
def test_a_resume_refuses_a_run_whose_definitions_changed(
    copy: Path, archive: Archive, change: Any, mentions: tuple[str, ...]
) -> None:
    change(copy)
    refused(invoke("run", "--project", copy, "--resume", "b1"), *mentions)
    archive.assert_kept()


def test_a_run_id_that_exists_is_refused(copy: Path, archive: Archive) -> None:
    refused(invoke("run", "--project", copy, "--run-id", "b1"), "b1")
    archive.assert_kept()


@pytest.mark.parametrize(
    "args", [["report", "nooit"], ["rescore", "nooit"], ["run", "--resume", "nooit"]]
)
def test_an_unknown_run_is_one_line_naming_it(copy: Path, args: list[str]) -> None:
    result = invoke(*args, "--project", copy)
    refused(result, "nooit")
    assert result.out == ""


def test_an_unknown_suite_is_one_line_naming_it(copy: Path) -> None:
    result = invoke("run", "--project", copy, "--run-id", "r1", "--suite", "nope")
    assert result.status in (1, 2)
    assert "nope" in result.error_line()


def test_a_usage_error_exits_2_with_one_line(copy: Path) -> None:
    result = invoke("run", "--project", copy, "--k", "veel")
    assert result.status == 2
    assert "--k" in result.error_line()


def test_debug_shows_the_traceback(copy: Path) -> None:
    set_key("sytem", value={"a": 1})(copy)
    result = invoke("--debug", "run", "--project", copy, "--run-id", "r1")
    assert result.status == 1
    assert "Traceback" in result.err
