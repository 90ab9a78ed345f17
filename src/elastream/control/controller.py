"""The controller: one planner call on a snapshot, its plan applied as the next routing version.

The control loop (:mod:`elastream.control.loop`) calls it beside the running job (Enorm §4.5,
ALBIC Alg. 1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from elastream.control.execution import ExecutionPolicy
from elastream.control.runtime import Planner
from elastream.core.load import LoadSnapshot
from elastream.core.plan import Plan
from elastream.core.routing import RoutingTable


@dataclass
class Controller:
    """Calls one planner on each snapshot and applies its plan as a new routing version.

    ``execution``: how the loop picks split or combine (default: as the job's spec says,
    :func:`~elastream.control.execution.policy_for`).
    """

    planner: Planner
    options: object
    execution: ExecutionPolicy | None = None

    def step(self, snapshot: LoadSnapshot, current: RoutingTable, *,
             options: object = None) -> tuple[Plan, RoutingTable]:
        """Plan on ``snapshot``; return the plan (timed) and the routing to use next.

        ``options``: instead of the controller's own for this step (a scale-in's ``remove``).
        """
        started = time.perf_counter()
        plan = self.planner(snapshot, current,
                            options=self.options if options is None else options)
        plan = replace(plan, solve_seconds=time.perf_counter() - started)
        return plan, current.apply_plan(plan)
