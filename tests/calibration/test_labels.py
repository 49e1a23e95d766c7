"""Label lines (docs/judge.md#labels): the model, reading with left-out lines, appending."""

from __future__ import annotations

import json
import multiprocessing
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from soev_pipeline.calibration import (
    JUDGED_KINDS,
    LabelLine,
    append_label,
    check_label,
    is_judged,
    label_choices,
    label_files,
    label_target,
    labels_version,
    read_labels,
)
from soev_pipeline.calibration.labels import MAX_LINE_BYTES
from soev_pipeline.core import Case, CriterionSpec, Verdict
from soev_pipeline.core.canonical import sha256_text
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.criteria import NoParams, builtin_registry, criterion, outcome
from tests.support.builders import make_case
from tests.support.project import SECRET

AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def _cases() -> dict[str, Case]:
    dev = make_case(
        id="kern-003",
        criteria=[
            {"kind": "behaviour.expected"},
            {"kind": "nuggets.coverage"},
            {
                "kind": "rubric.judge",
                "rubric": "r.md",
                "labels": ["goed", "fout"],
                "pass_labels": ["goed"],
            },
            {"kind": "rubric.judge", "criterion": "conciseness"},
        ],
    )
    test = make_case(
        id="kern-t01",
        split="test",
        input=f"Geheim? {SECRET}",
        criteria=[{"kind": "behaviour.expected"}],
    )
    return {case.id: case for case in (dev, test)}


def label(**fields: object) -> LabelLine:
    values: dict[str, object] = {
        "case_id": "kern-003",
        "reply": "Zes weken.",
        "kind": "behaviour.expected",
        "nth": 0,
        "passed": False,
        "label": "answer",
        "by": "reviewer-1",
        "at": AT,
        "note": "answers where it should refuse",
    }
    values.update(fields)
    return LabelLine.of(**values)  # type: ignore[arg-type]


def test_a_label_line_is_spec_json_with_the_hash_of_its_reply() -> None:
    line = json.loads(label().to_line())
    assert list(line) == [
        "case_id",
        "reply_sha256",
        "reply",
        "kind",
        "nth",
        "passed",
        "label",
        "by",
        "at",
        "note",
    ]
    assert line["reply_sha256"] == sha256_text("Zes weken.")
    assert line["at"] == "2026-12-01T10:00:00Z"
    assert LabelLine.model_validate_json(label().to_line()) == label()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"reply_sha256": "0" * 64}, "reply_sha256"),
        ({"extra": 1}, "extra"),
        ({"nth": -1}, "nth"),
        ({"by": "  "}, "by"),
        ({"at": "2026-12-01T10:00:00"}, "at"),
        ({"passed": "maybe"}, "passed"),
    ],
)
def test_a_line_that_breaks_the_model_is_refused(change: dict[str, object], field: str) -> None:
    raw = {**json.loads(label().to_line()), **change}
    with pytest.raises(ValidationError) as raised:
        LabelLine.model_validate(raw)
    (first,) = raised.value.errors()
    if field == "reply_sha256":  # a well-formed hash of another text
        assert "is not the SHA-256 of reply" in first["msg"]
    else:
        assert first["loc"] == (field,)


def test_label_choices_are_the_judges_labels_of_the_kind() -> None:
    case = _cases()["kern-003"]
    assert label_choices(case.criteria[0]) == ("answer", "refuse", "abstain")
    assert label_choices(case.criteria[1]) == ()  # one question per nugget: no single label
    assert label_choices(case.criteria[2]) == ("goed", "fout")
    assert len(label_choices(case.criteria[3])) >= 2  # the catalog criterion's option names
    assert label_choices(CriterionSpec(kind="reply.contains")) == ()


@criterion("custom.tone", NoParams, needs={"judge"}, labels=("warm", "cold"))
async def tone(case: object, evidence: object, *, params: NoParams, ctx: object) -> Verdict:
    return outcome(passed=True)


def test_the_labels_of_a_projects_kind_come_from_the_projects_registry(tmp_path: Path) -> None:
    registry = builtin_registry()
    registry.register(tone)
    spec = CriterionSpec(kind="custom.tone")
    assert label_choices(spec) == ()  # not a built-in kind
    assert label_choices(spec, registry) == ("warm", "cold")
    cases = {"kern-009": make_case(id="kern-009", criteria=[{"kind": "custom.tone"}])}
    line = label(case_id="kern-009", kind="custom.tone", label="warm")
    assert "label 'warm' is not one of" in (check_label(line, cases) or "")
    assert check_label(line, cases, registry) is None
    path = tmp_path / "labels.jsonl"
    append_label(path, line, cases, registry)
    assert [read.label for read in read_labels([path], cases, registry).labels] == [line]
    assert read_labels([path], cases).labels == ()


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({}, None),
        ({"kind": "rubric.judge", "nth": 0, "label": "goed"}, None),
        ({"kind": "nuggets.coverage", "label": None}, None),
        ({"case_id": "gone"}, "no case 'gone'"),
        ({"kind": "privacy.names", "label": None}, "no criterion 'privacy.names' #0"),
        ({"kind": "rubric.judge", "nth": 2, "label": None}, "no criterion 'rubric.judge' #2"),
        ({"label": "maybe"}, "label 'maybe' is not one of"),
        ({"kind": "nuggets.coverage", "label": "support"}, "label 'support' is not one of"),
    ],
)
def test_check_label_says_why_a_label_cannot_count(
    fields: dict[str, object], why: str | None
) -> None:
    found = check_label(label(**fields), _cases())
    assert found == why if why is None else why in (found or "")


