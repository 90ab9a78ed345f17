"""The chain model (:mod:`elastream.core.chain`): what each operator reads, what fuses, and
the errors a user gets for a chain that cannot run."""

from __future__ import annotations

import numpy as np
import pytest

from elastream.algorithms.fusion.fuse import fuse
from elastream.algorithms.fusion.graph import operator_graph
from elastream.core.aggregates import AggSpec
from elastream.core.chain import ChainOperator, check_fusion, most_fused, record_aggs
from elastream.core.errors import OptionError
from elastream.core.spec import PipelineSpec
from elastream.core.windows import WindowSpec

SUM, COUNT = AggSpec("sum", "delay"), AggSpec("count")
HOUR = (WindowSpec.parse("1h"),)


def _op(id: str, keys: tuple[str, ...], aggs: list[str], window: str | None = None,
        pa: tuple[str, ...] = ()) -> ChainOperator:
    return ChainOperator(id, keys, tuple(AggSpec.parse(a) for a in aggs),
                         None if window is None else WindowSpec.parse(window), pa)


def _spec(chain: tuple[ChainOperator, ...], fused: int | None = None, key: str = "o,d",
          pa: tuple[str, ...] = ("o",)) -> PipelineSpec:
    return PipelineSpec.of(time_col="t", key_col=key, aggs=(SUM, COUNT), windows=HOUR,
                           partition_by=pa, chain=chain, fused=fused)


def test_a_regroup_by_the_partition_attribute_fuses_and_picks_the_key_groups() -> None:
    spec = _spec((_op("per_origin", ("o",), ["max:sum_delay"]),))
    assert spec.chaining.fused == 1
    assert spec.operators[0].keys == ("o", "d")
    assert spec.operators[0].partition_by == ("o",)


def test_a_regroup_sharing_no_partition_attribute_is_not_fused() -> None:
    spec = _spec((_op("per_dest", ("d",), ["max:sum_delay"]),))
    assert spec.chaining.fused == 0 and spec.component_pa == ("o",)
    with pytest.raises(OptionError, match="shares no partition attribute"):
        _spec((_op("per_dest", ("d",), ["max:sum_delay"]),), fused=1)


def test_window_operators_compose_their_aggregates_with_the_sources() -> None:
    chain = (_op("w5", ("o", "d"), ["sum:sum_delay", "sum:count"], "5h"),
             _op("w10", ("o", "d"), ["max:sum_sum_delay"], "10h"))
    # sum of sums is a sum of the records, sum of counts their count; max of a sum is not a
    # record aggregate, so the second cannot be a consolidation length.
    assert record_aggs((SUM, COUNT), chain, 1)["w5"] == {"sum_sum_delay": SUM,
                                                   "sum_count": COUNT}
    assert most_fused(("o", "d"), ("o",), (SUM, COUNT), HOUR, chain) == 1
    with pytest.raises(OptionError, match="composable aggregates"):
        check_fusion(("o", "d"), ("o",), (SUM, COUNT), HOUR, chain, 2)


def test_a_regroup_ends_the_component_only_when_nothing_follows_it() -> None:
    chain = (_op("per_origin", ("o",), ["sum:sum_delay"]),
             _op("w5", ("o",), ["sum:sum_sum_delay"], "5h"))
    # The regroup's rows leave the partition without an event-time watermark, which the
    # Spark aggregation after it needs; and a window operator must come before any regroup.
    assert _spec(chain).chaining.fused == 0
    with pytest.raises(OptionError, match="end the source"):
        _spec(chain, fused=1)
    with pytest.raises(OptionError, match="before any regrouping"):
        _spec(chain, fused=2)


