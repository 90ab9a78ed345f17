"""The simulated cluster every scheme comparison uses: speeds, arrival rate, one run per scheme.

``elastream simulate`` and ``benchmarks/fish`` set up the FISH simulation (§6.1) the same way,
through these functions:

* every worker of capacity 1 needs ``service_time`` seconds per tuple (default 1 µs);
* ``heterogeneous``: the first half of the initial workers (ids ``< workers // 2``) are twice
  as fast as the others (FISH §6.4: "half of the worker's processing capability is twice than
  the others"); workers added later by an event have capacity 1;
* tuples arrive at a fixed rate that would load the initial workers to ``utilisation``
  (default 0.9) of their total capacity if they were perfectly balanced;
* FISH is told ``service_time`` so that Algorithm 3 can infer how fast workers drain
  (every other scheme ignores speeds), and every scheme gets the capacities.

>>> config = cluster_config(4, heterogeneous=True)
>>> config.capacities, round(config.arrival_rate)
((2.0, 2.0, 1.0, 1.0), 5400000)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.registry import make_scheme
from elastream.core import rules
from elastream.runtimes.sim.config import SimConfig, WorkerEvent
from elastream.runtimes.sim.simulator import SimResult, simulate

DEFAULT_SERVICE_TIME: Final = 1e-6
DEFAULT_UTILISATION: Final = 0.9
MAX_UTILISATION: Final = 10.0


def worker_capacities(
    worker_ids: int, workers: int, *, heterogeneous: bool
) -> npt.NDArray[np.float64]:
    """Speed of worker ids ``0 … worker_ids − 1``: all 1, or 2 below ``workers // 2`` if mixed.

    >>> worker_capacities(5, 4, heterogeneous=True).tolist()
    [2.0, 2.0, 1.0, 1.0, 1.0]
    """
    speeds = np.ones(worker_ids, dtype=np.float64)
    if heterogeneous:
        speeds[: workers // 2] = 2.0
    return speeds


def cluster_config(
    workers: int,
    *,
    heterogeneous: bool = False,
    service_time: float = DEFAULT_SERVICE_TIME,
    utilisation: float = DEFAULT_UTILISATION,
    events: Sequence[WorkerEvent] = (),
) -> SimConfig:
    """The :class:`SimConfig` of the module docstring for ``workers`` initial workers.

    Raises :class:`OptionError` for a ``utilisation`` outside (0, 10] or a bad ``workers``,
    ``service_time`` or event (checked by :class:`SimConfig`).
    """
    rules.number("utilisation", utilisation, above=0, high=MAX_UTILISATION)
    rules.integer("workers", workers)
    worker_ids = max(workers, *(e.worker + 1 for e in events)) if events else workers
    speeds = worker_capacities(worker_ids, workers, heterogeneous=heterogeneous)
    rules.number("service_time", service_time, above=0, unit="seconds")
    rate = utilisation * float(speeds[:workers].sum()) / service_time
    return SimConfig(workers=workers, service_time=service_time,
                     capacities=tuple(speeds.tolist()), arrival_rate=rate, events=tuple(events))


def run_scheme(
    keys: npt.ArrayLike, name: str, config: SimConfig, *, seed: int = 0, **params: Any
) -> SimResult:
    """Simulate scheme ``name`` with its ``params`` on ``config``, tuples at the config's rate.

    ``name`` is one of :data:`~elastream.algorithms.grouping.registry.SCHEMES`; FISH gets
    ``service_time=config.service_time`` unless ``params`` sets it.
    """
    capacities = np.asarray(config.capacities if config.capacities is not None
                            else np.ones(config.num_worker_ids), dtype=np.float64)
    if name == "fish":
        params.setdefault("service_time", config.service_time)
    scheme = make_scheme(name, config.workers, seed=seed, capacities=capacities, **params)
    return simulate(keys, None, scheme, config, clock=time.perf_counter)
