"""Shared figure style and the standard plots of the book."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from fedlib.results import Results

STYLE = {
    "figure.figsize": (6.4, 3.8), "figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
    "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False, "font.size": 10,
}


def apply_style() -> None:
    """Use the book's figure style for every later figure."""
    plt.rcParams.update(STYLE)


def plot_series(results: Results, names: Sequence[str], *, ax: Axes | None = None, xlabel: str = "round",
                ylabel: str = "test accuracy", title: str | None = None, logy: bool = False) -> Axes:
    """Plot the named series of a results file on one axis."""
    if ax is None:
        _, ax = plt.subplots()
    for name in names:
        s = results.series[name]
        ax.plot(s["x"], s["y"], label=s["label"], marker="." if len(s["x"]) < 40 else None)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    ax.legend()
    return ax


def plot_table(results: Results, table_id: str, x: str, columns: dict[str, str], *, ax: Axes | None = None,
               where: dict[str, object] | None = None, xlabel: str | None = None, ylabel: str = "test accuracy",
               title: str | None = None, logx: bool = False) -> Axes:
    """Plot columns of a results table (``columns``: column -> legend label) against column ``x``.

    ``where`` keeps the rows whose columns equal the given values; rows without a value are skipped.
    """
    rows = [r for r in results.tables[table_id]["rows"]
            if all(r.get(k) == v for k, v in (where or {}).items())]
    if ax is None:
        _, ax = plt.subplots()
    for column, label in columns.items():
        points = sorted((r[x], r[column]) for r in rows if r.get(column) is not None)
        if points:
            ax.plot(*zip(*points), marker="o", label=label)
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
        ticks = sorted({r[x] for r in rows})
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
    if title:
        ax.set_title(title)
    ax.legend()
    return ax
