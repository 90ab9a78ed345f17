"""The planners a job can name, each as ``plan(snapshot, current, *, options) -> Plan``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from elastream.algorithms.balance import flux, hash_planner
from elastream.control.runtime import Planner
from elastream.core.errors import OptionError


@dataclass(frozen=True)
class PlannerEntry:
    """A registered planner: its function and how to build its options from job settings."""

    plan: Planner
    options_type: type[Any]


PLANNERS: dict[str, PlannerEntry] = {
    "hash": PlannerEntry(hash_planner.plan, hash_planner.HashOptions),
    "flux": PlannerEntry(flux.plan, flux.FluxOptions),
}


def planner(name: str, **settings: Any) -> tuple[Planner, Any]:
    """The planner called ``name`` and its options built from the settings it accepts."""
    if name not in PLANNERS:
        raise OptionError("--planner", f"must be one of {', '.join(PLANNERS)}", name)
    entry = PLANNERS[name]
    fields = getattr(entry.options_type, "__dataclass_fields__", {})
    return entry.plan, entry.options_type(**{k: v for k, v in settings.items() if k in fields})
