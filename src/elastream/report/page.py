"""The report as one self-contained HTML page: inline CSS, plots as base64 PNG, no scripts.

Each plot is ``<figure id="plot-ID" data-plot="ID">``; a plot the run has no data for is
``<p class="skipped" data-skipped="ID">`` with the reason, so a browser test can tell both
apart. The summary's values carry ``data-key`` (the ``summary.json`` key).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from html import escape
from typing import Any

import pandas as pd

from elastream.report.run_folder import RunFolder

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 960px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 0; } figure img { max-width: 100%; }
figcaption, .skipped { color: #555; font-size: 0.9em; }
.skipped { font-style: italic; }
"""


def page(run: RunFolder, sections: list[tuple[str, str, bytes | str, str]],
         refresh_seconds: int | None = None) -> str:
    """The HTML of a run's report.

    ``sections``: ``(id, title, PNG or skip note, caption)`` in page order;
    ``refresh_seconds``: the browser reloads the page that often (a live view).
    """
    body = [f"<h1>elastream report: {escape(str(run.path))}</h1>", job_section(run),
            summary_section(run)]
    for plot_id, title, content, caption in sections:
        body.append(f'<section id="{plot_id}"><h2>{escape(title)}</h2>')
        if isinstance(content, bytes):
            data = base64.b64encode(content).decode()
            body.append(f'<figure id="plot-{plot_id}" data-plot="{plot_id}">'
                        f'<img alt="{escape(title)}" src="data:image/png;base64,{data}">'
                        f"<figcaption>{escape(caption)}</figcaption></figure>")
        else:
            body.append(f'<p class="skipped" data-skipped="{plot_id}">{escape(content)}</p>')
        body.append(_extra(plot_id, run))
        body.append("</section>")
    return document(run.path.name, "\n".join(body), refresh_seconds)


def document(name: str, body: str, refresh_seconds: int | None = None) -> str:
    """A whole page titled ``elastream report: name`` around ``body`` (HTML), with the style.

    ``refresh_seconds``: the browser reloads the page that often (a live view).
    """
    refresh = ("" if refresh_seconds is None else
               f'<meta http-equiv="refresh" content="{int(refresh_seconds)}">')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" + refresh +
            f"<title>elastream report: {escape(name)}</title>"
            f"<style>{STYLE}</style></head><body>\n" + body + "\n</body></html>\n")


JOB_ROWS = (("input", "input"), ("format", "format"), ("mode", "mode"), ("key", "key"),
            ("partition_by", "partitioned by"), ("time", "time column"), ("windows", "windows"),
            ("aggs", "aggregates"), ("then", "then"), ("chain", "chain"),
            ("key_groups", "key groups"), ("lateness", "lateness"), ("execution", "execution"),
            ("migration_kind", "migration kind"))
"""The defining options a report shows (``job.json``), where set, and their labels."""


def job_section(run: RunFolder) -> str:
    """What the job is: its input, key, windows, aggregates, planner and slots."""
    head = '<section id="job"><h2>Job</h2>'
    if run.job is None:
        return head + '<p class="skipped" data-skipped="job">no job.json</p></section>'
    defining = run.job.get("defining", {})
    values = {label: defining[key] for key, label in JOB_ROWS
              if defining.get(key) not in (None, "", "[]", "None")}
    values.update(planner=run.job.get("planner", "?"), slots=run.job.get("slots"),
                  **{"most slots": run.job.get("max_slots")})
    return head + _key_values(values, "job") + "</section>"


def summary_section(run: RunFolder) -> str:
    """``summary.json`` as a table, or a note where the run has none."""
    head = '<section id="summary"><h2>Summary</h2>'
    if run.summary is None:
        return (head + '<p class="skipped" data-skipped="summary">no summary.json (written by '
                "<code>elastream run</code>; a Python API job's state_dir holds only its "
                "metrics)</p></section>")
    return head + _key_values(run.summary, "summary") + \
        f"<p>{len(run.records)} metrics records</p></section>"


def _extra(plot_id: str, run: RunFolder) -> str:
    """Tables beside a plot: the split-or-combine decisions, the dead letter's examples."""
    if plot_id == "execution":
        decisions = [{"batch": r.get("batch_id"), **r["execution_decision"]}
                     for r in run.records if isinstance(r.get("execution_decision"), dict)]
        if not decisions:
            return ""
        table = pd.DataFrame(decisions).drop(columns=["terms"], errors="ignore")
        return "<h3>Decisions</h3>" + _table(table, "decisions")
    if plot_id == "dead-letter" and run.reasons:
        counts = pd.DataFrame({"reason": list(run.reasons), "rows": list(run.reasons.values())})
        examples = run.examples.astype(object).where(run.examples.notna(), "")
        return (_table(counts, "dead-letter-reasons") + "<h3>Examples</h3>"
                + _table(examples, "dead-letter-examples"))
    return ""


def _key_values(values: Mapping[str, Any], kind: str) -> str:
    rows = "".join(
        f'<tr><th>{escape(key)}</th><td class="num" data-key="{escape(key)}">'
        f"{escape(_text(value))}</td></tr>" for key, value in values.items())
    return f'<table class="{kind}">{rows}</table>'


def _text(value: Any) -> str:
    """A summary value as JSON writes it (``true``, ``[3, 4]``), numbers unchanged."""
    return value if isinstance(value, str) else json.dumps(value)


def _table(frame: pd.DataFrame, table_id: str) -> str:
    return str(frame.to_html(index=False, escape=True, border=0, table_id=table_id))
