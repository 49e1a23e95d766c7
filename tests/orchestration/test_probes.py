"""The judge probed in Dagster (docs/dagster.md): the asset `judge_probes` downstream of
`judge_prompts`, its check `judge_resists_probes`, and staleness after a prompt edit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.definitions.data_version import StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver

from soev_pipeline.calibration import LabelLine
from soev_pipeline.orchestration import definitions_for
from soev_pipeline.probes import read_probing
from tests.support.chat_completions import FakeChatCompletions, labels_of, verdict
from tests.support.project import edit_yaml, write_project
from tests.support.server import Response

pytestmark = pytest.mark.usefixtures("no_instance_left_current")

PROBES = dg.AssetKey("judge_probes")
PROMPTS = dg.AssetKey("judge_prompts")


def first_label(body: dict[str, Any]) -> Response:
    """Supports a nugget of six weeks; otherwise the first label: a position bias."""
    labels = labels_of(body)
    reply = str(json.loads(body["messages"][1]["content"]).get("reply", ""))
    if "support" in labels:
        return verdict("support" if "zes weken" in reply else "not_support")
    return verdict(labels[0])


@pytest.fixture
def judge() -> Iterator[FakeChatCompletions]:
    with FakeChatCompletions(first_label) as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, judge: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The full project with its judge, and three labelled replies of kern-001's rubric."""
    for name in ("SOEV_API_KEY", "JUDGE_API_KEY", "TENANT_ID"):
        monkeypatch.setenv(name, "x")
    path = write_project(tmp_path / "p", "http://127.0.0.1:9/", judge.url)
    lines = [
        LabelLine.of(
            case_id="kern-001", reply=reply, kind="rubric.judge", nth=0, passed=True, by="jurist"
        ).to_line()
        for reply in ("Zes weken.", "Het zijn zes weken.", "De termijn is zes weken.")
    ]
    (path.parent / "labels").mkdir()
    (path.parent / "labels" / "labels.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    return path


def _materialize(defs: dg.Definitions, instance: dg.DagsterInstance, *keys: dg.AssetKey) -> Any:
    return dg.materialize(
        list(defs.assets or []), instance=instance, resources=defs.resources, selection=list(keys)
    )


def test_the_probes_sit_downstream_of_the_prompts(project: Path) -> None:
    defs = definitions_for(project)
    graph = defs.resolve_asset_graph()
    assert graph.get(PROBES).parent_keys == {PROMPTS}
    assert [check.name for check in graph.get(PROBES).check_keys] == ["judge_resists_probes"]
    job = defs.resolve_job_def("check_prompts")
    assert PROBES in set(job.asset_layer.executable_asset_keys)


@pytest.mark.e2e
def test_materialize_probes_the_judge_and_a_prompt_edit_makes_it_stale(
    project: Path, judge: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOEV_VIEW_URL", "http://127.0.0.1:8766/")
    defs = definitions_for(project)
    with dg.instance_for_test() as instance:
        result = _materialize(defs, instance, PROMPTS, PROBES)
        assert result.success
        (probed,) = result.asset_materializations_for_node("probe_judge")
        assert probed.metadata["flip_rate/rubric.judge/option_order"].value == 1.0
        assert probed.metadata["flip_rate/rubric.judge/format"].value == 0.0
        asked = probed.metadata["judge_calls"].value
        assert asked == judge.calls > 0
        assert probed.metadata["viewer"].value == "http://127.0.0.1:8766/probes"
        saved = read_probing(Path(str(probed.metadata["probing"].value)))
        assert saved is not None and saved.project == "wetwijzer"
        assert {t.probe for t in saved.trials if t.direction is not None} == {"option_order"}
        (check,) = result.get_asset_check_evaluations()
        assert check.check_name == "judge_resists_probes"
        assert check.severity == dg.AssetCheckSeverity.WARN
        assert not check.passed
        assert "rubric.judge: option_order flips" in str(check.description)

        again = _materialize(defs, instance, PROBES)
        assert again.success and judge.calls == asked  # the judge cache answers
        resolver = get_stale_status_resolver(instance, list(defs.assets or []))
        assert resolver.get_status(PROBES) == StaleStatus.FRESH

        (project.parent / "rubrics" / "termijn.md").write_text("Is het goed?\n", "utf-8")
        edited = definitions_for(project)  # a run's process loads the project anew
        assert _materialize(edited, instance, PROMPTS).success
        resolver = get_stale_status_resolver(instance, list(defs.assets or []))
        assert resolver.get_status(PROBES) == StaleStatus.STALE


@pytest.mark.e2e
def test_a_maximum_flip_rate_in_the_project_makes_the_check_an_error(project: Path) -> None:
    edit_yaml(project, lambda data: data.update(probes={"max_flip": 0.1}))
    defs = definitions_for(project)
    with dg.instance_for_test() as instance:
        (check,) = _materialize(defs, instance, PROBES).get_asset_check_evaluations()
        assert check.severity == dg.AssetCheckSeverity.ERROR and not check.passed
        assert check.metadata["max_flip"].value == 0.1
