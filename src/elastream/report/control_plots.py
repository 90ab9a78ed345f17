"""Plots of what the controller saw and did.

Slot loads, moves and routing versions, hot keys, hand-offs, scaling, split or combine.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from elastream.control.scale_events import scale_events
from elastream.report.figures import Drawn, Plot, new_axes
from elastream.report.run_folder import RunFolder
from elastream.report.steps import column, has_any, records_of


def slot_heatmap(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """Rows each slot received per step: slots down, micro-batches across."""
    if steps.empty or "slot_load" not in steps:
        return "no per-slot loads in the metrics"
    loads = [list(v) if isinstance(v, list) else [] for v in steps["slot_load"]]
    width = max(map(len, loads))
    matrix = np.array([row + [0] * (width - len(row)) for row in loads], dtype=float).T
    figure, axes = new_axes(height=1.2 + 0.25 * width, counts=True)
    axes.grid(False)
    batches = steps["batch_id"].to_numpy()
    image = axes.imshow(matrix, aspect="auto", interpolation="nearest", cmap="viridis",
                        origin="lower",
                        extent=(-0.5, len(batches) - 0.5, -0.5, width - 0.5))
    ticks = np.linspace(0, len(batches) - 1, min(len(batches), 12)).round().astype(int)
    axes.set_xticks(ticks, [str(batches[t]) for t in ticks])
    axes.set_xlabel("micro-batch (end of step)")
    axes.set_ylabel("slot")
    figure.colorbar(image, ax=axes, label="rows")
    return Drawn(figure, f"{width} slots over {len(batches)} steps")


def slot_balance(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """The busiest active slot's load over the mean (1 is perfect balance)."""
    ratio = column(steps, "max_mean_slot_load")
    if ratio.isna().all():
        return "no max/mean slot load in the metrics"
    figure, axes = new_axes()
    axes.plot(steps["batch_id"], ratio, marker=".", label="max / mean slot load")
    axes.axhline(1.0, color="grey", linestyle="--", label="balanced")
    axes.set_xlabel("micro-batch")
    axes.legend(loc="best")
    return Drawn(figure, f"median {ratio.median():.3f}, worst {ratio.max():.3f}")