def test_a_test_case_label_is_refused_without_naming_it() -> None:
    why = check_label(label(case_id="kern-t01"), _cases())
    assert why is not None and "test split" in why and "kern-t01" not in why


def test_reading_keeps_good_lines_and_names_each_left_out_line(tmp_path: Path) -> None:
    path = tmp_path / "labels" / "a.jsonl"
    path.parent.mkdir()
    test_line = label(case_id="kern-t01", reply=f"Geheim {SECRET}").to_line()
    lines = [
        label().to_line().encode(),
        b"",
        b"{not json",
        b"\xff\xfe not utf-8",
        b"[1, 2]",
        json.dumps({**json.loads(label().to_line()), "reply": "other"}).encode(),
        test_line.encode(),
        label(case_id="gone").to_line().encode(),
        label(by="reviewer-2").to_line().encode(),
    ]
    path.write_bytes(b"\n".join(lines))  # the last line has no newline: still read
    read = read_labels([path], _cases())
    assert [(item.line, item.label.by) for item in read.labels] == [
        (1, "reviewer-1"),
        (9, "reviewer-2"),
    ]
    why = {item.line: item.why for item in read.left_out}
    assert sorted(why) == [3, 4, 5, 6, 7, 8]
    assert why[3] == why[5] == "not a JSON object"
    assert why[4] == "not UTF-8 text"
    assert "reply_sha256" in why[6] or "SHA-256" in why[6]
    assert "test split" in why[7]
    assert all(item.file == str(path) for item in read.left_out)
    shown = json.dumps([item.model_dump() for item in read.left_out])
    assert SECRET not in shown and "kern-t01" not in shown


