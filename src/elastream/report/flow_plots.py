"""Plots of what flowed through a run: rates, batch durations, state size, dead letters."""

from __future__ import annotations

import numpy as np
import pandas as pd

from elastream.report.figures import Drawn, Plot, new_axes
from elastream.report.run_folder import RunFolder
from elastream.report.steps import batch_durations, column, records_of


def rates(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """Input rows per wall second, and per second of micro-batch time, over the run."""
    if steps.empty or "input_rate" not in steps:
        return "no metrics with input rows and step times"
    figure, axes = new_axes(by_batch=False)
    axes.plot(steps["seconds"], steps["input_rate"], marker=".", label="input rate (rows / s)")
    if "throughput" in steps:
        axes.plot(steps["seconds"], steps["throughput"], marker=".",
                  label="throughput (rows / s of batch time)")
    axes.set_xlabel("wall time (s)")
    axes.set_ylabel("rows / s")
    axes.legend(loc="best")
    return Drawn(figure, f"mean input rate {steps['input_rate'].mean():,.1f} rows/s")


def durations(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """Each micro-batch's duration, with its p50 and p95."""
    each = batch_durations(run.records)
    if each.empty:
        return "no batch durations in the metrics"
    p50, p95 = (float(np.percentile(each.to_numpy(), q)) for q in (50, 95))
    figure, axes = new_axes()
    axes.plot(each.index, each.to_numpy(), marker=".", label="batch duration")
    for value, name, style in ((p50, "p50", "--"), (p95, "p95", ":")):
        axes.axhline(value, color="grey", linestyle=style, label=f"{name} {value:,.0f} ms")
    axes.set_xlabel("micro-batch")
    axes.set_ylabel("ms")
    axes.legend(loc="best")
    return Drawn(figure, f"p50 {p50:,.0f} ms, p95 {p95:,.0f} ms over {len(each)} batches")


def state_size(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """State rows of each stateful operator after each step."""
    if steps.empty or "state_rows_by_operator" not in steps:
        return "no state rows in the metrics"
    by_operator = records_of(steps, "state_rows_by_operator")
    if by_operator.empty:
        return "no stateful operator reported state rows"
    figure, axes = new_axes()
    for name in by_operator:
        axes.plot(steps["batch_id"], by_operator[name], marker=".", label=name)
    axes.set_xlabel("micro-batch")
    axes.set_ylabel("state rows")
    axes.legend(loc="best")
    return Drawn(figure, f"{int(by_operator.iloc[-1].sum()):,} state rows at the end")


def dead_letters(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """Dead-letter rows by reason (the table of examples is beside it)."""
    if run.reasons is None:
        rows = int(column(steps, "dead_letter_rows").fillna(0).sum())
        return (f"no dead_letter/ folder ({rows:,} dead-letter rows in the metrics; a Python "
                "API job writes them to its own sink)")
    if not run.reasons:
        return "no malformed records: the dead letter is empty"
    figure, axes = new_axes(height=0.6 + 0.4 * len(run.reasons), by_batch=False)
    axes.barh(list(run.reasons)[::-1], list(run.reasons.values())[::-1])
    axes.set_xlabel("rows")
    return Drawn(figure, f"{sum(run.reasons.values()):,} rows, {len(run.reasons)} reasons")


FLOW_PLOTS = (
    Plot("rates", "Input rate and throughput", rates),
    Plot("batch-duration", "Batch duration", durations),
    Plot("state-size", "State size", state_size),
    Plot("dead-letter", "Dead letter by reason", dead_letters),
)