def routing(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """Key groups moved per step (bars) and the routing version published (line)."""
    if not has_any(steps, "moves") and column(steps, "routing_version").nunique() < 2:
        return "no key group moved and the routing never changed"
    figure, axes = new_axes(counts=True)
    axes.bar(steps["batch_id"], column(steps, "moves").fillna(0), color="tab:orange",
             label="key groups moved")
    axes.set_xlabel("micro-batch")
    axes.set_ylabel("moves")
    versions = axes.twinx()
    versions.step(steps["batch_id"], column(steps, "routing_version"), where="post",
                  label="routing version")
    versions.set_ylabel("routing version")
    figure.legend(loc="outside upper right", ncols=2)
    moves = int(column(steps, "moves").fillna(0).sum())
    return Drawn(figure, f"{moves} moves, last routing version "
                         f"{int(column(steps, 'routing_version').max())}")


def hot_keys(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """Hot keys split over several slots, and the slots they were split over."""
    if not has_any(steps, "hot_keys"):
        return "no hot key was split"
    figure, axes = new_axes(counts=True)
    for name in ("hot_keys", "split_slots"):
        axes.step(steps["batch_id"], column(steps, name), where="post", label=name)
    axes.set_xlabel("micro-batch")
    axes.legend(loc="best")
    most = int(column(steps, "hot_keys").max())
    return Drawn(figure, f"at most {most} hot key{'s' if most != 1 else ''} split"
                         + hot_key_names(run))


def hot_key_names(run: RunFolder, most: int = 10) -> str:
    """``: KEY (batches 3-9), …``: the keys split, with the micro-batches they were split in."""
    split: dict[str, list[int]] = {}
    for record in run.records:
        for name in record.get("hot_key_names") or []:
            split.setdefault(str(name), []).append(int(record["batch_id"]))
    if not split:
        return ""
    named = [f"{name} (batches {min(b)}-{max(b)})" for name, b in list(split.items())[:most]]
    more = f" and {len(split) - most} more" if len(split) > most else ""
    return ": " + ", ".join(named) + more


def hand_offs(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """Key-group state in flight between slots: cut by its sender, not yet merged."""
    ledger = run.hand_offs[(run.hand_offs["sent"] >= 0) & (run.hand_offs["taken"] >= 0)]
    if ledger.empty and not has_any(steps, "in_flight"):
        return "no key-group state was handed over between slots"
    figure, axes = new_axes(counts=True)
    if not ledger.empty:
        batches = np.arange(int(ledger["sent"].min()), int(ledger["taken"].max()) + 1)
        sent, taken = ledger["sent"].to_numpy(), ledger["taken"].to_numpy()
        flying = ((sent[None, :] <= batches[:, None]) & (batches[:, None] < taken[None, :]))
        axes.step(batches, flying.sum(axis=1), where="post",
                  label="hand-offs in flight (ledger)")
    if has_any(steps, "in_flight"):
        axes.step(steps["batch_id"], column(steps, "in_flight"), where="post",
                  label="key groups in flight (controller)")
    axes.set_xlabel("micro-batch")
    axes.legend(loc="best")
    return Drawn(figure, f"{len(run.hand_offs)} hand-offs completed")


def scaling(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """Active slots, scale events, and the slots and executors a sizing planner held."""
    names = ("active_slots", "slots_used", "executors_target", "executors")
    active = column(steps, "active_slots")
    if not has_any(steps, "scale_to") and active.nunique() < 2 \
            and not any(has_any(steps, n) for n in names[1:]):
        return "no scale event: the same slots ran every batch"
    figure, axes = new_axes(counts=True)
    for name in names:
        if has_any(steps, name):
            axes.step(steps["batch_id"], column(steps, name), where="post", label=name)
    scale_to = column(steps, "scale_to")
    events = steps["batch_id"][scale_to.notna()]
    for batch, slots in zip(events, scale_to.dropna(), strict=True):
        axes.axvline(batch, color="grey", linestyle=":")
        axes.annotate(f"scale to {int(slots)}", (batch, slots), fontsize=8)
    axes.set_xlabel("micro-batch")
    axes.set_ylabel("slots / executors")
    axes.legend(loc="best")
    return Drawn(figure, scale_caption(run))


def scale_caption(run: RunFolder) -> str:
    """Each scale event in words: asked when, to how many slots, done or why not."""
    scheduled = (run.summary or {}).get("scale_events") or scale_events(run.records)
    said = []
    for e in scheduled:
        plan = f", {e['plan']} {e['status'] or ''}".rstrip() if e.get("plan") else ""
        end = f"done at batch {e['done_batch']}, {e['moves']} moves" if e["done"] else \
            f"not done: {e['why']}"
        said.append(f"to {e['slots']} at batch {e['batch']}{plan} ({end})")
    return f"{len(said)} scale event{'s' if len(said) != 1 else ''}" + \
        (": " + "; ".join(said) if said else "")


def execution(run: RunFolder, steps: pd.DataFrame) -> Drawn | str:
    """Split or combine per step, and the seconds the pane and consolidate stages took."""
    if steps.empty or "stage_costs" not in steps:
        return "no stage costs in the metrics"
    costs = records_of(steps, "stage_costs")
    figure, axes = new_axes()
    for name in ("compute_seconds", "consolidate_seconds", "handoff_seconds"):
        if name in costs:
            axes.plot(steps["batch_id"], costs[name], marker=".", label=name)
    axes.set_xlabel("micro-batch")
    axes.set_ylabel("stage seconds")
    if "execution" in steps:
        combined = steps["execution"] == "combine"
        for batch in steps["batch_id"][combined]:
            axes.axvspan(batch - 0.5, batch + 0.5, color="tab:green", alpha=0.15)
    axes.legend(loc="best")
    runs = steps["execution"].value_counts().to_dict() if "execution" in steps else {}
    return Drawn(figure, "steps by execution (combined shaded): "
                         + ", ".join(f"{k} {v}" for k, v in runs.items()))


CONTROL_PLOTS = (
    Plot("slot-load", "Load per slot", slot_heatmap),
    Plot("slot-balance", "Max / mean slot load", slot_balance),
    Plot("routing", "Moves and routing versions", routing),
    Plot("hot-keys", "Hot keys split", hot_keys),
    Plot("hand-offs", "Hand-offs in flight", hand_offs),
    Plot("scaling", "Slots and scale events", scaling),
    Plot("execution", "Execution: split or combine", execution),
)
