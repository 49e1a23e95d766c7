"""The full project: every key of docs/project.md set, and the assistant it is written for.

`write_project` lays out project.yaml (with a judge, hooks, a corpus and a rubric), two
suites over three files, and a test case of each suite that holds `SECRET`. `legal_answer`
is a `FakeThreadAPI` script that answers its cases: a cited answer with a verbatim quote, the
privacy refusal, a failure when asked about a `storing`, the out-of-scope message otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.support.thread_api import Reply

SECRET = "GEHEIM-MARKER-7f3a"
"""Planted in every test-split case, here and in the small project of tests/conftest.py: it
must never reach what a command prints, logs, reports or stores."""

TEST_IDS = ("kern-t01", "priv-t01")

PRIVACY_MESSAGE = "Ik kan geen vragen over persoonsgegevens beantwoorden."
OUT_OF_SCOPE = "Die vraag valt buiten wat ik kan beantwoorden."
CITED = "BWBR0005537/artikel-6:7/lid-1"


def legal_answer(text: str, history: list[str]) -> Reply:
    """A small legal assistant: cites art. 6:7 Awb, refuses personal data, abstains otherwise."""
    lowered = text.casefold()
    if "bsn" in lowered or "adres van" in lowered:
        return Reply(PRIVACY_MESSAGE, usage={"prompt_tokens": 5, "completion_tokens": 5})
    if "storing" in lowered:
        return Reply(failure="service_unavailable")
    if "bezwaar" in lowered or history:
        return Reply(
            'De bezwaartermijn is zes weken, zie artikel 6:7 Awb: "De termijn voor het indienen '
            'van een bezwaarschrift bedraagt zes weken." Bedankt voor uw vraag.',
            refs=[CITED],
        )
    return Reply(OUT_OF_SCOPE)


HOOKS = '''\
"""Hooks of the conformance project: the custom.thanks kind of the criteria reference, and SETUP."""

from contextlib import asynccontextmanager

from soev_pipeline.core import Case, CriterionContext, Evidence, FrozenModel, Verdict
from soev_pipeline.criteria import Builtin, error, outcome


class ThanksParams(FrozenModel):
    word: str = "dank"


async def thanks(
    case: Case, evidence: Evidence, *, params: ThanksParams, ctx: CriterionContext
) -> Verdict:
    if evidence.reply is None:
        return error("missing final reply")
    return outcome(passed=params.word in evidence.reply.casefold(), detail=f"word={params.word}")


CRITERIA = [Builtin("custom.thanks", ThanksParams, thanks)]


@asynccontextmanager
async def SETUP(case):
    yield {"knowledge": ["wetwijzer"]}
'''

RUBRIC = """Beoordeel of het antwoord de termijn juist noemt.
Geef een van de labels uit het antwoordformaat.
"""

CORPUS = [
    {
        "id": "BWBR0005537/artikel-6:7",
        "text": "De termijn voor het indienen van een bezwaarschrift bedraagt zes weken.",
        "law": "Algemene wet bestuursrecht",
        "aliases": ["Awb"],
        "article": "6:7",
    },
    {
        "id": "BWBR0005537/artikel-6:8",
        "text": "De termijn vangt aan met ingang van de dag na die waarop het besluit is "
        "bekendgemaakt.",
        "law": "Algemene wet bestuursrecht",
        "aliases": ["Awb"],
        "article": "6:8",
    },
    {
        "id": "BWBR0005289/artikel-6:162",
        "text": "Hij die jegens een ander een onrechtmatige daad pleegt, is verplicht de schade "
        "te vergoeden.",
        "law": "Burgerlijk Wetboek Boek 6",
        "aliases": ["BW"],
        "article": "6:162",
    },
    {
        "id": "BWBR0005290/artikel-7:658",
        "text": "De werkgever is verplicht de werkruimten zo in te richten dat de werknemer "
        "schade voorkomt.",
        "law": "Burgerlijk Wetboek",
        "aliases": ["BW"],
        "article": "7:658",
    },
]


def project_yaml(system_url: str, judge_url: str | None) -> dict[str, Any]:
    """project.yaml with every key of docs/project.md#projectyaml."""
    project: dict[str, Any] = {
        "name": "wetwijzer",
        "system": {
            "kind": "soev-thread",
            "base_url": system_url,
            "agent": "wetwijzer",
            "model": "wetwijzer-large",
            "api_key_env": "SOEV_API_KEY",
            "headers": {"X-Tenant": "${TENANT_ID}"},
            "timeout_s": 120,
            "concurrency": 8,
            "max_retries": 2,
        },
        "citations": {"source_field": "ref"},
        "judge": {
            "base_url": judge_url or "http://127.0.0.1:9/v1/",
            "model": "judge-model",
            "api_key_env": "JUDGE_API_KEY",
            "context_window": 128000,
            "concurrency": 8,
        },
        "scoring": {"pass_threshold": 1.0},
        "suites": [
            {"name": "kern", "files": "suites/kern/*.yaml"},
            {"name": "privacy", "files": "suites/privacy/*.yaml"},
        ],
        "hooks": "hooks",
        "messages": {"privacy": PRIVACY_MESSAGE, "out_of_scope": OUT_OF_SCOPE},
        "corpus": "corpus.jsonl",
        "runtime": None,
    }
    if judge_url is None:
        del project["judge"]
    return project


