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

Every planner is a :class:`MigrationPlanner`, ``plan(instance, *, options=None) ->
MigrationPlan``, pure (no clock, no engine); :func:`run` builds the options from keyword
settings by the rule every planner family shares (:mod:`elastream.core.registry`): a setting
the planner does not take is refused.

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

from dataclasses import dataclass
from typing import Any, Final, Protocol

from elastream.algorithms.migration import ch, mtm, oms, redist, ssm, storm
from elastream.algorithms.migration.intervals import MigrationInstance, MigrationPlan
from elastream.core import registry


class MigrationPlanner(Protocol):
    """A migration planner: ``plan(instance, *, options) -> MigrationPlan``.

    ``options`` is the planner's options type, or ``None`` (its defaults; the only value of a
    planner without parameters).
    """

    def __call__(self, instance: MigrationInstance, *, options: Any) -> MigrationPlan:
        """Plan the single-step migration ``instance``."""
        ...


@dataclass(frozen=True)
class MigrationEntry:
    """A registered planner: its function, its options class and whether it guarantees τ."""

    name: str
    plan: MigrationPlanner
    options_type: type[Any] | None
    guarantees_tau: bool
    summary: str


PLANNERS: Final[dict[str, MigrationEntry]] = {p.name: p for p in (
    MigrationEntry("ssm", ssm.plan, None, True, "optimal single-step migration (§4.3)"),
    MigrationEntry("oms", oms.plan, oms.OmsOptions, True,
            "optimal migration sequence for known node counts (§5.1)"),
    MigrationEntry("mtm", mtm.plan, mtm.MtmOptions, True,
            "MTM-aware migration with projected costs from PMC (§5.2)"),
    MigrationEntry("ch", ch.plan, ch.ChOptions, False, "consistent hashing of tasks (baseline)"),
    MigrationEntry("storm", storm.plan, None, False,
            "Storm's equal consecutive ranges (baseline)"),
    MigrationEntry("redist", redist.plan, redist.RedistOptions, False,
            "Gedik's Redist partitioning function (baseline)"),
)}


def run(name: str, instance: MigrationInstance, **settings: Any) -> MigrationPlan:
    """Plan ``instance`` with planner ``name``; ``settings`` are its options' fields."""
    options = registry.build(PLANNERS, name, settings, option="algo")
    return PLANNERS[name].plan(instance, options=options)
