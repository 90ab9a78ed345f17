"""The balancing planners a job can name, each a :class:`~elastream.core.planner.Planner`.

Options are built by the rule every planner family shares (:mod:`elastream.core.registry`):
settings are flat (``planner("albic", time_limit=0.5)`` reaches ALBIC's MILP), a setting the
named planner does not take is an :class:`~elastream.core.errors.OptionError`, and *shared*
settings — what a caller gives every planner alike — go to the planners that take them.

>>> plan, options = planner("flux", max_moves=2)
>>> options
FluxOptions(max_moves=2, min_imbalance=0.0)
>>> planner("flux", max_move=2)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
elastream.core.errors.OptionError: max_move is not a setting of planner 'flux' (it takes ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from elastream.algorithms.balance import (
    albic,
    cola,
    elasticutor,
    fish_split,
    flux,
    hash_planner,
    milp,
    potc,
)
from elastream.control.autoscale import AutoscaleOptions
from elastream.core import registry
from elastream.core.errors import OptionError
from elastream.core.plan import Capability
from elastream.core.planner import Planner
from elastream.core.spec import PipelineSpec


@dataclass(frozen=True)
class PlannerEntry:
    """A registered planner: how to build it for one job, its options type, what it can do.

    Stateless planners are plain functions; a planner that learns across batches (``fish``)
    is built fresh for every job from its options. ``top_keys(options, slots)``: how many of a
    batch's heaviest keys it observes (a planner that splits hot keys); ``fits(options,
    most)``: raises if its options do not fit a job of at most ``most`` slots.
    """

    make: Callable[[Any], Planner]
    options_type: type[Any]
    can: frozenset[Capability] = frozenset()
    top_keys: Callable[[Any, int], int] | None = None
    fits: Callable[[Any, int], None] | None = None


PLANNERS: dict[str, PlannerEntry] = {
    "hash": PlannerEntry(lambda options: hash_planner.plan, hash_planner.HashOptions,
                         hash_planner.CAN),
    "flux": PlannerEntry(lambda options: flux.plan, flux.FluxOptions, flux.CAN),
    "fish": PlannerEntry(fish_split.FishSplitPlanner, fish_split.FishSplitOptions,
                         fish_split.CAN, top_keys=fish_split.top_keys),
    "milp": PlannerEntry(lambda options: milp.plan, milp.MilpOptions, milp.CAN),
    "albic": PlannerEntry(lambda options: albic.plan, albic.AlbicOptions, albic.CAN),
    "cola": PlannerEntry(lambda options: cola.plan, cola.ColaOptions, cola.CAN),
    "potc": PlannerEntry(lambda options: potc.plan, potc.PotcOptions, potc.CAN),
    "elasticutor": PlannerEntry(lambda options: elasticutor.plan, elasticutor.ElasticutorOptions,
                                elasticutor.CAN, fits=elasticutor.check_slots),
}


def can(name: str, capability: Capability) -> bool:
    """Whether the registered planner ``name`` has ``capability`` (unknown names: no)."""
    entry = PLANNERS.get(name)
    return entry is not None and capability in entry.can


def scales_by_ranges(spec: PipelineSpec) -> bool:
    """Whether ``spec``'s planner scales by key-group ranges (Ding et al.'s planners)."""
    return can(spec.routing.planner, Capability.SCALE_BY_RANGES)


def check_planner(spec: PipelineSpec) -> None:
    """The job's options against what its planner can do; an :class:`OptionError` if not.

    >>> from elastream.core.aggregates import AggSpec
    >>> from elastream.core.spec import ScaleEvent
    >>> from elastream.core.windows import WindowSpec
    >>> check_planner(PipelineSpec.of(time_col="t", key_col="k", planner="elasticutor",
    ...                               aggs=(AggSpec.parse("count"),),
    ...                               windows=(WindowSpec.parse("1m"),),
    ...                               scale_at=(ScaleEvent(3, 6),)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    elastream.core.errors.OptionError: scale_at is for planners that do not size their slots ...
    """
    name, scaling = spec.routing.planner, spec.scaling
    if spec.chaining.then and can(name, Capability.SPLIT_HOT_KEYS):
        raise OptionError("planner", f"{name} splits hot keys of one-operator jobs "
                          "only (no then)", name)
    if spec.scales and can(name, Capability.SIZE_SLOTS):
        option = "autoscale" if scaling.autoscale and not scaling.scale_at else "scale_at"
        raise OptionError(option, f"is for planners that do not size their slots "
                          f"({name} keeps as many of its slots busy as the load needs)",
                          [f"{e.batch}:{e.slots}" for e in scaling.scale_at] or scaling.autoscale
                          or scaling.max_slots)
    if spec.scales and can(name, Capability.SCALE_BY_RANGES) \
            and scaling.migration in ("ch", "redist") and len(scaling.scale_at) > 1:
        raise OptionError("migration", "scatters key groups, so it can plan one scale "
                          "event only (the next needs consecutive ranges)", scaling.migration)
    if spec.scales and scaling.scale_mode == "stop" \
            and not can(name, Capability.SCALE_BY_RANGES):
        raise OptionError("scale_mode", "stop is for planners that scale by key-group ranges "
                          f"({', '.join(n for n in PLANNERS if can(n, Capability.SCALE_BY_RANGES))}"
                          f"); {name} scales live", scaling.scale_mode)
    sizes = can(name, Capability.SIZE_SLOTS)
    if scaling.autoscale is not None:
        autoscale_options(spec)  # its bounds and latency target
    elif scaling.latency_target is not None and not sizes:
        raise OptionError("latency_target", "is for a job that sizes its slots (autoscale, or "
                          "a planner that sizes them)", scaling.latency_target)
    if scaling.spark_executors is not None and not sizes and scaling.autoscale is None:
        raise OptionError("spark_executors", "needs a job that sizes its slots to the load "
                          "(autoscale, or planner "
                          f"{', '.join(n for n in PLANNERS if can(n, Capability.SIZE_SLOTS))})",
                          name)


def autoscale_options(spec: PipelineSpec) -> AutoscaleOptions:
    """The :class:`AutoscaleOptions` of a job given ``autoscale`` (and ``latency_target``)."""
    assert spec.scaling.autoscale is not None
    fewest, most = spec.scaling.autoscale
    if spec.scaling.latency_target is None:
        return AutoscaleOptions(fewest, most)
    return AutoscaleOptions(fewest, most, latency_target=spec.scaling.latency_target)


def planner(name: str, *, shared: Mapping[str, Any] | None = None,
            **settings: Any) -> tuple[Planner, Any]:
    """A planner called ``name`` for one job, and its options.

    ``settings``: the planner's own; each must be one it takes. ``shared``: settings given to
    every planner alike (a job's move budget, the CLI's defaults); each must be a setting of
    some planner, and this one takes those it has.
    """
    options = registry.build(PLANNERS, name, settings, shared=shared)
    return PLANNERS[name].make(options), options


def job_planner(spec: PipelineSpec, *, shared: Mapping[str, Any] | None = None,
                **settings: Any) -> tuple[Planner, Any]:
    """The planner a job names, its settings (the user's) and the job's shared ones.

    The user's settings are the spec's ``planner_options`` and ``settings`` (these win).
    Every planner is offered the job's move budget (``max_moves``); a job of several operators
    also offers each key group's operator (``operators``), for the planners that collocate
    communicating key groups (albic). ``shared`` adds to them (the CLI's defaults).
    """
    check_planner(spec)
    offered: dict[str, Any] = {"max_moves": spec.routing.max_moves}
    if spec.scaling.latency_target is not None:
        offered["latency_target"] = spec.scaling.latency_target
    if spec.chaining.then:
        offered["operators"] = spec.operator_of_key_groups
    made = planner(spec.routing.planner, shared=offered | dict(shared or {}),
                   **{**spec.routing.planner_options, **settings})
    fits = PLANNERS[spec.routing.planner].fits
    if fits is not None:
        fits(made[1], min(spec.scaling.max_slots, spec.total_key_groups))
    return made


def top_keys(options: Any, slots: int) -> int:
    """How many heaviest keys a micro-batch should observe for a planner of ``options``.

    0 unless the planner splits hot keys and says how many it needs.
    """
    for entry in PLANNERS.values():
        if entry.top_keys is not None and isinstance(options, entry.options_type):
            return entry.top_keys(options, slots)
    return 0
