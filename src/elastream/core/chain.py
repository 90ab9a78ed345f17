"""Operator graphs: keyed windowed operators that consume the windows of others.

Enorm's data model (§4.1) gives every tuple ⟨key, value, ts₁, ts₂⟩: the complete window of an
upstream operator is a tuple of the downstream one, spanning ``[window_start, window_end)``. A
job is the *source* operator (id ``source``: the job's key, windows and aggregates over the
input records) followed by a DAG of :class:`ChainOperator`; each aggregates the windows of its
``inputs`` (fan-in: their union; the default is the operator listed before it, so a list of
operators without inputs is a linear chain), by its own key (a subset of every input's key
columns) and either per upstream window instance (``window=None``) or over a longer tumbling
window (a multiple of the inputs', aligned to the epoch: an upstream window belongs to the one
holding its start). An operator may feed several (fan-out). The job's results are the windows
of its *sinks*, the operators no other one reads (:func:`sinks`).

Operators are listed in a topological order (each after its inputs). Fusion (Enorm §4.4):
the first ``fused`` operators form the source's *component* with it when their partition
attributes (PA) intersect; its key groups hash that intersection, so every tuple a fused
operator needs is in one key group and one slot, and the component costs one shuffle. On Spark
a fused operator is one of two shapes (:func:`check_fusion`):

* **window** — one input, the source or a fused window operator, with the same key, a longer
  window and aggregates that compose (a sum of sums or of counts, a min of mins, a max of
  maxes): an extra window length of the source's consolidation, built from the shorter
  windows' partials (Enorm's consolidate → consolidate, Fig. 5.3, with Fig. 7's shared
  partials);
* **regroup** — a coarser key, per upstream window instance, of any fused operators' windows:
  grouped within the slot that emitted the instances, with no shuffle (every upstream tuple
  of one group is in one key group).

Every operator after the component is its own component: a Spark aggregation with its own
shuffle (the unfused plan), reading the windows of the source, of fused window operators or of
other unfused operators.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from elastream.core.aggregates import AggSpec, validate_aggs
from elastream.core.errors import OptionError
from elastream.core.windows import WindowSpec

SOURCE = "source"
"""The id of the job's own operator, which every graph starts from."""
COMPOSED = {("sum", "sum"): "sum", ("sum", "count"): "count", ("min", "min"): "min",
            ("max", "max"): "max"}
"""``(downstream func, upstream func) → func over the records`` for window operators."""


