"""The columns of the analysis tables: one definition for the data frames, the Parquet files,
the Dagster table schema and docs/analysis.md (a test compares the page with it).

Each column has a type of a small vocabulary, which says both its pandas dtype and its
Arrow type, so that a table keeps its types from a frame to a Parquet file and back:

| type | pandas | Arrow |
| --- | --- | --- |
| `string` | `str` (missing: NaN) | `string` |
| `category` | `category` | `dictionary<int32, string>` |
| `int` | `int64` | `int64` |
| `Int` | `Int64` (missing: `<NA>`) | `int64` |
| `float` | `float64` (missing: NaN) | `double` |
| `bool` | `bool` | `bool` |
| `datetime` | `datetime64[us, UTC]` (missing: NaT) | `timestamp[us, tz=UTC]` |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ColumnType = Literal["string", "category", "int", "Int", "float", "bool", "datetime"]

PANDAS_DTYPES: dict[ColumnType, str] = {
    "string": "str",
    "category": "category",
    "int": "int64",
    "Int": "Int64",
    "float": "float64",
    "bool": "bool",
    "datetime": "datetime64[us, UTC]",
}


@dataclass(frozen=True)
class Column:
    """One column of a table: its name, its type and what it holds."""

    name: str
    type: ColumnType
    about: str

    @property
    def dtype(self) -> str:
        """The pandas dtype of the column, as `str(frame[name].dtype)` shows it."""
        return PANDAS_DTYPES[self.type]


def _columns(*rows: tuple[str, ColumnType, str]) -> tuple[Column, ...]:
    return tuple(Column(*row) for row in rows)


_RUN = _columns(
    ("run_id", "string", "the run"),
    ("run_created_at", "datetime", "when the run started (its manifest's `created_at`)"),
    ("scoring", "int", "the number of the scoring (1 for the first, 2 after a rescore, ...)"),
)
_CASE = _columns(
    ("case_id", "string", "the dev case"),
    ("suite", "category", "its suite"),
    ("split", "category", "its split: always `dev`, the test split is sealed"),
)
_ATTEMPT = (*_CASE, Column("attempt", "int", "the attempt's number, from 0 to k - 1"))

RUNS = _columns(
    ("run_id", "string", "the run"),
    ("project", "string", "the name of its project"),
    ("created_at", "datetime", "when the run started"),
    ("suites", "string", "the suites it selected, joined by `,`"),
    ("split", "category", "the split it selected; missing when both ran"),
    ("k", "int", "attempts per case"),
    ("scoring", "int", "the number of the scoring"),
    ("scored_at", "datetime", "when the scoring was made"),
    ("prompts_version", "string", "a short hash over the prompt and rubric hashes it graded with"),
    ("offline", "bool", "whether the scoring used the judge cache only"),
    ("cases", "int", "cases graded, of both splits"),
    ("dev_cases", "int", "dev cases graded"),
    ("test_cases", "int", "test cases graded (a count: the test split is sealed)"),
    ("attempts", "int", "attempts, those that did not run included"),
    ("passed_attempts", "int", "attempts that passed"),
    ("unrun_attempts", "int", "attempts that did not run (they count as failed)"),
    ("expected_attempts", "int", "attempts the run planned: its cases times k"),
    ("pass_rate", "float", "the mean of the case pass rates, both splits"),
    ("pass_rate_ci95_low", "float", "the low end of its 95 % interval"),
    ("pass_rate_ci95_high", "float", "the high end of its 95 % interval"),
    ("mean_score", "float", "the mean of the case mean scores"),
    ("pass_at_k", "float", "the share of cases with an attempt that passed"),
    ("pass_all_k", "float", "the share of cases whose every attempt passed"),
    ("dev_pass_rate", "float", "the pass rate of the dev split"),
    ("inconclusive", "bool", "more than 5 % of the planned attempts did not run"),
    ("verdicts", "int", "verdicts of the scoring, of both splits"),
    ("failed_verdicts", "int", "verdicts with the status `fail`, of both splits"),
    ("error_verdicts", "int", "verdicts with the status `error`, of both splits"),
)

CASES = _columns(
    *((c.name, c.type, c.about) for c in (*_RUN, *_CASE)),
    ("attempts", "int", "its attempts, those that did not run included"),
    ("passed_attempts", "int", "its attempts that passed"),
    ("unrun_attempts", "int", "its attempts that did not run"),
    ("pass_rate", "float", "passed attempts over attempts"),
    ("mean_score", "float", "the mean score of its scored attempts"),
    ("pass_at_k", "bool", "an attempt passed"),
    ("pass_all_k", "bool", "every attempt passed"),
)

ATTEMPTS = _columns(
    *((c.name, c.type, c.about) for c in (*_RUN, *_ATTEMPT)),
    ("prompts_version", "category", "the scoring's prompts version (as in `runs`)"),
    ("passed", "bool", "whether the attempt passed (one that did not run did not)"),
    ("score", "float", "its weighted score; missing when no criterion scored it"),
    ("unrun", "string", "the failure code that kept it from running; missing when it ran"),
    ("failure", "string", "the code of its first failed turn, of any kind; missing without"),
    ("verdicts", "int", "its verdicts"),
    ("failed_verdicts", "int", "its verdicts with the status `fail`"),
    ("error_verdicts", "int", "its verdicts with the status `error`"),
    ("turns", "int", "the user turns of the case's own conversation"),
    ("reply_chars", "Int", "the length of the final reply in characters; missing without one"),
    ("citations", "int", "the units the final reply cited"),
    ("prompt_tokens", "Int", "prompt tokens over every turn (variants too); missing if unknown"),
    ("completion_tokens", "Int", "completion tokens over every turn; missing if unknown"),
    ("duration_s", "float", "seconds the assistant took, over every turn (variants too)"),
    ("refusal_code", "string", "the project message the reply holds; missing without one"),
    ("started_at", "datetime", "when the attempt started"),
    ("finished_at", "datetime", "when it finished"),
)

VERDICTS = _columns(
    *((c.name, c.type, c.about) for c in (*_RUN, *_ATTEMPT)),
    ("prompts_version", "category", "the scoring's prompts version (as in `runs`)"),
    ("criterion", "string", "the criterion: its kind, `kind#n` for the kind's n-th of a case"),
    ("kind", "category", "the criterion's kind"),
    ("status", "category", "`pass`, `fail`, `error` or `not_applicable`"),
    ("weight", "float", "its weight in the attempt's score"),
    ("gate", "bool", "whether failing it fails the attempt"),
    ("detail", "string", "why: the criterion's one line"),
    ("version", "category", "the version of the kind that graded it"),
    (
        "judge_label",
        "category",
        "the label the judge gave, for a kind that asks one (else missing)",
    ),
    ("judge_model", "category", "the judge model that graded it; missing for other kinds"),
    ("prompt_sha", "category", "the SHA-256 of the judge prompt; missing for other kinds"),
)

LABELS = _columns(
    ("case_id", "string", "the dev case whose reply was labelled"),
    ("kind", "category", "the judged criterion's kind"),
    ("nth", "int", "which of the case's criteria of that kind (0 for the first)"),
    ("criterion", "string", "the criterion: its kind, `kind#n` for n > 0"),
    ("passed", "bool", "the person's verdict"),
    ("label", "category", "the person's label, for a kind that has labels"),
    ("by", "string", "who labelled"),
    ("at", "datetime", "when"),
    ("note", "string", "the person's note; missing without one"),
    ("reply", "string", "the labelled reply"),
    ("reply_sha256", "string", "its SHA-256"),
    ("file", "string", "the label file, relative to the project"),
    ("line", "int", "the line of the label file"),
)

TABLES: dict[str, tuple[Column, ...]] = {
    "runs": RUNS,
    "cases": CASES,
    "attempts": ATTEMPTS,
    "verdicts": VERDICTS,
    "labels": LABELS,
}
"""Every table by name: the names of its frame function (`verdicts_frame`) and its file
(`verdicts.parquet`)."""
