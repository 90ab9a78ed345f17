"""The planners a job can name, each called as ``plan(snapshot, current, *, options) -> Plan``."""

from __future__ import annotations

from collections.abc import Callable
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
from elastream.control.runtime import Planner
from elastream.core.errors import OptionError
from elastream.core.job import PipelineSpec


@dataclass(frozen=True)
class PlannerEntry:
    """A registered planner: how to build it for one job, and its options type.

    Stateless planners are plain functions; a planner that learns across batches (``fish``)
    is built fresh for every job from its options.
    """

    make: Callable[[Any], Planner]
    options_type: type[Any]


PLANNERS: dict[str, PlannerEntry] = {
    "hash": PlannerEntry(lambda options: hash_planner.plan, hash_planner.HashOptions),
    "flux": PlannerEntry(lambda options: flux.plan, flux.FluxOptions),
    "fish": PlannerEntry(fish_split.FishSplitPlanner, fish_split.FishSplitOptions),
    "milp": PlannerEntry(lambda options: milp.plan, milp.MilpOptions),
    "albic": PlannerEntry(lambda options: albic.plan, albic.AlbicOptions),
    "cola": PlannerEntry(lambda options: cola.plan, cola.ColaOptions),
    "potc": PlannerEntry(lambda options: potc.plan, potc.PotcOptions),
    "elasticutor": PlannerEntry(lambda options: elasticutor.plan, elasticutor.ElasticutorOptions),
}


def planner(name: str, **settings: Any) -> tuple[Planner, Any]:
    """A planner called ``name`` for one job, and its options built from the settings it takes."""
    if name not in PLANNERS:
        raise OptionError("planner", f"must be one of {', '.join(PLANNERS)}", name)
    entry = PLANNERS[name]
    fields = getattr(entry.options_type, "__dataclass_fields__", {})
    options = entry.options_type(**{k: v for k, v in settings.items() if k in fields})
    return entry.make(options), options


def job_planner(spec: PipelineSpec, **settings: Any) -> tuple[Planner, Any]:
    """The planner a job names, with the job's move budget.

    A job of several operators also gives each key group's operator, for the planners that
    collocate communicating key groups (albic).
    """
    if spec.then:
        settings.setdefault("operators", spec.operator_of_key_groups)
    return planner(spec.planner, max_moves=spec.max_moves, **settings)
