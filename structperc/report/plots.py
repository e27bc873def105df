"""The report's figures: matplotlib (Agg) drawn to inline SVG, text as paths (no font files, no
network), the same bytes for the same data (a fixed ``svg.hashsalt``, no date in the metadata).
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams.update(
    {
        "svg.fonttype": "path",
        "svg.hashsalt": "structperc-report",
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
)

CLASS_COLORS = {
    "type": "#d95f02",
    "boundary": "#7570b3",
    "type and boundary": "#e7298a",
    "missed": "#666666",
    "spurious": "#1b9e77",
}


def to_svg(fig) -> str:
    """The figure as an ``<svg>`` element (no XML prolog), closed."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def grouped_bars(groups: list[str], series: dict[str, list[float]], ylabel: str) -> str:
    """Bars of each series side by side over ``groups`` (e.g. the F1 of dev and test per type)."""
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(groups) + 1.5), 2.8))
    width = 0.8 / max(len(series), 1)
    for k, (name, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(groups))]
        bars = ax.bar(xs, values, width, label=name)
        ax.bar_label(bars, fmt="%.1f", fontsize=7)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return to_svg(fig)


def stacked_errors(counts: dict[str, dict[str, int]], classes: tuple[str, ...]) -> str:
    """One stacked bar per type: its errors by class (``eval.errors.error_counts``)."""
    types = list(counts)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(types) + 2.5), 2.8))
    bottom = [0] * len(types)
    for c in classes:
        values = [counts[t][c] for t in types]
        ax.bar(types, values, bottom=bottom, label=c, color=CLASS_COLORS.get(c))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("errors")
    ax.legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return to_svg(fig)


def curves(panels: list[tuple[str, dict[str, list[tuple[int, float]]]]], xlabel: str) -> str:
    """Small line charts side by side: each panel a title and named (step, value) series."""
    n = len(panels)
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n, 2.6), squeeze=False)
    for ax, (title, series) in zip(axes[0], panels, strict=True):
        for name, points in series.items():
            xs, ys = [p[0] for p in points], [p[1] for p in points]
            ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=name)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)
        if len(series) > 1:
            ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return to_svg(fig)


def heatmap(
    matrix: list[list[float]],
    rows: list[str],
    columns: list[str],
    title: str,
    row_label: str,
    column_label: str,
    integer: bool = False,
) -> str:
    """A labeled heat map with the values written in its cells."""
    size = max(3.0, 0.42 * max(len(rows), len(columns)) + 1.5)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    image = ax.imshow(matrix, cmap="RdBu_r" if not integer else "Blues", aspect="auto")
    if not integer:  # weights: a scale symmetric about 0
        bound = max((abs(v) for row in matrix for v in row), default=1.0) or 1.0
        image.set_clim(-bound, bound)
    ax.set_xticks(range(len(columns)), columns, rotation=90, fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    ax.set_xlabel(column_label)
    ax.set_ylabel(row_label)
    ax.set_title(title, fontsize=9)
    if len(rows) * len(columns) <= 400:
        for i, row in enumerate(matrix):
            for j, v in enumerate(row):
                text = f"{int(v)}" if integer else f"{v:.1f}"
                ax.text(j, i, text, ha="center", va="center", fontsize=6)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return to_svg(fig)
