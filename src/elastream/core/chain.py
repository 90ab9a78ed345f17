"""Chained operators: keyed windowed operators that consume the windows of the one before.

Enorm's data model (§4.1) gives every tuple ⟨key, value, ts₁, ts₂⟩: the complete window of an
upstream operator is a tuple of the downstream one, spanning ``[window_start, window_end)``. A
job is the *source* operator (the job's key, windows and aggregates over the input records)
followed by a linear chain of :class:`ChainOperator`; each aggregates the windows of the one
before it, by its own key (a subset of the upstream key's columns) and either per upstream
window instance (``window=None``) or over a longer tumbling window (a multiple of the
upstream's, aligned to the epoch: an upstream window belongs to the one holding its start).
The job's results are the last operator's windows.

Fusion (Enorm §4.4): the first operators form the source's *component* when their partition
attributes (PA) intersect; its key groups hash that intersection, so every tuple a fused
operator needs is in one key group and one slot, and the component costs one shuffle. On Spark
a fused operator is one of two shapes (:func:`check_fusion`):

* **window** — same key as the source, a longer window, aggregates that compose (a sum of sums
  or of counts, a min of mins, a max of maxes): an extra window length of the source's
  consolidation, built from the shorter windows' partials (Enorm's consolidate → consolidate,
  Fig. 5.3, with Fig. 7's shared partials);
* **regroup** — a coarser key, per upstream window instance: grouped within the slot that
  emitted the instance, with no shuffle (every upstream tuple of one group is in one key group).

Window operators come before regroup operators. Every operator after the component is its own
component: a Spark aggregation with its own shuffle (the unfused plan).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from elastream.core.aggregates import AggSpec, validate_aggs
from elastream.core.errors import OptionError
from elastream.core.windows import WindowSpec

COMPOSED = {("sum", "sum"): "sum", ("sum", "count"): "count", ("min", "min"): "min",
            ("max", "max"): "max"}
"""``(downstream func, upstream func) → func over the records`` for window operators."""


@dataclass(frozen=True)
class ChainOperator:
    """One chained operator: ``id``, its key columns, PA, aggregates and window.

    ``aggs`` read the upstream operator's output columns (``sum:sum_delay`` sums the upstream's
    ``sum_delay``); ``window``: ``None`` for each upstream window instance, else a tumbling
    window. ``partition_by``: Enorm's partition attributes, a non-empty subset of ``keys``
    (default: all of them).
    """

    id: str
    keys: tuple[str, ...]
    aggs: tuple[AggSpec, ...]
    window: WindowSpec | None = None
    partition_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        where = f"chain operator {self.id!r}"
        if not self.id or not isinstance(self.id, str):
            raise OptionError("chain", "needs an id for every operator", self.id)
        if not self.keys or len(set(self.keys)) < len(self.keys):
            raise OptionError("chain", f"{where} must name one or more distinct key columns",
                              list(self.keys))
        if not self.partition_by:
            object.__setattr__(self, "partition_by", self.keys)
        if not set(self.partition_by) <= set(self.keys):
            raise OptionError("chain", f"{where} must partition by some of its key columns",
                              list(self.partition_by))
        validate_aggs(self.aggs)
        if self.window is not None and not self.window.is_tumbling:
            raise OptionError("chain", f"{where} needs a tumbling window (or none: each "
                              "upstream window)", str(self.window))


    @classmethod
    def parse(cls, entry: Mapping[str, Any]) -> ChainOperator:
        """One operator of a job file or of the API's ``chain``.

        >>> ChainOperator.parse({"id": "o", "keys": ["origin"], "aggs": ["max:sum_delay"]})
        ... # doctest: +NORMALIZE_WHITESPACE
        ChainOperator(id='o', keys=('origin',), aggs=(AggSpec(func='max', column='sum_delay'),),
                      window=None, partition_by=('origin',))
        """
        if isinstance(entry, ChainOperator):
            return entry
        allowed = {"id", "keys", "aggs", "window", "partition_by"}
        if not isinstance(entry, Mapping) or not {"id", "keys", "aggs"} <= set(entry) \
                or not set(entry) <= allowed:
            raise OptionError("chain", "needs objects with id, keys, aggs and optionally "
                              "window and partition_by", entry)
        texts = {name: _texts(entry.get(name, ()), name) for name in
                 ("keys", "aggs", "partition_by")}
        window = entry.get("window")
        return cls(str(entry["id"]), texts["keys"], tuple(AggSpec.parse(a) for a in texts["aggs"]),
                   None if window is None else WindowSpec.parse(str(window)),
                   texts["partition_by"])


def _texts(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) \
            or not all(isinstance(v, str) for v in value):
        raise OptionError("chain", f"{name} must be a list of names", value)
    return tuple(value)


@dataclass(frozen=True)
class Stage:
    """What one operator of a chain reads: its upstream's key columns, outputs and window."""

    keys: tuple[str, ...]
    outputs: tuple[str, ...]
    window: WindowSpec


