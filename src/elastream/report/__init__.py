"""See what a run did: one self-contained HTML page of plots from a run's output folder.

:func:`render` reads what ``elastream run`` (or a Python API job's ``state_dir``) left —
``summary.json``, ``metrics.jsonl``, ``dead_letter/``, the hand-off ledger in ``_migration/``
(:mod:`elastream.report.run_folder`) — and draws every plot the run has data for
(:data:`PLOTS`); a plot it has none for becomes a one-line note. Engine-free: no Spark, no
network to view the page (inline CSS, PNG images as base64, no scripts).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from elastream.report.control_plots import CONTROL_PLOTS
from elastream.report.figures import Plot, png_bytes
from elastream.report.flow_plots import FLOW_PLOTS
from elastream.report.page import page
from elastream.report.run_folder import read_run_folder
from elastream.report.steps import steps_table

PLOTS: tuple[Plot, ...] = FLOW_PLOTS[:2] + CONTROL_PLOTS + FLOW_PLOTS[2:]
"""Every plot, in page order."""
REPORT_FILE = "report.html"


@dataclass(frozen=True)
class Report:
    """What :func:`render` wrote.

    The page, the PNGs (``--png``), the plots drawn and the plots skipped with why.
    """

    html: Path
    pngs: tuple[Path, ...] = ()
    plots: tuple[str, ...] = ()
    skipped: dict[str, str] = field(default_factory=dict)


def render(output: str | os.PathLike[str], html: str | os.PathLike[str] | None = None,
           png_dir: str | os.PathLike[str] | None = None) -> Report:
    """Write the report of the run in ``output``; return what was written.

    The page goes to ``html`` (default ``output/report.html``); with ``png_dir``, also each
    plot as ``<plot id>.png`` there.

    Raises:
        DataError: ``output`` is not a run's output folder.
    """
    run = read_run_folder(Path(output))
    steps = steps_table(run.records)
    sections: list[tuple[str, str, bytes | str, str]] = []
    pngs, drawn, skipped = [], [], {}
    for plot in PLOTS:
        result = plot.draw(run, steps)
        if isinstance(result, str):
            sections.append((plot.id, plot.title, result, ""))
            skipped[plot.id] = result
            continue
        image = png_bytes(result.figure)
        sections.append((plot.id, plot.title, image, result.caption))
        drawn.append(plot.id)
        if png_dir is not None:
            pngs.append(Path(png_dir) / f"{plot.id}.png")
            pngs[-1].parent.mkdir(parents=True, exist_ok=True)
            pngs[-1].write_bytes(image)
    target = Path(html) if html is not None else run.path / REPORT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page(run, sections))
    return Report(target, tuple(pngs), tuple(drawn), skipped)


__all__ = ["PLOTS", "REPORT_FILE", "Report", "render"]