def test_without_cases_reading_checks_the_lines_alone(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text(label(case_id="anything").to_line() + "\n", encoding="utf-8")
    assert len(read_labels([path]).labels) == 1


def test_an_overlong_line_is_left_out_unread_and_the_next_one_is_read(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    with path.open("wb") as out:
        out.write(b'{"reply": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n')
        out.write(label().to_line().encode() + b"\n")
    read = read_labels([path], _cases())
    assert [(item.line, item.why) for item in read.left_out] == [
        (1, f"longer than {MAX_LINE_BYTES} bytes")
    ]
    assert [item.line for item in read.labels] == [2]


def test_a_file_that_cannot_be_read_is_one_left_out_entry(tmp_path: Path) -> None:
    read = read_labels([tmp_path / "missing.jsonl"])
    assert [(item.line, item.why.startswith("cannot read")) for item in read.left_out] == [
        (0, True)
    ]


def test_append_makes_the_file_and_writes_one_line_each(tmp_path: Path) -> None:
    path = tmp_path / "labels" / "labels.jsonl"
    append_label(path, label(), _cases())
    append_label(path, label(by="reviewer-2", passed=True), _cases())
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["by"] for line in lines] == ["reviewer-1", "reviewer-2"]


def test_append_after_a_line_cut_short_starts_a_line_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(label().to_line()[:40], encoding="utf-8")
    append_label(path, label(), _cases())
    read = read_labels([path], _cases())
    assert [item.line for item in read.left_out] == [1]
    assert [item.line for item in read.labels] == [2]


def test_a_label_save_that_fails_for_space_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk wrote part of the line and failed: the file is cut back to its size
    before the save, so calibrate never finds a half line."""
    import errno
    import os

    path = tmp_path / "labels.jsonl"
    append_label(path, label(), _cases())
    before = path.read_bytes()
    real_write = os.write

    def full_disk(descriptor: int, data: bytes) -> int:
        if len(data) > 10:
            return real_write(descriptor, data[:10])  # the disk took ten bytes
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(OSError, match="No space left on device") as raised:
        append_label(path, label(by="reviewer-2"), _cases())
    monkeypatch.undo()
    assert raised.value.filename == str(path)
    assert path.read_bytes() == before
    assert [item.label.by for item in read_labels([path], _cases()).labels] == ["reviewer-1"]


def test_append_refuses_a_label_that_cannot_count(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    with pytest.raises(ProjectError, match="test split") as raised:
        append_label(path, label(case_id="kern-t01"), _cases())
    assert "kern-t01" not in str(raised.value)
    with pytest.raises(ProjectError, match="not one of"):
        append_label(path, label(label="maybe"), _cases())
    assert not path.exists()


def _append_many(path: str, who: str) -> None:
    for number in range(50):
        append_label(Path(path), label(by=f"{who}-{number}", note="n" * 3000), _cases())


def test_concurrent_appends_from_processes_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(str(path), f"p{n}")) for n in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert all(worker.exitcode == 0 for worker in workers)
    read = read_labels([path], _cases())
    assert read.left_out == ()
    assert len(read.labels) == 150


def test_a_fifo_in_place_of_the_label_file_is_named_never_read_or_written(
    tmp_path: Path,
) -> None:
    """A FIFO was skipped by the glob (calibrate read 0 labels without a word) and written
    into by a save ("[Errno 22]" without the file's name)."""
    import os

    (tmp_path / "labels").mkdir()
    fifo = tmp_path / "labels" / "labels.jsonl"
    os.mkfifo(fifo)
    assert label_files(tmp_path) == [fifo]
    read = read_labels(label_files(tmp_path), _cases())  # returns: nothing waits on the FIFO
    assert read.labels == () and [(i.file, i.line, i.why) for i in read.left_out] == [
        (str(fifo), 0, "not a regular file")
    ]
    with pytest.raises(ProjectError, match=f"^{fifo}: not a regular file"):
        append_label(fifo, label(), _cases())
    assert labels_version(tmp_path)  # hashes without opening it


def test_a_label_through_a_link_out_of_the_project_is_refused(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "labels").symlink_to(elsewhere)
    path = project / "labels" / "labels.jsonl"
    with pytest.raises(ProjectError, match="leads outside the project directory"):
        append_label(path, label(), _cases(), inside=project)
    assert list(elsewhere.iterdir()) == []
    append_label(project / "own.jsonl", label(), _cases(), inside=project)
    assert (project / "own.jsonl").exists()


def test_label_files_and_target(tmp_path: Path) -> None:
    assert label_files(tmp_path) == []
    assert label_target(tmp_path) == tmp_path / "labels" / "labels.jsonl"
    (tmp_path / "labels").mkdir()
    for name in ("b.jsonl", "a.jsonl", "notes.txt"):
        (tmp_path / "labels" / name).write_text("", encoding="utf-8")
    assert label_files(tmp_path) == [
        tmp_path / "labels" / "a.jsonl",
        tmp_path / "labels" / "b.jsonl",
    ]
    assert label_target(tmp_path) == tmp_path / "labels" / "a.jsonl"
    # a glob that names no file yet gets a new file that it names
    assert label_target(tmp_path, "other/*.jsonl") == tmp_path / "other" / "labels.jsonl"
    assert label_target(tmp_path, "other/**/*.jsonl") == tmp_path / "other" / "labels.jsonl"
    assert label_target(tmp_path, "*/x-*.jsonl") == tmp_path / "labels" / "labels.jsonl"


def test_judged_verdicts_are_the_judge_kinds_and_any_that_recorded_a_judge() -> None:
    assert {
        "behaviour.expected",
        "privacy.names",
        "nuggets.coverage",
        "compare.equivalent",
        "rubric.judge",
    } == JUDGED_KINDS
    assert is_judged(Verdict(kind="behaviour.expected", status="error"))
    assert not is_judged(Verdict(kind="reply.contains", status="fail"))
    assert is_judged(Verdict(kind="custom.asks", status="pass", prompt_sha="p" * 64))


def _project(**keys: object) -> dict[str, object]:
    return {
        "name": "p",
        "system": {"base_url": "http://127.0.0.1:9/"},
        "suites": [{"name": "kern", "files": "suites/*.yaml"}],
        **keys,
    }


def test_the_labels_key_is_a_glob_inside_the_project() -> None:
    from soev_pipeline.core.project import Project

    assert Project.model_validate(_project()).labels is None
    assert Project.model_validate(_project(labels="reviews/*.jsonl")).labels == "reviews/*.jsonl"
    for outside in ("/etc/*.jsonl", "../other/*.jsonl", "C:\\labels\\*.jsonl", ""):
        with pytest.raises(ValidationError):
            Project.model_validate(_project(labels=outside))


def test_judge_min_kappa_is_a_kappa() -> None:
    from soev_pipeline.core.project import Project

    judge = {"base_url": "http://127.0.0.1:9/v1/", "model": "m"}
    found = Project.model_validate(_project(judge={**judge, "min_kappa": 0.7}))
    assert found.judge is not None and found.judge.min_kappa == 0.7
    with pytest.raises(ValidationError):
        Project.model_validate(_project(judge={**judge, "min_kappa": 1.5}))