@dataclass(frozen=True)
class ChainOperator:
    """One operator after the source: ``id``, key columns, PA, aggregates, window and inputs.

    ``aggs`` read the inputs' output columns (``sum:sum_delay`` sums the upstream's
    ``sum_delay``); ``window``: ``None`` for each upstream window instance, else a tumbling
    window. ``partition_by``: Enorm's partition attributes, a non-empty subset of ``keys``
    (default: all of them). ``inputs``: the ids of the operators it reads (``source`` for the
    job's own); empty: the one listed before it (:func:`linked`). ``rates``: the tuples per
    unit of time each input sends (Algorithm 1's edge rates; none given: 1 each).
    """

    id: str
    keys: tuple[str, ...]
    aggs: tuple[AggSpec, ...]
    window: WindowSpec | None = None
    partition_by: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    rates: tuple[float, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        where = f"chain operator {self.id!r}"
        if not self.id or not isinstance(self.id, str) or self.id == SOURCE:
            raise OptionError("chain", f"needs an id other than {SOURCE!r} for every operator",
                              self.id)
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
        if len(set(self.inputs)) < len(self.inputs):
            raise OptionError("chain", f"{where} must not repeat an input", list(self.inputs))

    @classmethod
    def parse(cls, entry: Mapping[str, Any]) -> ChainOperator:
        """One operator of a job file or of the API's ``chain``.

        >>> ChainOperator.parse({"id": "o", "keys": ["origin"], "aggs": ["max:sum_delay"]})
        ... # doctest: +NORMALIZE_WHITESPACE
        ChainOperator(id='o', keys=('origin',), aggs=(AggSpec(func='max', column='sum_delay'),),
                      window=None, partition_by=('origin',), inputs=())
        """
        if isinstance(entry, ChainOperator):
            return entry
        allowed = {"id", "keys", "aggs", "window", "partition_by", "inputs"}
        if not isinstance(entry, Mapping) or not {"id", "keys", "aggs"} <= set(entry) \
                or not set(entry) <= allowed:
            raise OptionError("chain", "needs objects with id, keys, aggs and optionally "
                              "window, partition_by and inputs", entry)
        texts = {name: _texts(entry.get(name, ()), name) for name in
                 ("keys", "aggs", "partition_by", "inputs")}
        window = entry.get("window")
        return cls(str(entry["id"]), texts["keys"], tuple(AggSpec.parse(a) for a in texts["aggs"]),
                   None if window is None else WindowSpec.parse(str(window)),
                   texts["partition_by"], texts["inputs"])


def _texts(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) \
            or not all(isinstance(v, str) for v in value):
        raise OptionError("chain", f"{name} must be a list of names", value)
    return tuple(value)


def graph_operators(data: Mapping[str, Any]) -> tuple[ChainOperator, ...]:
    """The operators of a graph ``{"operators": [...], "edges": [...]}``, inputs from edges.

    Each edge ``{"from", "to", "rate"?}`` (rate: tuples per unit of time, default 1) makes
    ``from`` an input of ``to``; the graph's operators come in a topological order
    (:func:`ordered`). ``plan fuse`` reads the same file (an operator's ``pa`` is its
    ``partition_by``, else its ``keys``).

    >>> ops = graph_operators({
    ...     "operators": [{"id": "a", "keys": ["k"], "aggs": ["sum:sum_v"]},
    ...                   {"id": "b", "keys": ["k"], "aggs": ["max:sum_v"]}],
    ...     "edges": [{"from": "source", "to": "b"}, {"from": "source", "to": "a", "rate": 2}]})
    >>> [(op.id, op.inputs, op.rates) for op in ops]
    [('a', ('source',), (2.0,)), ('b', ('source',), (1.0,))]
    """
    if not isinstance(data, Mapping) or not {"operators", "edges"} <= set(data):
        raise OptionError("graph", "must be an object with operators and edges", data)
    entries, edges = data["operators"], data["edges"]
    if isinstance(entries, (str, Mapping)) or not isinstance(entries, Sequence) or not entries:
        raise OptionError("graph", "operators must be a non-empty list", entries)
    if isinstance(edges, (str, Mapping)) or not isinstance(edges, Sequence):
        raise OptionError("graph", "edges must be a list", edges)
    ops = [ChainOperator.parse({k: v for k, v in e.items() if k != "pa"})
           if isinstance(e, Mapping) else ChainOperator.parse(e) for e in entries]
    inputs: dict[str, list[str]] = {op.id: [] for op in ops}
    rates: dict[tuple[str, str], float] = {}
    for k, edge in enumerate(edges):
        if not isinstance(edge, Mapping) or not {"from", "to"} <= set(edge) \
                or not set(edge) <= {"from", "to", "rate"}:
            raise OptionError(f"edges[{k}]", "must be an object with from, to and optionally "
                              "rate", edge)
        source, target = str(edge["from"]), str(edge["to"])
        if target not in inputs:
            raise OptionError(f"edges[{k}].to", "must name an operator in operators", target)
        if source != SOURCE and source not in inputs:
            raise OptionError(f"edges[{k}].from", f"must name {SOURCE!r} or an operator in "
                              "operators", source)
        rate = edge.get("rate", 1.0)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate >= 0 \
                or rate == float("inf"):
            raise OptionError(f"edges[{k}].rate", "must be a finite number >= 0", rate)
        if (source, target) in rates:
            raise OptionError(f"edges[{k}]", "must not repeat an edge", f"{source} -> {target}")
        rates[source, target] = float(rate)
        inputs[target].append(source)
    for op in ops:
        if not inputs[op.id]:
            raise OptionError("edges", f"must give operator {op.id!r} an input", op.id)
    return ordered(tuple(replace(op, inputs=tuple(inputs[op.id]),
                                 rates=tuple(rates[name, op.id] for name in inputs[op.id]))
                         for op in ops))


def linked(ops: Sequence[ChainOperator]) -> tuple[ChainOperator, ...]:
    """``ops`` with their default inputs: the operator listed before (the source for the first)."""
    before = [SOURCE, *(op.id for op in ops)]
    return tuple(op if op.inputs else replace(op, inputs=(before[i],))
                 for i, op in enumerate(ops))


def is_linear(ops: Sequence[ChainOperator]) -> bool:
    """Whether ``ops`` (linked) are a chain: each reads the one listed before it alone."""
    return all(op.inputs == (before,) for op, before in
               zip(ops, [SOURCE, *(op.id for op in ops)], strict=False))


def ordered(ops: Sequence[ChainOperator]) -> tuple[ChainOperator, ...]:
    """``ops`` in a topological order, the given order kept where it is one.

    Raises :class:`OptionError` for an unknown input, a repeated id or a cycle.
    """
    ids = [op.id for op in ops]
    if len(set(ids)) < len(ids):
        raise OptionError("chain", "must not repeat an operator id", ids)
    known = {SOURCE, *ids}
    for op in ops:
        for name in op.inputs:
            if name not in known or name == op.id:
                raise OptionError("chain", f"operator {op.id!r} must read the source or other "
                                  "operators", name)
    placed: list[ChainOperator] = []
    done, left = {SOURCE}, list(ops)
    while left:
        ready = next((op for op in left if set(op.inputs) <= done), None)
        if ready is None:
            raise OptionError("chain", "operators must form no cycle", [op.id for op in left])
        placed.append(ready)
        done.add(ready.id)
        left.remove(ready)
    return tuple(placed)


def sinks(ops: Sequence[ChainOperator]) -> tuple[ChainOperator, ...]:
    """The operators no other one reads: whose windows are the job's results."""
    read = {name for op in ops for name in op.inputs}
    return tuple(op for op in ops if op.id not in read)


@dataclass(frozen=True)
class Stage:
    """What one operator produces: its key columns, outputs and window."""

    keys: tuple[str, ...]
    outputs: tuple[str, ...]
    window: WindowSpec


def stages(source_keys: Sequence[str], source_aggs: Sequence[AggSpec],
           source_windows: Sequence[WindowSpec],
           chain: Sequence[ChainOperator]) -> dict[str, Stage]:
    """Validate ``chain`` (in a topological order) against its source; each one's stage by id.

    >>> ops = linked((ChainOperator("o", ("origin",), (AggSpec("max", "sum_delay"),)),))
    >>> {k: s.keys for k, s in stages(("origin", "dest"), (AggSpec("sum", "delay"),),
    ...                               (WindowSpec.parse("1h"),), ops).items()}
    {'source': ('origin', 'dest'), 'o': ('origin',)}
    """
    if not chain:
        return {}
    if len(source_windows) != 1:
        raise OptionError("windows", "must be one window when operators are chained after "
                          "the source", [str(w) for w in source_windows])
    out = {SOURCE: Stage(tuple(source_keys), tuple(a.output_name for a in source_aggs),
                         source_windows[0])}
    chain = linked(chain)
    ids = [op.id for op in chain]
    if len(set(ids)) < len(ids):
        raise OptionError("chain", "must not repeat an operator id", ids)
    for op in chain:
        where = f"chain operator {op.id!r}"
        missing = [name for name in op.inputs if name not in out]
        if missing or not op.inputs:
            raise OptionError("chain", f"{where} must come after its inputs", missing)
        read = [out[name] for name in op.inputs]
        for stage in read:
            if not set(op.keys) <= set(stage.keys):
                raise OptionError("chain", f"{where} must key by columns of the operator before "
                                  f"it ({', '.join(stage.keys)})", list(op.keys))
            for agg in op.aggs:
                if agg.column is None or agg.column not in stage.outputs:
                    raise OptionError("chain", f"{where} must aggregate an output of the "
                                      f"operator before it ({', '.join(stage.outputs)})",
                                      agg.output_name)
        window = read[0].window
        if any(stage.window != window for stage in read):
            raise OptionError("chain", f"{where} must read inputs of one window",
                              [str(stage.window) for stage in read])
        if op.window is not None:
            if not window.is_tumbling or op.window.length_ms % window.length_ms:
                raise OptionError("chain", f"{where} needs a window that is a multiple of a "
                                  f"tumbling upstream window ({window})", str(op.window))
            window = op.window
        out[op.id] = Stage(op.keys, tuple(a.output_name for a in op.aggs), window)
    return out


def result_columns(chain: Sequence[ChainOperator]) -> tuple[str, ...]:
    """The aggregate columns of the job's results: every sink's outputs, once each.

    (An output's name holds its function, so sinks that share one agree on its type.)
    """
    return tuple(dict.fromkeys(a.output_name for op in sinks(chain) for a in op.aggs))


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
                fused: int) -> dict[str, dict[str, AggSpec]]:
    """For the source and each fused window operator: output column → its record aggregate.

    Only operators whose windows the consolidation builds: the source and the window
    operators among the first ``fused`` of ``chain`` that read one of them and compose their
    aggregates.
    """
    chain = linked(chain)
    out = {SOURCE: {a.output_name: a for a in source_aggs}}
    for op in chain[:fused]:
        upstream = out.get(op.inputs[0]) if len(op.inputs) == 1 else None
        found = composed_aggs(op, upstream) if op.window is not None and upstream else None
        if found is not None:
            out[op.id] = {agg.output_name: rec for agg, rec in zip(op.aggs, found, strict=True)}
    return out