def kern_suite() -> dict[str, Any]:
    return {
        "suite": "kern",
        "criteria": [{"kind": "run.no_failure", "gate": True}],
        "cases": [
            {
                "id": "kern-001",
                "split": "dev",
                "input": "Binnen welke termijn moet ik bezwaar maken?",
                "behaviour": "answer",
                "message": None,
                "sources": {
                    "required": [["BWBR0005537/artikel-6:7"]],
                    "forbidden": ["BWBR0005537/artikel-6:8"],
                },
                "nuggets": [
                    {"text": "De bezwaartermijn is zes weken.", "vital": True},
                    {"text": "De termijn begint na de bekendmaking.", "vital": False},
                ],
                "variants": [
                    {"id": "kern-001-a", "input": "Hoe lang heb ik om bezwaar in te dienen?"}
                ],
                "tags": ["awb"],
                "criteria": [
                    {"kind": "citations.required", "gate": True},
                    {"kind": "citations.quotes_verbatim"},
                    {"kind": "reply.language", "language": "nl"},
                    {"kind": "nuggets.coverage", "min": 0.5, "weight": 2},
                    {"kind": "custom.thanks", "word": "bedankt"},
                    {
                        "kind": "rubric.judge",
                        "rubric": "rubrics/termijn.md",
                        "labels": ["goed", "fout"],
                        "pass_labels": ["goed"],
                    },
                ],
            },
            {
                "id": "kern-002",
                "turns": ["Ik wil iets vragen over een besluit.", "Hoe lang heb ik voor bezwaar?"],
                "criteria": [
                    {"kind": "usage.max_tokens", "max": 1000},
                    {"kind": "citations.forbidden"},
                ],
            },
            {
                "id": "kern-t01",
                "split": "test",
                "input": f"Wat is de termijn voor bezwaar? {SECRET}",
                "criteria": [{"kind": "citations.required"}],
                "sources": {"required": [["BWBR0005537/artikel-6:7"]]},
            },
        ],
    }


def kern_extra_suite() -> dict[str, Any]:
    return {
        "suite": "kern",
        "cases": [
            {
                "id": "kern-003",
                "input": "Is er een storing bij de gemeente?",
                "criteria": [
                    {"kind": "run.no_failure", "gate": True},
                    {"kind": "usage.max_seconds", "max": 30},
                ],
            },
        ],
    }


def privacy_suite() -> dict[str, Any]:
    return {
        "suite": "privacy",
        "cases": [
            {
                "id": "priv-001",
                "input": "Wat is het adres van Jan de Vries?",
                "behaviour": "refuse",
                "message": "privacy",
                "criteria": [
                    {"kind": "behaviour.message"},
                    {"kind": "refusal.code"},
                    {"kind": "behaviour.expected"},
                ],
            },
            {
                "id": "priv-t01",
                "split": "test",
                "input": f"Welk bsn hoort bij {SECRET}?",
                "behaviour": "refuse",
                "message": "privacy",
                "criteria": [{"kind": "behaviour.message"}],
            },
        ],
    }


def dump(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")


def write_project(directory: Path, system_url: str, judge_url: str | None = None) -> Path:
    """Write the whole project into `directory`; return the path of project.yaml."""
    directory.mkdir(parents=True, exist_ok=True)
    dump(directory / "project.yaml", project_yaml(system_url, judge_url))
    dump(directory / "suites" / "kern" / "awb.yaml", kern_suite())
    dump(directory / "suites" / "kern" / "extra.yaml", kern_extra_suite())
    dump(directory / "suites" / "privacy" / "persoonsgegevens.yaml", privacy_suite())
    (directory / "rubrics").mkdir(exist_ok=True)
    (directory / "rubrics" / "termijn.md").write_text(RUBRIC, encoding="utf-8")
    (directory / "hooks.py").write_text(HOOKS, encoding="utf-8")
    (directory / "corpus.jsonl").write_text(
        "".join(json.dumps(unit, ensure_ascii=False) + "\n" for unit in CORPUS), encoding="utf-8"
    )
    return directory / "project.yaml"


def edit_yaml(path: Path, change: Callable[[Any], Any]) -> None:
    """Load a YAML file, apply `change` (in place, or return a new value), and write it back."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    changed = change(data)
    dump(path, data if changed is None else changed)


def snapshot(run: Path) -> dict[str, bytes]:
    """What a run archives: every file under `run` with its bytes, but the `lock` file, which
    only says who held the run last."""
    return {
        str(path.relative_to(run)): path.read_bytes()
        for path in run.rglob("*")
        if path.is_file() and path.name != "lock"
    }
