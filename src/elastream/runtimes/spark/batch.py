"""Which micro-batch a task serves: the routing version is bound to it (core/routing.py).

Spark sets the local property ``streaming.sql.batchId`` on every job of a micro-batch
(``MicroBatchExecution``), and local properties travel with each task to its Python worker —
the ``mapInArrow`` functions that look slots up (:mod:`.route`) and the
``transformWithStateInPandas`` processor alike. A retried batch keeps its id.
"""

from __future__ import annotations

from pyspark import TaskContext

from elastream.core.routing import RoutingTable
from elastream.stores.routing_store import RoutingStore

BATCH_ID = "streaming.sql.batchId"


def micro_batch_id() -> int | None:
    """The id of the micro-batch this task belongs to; ``None`` outside a streaming query."""
    context = TaskContext.get()
    value = context.getLocalProperty(BATCH_ID) if context is not None else None
    return None if value is None else int(value)


def routing_for_task(store: RoutingStore, *, owner: bool = False) -> RoutingTable:
    """The routing version of this task's micro-batch (the current one outside a stream).

    ``owner``: the version key-group state is owned by in this batch instead
    (:meth:`RoutingStore.owner`, one watermark step behind the routing).
    """
    batch = micro_batch_id()
    if batch is not None:
        return store.get(store.owner(batch)) if owner else store.bind(batch)
    table = store.current()
    if table is None:
        raise ValueError(f"no routing version published in {store.folder}")
    return table
