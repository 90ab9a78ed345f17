"""A report's plots: what each draws from, how it becomes PNG bytes.

Figures are :class:`matplotlib.figure.Figure` objects drawn on the Agg canvas, never through
``pyplot``: no global figure state, no display backend, safe beside a running job.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from elastream.report.run_folder import RunFolder

WIDTH, HEIGHT, DPI = 9.0, 3.2, 100


@dataclass(frozen=True)
class Drawn:
    """A drawn plot, and a line of numbers under it (``""``: none)."""

    figure: Figure
    caption: str = ""


Draw = Callable[[RunFolder, pd.DataFrame], "Drawn | str"]
"""Draws from the run and its steps table; a ``str`` says why the run has nothing to draw."""


@dataclass(frozen=True)
class Plot:
    """A plot of the report: ``id`` (stable: the page's ``data-plot`` and the PNG's name)."""

    id: str
    title: str
    draw: Draw


def new_axes(height: float = HEIGHT, *, counts: bool = False,
             by_batch: bool = True) -> tuple[Figure, Any]:
    """A figure of the report's width with one axes, grid on.

    Integer ticks on x for ``by_batch`` (micro-batch ids), on y for ``counts``.
    """
    figure = Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    axes.grid(alpha=0.3)
    if by_batch:
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    if counts:
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    return figure, axes


def png_bytes(figure: Figure) -> bytes:
    """The figure as PNG."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()
