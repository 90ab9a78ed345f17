"""The migration planners by name: the single entry point of the CLI and the benchmark.

========  =====================  ===========  ==================================================
name      module                 meets τ      options
========  =====================  ===========  ==================================================
ssm       :mod:`.ssm`            guaranteed   —
oms       :mod:`.oms`            guaranteed   :class:`.oms.OmsOptions` (``then``, ``taus``, …)
mtm       :mod:`.mtm`            guaranteed   :class:`.mtm.MtmOptions` (``mtm``, ``gamma``, …)
ch        :mod:`.ch`             may not      :class:`.ch.ChOptions` (``seed``, ``virtual_nodes``)
storm     :mod:`.storm`          may not      —
redist    :mod:`.redist`         may not      :class:`.redist.RedistOptions` (``unit_state``)
========  =====================  ===========  ==================================================

Every planner is ``plan(instance, *, options=None) -> MigrationPlan``, pure (no clock, no
engine); :func:`run` builds the options from keyword settings and checks their names.

>>> from elastream.algorithms.migration.intervals import MigrationInstance
>>> inst = MigrationInstance([1.0] * 4, [1.0] * 4, [(0, 4)], 2, 0.0)
>>> [run(name, inst).cost for name in ("ssm", "storm")]
[2.0, 2.0]
>>> run("ch", inst, seeds=3)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
elastream.core.errors.OptionError: seeds is not a setting of planner 'ch' (it takes seed, ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from elastream.algorithms.migration import ch, mtm, oms, redist, ssm, storm
from elastream.algorithms.migration.intervals import MigrationInstance, MigrationPlan
from elastream.core.errors import OptionError


@dataclass(frozen=True)
class Planner:
    """A registered planner: its function, its options class and whether it guarantees τ."""

    name: str
    plan: Callable[..., MigrationPlan]
    options_type: type | None
    guarantees_tau: bool
    summary: str


PLANNERS: Final[dict[str, Planner]] = {p.name: p for p in (
    Planner("ssm", ssm.plan, None, True, "optimal single-step migration (§4.3)"),
    Planner("oms", oms.plan, oms.OmsOptions, True,
            "optimal migration sequence for known node counts (§5.1)"),
    Planner("mtm", mtm.plan, mtm.MtmOptions, True,
            "MTM-aware migration with projected costs from PMC (§5.2)"),
    Planner("ch", ch.plan, ch.ChOptions, False, "consistent hashing of tasks (baseline)"),
    Planner("storm", storm.plan, None, False,
            "Storm's equal consecutive ranges (baseline)"),
    Planner("redist", redist.plan, redist.RedistOptions, False,
            "Gedik's Redist partitioning function (baseline)"),
)}


def run(name: str, instance: MigrationInstance, **settings: Any) -> MigrationPlan:
    """Plan ``instance`` with planner ``name``; ``settings`` are its options' fields."""
    if name not in PLANNERS:
        raise OptionError("algo", f"must be one of {', '.join(PLANNERS)}", name)
    planner = PLANNERS[name]
    fields = [f.name for f in dataclasses.fields(planner.options_type)] \
        if planner.options_type is not None else []
    for key in settings:
        if key not in fields:
            takes = f"it takes {', '.join(fields)}" if fields else "it takes none"
            raise OptionError(key, f"is not a setting of planner {name!r} ({takes})",
                              settings[key])
    if planner.options_type is None:
        return planner.plan(instance)
    return planner.plan(instance, options=planner.options_type(**settings))
