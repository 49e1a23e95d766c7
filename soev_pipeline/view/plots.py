"""Plots of pass rates with their 95 % intervals, as SVG images.

Each plot is an SVG document inside a `data:` URI, shown with `<img>`: an image runs no
script and loads nothing, so the pages' Content-Security-Policy stays strict (no inline
styles, no scripts) and the HTML report needs no file beside it. The trend over runs is
drawn by matplotlib's object API (`Figure`), never `pyplot`: no global state, safe in the
server's worker threads.

The forest of a run's groups (`forest`) is written as SVG here instead: it is a row of
bands and dots per group on a 0–100 % axis, and it is on every report a run writes after
its last attempt. Drawn by matplotlib it cost 0.4 s of CPU the first time in a process
(importing matplotlib, loading its fonts) and 0.05–0.1 s each time after; written here,
about a millisecond.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

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


FOREST_WIDTH = 640
FOREST_ROW = 30
FOREST_TOP = 34
FOREST_BOTTOM = 30
LABEL_EM = 0.56
"""The width of an average character of the labels, in em: sizes the left margin."""


def _number(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def forest(title: str, rows: Sequence[tuple[str, Point]]) -> Plot:
    """The pass rates of a run's groups side by side, each with its 95 % interval: a band
    from the low to the high end, a dot at the rate, the group's name at its left, a grid
    at every 20 % of the axis from 0 to 100 %."""
    size = 11
    longest = max((len(name) for name, _point in rows), default=0)
    left = min(12 + math.ceil(longest * size * LABEL_EM), FOREST_WIDTH // 2)
    right = FOREST_WIDTH - 16
    height = FOREST_TOP + FOREST_ROW * len(rows) + FOREST_BOTTOM
    bottom = height - FOREST_BOTTOM

    def x(percent: float) -> str:
        return _number(left + (right - left) * percent / 100)

    parts = [
        f'<text x="4" y="18" font-size="13" fill="{INK}">{escape(title)}</text>',
    ]
    for tick in range(0, 101, 20):
        parts.append(
            f'<line x1="{x(tick)}" y1="{FOREST_TOP - 6}" x2="{x(tick)}" y2="{bottom}" '
            f'stroke="{GRID}" stroke-width="0.8"/>'
            f'<text x="{x(tick)}" y="{bottom + 16}" font-size="{size}" fill="{INK}" '
            f'text-anchor="middle">{tick} %</text>'
        )
    parts.append(
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{INK}" '
        'stroke-width="0.8"/>'
    )
    for row, (name, point) in enumerate(rows):
        y = _number(FOREST_TOP + FOREST_ROW * row + FOREST_ROW / 2)
        parts.append(
            f'<text x="{left - 8}" y="{y}" dy="0.35em" font-size="{size}" fill="{INK}" '
            f'text-anchor="end">{escape(name)}</text>'
        )
        if point.rate is None:
            continue
        if point.low is not None and point.high is not None:
            parts.append(
                f'<line x1="{x(_percent(point.low))}" y1="{y}" x2="{x(_percent(point.high))}" '
                f'y2="{y}" stroke="{BAND}" stroke-width="7"/>'
            )
        parts.append(f'<circle cx="{x(_percent(point.rate))}" cy="{y}" r="4.5" fill="{LINE}"/>')
    svg = (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{FOREST_WIDTH}" height="{height}" '
        f'viewBox="0 0 {FOREST_WIDTH} {height}" font-family="DejaVu Sans, Arial, sans-serif">'
        f"<title>{escape(title)}</title>{''.join(parts)}</svg>\n"
    )
    described = "; ".join(
        f"{name} {decimal(_percent(point.rate), 1)} %"
        for name, point in rows
        if point.rate is not None
    )
    uri = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return Plot(title, uri, f"{title}: {described}")
