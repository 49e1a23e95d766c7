"""The judge's calibration in Dagster
(docs/judge.md#is-the-judge-right-calibration-against-human-labels): the `labels` and
`judge_calibration` assets, the check `judge_agrees_with_labels`, staleness after a label or
prompt edit, and the prompts watch calibrating again."""

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
from tests.support.chat_completions import FakeChatCompletions, labels_of, verdict
from tests.support.project import PRIVACY_MESSAGE, edit_yaml, write_project
from tests.support.server import Response

pytestmark = pytest.mark.usefixtures("no_instance_left_current")

LABELS = dg.AssetKey("labels")
CALIBRATION = dg.AssetKey("judge_calibration")
PROMPTS = dg.AssetKey("judge_prompts")


def rules(body: dict[str, Any]) -> Response:
    """Refuses what says `kan geen`; supports nothing; the first label of anything else."""
    labels = labels_of(body)
    reply = str(json.loads(body["messages"][1]["content"]).get("reply", ""))
    if "refuse" in labels:
        return verdict("refuse" if "kan geen" in reply else "answer")
    return verdict("not_support" if "support" in labels else labels[0])


@pytest.fixture
def judge() -> Iterator[FakeChatCompletions]:
    with FakeChatCompletions(rules) as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, judge: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The full project (tests/support/project.py) with its judge, and four labels of
    priv-001's behaviour."""
    for name in ("SOEV_API_KEY", "JUDGE_API_KEY", "TENANT_ID"):
        monkeypatch.setenv(name, "x")
    path = write_project(tmp_path / "p", "http://127.0.0.1:9/", judge.url)
    write_labels(path, [(PRIVACY_MESSAGE, True), ("Jan woont in Utrecht.", False)])
    return path


