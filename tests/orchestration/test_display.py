"""What the UI shows of the config and the metadata: described fields, closed sets as
enums, rounded figures, and which runs publish their report."""

import math
from dataclasses import dataclass
from types import SimpleNamespace

import dagster as dg
import pytest

from soev_pipeline.orchestration import metadata
from soev_pipeline.orchestration.assets import _attempted_in_this_run
from soev_pipeline.orchestration.config import EvaluateConfig, GradeConfig, ReportConfig
from soev_pipeline.orchestration.requests import NewEvaluationConfig
from soev_pipeline.run.results import GroupFigures


@pytest.mark.parametrize("config", [EvaluateConfig, GradeConfig, ReportConfig, NewEvaluationConfig])
def test_every_launchpad_field_is_described(config: type[dg.Config]) -> None:
    fields = config.to_config_schema().as_field().config_type.fields  # type: ignore[attr-defined]
    assert fields
    assert {name: bool(field.description) for name, field in fields.items()} == dict.fromkeys(
        fields, True
    )


def test_split_is_a_closed_set_checked_before_launch() -> None:
    fields = EvaluateConfig.to_config_schema().as_field().config_type.fields  # type: ignore[attr-defined]
    split = fields["split"].config_type
    split = getattr(split, "inner_type", split)
    assert {value.config_value for value in split.enum_values} == {"both", "dev", "test"}

    @dg.op
    def uses(config: EvaluateConfig) -> None: ...

    @dg.job
    def job() -> None:
        uses()

    bad = {"ops": {"uses": {"config": {"split": "devv"}}}}
    with pytest.raises(dg.DagsterInvalidConfigError, match="split"):
        job.execute_in_process(run_config=bad)


def test_figures_are_rounded_for_display_and_missing_ones_are_gaps() -> None:
    assert metadata.rounded(7 / 9) == 0.7778
    assert math.isnan(metadata.rounded(None))
    figures = GroupFigures.model_construct(pass_rate=7 / 9, ci95=(0.45322, 0.93673))  # type: ignore[call-arg]
    shown = metadata.rate("overall", figures)
    assert shown == {
        "pass_rate/overall": 0.7778,
        "pass_rate_ci95_low/overall": 0.4532,
        "pass_rate_ci95_high/overall": 0.9367,
    }


@dataclass
class _Context:
    job_name: str
    selection: set[dg.AssetKey] | None
    asset_key: dg.AssetKey

    @property
    def run(self) -> SimpleNamespace:
        return SimpleNamespace(asset_selection=self.selection)


PLAIN, PREFIXED = dg.AssetKey("report"), dg.AssetKey(["wet", "report"])


@pytest.mark.parametrize(
    ("report", "job", "selection", "published"),
    [
        (PLAIN, "evaluate", None, True),
        (PLAIN, "rescore", None, False),
        (PLAIN, "__ASSET_JOB", {dg.AssetKey("evidence"), dg.AssetKey("report")}, True),
        (PLAIN, "__ASSET_JOB", {dg.AssetKey("verdicts"), dg.AssetKey("report")}, False),
        (PREFIXED, "rescore", None, False),
        (PREFIXED, "__ASSET_JOB", {dg.AssetKey(["wet", "evidence"])}, True),
        (PREFIXED, "__ASSET_JOB", {dg.AssetKey("evidence")}, False),
    ],
)
def test_a_report_is_published_when_its_run_also_made_the_evidence(
    report: dg.AssetKey, job: str, selection: set[dg.AssetKey] | None, published: bool
) -> None:
    context = _Context(job, selection, report)
    assert _attempted_in_this_run(context) is published  # type: ignore[arg-type]