def stages(source_keys: Sequence[str], source_aggs: Sequence[AggSpec],
           source_windows: Sequence[WindowSpec],
           chain: Sequence[ChainOperator]) -> list[Stage]:
    """Validate ``chain`` against its source; the stage each operator produces, source first.

    >>> ops = (ChainOperator("o", ("origin",), (AggSpec("max", "sum_delay"),)),)
    >>> [s.keys for s in stages(("origin", "dest"), (AggSpec("sum", "delay"),),
    ...                         (WindowSpec.parse("1h"),), ops)]
    [('origin', 'dest'), ('origin',)]
    """
    if not chain:
        return []
    if len(source_windows) != 1:
        raise OptionError("windows", "must be one window when operators are chained after "
                          "the source", [str(w) for w in source_windows])
    current = Stage(tuple(source_keys), tuple(a.output_name for a in source_aggs),
                    source_windows[0])
    out = [current]
    ids = [op.id for op in chain]
    if len(set(ids)) < len(ids):
        raise OptionError("chain", "must not repeat an operator id", ids)
    for op in chain:
        where = f"chain operator {op.id!r}"
        if not set(op.keys) <= set(current.keys):
            raise OptionError("chain", f"{where} must key by columns of the operator before "
                              f"it ({', '.join(current.keys)})", list(op.keys))
        for agg in op.aggs:
            if agg.column is None or agg.column not in current.outputs:
                raise OptionError("chain", f"{where} must aggregate an output of the operator "
                                  f"before it ({', '.join(current.outputs)})",
                                  agg.output_name)
        window = current.window
        if op.window is not None:
            if not current.window.is_tumbling or op.window.length_ms % window.length_ms:
                raise OptionError("chain", f"{where} needs a window that is a multiple of a "
                                  f"tumbling upstream window ({window})", str(op.window))
            window = op.window
        current = Stage(op.keys, tuple(a.output_name for a in op.aggs), window)
        out.append(current)
    return out


def composed_aggs(op: ChainOperator, upstream: dict[str, AggSpec]
                  ) -> tuple[AggSpec, ...] | None:
    """The record aggregates a window operator's aggregates equal, or ``None``.

    ``upstream``: the record aggregate each upstream output column equals.

    >>> src = {"sum_delay": AggSpec("sum", "delay"), "count": AggSpec("count")}
    >>> composed_aggs(ChainOperator("w", ("k",), (AggSpec("sum", "count"),),
    ...                             WindowSpec.parse("5m")), src)
    (AggSpec(func='count', column=None),)
    """
    found = []
    for agg in op.aggs:
        below = upstream.get(agg.column or "")
        func = COMPOSED.get((agg.func, below.func)) if below else None
        if below is None or func is None:
            return None
        found.append(AggSpec(func, below.column))
    return tuple(found)


def record_aggs(source_aggs: Sequence[AggSpec], chain: Sequence[ChainOperator],
                fused: int) -> dict[str, AggSpec]:
    """Output column → the record aggregate it equals, for the last fused window operator.

    The source's outputs, then each fused window operator's in turn (regroup operators keep
    their upstream's window and are left out).
    """
    upstream = {a.output_name: a for a in source_aggs}
    for op in chain[:fused]:
        found = composed_aggs(op, upstream) if op.window is not None else None
        if found is None:
            break
        upstream = {agg.output_name: rec for agg, rec in zip(op.aggs, found, strict=True)}
    return upstream


def check_fusion(source_keys: Sequence[str], source_pa: Sequence[str],
                 source_aggs: Sequence[AggSpec], source_windows: Sequence[WindowSpec],
                 chain: Sequence[ChainOperator], fused: int) -> tuple[str, ...]:
    """Check that the first ``fused`` chained operators can run in the source's component.

    Returns the component's PA (the intersection of its operators'). Raises
    :class:`OptionError` naming the operator that cannot be fused.
    """
    built = stages(source_keys, source_aggs, source_windows, chain)
    if not 0 <= fused <= len(chain):
        raise OptionError("fused", f"must be between 0 and {len(chain)} (chained operators)",
                          fused)
    pa = set(source_pa)
    regrouped = False
    upstream = {a.output_name: a for a in source_aggs}
    for i, op in enumerate(chain[:fused]):
        where = f"chain operator {op.id!r}"
        pa &= set(op.partition_by)
        if not pa:
            raise OptionError("fused", f"{where} shares no partition attribute with the "
                              "operators before it, so it cannot be fused", fused)
        found = composed_aggs(op, upstream) if op.window is not None else None
        kind = "regroup" if op.window is None else (
            "window" if op.keys == built[i].keys and found is not None else None)
        if found is not None:
            upstream = {agg.output_name: rec for agg, rec in zip(op.aggs, found, strict=True)}
        if kind is None or (kind == "window" and regrouped):
            raise OptionError("fused", f"{where} can be fused only if it keeps the source's "
                              "key with composable aggregates (sum of sum or count, min of min, "
                              "max of max) over a longer window before any regrouping, or "
                              "regroups each upstream window", fused)
        regrouped = regrouped or kind == "regroup"
    if fused < len(chain):
        if regrouped:
            raise OptionError("fused", "must not end the source's component with a regrouping "
                              "operator when operators follow it unfused", fused)
        if not built[fused].window.is_tumbling:
            raise OptionError("fused", "needs tumbling windows where an unfused operator "
                              f"follows ({built[fused].window})", fused)
    return tuple(c for c in source_pa if c in pa)


def most_fused(source_keys: Sequence[str], source_pa: Sequence[str],
               source_aggs: Sequence[AggSpec], source_windows: Sequence[WindowSpec],
               chain: Sequence[ChainOperator]) -> int:
    """The longest prefix of ``chain`` that :func:`check_fusion` accepts.

    (A shorter one may be refused where a longer one is not: a regroup may end the component
    only when nothing follows it unfused.)
    """
    best = 0
    for fused in range(1, len(chain) + 1):
        try:
            check_fusion(source_keys, source_pa, source_aggs, source_windows, chain, fused)
        except OptionError:
            continue
        best = fused
    return best