def check_fusion(source_keys: Sequence[str], source_pa: Sequence[str],
                 source_aggs: Sequence[AggSpec], source_windows: Sequence[WindowSpec],
                 chain: Sequence[ChainOperator], fused: int) -> tuple[str, ...]:
    """Check that the first ``fused`` operators of ``chain`` can run in the source's component.

    ``chain``: in a topological order. Returns the component's PA (the intersection of its
    operators'). Raises :class:`OptionError` naming the operator that cannot be fused.
    """
    chain = linked(chain)
    built = stages(source_keys, source_aggs, source_windows, chain)
    if not 0 <= fused <= len(chain):
        raise OptionError("fused", f"must be between 0 and {len(chain)} (chained operators)",
                          fused)
    pa = set(source_pa)
    windowed = record_aggs(source_aggs, chain, fused)
    component = {SOURCE}
    for op in chain[:fused]:
        where = f"chain operator {op.id!r}"
        outside = [name for name in op.inputs if name not in component]
        if outside:
            raise OptionError("fused", f"{where} reads operators outside the source's "
                              "component, so it cannot be fused", outside)
        pa &= set(op.partition_by)
        if not pa:
            raise OptionError("fused", f"{where} shares no partition attribute with the "
                              "operators before it, so it cannot be fused", fused)
        if op.window is not None and (op.id not in windowed
                                      or op.keys != built[op.inputs[0]].keys):
            raise OptionError("fused", f"{where} can be fused only if it keeps the source's "
                              "key with composable aggregates (sum of sum or count, min of min, "
                              "max of max) over a longer window before any regrouping, or "
                              "regroups each upstream window", fused)
        component.add(op.id)
    for op in chain[fused:]:
        for name in op.inputs:
            if name in component and name not in windowed:
                raise OptionError("fused", "must not end the source's component with a "
                                  f"regrouping operator ({name!r}) that an unfused operator "
                                  f"({op.id!r}) reads", fused)
            if name in component and not built[name].window.is_tumbling:
                raise OptionError("fused", "needs tumbling windows where an unfused operator "
                                  f"follows ({built[name].window})", fused)
    return tuple(c for c in source_pa if c in pa)