@pytest.mark.parametrize(("chain", "message"), [
    ((_op("x", ("o", "z"), ["max:sum_delay"]),), "must key by columns of the operator before"),
    ((_op("x", ("o",), ["max:delay"]),), "must aggregate an output of the operator before"),
    ((_op("x", ("o",), ["max:sum_delay"], "90m"),), "multiple of a tumbling upstream window"),
    ((_op("x", ("o",), ["max:sum_delay"]), _op("x", ("o",), ["max:max_sum_delay"])),
     "must not repeat an operator id"),
])
def test_a_chain_that_cannot_run_is_refused_naming_the_operator(
        chain: tuple[ChainOperator, ...], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        _spec(chain)


def test_chains_need_one_source_window_and_no_siblings() -> None:
    with pytest.raises(OptionError, match="must be one window"):
        PipelineSpec.of(time_col="t", key_col="o", aggs=(SUM,),
                        windows=(*HOUR, WindowSpec.parse("2h")),
                        chain=(_op("x", ("o",), ["max:sum_delay"]),))


def test_parse_names_what_is_missing() -> None:
    with pytest.raises(OptionError, match="id, keys, aggs"):
        ChainOperator.parse({"id": "x", "keys": ["o"]})
    with pytest.raises(OptionError, match="keys must be a list of names"):
        ChainOperator.parse({"id": "x", "keys": "o", "aggs": ["max:sum_delay"]})
    op = ChainOperator.parse({"id": "x", "keys": ["o"], "aggs": ["sum:sum_delay"],
                              "window": "5h"})
    assert op.window == WindowSpec.parse("5h") and op.partition_by == ("o",)


def test_a_partition_attribute_outside_the_key_is_refused() -> None:
    with pytest.raises(OptionError, match="partition_by must be some of the key's columns"):
        _spec((), pa=("x",))



@pytest.mark.parametrize("seed", range(40))
def test_the_chain_fuses_whole_exactly_when_algorithm_1_does(seed: int) -> None:
    # A linear chain of regrouping operators, every hop at the same rate (nothing observed
    # yet): Algorithm 1 (score COMM) puts the whole chain in the source's component exactly
    # when the chain model fuses it whole (their partition attributes intersect).
    rng = np.random.default_rng(seed)
    keys = ["a", "b", "c", "d"]
    current, column, chain = list(keys), "sum_delay", []
    for i in range(int(rng.integers(1, 4))):
        current = sorted(rng.choice(current, int(rng.integers(1, len(current) + 1)),
                                    replace=False).tolist())
        pa = sorted(rng.choice(current, int(rng.integers(1, len(current) + 1)),
                               replace=False).tolist())
        chain.append(ChainOperator(f"o{i}", tuple(current), (AggSpec("sum", column),), None,
                                   tuple(pa)))
        column = f"sum_{column}"
    source_pa = tuple(sorted(rng.choice(keys, int(rng.integers(1, 5)), replace=False).tolist()))
    spec = PipelineSpec.of(time_col="t", key_col=",".join(keys), aggs=(SUM,), windows=HOUR,
                           partition_by=source_pa, chain=tuple(chain))
    ops = [("src", source_pa)] + [(op.id, op.partition_by) for op in chain]
    graph = operator_graph(ops, [(ops[i][0], ops[i + 1][0], 1.0) for i in range(len(chain))])
    component = next(c for c in fuse(graph, score="comm").components if "src" in c)
    assert (len(component) == len(ops)) == (spec.chaining.fused == len(chain))


def _graph(operators: list[dict[str, object]], edges: list[tuple[str, str]],
           **extra: object) -> PipelineSpec:
    from elastream.control.fusion import planned
    from elastream.core.options import spec_values

    graph = {"operators": operators, "edges": [{"from": a, "to": b} for a, b in edges]}
    spec = PipelineSpec.of(**spec_values(dict(time="t", key="o,d", aggs=["sum:delay", "count"],
                                              windows=["1h"], partition_by=["o"], chain=graph,
                                              **extra)))
    return spec if "fused" in extra else planned(spec)


def test_a_graph_runs_algorithm_1s_component_first_and_its_sinks_are_the_results() -> None:
    # b shares no partition attribute with the source's component, so Algorithm 1 leaves it
    # (and c, which reads it) out; the component's operators come first, in order.
    spec = _graph([{"id": "b", "keys": ["d"], "aggs": ["sum:sum_delay"]},
                   {"id": "a", "keys": ["o"], "aggs": ["sum:sum_delay"]},
                   {"id": "c", "keys": ["d"], "aggs": ["max:sum_sum_delay"]}],
                  [("source", "a"), ("source", "b"), ("b", "c")])
    from elastream.core.chain import levels, result_columns, sinks

    assert [op.id for op in spec.chaining.chain] == ["a", "b", "c"]
    assert spec.chaining.fused == 1 and spec.component_pa == ("o",)
    assert [op.id for op in sinks(spec.chaining.chain)] == ["a", "c"]
    assert result_columns(spec.chaining.chain) == ("sum_sum_delay", "max_sum_sum_delay")
    assert levels(spec.chaining.chain, 1) == {"b": 1, "c": 2}


@pytest.mark.parametrize(("operators", "edges", "message"), [
    ([{"id": "a", "keys": ["o"], "aggs": ["sum:sum_delay"]}], [("a", "a")],
     "must read the source or other operators"),
    ([{"id": "a", "keys": ["o"], "aggs": ["sum:sum_delay"]},
      {"id": "b", "keys": ["o"], "aggs": ["sum:sum_sum_delay"]}],
     [("source", "a"), ("a", "b"), ("b", "a")], "operators must form no cycle"),
    ([{"id": "a", "keys": ["o"], "aggs": ["sum:sum_delay"]}], [("x", "a")],
     "must name 'source' or an operator"),
    ([{"id": "a", "keys": ["o"], "aggs": ["sum:sum_delay"]},
      {"id": "w", "keys": ["o"], "aggs": ["sum:sum_delay"], "window": "2h"},
      {"id": "c", "keys": ["o"], "aggs": ["sum:sum_sum_delay"]}],
     [("source", "a"), ("source", "w"), ("a", "c"), ("w", "c")],
     "must read inputs of one window"),
    ([{"id": "a", "keys": ["o"], "aggs": ["count:sum_delay"]},
      {"id": "b", "keys": ["d"], "aggs": ["sum:sum_delay"]},
      {"id": "c", "keys": ["d"], "aggs": ["max:sum_sum_delay"]}],
     [("source", "a"), ("source", "b"), ("b", "c")], "must give operator 'c' an input"),
])
def test_a_graph_that_cannot_run_is_refused(operators: list[dict[str, object]],
                                            edges: list[tuple[str, str]], message: str) -> None:
    if message.startswith("must give"):
        edges = edges[:2]
    with pytest.raises(OptionError, match=message):
        _graph(operators, edges)


def test_a_fused_regroup_read_by_an_unfused_operator_is_refused() -> None:
    # Its rows leave the component without an event-time watermark (and a window operator
    # fuses only before any regrouping), so by default neither fuses.
    ops = [{"id": "a", "keys": ["o"], "aggs": ["sum:sum_delay"]},
           {"id": "w", "keys": ["o"], "aggs": ["sum:sum_sum_delay"], "window": "2h"}]
    assert _graph(ops, [("source", "a"), ("a", "w")]).chaining.fused == 0
    with pytest.raises(OptionError, match="regrouping operator \\('a'\\) that an unfused"):
        _graph(ops, [("source", "a"), ("a", "w")], fused=1)
