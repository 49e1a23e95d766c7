"""Tables of figures as the pages show them: formatted cells, with the columns a model has.

A table is built from the JSON of a model (`GroupFigures`, `PairedGroup`, `StatusCounts`):
the columns this module knows come first, in their order and format; a field it does not
know yet (a figure a later version of the report adds) still shows, as a column of its
own after them. So the pages keep up with the report without a change here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .i18n import N_, decimal, term
from .translate import _

Format = Literal["int", "count", "pct", "pct_ci", "score", "delta_ci", "p", "text", "verdict"]


@dataclass(frozen=True, slots=True)
class Cell:
    """A formatted cell; with `badge`, its text is shown as a badge of class `badge`."""

    text: str
    css: str = ""
    title: str = ""
    badge: str = ""


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    title: str
    format: Format
    hint: str = ""


@dataclass(frozen=True)
class Table:
    headers: tuple[Column, ...]
    rows: tuple[tuple[Cell, tuple[Cell, ...]], ...]
    """Each row: its name cell, then a cell per column."""
    notes: tuple[str, ...] = field(default=())


def pct(value: Any) -> str:
    """A rate as a percentage with one decimal: `76.5 %`; `–` when there is none."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "–"
    return f"{decimal(100 * value, 1)} %"


def interval(ci: Any) -> str:
    """A 95 % interval of a rate: `59.7–87.7`; empty when there is none."""
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return ""
    low, high = ci
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        return ""
    return f"{decimal(100 * low, 1)}–{decimal(100 * high, 1)}"


def points(value: Any) -> str:
    """A change of a rate in percentage points, with its sign: `+5.0`, `−12.5`."""
    if not isinstance(value, int | float):
        return "–"
    shown = decimal(100 * abs(value), 1)
    if shown.strip("0.,") == "":
        return shown
    return ("+" if value > 0 else "−") + shown


def p_value(value: Any) -> str:
    if not isinstance(value, int | float):
        return "–"
    return "< " + decimal(0.001, 3) if value < 0.001 else decimal(value, 3)


def score(value: Any) -> str:
    return decimal(value, 3) if isinstance(value, int | float) else "–"


def plain(value: Any) -> str:
    """Any other JSON value, briefly: numbers as they are, objects as `key: value` pairs."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, float):
        text = f"{value:.4g}"
        return decimal(value, len(text.split(".")[1])) if "." in text and "e" not in text else text
    if isinstance(value, Mapping):
        return ", ".join(f"{key}: {plain(item)}" for key, item in value.items()) or "–"
    if isinstance(value, list | tuple):
        return ", ".join(plain(item) for item in value) or "–"
    return str(value)


VERDICT_CSS = {
    "regressed": "bad",
    "improved": "good",
    "unchanged": "quiet",
    "inconclusive": "warn",
}


def verdict_cell(figures: Mapping[str, Any]) -> Cell:
    """A comparison's verdict as a badge. `unchanged` says only that the change is not
    significant: where some pairs did change, it reads *not significant*, so a large drop
    with a high p-value is never called unchanged."""
    verdict = str(figures.get("verdict"))
    moved = bool(figures.get("improved") or figures.get("regressed"))
    shown = _("not significant") if verdict == "unchanged" and moved else term(verdict)
    return Cell(shown, badge=VERDICT_CSS.get(verdict, "quiet"))


def cell(column: Column, figures: Mapping[str, Any]) -> Cell:
    """The cell of `column` for one row's figures."""
    value = figures.get(column.key)
    match column.format:
        case "int":
            return Cell(plain(value), "num")
        case "count":
            flagged = isinstance(value, int) and value > 0
            return Cell(plain(value), "num" + (f" {column.key}" if flagged else ""))
        case "pct":
            return Cell(pct(value), "num")
        case "pct_ci":
            shown = interval(figures.get("ci95"))
            return Cell(pct(value) + (f" [{shown}]" if shown else ""), "num", _("95 % interval"))
        case "delta_ci":
            bounds = figures.get("ci95")
            low, high = ("", "")
            if isinstance(bounds, list | tuple) and len(bounds) == 2:
                low, high = points(bounds[0]), points(bounds[1])
            shown = points(value) + (
                " [" + _("{low} to {high}").format(low=low, high=high) + "]" if low else ""
            )
            return Cell(shown, "num", _("percentage points, 95 % interval in brackets"))
        case "p":
            return Cell(p_value(value), "num")
        case "score":
            return Cell(score(value), "num")
        case "verdict":
            return verdict_cell(figures)
        case _:
            return Cell(plain(value))


def build_table(
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    columns: Sequence[Column],
    *,
    hidden: frozenset[str] = frozenset(),
    row_css: Mapping[str, str] | None = None,
) -> Table:
    """A table of `rows` (name, figures) with `columns`, then a column for every other
    field a row has that is neither a column nor `hidden`."""
    known = {column.key for column in columns} | hidden
    extra: dict[str, None] = {}
    for _name, figures in rows:
        extra.update((key, None) for key in figures if key not in known)
    headers = (
        *(Column(c.key, _(c.title), c.format, _(c.hint) if c.hint else "") for c in columns),
        *(Column(key, _(key.replace("_", " ")), "text") for key in extra),
    )
    return Table(
        headers=headers,
        rows=tuple(
            (
                Cell(name, (row_css or {}).get(name, "")),
                tuple(cell(column, figures) for column in headers),
            )
            for name, figures in rows
        ),
    )


GROUP_COLUMNS = (
    Column("cases", N_("cases"), "int"),
    Column("attempts", N_("attempts"), "int"),
    Column("pass_rate", N_("pass rate [95 % CI]"), "pct_ci", N_("the mean of the case pass rates")),
    Column("mean_score", N_("mean score"), "score"),
    Column("pass_at_k", N_("pass@k"), "pct", N_("cases that passed at least once")),
    Column("pass_all_k", N_("pass^k"), "pct", N_("cases that passed every attempt")),
    Column(
        "detectable_drop",
        N_("detectable drop"),
        "pct",
        N_("the drop a comparison of the same cases detects with 80 % power"),
    ),
)
GROUP_HIDDEN = frozenset({"ci95", "stderr", "pass_at", "passed_attempts"})

PAIRED_COLUMNS = (
    Column("pairs", N_("pairs"), "int"),
    Column("baseline_pass_rate", N_("baseline"), "pct"),
    Column("pass_rate", N_("this run"), "pct"),
    Column("delta", N_("change [95 % CI]"), "delta_ci", N_("in percentage points")),
    Column("improved", N_("improved"), "int"),
    Column("regressed", N_("regressed"), "int"),
    Column("unchanged", N_("unchanged"), "int"),
    Column("p_value", N_("p"), "p", N_("exact sign test over the changed pairs")),
    Column("p_holm", N_("p (Holm)"), "p", N_("adjusted over the groups of this comparison")),
    Column("verdict", N_("verdict"), "verdict"),
)
PAIRED_HIDDEN = frozenset({"ci95", "stderr"})

OTHER_FIELDS = (
    N_("unrun attempts"),
    N_("worst case delta"),
    N_("worst case p holm"),
    N_("reason"),
)
"""The report's fields that show as columns of their own (`build_table`), by the name a
page gives them, marked so that their names are translated too."""

STATUS_COLUMNS = (
    Column("pass", N_("pass"), "int"),
    Column("fail", N_("fail"), "count"),
    Column("error", N_("error"), "count"),
    Column("not_applicable", N_("n/a"), "int"),
)
