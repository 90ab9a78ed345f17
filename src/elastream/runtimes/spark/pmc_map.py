"""PMC's per-block work on Spark: a ``map_fn`` for :func:`.pmc.precompute_pmc`.

Ding et al. pre-computed the projected migration costs on Spark (§5.2; Fig. 14, 64 executors).
:func:`spark_map` returns a callable with builtins ``map``'s contract — ``fn`` applied to every
item, the results in the items' order — that runs the items as one Spark job:
``parallelize(items, slices).map(fn).collect()``. ``parallelize`` cuts the list into contiguous
slices and ``collect`` joins the partitions in partition order, so the results come back in
exactly the order ``map`` gives them (eagerly, as a list, where ``map`` is lazy).

**How the work ships.** ``fn`` is pickled with cloudpickle into the job. Functions of an
importable module (:func:`.pmc.cost_rows`, :func:`.pmc.backup_rows`) go by reference, so the
Python workers import ``elastream`` themselves: :func:`.session.get_spark` runs them on the
driver's own interpreter (``PYSPARK_PYTHON``, the venv with the editable install). When ``fn`` is
a :class:`functools.partial`, its keyword arrays of ``broadcast_bytes`` or more (PMC's N × N
migration costs: 72 MB at 3,000 states) travel as broadcast variables instead of inside every
job's closure; a Python worker loads a broadcast once and keeps it for later jobs. A read-only
array that owns its data cannot change under us, so its broadcast is kept for later calls — every
value-iteration sweep, every γ over the same costs — up to the last :data:`KEPT` such arrays; any
other large array is broadcast for the one call and destroyed after it.

Not supported: arrays passed positionally to a partial, or captured by a closure, are pickled into
the job as they are (correct, only slower); results must be picklable and fit the driver
(``spark.driver.maxResultSize``).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, TypeVar

import numpy as np
from pyspark import Broadcast, SparkContext
from pyspark.sql import SparkSession

from elastream.core import rules
from elastream.core.errors import ElastreamError
from elastream.runtimes.spark.session import get_spark

T = TypeVar("T")
R = TypeVar("R")

BROADCAST_BYTES: Final = 1 << 20
"""Keyword arrays of a partial this large or larger ship as broadcast variables."""
KEPT: Final = 4
"""Broadcasts of read-only arrays kept for later calls (the oldest is destroyed first)."""


class SparkStartError(ElastreamError):
    """Spark could not start a session (no Java, no free port, …)."""


def spark_map(spark: SparkSession | None = None, *, slices: int | None = None,
              broadcast_bytes: int = BROADCAST_BYTES) -> SparkMap:
    """A ``map_fn`` running on ``spark`` (default: :func:`.session.get_spark`'s session).

    ``slices``: partitions per job, at most one per item (default the context's default
    parallelism). Raises :class:`SparkStartError` with the cause's first line when the session
    cannot start.
    """
    if spark is None:
        try:
            spark = get_spark()
        except Exception as error:  # the gateway raises several kinds: runtime, OS, Py4J
            raise SparkStartError(f"Spark could not start ({_first_line(error)})") from error
    return SparkMap(spark.sparkContext, slices=slices, broadcast_bytes=broadcast_bytes)


class SparkMap:
    """``map`` on a SparkContext (module docstring); ``close`` releases the kept broadcasts.

    A context manager; the session itself stays up (it may be shared).
    """

    def __init__(self, context: SparkContext, *, slices: int | None = None,
                 broadcast_bytes: int = BROADCAST_BYTES) -> None:
        if slices is not None:  # None: the context's default parallelism
            rules.integer("slices", slices)
        rules.integer("broadcast_bytes", broadcast_bytes, low=0)
        self._context = context
        self._slices = slices
        self._threshold = broadcast_bytes
        self._kept: OrderedDict[int, tuple[np.ndarray[Any, Any], Broadcast[Any]]] = \
            OrderedDict()

    def __call__(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``list(map(fn, items))``, computed by one Spark job."""
        data = list(items)
        if not data:
            return []
        slices = min(len(data), self._slices or self._context.defaultParallelism)
        task, temporary = self._ship(fn)
        try:
            out: list[R] = self._context.parallelize(data, slices).map(task).collect()
        finally:
            for shared in temporary:
                shared.destroy()
        return out

    def close(self) -> None:
        """Destroy the kept broadcasts; later calls broadcast again."""
        for _, shared in self._kept.values():
            shared.destroy()
        self._kept.clear()

    def __enter__(self) -> SparkMap:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def _ship(self, fn: Callable[[T], R]) -> tuple[Callable[[T], R], list[Broadcast[Any]]]:
        """``fn`` with its large keyword arrays swapped for broadcasts, and those to destroy."""
        if not isinstance(fn, functools.partial):
            return fn, []
        inline: dict[str, Any] = {}
        shared: dict[str, Broadcast[Any]] = {}
        temporary: list[Broadcast[Any]] = []
        for name, value in fn.keywords.items():
            if isinstance(value, np.ndarray) and value.nbytes >= self._threshold:
                shared[name] = self._broadcast(value, temporary)
            else:
                inline[name] = value
        if not shared:
            return fn, []
        return _WithBroadcasts(fn.func, fn.args, inline, shared), temporary

    def _broadcast(self, array: np.ndarray[Any, Any],
                   temporary: list[Broadcast[Any]]) -> Broadcast[Any]:
        if array.flags.writeable or not array.flags.owndata:  # may change: this call only
            temporary.append(self._context.broadcast(array))
            return temporary[-1]
        key = id(array)
        hit = self._kept.get(key)
        if hit is not None:  # the reference ``_kept`` holds keeps the id from being reused
            self._kept.move_to_end(key)
            return hit[1]
        self._kept[key] = (array, self._context.broadcast(array))
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)[1][1].destroy()
        return self._kept[key][1]


@dataclass(frozen=True)
class _WithBroadcasts:
    """A partial whose large keyword arrays are read from broadcasts on the worker."""

    func: Callable[..., Any]
    args: tuple[Any, ...]
    inline: dict[str, Any]
    shared: dict[str, Broadcast[Any]]

    def __call__(self, item: Any) -> Any:
        arrays = {name: b.value for name, b in self.shared.items()}
        return self.func(*self.args, item, **self.inline, **arrays)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else "") or type(error).__name__