def write_labels(project: Path, items: list[tuple[str, bool]]) -> None:
    lines = [
        LabelLine.of(
            case_id="priv-001",
            reply=reply,
            kind="behaviour.expected",
            nth=0,
            passed=passed,
            by="jurist",
        ).to_line()
        for reply, passed in items
    ]
    folder = project.parent / "labels"
    folder.mkdir(exist_ok=True)
    (folder / "labels.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _materialize(defs: dg.Definitions, instance: dg.DagsterInstance, *keys: dg.AssetKey) -> Any:
    return dg.materialize(
        list(defs.assets or []),
        instance=instance,
        resources=defs.resources,
        selection=list(keys),
    )


def test_calibration_sits_downstream_of_the_prompts_and_the_labels(project: Path) -> None:
    defs = definitions_for(project)
    graph = defs.resolve_asset_graph()
    assert graph.get(CALIBRATION).parent_keys == {PROMPTS, LABELS}
    assert [check.name for check in graph.get(CALIBRATION).check_keys] == [
        "judge_agrees_with_labels"
    ]
    job = defs.resolve_job_def("check_prompts")
    assert {CALIBRATION, LABELS, PROMPTS} <= set(job.asset_layer.executable_asset_keys)


@pytest.mark.e2e
def test_materialize_calibrates_and_checks_the_judge(
    project: Path, judge: FakeChatCompletions
) -> None:
    defs = definitions_for(project)
    with dg.instance_for_test() as instance:
        result = _materialize(defs, instance, PROMPTS, LABELS, CALIBRATION)
        assert result.success
        labels = result.asset_materializations_for_node("read_labels")[0].metadata
        assert labels["labels_read"].value == 2 and labels["left_out"].value == 0
        (calibrated,) = result.asset_materializations_for_node("calibrate_judge")
        assert calibrated.metadata["kappa/behaviour.expected"].value == 1.0
        assert calibrated.metadata["items"].value == 2
        (check,) = result.get_asset_check_evaluations()
        assert check.check_name == "judge_agrees_with_labels"
        assert check.severity == dg.AssetCheckSeverity.WARN
        # κ 1 on two items proves nothing: the check asks for 20, as calibrate --min-kappa
        assert not check.passed and check.metadata["min_items"].value == 20
        assert "behaviour.expected: 2 items, fewer than 20" in str(check.description)
        asked = judge.calls
        assert asked == 2

        again = _materialize(defs, instance, CALIBRATION)
        assert again.success and judge.calls == asked  # the judge cache answers

        write_labels(
            project,
            [(f"{PRIVACY_MESSAGE} ({n})", True) for n in range(10)]
            + [(f"Jan woont in Utrecht, huisnummer {n}.", False) for n in range(10)],
        )
        enough = _materialize(defs, instance, LABELS, CALIBRATION)
        (check,) = enough.get_asset_check_evaluations()
        assert check.passed, check.description
        assert "at least 0.6, on 20 items or more" in str(check.description)


@pytest.mark.e2e
def test_a_label_edit_makes_the_calibration_stale_and_the_watch_calibrates_again(
    project: Path,
) -> None:
    defs = definitions_for(project)
    watch = defs.resolve_sensor_def("prompts_watch")
    with dg.instance_for_test() as instance:
        repository = defs.get_repository_def()  # within the instance: Dagster reads its state
        assert defs.resolve_job_def("check_prompts").execute_in_process(instance=instance).success
        for suite in defs.resolve_assets_def("suites").partitions_def.get_partition_keys():  # type: ignore[union-attr]
            load = defs.resolve_job_def("load_suites")
            assert load.execute_in_process(instance=instance, partition_key=suite).success
        with dg.build_sensor_context(
            instance=instance, repository_def=repository, resources=defs.resources
        ) as context:
            assert not watch.evaluate_tick(context).run_requests
        fresh = get_stale_status_resolver(instance, list(defs.assets or []))
        assert fresh.get_status(CALIBRATION) == StaleStatus.FRESH

        # the judge now disagrees with a person on the refusal: κ falls below 0.6
        write_labels(project, [(PRIVACY_MESSAGE, True), ("Nee.", True), ("Ja.", False)])
        with dg.build_sensor_context(
            instance=instance, repository_def=repository, resources=defs.resources
        ) as context:
            (request,) = watch.evaluate_tick(context).run_requests or []
        assert request.job_name == "check_prompts"
        assert request.run_key is not None and request.run_key.startswith("prompts-")

        assert _materialize(defs, instance, LABELS).success
        stale = get_stale_status_resolver(instance, list(defs.assets or []))
        assert stale.get_status(CALIBRATION) == StaleStatus.STALE
        calibrated = _materialize(defs, instance, CALIBRATION)
        (check,) = calibrated.get_asset_check_evaluations()
        assert not check.passed and "behaviour.expected" in (check.description or "")
        with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
            assert not watch.evaluate_tick(context).run_requests


@pytest.mark.e2e
def test_a_prompt_edit_makes_the_calibration_stale_until_it_is_measured_again(
    project: Path,
) -> None:
    """Without a reload: the definitions the UI holds show it stale once the edited prompts
    are recorded, and fresh once the judge is measured with them."""
    rubric = project.parent / "rubrics" / "termijn.md"
    shown = definitions_for(project)
    with dg.instance_for_test() as instance:
        assert _materialize(shown, instance, PROMPTS, LABELS, CALIBRATION).success
        rubric.write_text("Noemt het antwoord de termijn?\n", encoding="utf-8")
        changed = definitions_for(project)
        assert _materialize(changed, instance, PROMPTS).success
        resolver = get_stale_status_resolver(instance, list(shown.assets or []))
        assert resolver.get_status(CALIBRATION) == StaleStatus.STALE
        causes = resolver.get_stale_root_causes(CALIBRATION)
        assert any("new data version" in cause.reason for cause in causes)
        assert _materialize(changed, instance, CALIBRATION).success
        resolver = get_stale_status_resolver(instance, list(shown.assets or []))
        assert resolver.get_status(CALIBRATION) == StaleStatus.FRESH


@pytest.mark.e2e
def test_min_kappa_in_the_project_makes_the_check_an_error(project: Path) -> None:
    def strict(data: dict[str, Any]) -> None:
        data["judge"]["min_kappa"] = 0.99

    edit_yaml(project, strict)
    write_labels(project, [(PRIVACY_MESSAGE, True), ("Nee.", True), ("Ja.", False)])
    defs = definitions_for(project)
    with dg.instance_for_test() as instance:
        result = _materialize(defs, instance, CALIBRATION)
        (check,) = result.get_asset_check_evaluations()
        assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
        assert check.metadata["min_kappa"].value == 0.99


@pytest.mark.e2e
def test_without_labels_the_judge_is_not_asked_and_the_check_warns(
    project: Path, judge: FakeChatCompletions
) -> None:
    (project.parent / "labels" / "labels.jsonl").unlink()
    defs = definitions_for(project)
    with dg.instance_for_test() as instance:
        result = _materialize(defs, instance, CALIBRATION)
        (check,) = result.get_asset_check_evaluations()
        assert not check.passed and "not measured" in (check.description or "")
        assert judge.calls == 0