def most_fused(source_keys: Sequence[str], source_pa: Sequence[str],
               source_aggs: Sequence[AggSpec], source_windows: Sequence[WindowSpec],
               chain: Sequence[ChainOperator], most: int | None = None) -> int:
    """The longest prefix of ``chain``, at most ``most`` long, that :func:`check_fusion` accepts.

    (A shorter one may be refused where a longer one is not: a regroup may end the component
    only when nothing reads it unfused.)
    """
    best = 0
    for fused in range(1, len(chain) + 1 if most is None else most + 1):
        try:
            check_fusion(source_keys, source_pa, source_aggs, source_windows, chain, fused)
        except OptionError:
            continue
        best = fused
    return best


def readers(chain: Sequence[ChainOperator]) -> dict[str, tuple[str, ...]]:
    """Each operator's readers (the operators it feeds), the source's included, in order."""
    out: dict[str, list[str]] = {SOURCE: [], **{op.id: [] for op in chain}}
    for op in chain:
        for name in op.inputs:
            out[name].append(op.id)
    return {name: tuple(found) for name, found in out.items()}


def levels(chain: Sequence[ChainOperator], fused: int) -> dict[str, int]:
    """Each unfused operator's depth: one more than its deepest unfused input's.

    An input in the source's component (the source, the first ``fused``) counts as depth 0:
    operators of one depth can run in one stage after the ones before.

    >>> ops = linked((ChainOperator("a", ("k",), (AggSpec("sum", "v"),)),
    ...               ChainOperator("b", ("k",), (AggSpec("sum", "sum_v"),))))
    >>> levels(ops, 0), levels(ops, 1)
    ({'a': 1, 'b': 2}, {'b': 1})
    """
    depth = {SOURCE: 0, **{op.id: 0 for op in chain[:fused]}}
    for op in chain[fused:]:
        depth[op.id] = 1 + max(depth[name] for name in op.inputs)
    return {op.id: depth[op.id] for op in chain[fused:]}
