"""`soev-evals run` of the full project, read from the shared baseline: the Dagster assets
(docs/dagster.md), the archive (docs/runs.md#the-archive), and how the system under test was
spoken to (docs/systems.md#the-soev-thread-api)."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from soev_pipeline.judges import load_prompts, prompt_shas
from tests.conformance.conftest import ENVIRONMENT, Baseline
from tests.support.project import CITED, RUBRIC, SECRET, TEST_IDS

pytestmark = pytest.mark.e2e

ALL_CASES = {"kern-001", "kern-002", "kern-003", "kern-t01", "priv-001", "priv-t01"}
HEX64 = re.compile(r"^[0-9a-f]{64}$")
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


def evidence(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "evidence.jsonl").read_text().splitlines()]


def utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    offset = moment.utcoffset()
    assert offset is not None and offset.total_seconds() == 0
    return moment


def test_run_and_rescore_materialize_the_partitioned_assets_of_section_1(
    baseline: Baseline, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(baseline.home))

    def partitions(key: str) -> list[str]:
        with dg.DagsterInstance.get() as instance:
            records = instance.fetch_materializations(dg.AssetKey(key), limit=100).records
        return sorted(record.partition_key or "" for record in records)

    assert partitions("evidence") == ["b0", "b1"]
    assert partitions("verdicts") == ["b0", "b1", "b1"]  # the rescore re-materialized them
    assert partitions("report") == ["b0", "b1", "b1"]
    assert {"kern", "privacy"} <= set(partitions("suites"))
    assert partitions("judge_prompts")


def test_no_test_case_reaches_the_dagster_instance(baseline: Baseline) -> None:
    """What the UI shows comes from the instance: its event log holds aggregates only."""
    assert any(baseline.home.iterdir())
    for path in baseline.home.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            assert SECRET.encode() not in content, path
            for case_id in TEST_IDS:
                assert case_id.encode() not in content, path


def test_the_manifest_records_what_section_7_lists(baseline: Baseline) -> None:
    data = json.loads((baseline.run / "manifest.json").read_text())
    assert data["run_id"] == "b1"
    utc(data["created_at"])
    assert data["project"] == "wetwijzer"
    assert sorted(data["suites"]) == ["kern", "privacy"]
    assert data["split"] is None and data["k"] == 2
    assert set(data["cases"]) == ALL_CASES
    assert all(HEX64.match(value) for value in data["cases"].values())
    shas = prompt_shas(load_prompts())
    assert {task: data["prompts"][task] for task in shas} == shas
    assert hashlib.sha256(RUBRIC.encode()).hexdigest() in data["prompts"].values()
    assert data["runtime"] == "builtin"
    assert data["version"] == version("soev-pipeline")


def test_the_evidence_has_one_line_per_attempt_with_the_fields_of_section_7(
    baseline: Baseline,
) -> None:
    lines = evidence(baseline.run)
    assert sorted((line["case_id"], line["attempt"]) for line in lines) == sorted(
        (case, attempt) for case in ALL_CASES for attempt in (0, 1)
    )
    for line in lines:
        assert set(line) == EVIDENCE_KEYS
        assert utc(line["started_at"]) <= utc(line["finished_at"])
        assert all(set(turn) == TURN_KEYS for turn in line["turns"])
        assert all(set(variant) == VARIANT_KEYS for variant in line["variants"])
    by_id = {line["case_id"]: line for line in lines if line["attempt"] == 0}
    kern1 = by_id["kern-001"]
    assert (kern1["suite"], kern1["split"], kern1["refusal_code"]) == ("kern", "dev", None)
    assert kern1["citations"] == [CITED]  # the `ref` of the cited tool_output element
    assert kern1["turns"][0]["usage"] == {"prompt_tokens": 10, "completion_tokens": 20}
    assert kern1["turns"][0]["failure"] is None and kern1["turns"][0]["duration_s"] >= 0
    assert [v["id"] for v in kern1["variants"]] == ["kern-001-a"]
    assert kern1["variants"][0]["citations"] == [CITED]
    kern2 = by_id["kern-002"]
    assert [turn["input"] for turn in kern2["turns"]] == [
        "Ik wil iets vragen over een besluit.",
        "Hoe lang heb ik voor bezwaar?",
    ]
    assert kern2["reply"] == kern2["turns"][-1]["reply"]
    assert by_id["kern-t01"]["split"] == "test"
    assert by_id["priv-001"]["refusal_code"] == "privacy"
    assert by_id["kern-003"]["turns"][-1]["failure"]["code"] == "service_unavailable"


def test_the_thread_api_is_spoken_as_section_6_says(baseline: Baseline) -> None:
    """The system refuses a request without the bearer token, so every one of them had it."""
    system = baseline.system
    opens = system.routed("open")
    # b0 (k=1) and b1 (k=2) of: kern-001 and its variant, kern-002, kern-003, kern-t01,
    # priv-001, priv-t01
    assert len(opens) == 21
    for request in system.requests:
        assert request.headers["authorization"] == f"Bearer {ENVIRONMENT['SOEV_API_KEY']}"
        assert request.headers["x-tenant"] == ENVIRONMENT["TENANT_ID"]
    for request in opens:
        body = request.json()
        assert request.headers["accept"] == "text/event-stream"
        assert (body["agent"], body["model"]) == ("wetwijzer", "wetwijzer-large")
        assert body["input"]["knowledge"] == ["wetwijzer"]  # the SETUP of the hooks
    follow_ups = system.routed("input")
    assert len(follow_ups) == 3
    assert follow_ups[0].json() == {"input": {"text": "Hoe lang heb ik voor bezwaar?"}}
    assert sorted(system.deleted) == sorted(f"thread-{n}" for n in range(1, 22))
    assert system.threads == {}


def test_a_rescore_asks_the_system_nothing_and_keeps_the_earlier_scoring(
    baseline: Baseline,
) -> None:
    assert len(baseline.system.requests) == baseline.asked[0]
    assert sorted(path.name for path in (baseline.run / "scorings").iterdir()) == ["0001", "0002"]
    baseline.rescored.assert_no_test_content()
