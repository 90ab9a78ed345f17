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
    text, images, skipped = page_of(output)
    pngs = []
    if png_dir is not None:
        for plot_id, image in images.items():
            pngs.append(Path(png_dir) / f"{plot_id}.png")
            pngs[-1].parent.mkdir(parents=True, exist_ok=True)
            pngs[-1].write_bytes(image)
    target = Path(html) if html is not None else Path(output) / REPORT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return Report(target, tuple(pngs), tuple(images), skipped)


def page_of(output: str | os.PathLike[str], refresh_seconds: int | None = None
            ) -> tuple[str, dict[str, bytes], dict[str, str]]:
    """The page of the run in ``output`` as it is now, its plots' PNGs, the plots skipped.

    ``refresh_seconds``: the page reloads itself that often (``elastream report --serve``).
    """
    run = read_run_folder(Path(output))
    steps = steps_table(run.records)
    sections: list[tuple[str, str, bytes | str, str]] = []
    images: dict[str, bytes] = {}
    skipped: dict[str, str] = {}
    for plot in PLOTS:
        result = plot.draw(run, steps)
        if isinstance(result, str):
            sections.append((plot.id, plot.title, result, ""))
            skipped[plot.id] = result
            continue
        images[plot.id] = png_bytes(result.figure)
        sections.append((plot.id, plot.title, images[plot.id], result.caption))
    return page(run, sections, refresh_seconds), images, skipped


__all__ = ["PLOTS", "REPORT_FILE", "Report", "page_of", "render"]
