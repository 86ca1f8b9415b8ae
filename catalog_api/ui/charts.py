"""Charts as SVG drawn on the server: the shapes of a chart in plot coordinates, which a template
writes out as ``<svg>`` elements (nothing to load, nothing run in the browser, readable without CSS).

Each mark keeps the values it stands for, which the template shows as the mark's ``<title>`` (a
tooltip, and what a screen reader says).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

WIDTH, HEIGHT = 640, 200
#: Room around the plot for the axes' labels.
LEFT, RIGHT, TOP, BOTTOM = 56, 56, 12, 28


@dataclass(frozen=True)
class Mark:
    """A bar (``w`` > 0) or a point, with its tooltip."""

    x: float
    y: float
    w: float
    h: float
    title: str


@dataclass(frozen=True)
class Chart:
    """One chart: its bars, a line through its points, an optional level line, and axis labels."""

    label: str
    bars: list[Mark] = field(default_factory=list)
    points: list[Mark] = field(default_factory=list)
    #: ``x1,y1 x2,y2 ...`` of the line through the points
    line: str = ""
    #: y of a horizontal line (the freshness a table promises), and its label
    level: float | None = None
    level_label: str = ""
    left_label: str = ""
    right_label: str = ""
    first_x_label: str = ""
    last_x_label: str = ""
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def plot_bottom(self) -> int:
        """The y of the x axis."""
        return self.height - BOTTOM

    @property
    def plot_right(self) -> int:
        """The x where the plot ends."""
        return self.width - RIGHT


def human_bytes(n: float) -> str:
    """``1.5 MB`` and the like (powers of 1000)."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _scale(values: Sequence[float]) -> float:
    top = max(values, default=0.0)
    return top if top > 0 else 1.0


def commit_timeline(commits: Sequence[tuple[int, int, int, int, str]]) -> Chart:
    """Rows (bars) and bytes (line) of each commit, in commit order: (number, time ms, rows, bytes, kind)."""
    chart_w, chart_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = len(commits)
    if n == 0:
        return Chart("rows and bytes per commit")
    rows_top = _scale([c[2] for c in commits])
    bytes_top = _scale([c[3] for c in commits])
    slot = chart_w / n
    bars, points = [], []
    for i, (number, _at, rows, size, kind) in enumerate(commits):
        h = chart_h * rows / rows_top
        title = f"commit {number} ({kind}): {rows} rows, {human_bytes(size)}"
        bars.append(Mark(LEFT + i * slot + slot * 0.15, TOP + chart_h - h, max(slot * 0.7, 0.5), h, title))
        points.append(Mark(LEFT + (i + 0.5) * slot, TOP + chart_h - chart_h * size / bytes_top, 0, 0, title))
    return Chart(
        "rows (bars) and bytes (line) per commit",
        bars=bars,
        points=points,
        line=" ".join(f"{p.x:.1f},{p.y:.1f}" for p in points),
        left_label=f"{rows_top:,.0f} rows",
        right_label=human_bytes(bytes_top),
        first_x_label=f"commit {commits[0][0]}",
        last_x_label=f"commit {commits[-1][0]}",
    )


def lag_chart(samples: Sequence[tuple[int, int]], freshness_ms: int) -> Chart:
    """Lag (ms) over time (ms), as (time, lag) samples in time order, under the freshness line."""
    chart_w, chart_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = max(_scale([lag for _t, lag in samples]), freshness_ms) * 1.1
    if not samples:
        return Chart("lag over time", level=TOP + chart_h - chart_h * freshness_ms / top,
                     level_label=f"freshness {_duration(freshness_ms)}")
    start, end = samples[0][0], samples[-1][0]
    span = max(end - start, 1)
    points = [
        Mark(LEFT + chart_w * (t - start) / span, TOP + chart_h - chart_h * lag / top, 0, 0,
             f"lag {_duration(lag)}")
        for t, lag in samples
    ]
    return Chart(
        "lag over time, against the freshness asked for",
        points=points,
        line=" ".join(f"{p.x:.1f},{p.y:.1f}" for p in points),
        level=TOP + chart_h - chart_h * freshness_ms / top,
        level_label=f"freshness {_duration(freshness_ms)}",
        left_label=_duration(int(top)),
        first_x_label=_clock(start),
        last_x_label=_clock(end),
    )


def _clock(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def duration(ms: int | None) -> str:
    """``350 ms``, ``2.5 s``, ``4.0 min``, ``1.2 h``; ``-`` for None."""
    return "-" if ms is None else _duration(ms)


@dataclass(frozen=True)
class Node:
    """A box of a lineage graph; ``href`` is its page ('' when the viewer may not read it)."""

    x: float
    y: float
    label: str
    kind: str
    href: str = ""


@dataclass(frozen=True)
class Graph:
    """A lineage graph: columns of boxes (sources, the table, what is defined on it) and arrows."""

    nodes: list[Node]
    edges: list[tuple[float, float, float, float]]
    width: int
    height: int


NODE_W, NODE_H, GAP = 170, 30, 14


def lineage(sources: Sequence[Node], table: Node, dependants: Sequence[Node]) -> Graph:
    """Sources on the left, the table in the middle, dependants on the right, arrows in between
    (the nodes' own x and y are ignored: they are laid out here)."""
    rows = max(len(sources), len(dependants), 1)
    height = rows * (NODE_H + GAP) + GAP
    columns = (GAP, GAP + NODE_W + 80, GAP + 2 * (NODE_W + 80))

    def column(nodes: Sequence[Node], x: float) -> list[Node]:
        top = (height - len(nodes) * (NODE_H + GAP) + GAP) / 2
        return [Node(x, top + i * (NODE_H + GAP), n.label, n.kind, n.href) for i, n in enumerate(nodes)]

    left, right = column(sources, columns[0]), column(dependants, columns[2])
    middle = column([table], columns[1])[0]
    edges = [(n.x + NODE_W, n.y + NODE_H / 2, middle.x, middle.y + NODE_H / 2) for n in left]
    edges += [(middle.x + NODE_W, middle.y + NODE_H / 2, n.x, n.y + NODE_H / 2) for n in right]
    return Graph([*left, middle, *right], edges, int(columns[2] + NODE_W + GAP), int(height))
