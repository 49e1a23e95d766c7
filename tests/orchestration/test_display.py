"""What the UI shows of the config and the metadata: described fields, closed sets as
enums, rounded figures, plots in the order of their use."""

import math

import dagster as dg
import pytest

from soev_pipeline.orchestration import metadata
from soev_pipeline.orchestration.config import NewEvaluationConfig, RunConfig
from soev_pipeline.run.results import GroupFigures


@pytest.mark.parametrize("config", [RunConfig, NewEvaluationConfig])
def test_every_launchpad_field_is_described(config: type[dg.Config]) -> None:
    fields = config.to_config_schema().as_field().config_type.fields  # type: ignore[attr-defined]
    assert fields
    assert {name: bool(field.description) for name, field in fields.items()} == dict.fromkeys(
        fields, True
    )


def test_split_is_a_closed_set_checked_before_launch() -> None:
    fields = RunConfig.to_config_schema().as_field().config_type.fields  # type: ignore[attr-defined]
    split = fields["split"].config_type
    split = getattr(split, "inner_type", split)
    assert {value.config_value for value in split.enum_values} == {"both", "dev", "test"}

    @dg.op
    def uses(config: RunConfig) -> None: ...

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
    shown = metadata.rate("kern", figures)
    assert shown == {
        "pass_rate/kern": 0.7778,
        "pass_rate_ci95_low/kern": 0.4532,
        "pass_rate_ci95_high/kern": 0.9367,
    }


def test_the_plots_start_with_the_run_pass_rate() -> None:
    """Dagster draws a plot per numeric key in the keys' alphabetical order: the run's pass
    rate comes first, then the groups' rates, then the bounds; the comparison comes last."""
    figures = GroupFigures.model_construct(pass_rate=0.5, ci95=(0.2, 0.8))  # type: ignore[call-arg]
    keys = [
        *metadata.rate("aansprakelijkheid", figures),
        *metadata.rate(None, figures),
        *metadata.rate("split/dev", figures),
        "verdicts/fail",
        "vs_previous/delta",
        "vs_previous/p_value",
    ]
    ordered = sorted(keys)
    assert ordered[:4] == [
        "pass_rate",
        "pass_rate/aansprakelijkheid",
        "pass_rate/split/dev",
        "pass_rate_ci95_high",
    ]
    assert ordered[-2:] == ["vs_previous/delta", "vs_previous/p_value"]
