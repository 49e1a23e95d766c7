"""Plots of pass rates with their 95 % intervals, drawn by matplotlib as SVG images.

Each plot is an SVG document inside a `data:` URI, shown with `<img>`: an image runs no
script and loads nothing, so the pages' Content-Security-Policy stays strict (no inline
styles, no scripts) and the HTML report needs no file beside it. Figures are made with
matplotlib's object API (`Figure`), never `pyplot`: no global state, safe in the server's
worker threads.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from babel.dates import format_datetime

from .i18n import current, decimal
from .translate import _

INK = "#1f2933"
LINE = "#1d5fa8"
BAND = "#9dc0ea"
GRID = "#d8dee4"


@dataclass(frozen=True, slots=True)
class Plot:
    """An image to show: its `data:` URI and the text that says what it shows."""

    title: str
    uri: str
    alt: str


@dataclass(frozen=True, slots=True)
class Point:
    """A pass rate with its interval; None where the run has no such group."""

    rate: float | None
    low: float | None
    high: float | None


def _svg_uri(figure: object) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})  # type: ignore[attr-defined]
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _percent(value: float | None) -> float:
    return math.nan if value is None else 100 * value


def _style(axes: object) -> None:
    from matplotlib.axes import Axes

    assert isinstance(axes, Axes)
    axes.set_ylim(0, 100)
    axes.yaxis.set_major_formatter("{x:.0f} %")
    axes.grid(True, color=GRID, linewidth=0.6)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    axes.tick_params(colors=INK, labelsize=8)


def _run_labels(when: Sequence[datetime], most: int) -> tuple[list[int], list[str]]:
    """Tick positions and labels for runs in order: at most `most`, the last one always."""
    step = max(1, math.ceil(len(when) / most))
    positions = list(range(len(when) - 1, -1, -step))[::-1]
    same_day = len({moment.date() for moment in when}) == 1
    shape = "HH:mm" if same_day else "d MMM\nHH:mm"
    return positions, [
        format_datetime(when[position].astimezone(UTC), shape, tzinfo=UTC, locale=current())
        for position in positions
    ]


def trend(title: str, when: Sequence[datetime], points: Sequence[Point], *, wide: bool) -> Plot:
    """A pass rate over runs, oldest first: a line through the rates, its 95 % interval a
    shaded band. Runs are spaced evenly (a run is a step, whatever time passed between)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12.0, 3.0) if wide else (5.0, 2.4), layout="constrained")
    axes = figure.add_subplot()
    steps = list(range(len(points)))
    rates = [_percent(point.rate) for point in points]
    lows = [_percent(point.low) for point in points]
    highs = [_percent(point.high) for point in points]
    axes.fill_between(steps, lows, highs, color=BAND, alpha=0.55, linewidth=0)
    axes.plot(steps, rates, color=LINE, marker="o", markersize=3.5, linewidth=1.4)
    if len(steps) == 1:
        axes.errorbar(
            steps, rates, yerr=[[rates[0] - lows[0]], [highs[0] - rates[0]]], color=LINE, capsize=4
        )
    axes.set_xlim(-0.5, len(steps) - 0.5)
    positions, labels = _run_labels(when, 10 if wide else 4)
    axes.set_xticks(positions, labels)
    axes.set_xlabel(_("run started (UTC)"), fontsize=8, color=INK)
    axes.set_title(title, fontsize=10, color=INK, loc="left")
    _style(axes)
    shown = [point for point in points if point.rate is not None]
    latest = _("no rate yet")
    if shown and shown[-1].low is not None:
        last = shown[-1]
        latest = _("latest {rate} % (95 % CI {low}–{high} %)").format(
            rate=decimal(_percent(last.rate), 1),
            low=decimal(_percent(last.low), 1),
            high=decimal(_percent(last.high), 1),
        )
    alt = _("{title} over {runs} run(s), with its 95 % interval as a band; {latest}").format(
        title=title, runs=len(points), latest=latest
    )
    return Plot(title, _svg_uri(figure), alt)


def forest(title: str, rows: Sequence[tuple[str, Point]]) -> Plot:
    """The pass rates of a run's groups side by side, each with its 95 % interval."""
    from matplotlib.figure import Figure

    height = 0.9 + 0.32 * len(rows)
    figure = Figure(figsize=(6.4, height), layout="constrained")
    axes = figure.add_subplot()
    names = [name for name, _point in rows]
    positions = list(range(len(rows)))[::-1]
    for position, (_name, point) in zip(positions, rows, strict=True):
        if point.rate is None:
            continue
        rate = _percent(point.rate)
        if point.low is not None and point.high is not None:
            axes.plot(
                [_percent(point.low), _percent(point.high)],
                [position, position],
                color=BAND,
                linewidth=5,
                solid_capstyle="butt",
            )
        axes.plot([rate], [position], "o", color=LINE, markersize=5)
    axes.set_yticks(positions, names, fontsize=8, color=INK)
    axes.set_xlim(0, 100)
    axes.set_ylim(-0.7, len(rows) - 0.3)
    axes.xaxis.set_major_formatter("{x:.0f} %")
    axes.grid(True, axis="x", color=GRID, linewidth=0.6)
    axes.set_axisbelow(True)
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    axes.tick_params(colors=INK, labelsize=8)
    axes.set_title(title, fontsize=10, color=INK, loc="left")
    described = "; ".join(
        f"{name} {decimal(_percent(point.rate), 1)} %"
        for name, point in rows
        if point.rate is not None
    )
    return Plot(title, _svg_uri(figure), f"{title}: {described}")
