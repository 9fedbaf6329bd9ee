"""Shared figure style and the standard plots of the book."""

from __future__ import annotations

from collections.abc import Sequence

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from fedlib.results import Results

#: The book's text column is 688 px wide in a 1280 px browser window (784 px in wider ones); at the figures' 110 dpi
#: that is 6.25 inches. A figure at most this wide is shown unscaled, so its 10 pt text stays 10 pt (a 15-inch figure
#: would be shrunk to 4 pt).
COLUMN_IN = 6.2
STYLE = {
    "figure.figsize": (COLUMN_IN, 3.6), "figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
    "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False, "font.size": 10,
    "legend.fontsize": 10,
}


def apply_style() -> None:
    """Use the book's figure style for every later figure, and (in Jupyter) PNGs at twice the resolution, shown at
    their nominal size, so that figures stay sharp on high-resolution screens."""
    plt.rcParams.update(STYLE)
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    if get_ipython() is not None:
        set_matplotlib_formats("retina")


def panels(nrows: int = 1, ncols: int = 1, *, row_height: float = 3.2, max_columns: int = 2,
           **subplots_kw) -> tuple[plt.Figure, object]:
    """``plt.subplots(nrows, ncols, ...)`` sized for the book's column (:data:`COLUMN_IN` wide).

    A single row of more than ``max_columns`` panels is laid out over several rows (unused cells removed), but the
    axes come back in the shape ``plt.subplots`` gives, so ``axes[k]`` (or ``axes[0][k]`` with ``squeeze=False``)
    is still the k-th panel.
    """
    if nrows < 1 or ncols < 1:
        raise ValueError(f"nrows and ncols must be >= 1, got {nrows} and {ncols}")
    if "figsize" in subplots_kw:
        raise ValueError("panels sizes the figure for the book's column; pass row_height instead of figsize")
    squeeze = subplots_kw.pop("squeeze", True)
    wrap = nrows == 1 and ncols > max_columns
    rows, cols = (math.ceil(ncols / max_columns), max_columns) if wrap else (nrows, ncols)
    height = (3.6 if rows == cols == 1 else row_height) * rows
    subplots_kw.setdefault("layout", "constrained")
    fig, grid = plt.subplots(rows, cols, figsize=(COLUMN_IN, height), squeeze=False, **subplots_kw)
    flat = grid.ravel()
    for ax in flat[nrows * ncols:]:
        ax.remove()
    axes = np.empty(nrows * ncols, dtype=object)
    axes[:] = list(flat[:nrows * ncols])
    axes = axes.reshape(nrows, ncols)
    if squeeze:
        axes = axes.squeeze()
        axes = axes.item() if axes.ndim == 0 else axes
    return fig, axes


def plot_series(results: Results, names: Sequence[str], *, ax: Axes | None = None, xlabel: str = "round",
                ylabel: str = "test accuracy", title: str | None = None, logy: bool = False,
                labels: Sequence[str] | None = None) -> Axes:
    """Plot the named series of a results file on one axis (``labels`` replaces their stored legend labels). In
    full mode a series whose unit has not run yet is missing: it is left out of the plot and named in the title."""
    if ax is None:
        _, ax = plt.subplots()
    if labels is not None and len(labels) != len(names):
        raise ValueError(f"labels must have one entry per name ({len(names)}), got {len(labels)}")
    missing = [name for name in names if name not in results.series]
    if missing and results.mode != "full":
        raise KeyError(f"no series {missing}; the results have {sorted(results.series)}")
    if missing:
        title = f"{title or ''} ({len(missing)} curve(s) not run yet)".strip()
    for k, name in enumerate(names):
        if name in missing:
            continue
        s = results.series[name]
        ax.plot(s["x"], s["y"], label=s["label"] if labels is None else labels[k],
                marker="." if len(s["x"]) < 40 else None)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if "round" in xlabel:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
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


def grouped_bars(rows: Sequence[dict], group: str, hue: str, value: str, *, ax: Axes | None = None,
                 ylabel: str | None = None, xlabel: str | None = None, title: str | None = None) -> Axes:
    """Bars of ``value`` for each ``group`` (x axis), one colour per ``hue``, in order of first appearance;
    rows without a value are skipped."""
    rows = [r for r in rows if r.get(value) is not None]
    if not rows:
        raise ValueError(f"no row has a value for {value!r}")
    groups = list(dict.fromkeys(r[group] for r in rows))
    hues = list(dict.fromkeys(r[hue] for r in rows))
    if ax is None:
        _, ax = plt.subplots()
    width = 0.8 / len(hues)
    for j, h in enumerate(hues):
        points = [(groups.index(r[group]), r[value]) for r in rows if r[hue] == h]
        ax.bar([x - 0.4 + width * (j + 0.5) for x, _ in points], [v for _, v in points], width, label=str(h))
    ax.set_xticks(range(len(groups)), [str(g) for g in groups])
    ax.set_xlabel(xlabel or group)
    ax.set_ylabel(ylabel or value)
    if title:
        ax.set_title(title)
    ax.legend()
    return ax


def image_grid(results: Results, names: Sequence[str], *, labels: Sequence[str] | None = None, columns: int = 8,
               title: str | None = None) -> plt.Figure:
    """One row per image batch of ``results.images`` (the first ``columns`` images of each), labelled on the left."""
    labels = list(labels) if labels is not None else list(names)
    if len(labels) != len(names):
        raise ValueError(f"labels must have one entry per name ({len(names)}), got {len(labels)}")
    cols = min(columns, min(len(results.images[n]) for n in names))
    cell = min(1.1, (COLUMN_IN - 1.8) / cols)  # 1.8 in on the left for the labels: the grid fits the column
    fig, axes = plt.subplots(len(names), cols, figsize=(cell * cols + 1.8, cell * len(names) + 0.4), squeeze=False,
                             layout="tight")
    for row, (name, label) in enumerate(zip(names, labels)):
        for col in range(cols):
            ax = axes[row][col]
            ax.imshow(results.images[name][col])
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
        axes[row][0].set_ylabel(label, rotation=0, ha="right", va="center")
    if title:
        fig.suptitle(title)
    return fig
