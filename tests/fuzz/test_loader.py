"""Fuzz: random mutations of a valid project never give a traceback or an unknown exit.

The project is the demo's, copied; each example mutates the bytes of one of its files
(project.yaml, a suite file, the corpus, the hooks module) and loads it the way every
command does, through `soev-evals seal`. The answer must be exit 0, 1 or 2 with at most
one line on stderr, never "internal error".
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from soev_pipeline.cli.main import main

pytestmark = [pytest.mark.e2e, pytest.mark.fuzz]

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
FILES = [
    "project.yaml",
    "suites/kern/awb.yaml",
    "suites/privacy/persoonsgegevens.yaml",
    "corpus.jsonl",
    "hooks.py",
    "sealed-test.yaml",
]
TOKENS = [
    b"&a ",
    b"*a",
    b": ",
    b"- ",
    b"\n",
    b"{",
    b"}",
    b"[",
    b"]",
    b"'",
    b'"',
    b"\xff",
    b"\x00",
    b"kind: ",
    b"id: ",
    b"split: test",
    b"..",
    b"/",
    b"${X}",
    b"<<: *a",
    b"\t",
    b"#",
]


@st.composite
def mutations(draw: st.DrawFn) -> tuple[str, list[tuple[str, int, int, bytes]]]:
    name = draw(st.sampled_from(FILES))
    steps = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["insert", "delete", "replace", "truncate"]),
                st.floats(0, 1),
                st.integers(1, 40),
                st.one_of(st.sampled_from(TOKENS), st.binary(min_size=1, max_size=12)),
            ),
            min_size=1,
            max_size=4,
        )
    )
    return name, [(op, int(at * 10**6), size, data) for op, at, size, data in steps]


def _mutate(data: bytes, steps: list[tuple[str, int, int, bytes]]) -> bytes:
    for op, at, size, piece in steps:
        at = at % (len(data) + 1)
        if op == "insert":
            data = data[:at] + piece + data[at:]
        elif op == "delete":
            data = data[:at] + data[at + size :]
        elif op == "replace":
            data = data[:at] + piece + data[at + len(piece) :]
        else:
            data = data[:at]
    return data


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo"
    shutil.copytree(DEMO, path, ignore=shutil.ignore_patterns("runs", ".soev", "__pycache__"))
    return path


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(mutation=mutations())
def test_a_mutated_project_gives_one_line_and_a_known_exit(
    template: Path,
    tmp_path_factory: pytest.TempPathFactory,
    mutation: tuple,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, steps = mutation
    project = tmp_path_factory.mktemp("mutant") / "p"
    shutil.copytree(template, project)
    target = project / name
    target.write_bytes(_mutate(target.read_bytes(), steps))
    capsys.readouterr()
    status = main(["seal", "--append", "--project", str(project / "project.yaml")])
    err = capsys.readouterr().err
    assert status in (0, 1, 2), err
    assert "internal error" not in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) <= 1, err
