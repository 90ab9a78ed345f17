"""What defines a job: the options a job resumed from its state must keep.

A job's state was made by its defining options: its key groups hash its key, its panes are the
gcd of its windows, its partials carry its aggregates, its checkpoints hold as many state
partitions as its most slots. A run on that state with other values would mix two jobs in one
output (windows of 10m and of 5m, partials of ``sum`` merged as ``max``) and say nothing, so
the job records them (``job.json`` beside its state, :func:`identity`) and a run that differs
is refused before it starts (:func:`check_resume`), naming each difference.

May change between runs: the planner and its settings, ``max_moves``, the scale events and
the rate. The slot count may change where the job moves to it live (:class:`Resume`): a job
started to scale (``scale_at``, or ``max_slots`` above ``slots``), to at most its state
partitions. A job that scaled by moves (a balancing planner) cannot go on with a planner that
scales by key-group ranges (``hash``): its key groups are no longer in ranges.

>>> from elastream.core.aggregates import AggSpec
>>> from elastream.core.windows import WindowSpec
>>> def spec(window: str, **more: object) -> PipelineSpec:
...     return PipelineSpec.of(time_col="ts", key_col="user", aggs=(AggSpec.parse("count"),),
...                            windows=(WindowSpec.parse(window),), **more)
>>> check_resume(identity(spec("10m")), spec("10m"))
Resume(max_slots=4, scale_to=None, scales=False)
>>> check_resume(identity(spec("10m")), spec("5m", key_groups=64), location="/jobs/a")
Traceback (most recent call last):
...
elastream.core.errors.OptionError: state_dir holds a job started with other options: windows \
was 10m, now 5m; key_groups was 128, now 64 (use a new state_dir, or the job's options), got \
'/jobs/a'
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from elastream.core.chain import is_linear
from elastream.core.errors import OptionError
from elastream.core.options import OPTIONS
from elastream.core.spec import PipelineSpec, RunSpec
from elastream.core.windows import format_duration

IDENTITY = "job.json"
"""The file, beside the job's state, that holds its defining options."""
VERSION = 1
"""The layout of a job's outputs and state; a job of another layout is not resumed."""


def identity(spec: PipelineSpec, *, scales: bool | None = None,
             by_ranges: bool = False) -> dict[str, Any]:
    """The defining options of ``spec`` as text (what ``job.json`` holds), and its slots.

    A job read from files (:class:`~elastream.core.spec.RunSpec`) is defined by its input too.
    The planner is there for the record (the report shows it); it may change between runs.
    ``scales``: the job may change its slot count (default: whether ``spec`` scales; a job
    started to scale keeps it, :class:`Resume`), recorded as how it scales: ``"ranges"``
    (``by_ranges``: its planner keeps key-group ranges) or ``"moves"``; ``false`` if not.
    """
    defining = {name: _text(name, spec.value(option.field))
                for name, option in OPTIONS.items()
                if option.rerun == "never" and spec.holds(option.field)}
    if isinstance(spec, RunSpec):
        files = spec.files
        defining["input"] = str(files.kafka or files.path.resolve())
        if files.mode != "replay" or files.kafka is not None:
            del defining["rows_per_batch"]  # a replay's chunks; a stream has none
    return {"version": VERSION, "defining": defining, "slots": spec.scaling.slots,
            "max_slots": spec.scaling.max_slots,
            "scales": (("ranges" if by_ranges else "moves")
                       if (spec.scales if scales is None else scales) else False),
            "planner": spec.routing.planner}


def _text(name: str, value: Any) -> str:
    """A defining option's value as ``job.json`` holds it."""
    if name == "aggs":
        return ", ".join(a.func if a.column is None else f"{a.func}:{a.column}" for a in value)
    if name == "then":
        return ", ".join(f"{op.name}/{','.join(op.partition_by)}" for op in value)
    if name == "chain":  # a graph's operators name their inputs; a chain's, as before
        linear = is_linear(value)
        return json.dumps([{"id": op.id, "keys": list(op.keys),
                            "aggs": [f"{a.func}:{a.column}" for a in op.aggs],
                            "window": str(op.window) if op.window else None,
                            "partition_by": list(op.partition_by),
                            **({} if linear else {"inputs": list(op.inputs)})} for op in value])
    if name == "lateness":
        return format_duration(value) if value else "0s"
    if isinstance(value, tuple):
        return (", " if name == "windows" else ",").join(map(str, value))
    return str(value)


@dataclass(frozen=True)
class Resume:
    """How a run resumes a recorded job.

    With the job's ``max_slots`` (its state partitions), moving to ``scale_to`` slots live
    first when the run asks for another slot count (``None``: the same); ``scales``: the job
    was started to scale (its key groups in ranges), so it goes on scaling.
    """

    max_slots: int
    scale_to: int | None
    scales: bool = False


def check_resume(recorded: dict[str, Any], spec: PipelineSpec, *, place: str = "state_dir",
                 location: str = "", name: Callable[[str], str] = str,
                 by_ranges: bool = False) -> Resume:
    """Check ``spec`` against the job ``recorded`` (:func:`identity`) at ``location``.

    ``by_ranges``: ``spec``'s planner scales by key-group ranges (``hash``).

    Raises :class:`OptionError` naming ``place`` (the option that gave ``location``) and each
    difference (option names through ``name``: the CLI's flags) with the two values, or the
    slot count the job cannot move to.
    """
    if recorded.get("version") != VERSION:
        raise OptionError(place, "holds a job of another elastream version; use a new "
                          f"{place}", location)
    now, was = identity(spec)["defining"], recorded["defining"]
    differences = [f"{name(key)} was {was.get(key) or 'none'}, now {now.get(key) or 'none'}"
                   for key in dict.fromkeys([*now, *was]) if was.get(key) != now.get(key)]
    if differences:
        raise OptionError(place, f"holds a job started with other options: "
                          f"{'; '.join(differences)} (use a new {place}, or the job's options)",
                          location)
    max_slots, slots = int(recorded["max_slots"]), int(recorded["slots"])
    if spec.scaling.max_slots > max_slots:
        raise OptionError(name("max_slots"), f"must be at most {max_slots}: the job in {place} "
                          f"has {max_slots} state partitions", spec.scaling.max_slots)
    scales = recorded["scales"]
    if spec.scales and not scales:
        raise OptionError(name("scale_at"), f"cannot scale the job in {place}: it was started "
                          "not to scale (its state has as many partitions as slots); use a new "
                          f"{place}", [f"{e.batch}:{e.slots}" for e in spec.scaling.scale_at])
    if scales == "moves" and by_ranges:
        raise OptionError(name("planner"), f"must move key groups, as the job in {place} was "
                          f"started to scale with planner {recorded['planner']} (its key "
                          f"groups are not in the ranges {spec.routing.planner} scales)",
                          spec.routing.planner)
    if spec.scaling.slots == slots:
        return Resume(max_slots, None, bool(scales))
    if not scales or spec.scaling.slots > max_slots:
        raise OptionError(name("slots"), f"must be {slots}, as the job in {place} has (a job "
                          f"started to scale moves to another count live, up to {max_slots})",
                          spec.scaling.slots)
    return Resume(max_slots, spec.scaling.slots, True)
