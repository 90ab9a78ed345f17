"""``elastream plan fuse``: the JSON contract, the summary, every score, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from elastream.algorithms.fusion.fuse import fuse
from elastream.algorithms.fusion.large_job import large_job
from elastream.cli.main import main

CONTRACT = ["score", "components", "inter_component_traffic_pct", "solve_seconds"]
# Enorm's Fig. 1: op1 on every attribute, op2/op3 on area, op4/op5 global; 22 tuples in all.
FIG1: dict[str, Any] = {
    "operators": [{"id": "op1", "pa": ["user", "area", "date"]}, {"id": "op2", "pa": ["area"]},
                  {"id": "op3", "pa": ["area"]}, {"id": "op4", "pa": []},
                  {"id": "op5", "pa": []}],
    "edges": [{"from": "op1", "to": "op2", "rate": 10}, {"from": "op1", "to": "op3", "rate": 10},
              {"from": "op2", "to": "op4", "rate": 1}, {"from": "op3", "to": "op5", "rate": 1}],
}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["plan", "fuse", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def write(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "graph.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


@pytest.mark.parametrize("score", ["comm", "pa", "baseline"])
def test_json_is_the_contract(score: str, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--graph", write(tmp_path, FIG1), "--score", score, "--json"], capsys)
    assert code == 0 and not err
    result = json.loads(out)  # the whole stdout is one JSON document
    assert list(result) == CONTRACT
    assert result["score"] == score
    assert result["components"] == [["op1", "op2", "op3"], ["op4"], ["op5"]]  # Fig. 2
    assert result["inter_component_traffic_pct"] == pytest.approx(100 * 2 / 22)
    assert isinstance(result["solve_seconds"], float) and result["solve_seconds"] >= 0


def test_default_score_and_seed_reach_the_library(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    g = large_job(30, seed=4)
    graph = {"operators": [{"id": o.id, "pa": sorted(o.pa)} for o in g.operators],
             "edges": [{"from": e.source, "to": e.target, "rate": e.rate} for e in g.edges]}
    path = write(tmp_path, graph)
    _, out, _ = run(["--graph", path, "--json"], capsys)
    comm = json.loads(out)
    assert comm["score"] == "comm"
    assert comm["components"] == [list(c) for c in fuse(g, score="comm").components]
    for seed in (0, 7):
        _, out, _ = run(["--graph", path, "--json", "--score", "baseline", "--seed", str(seed)],
                        capsys)
        expected = fuse(g, score="baseline", seed=seed)
        assert json.loads(out)["components"] == [list(c) for c in expected.components]


def test_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--graph", write(tmp_path, FIG1)], capsys)
    lines = out.splitlines()
    assert code == 0
    assert lines[0].startswith("score comm   components 3 of 5 operators   "
                               "inter-component traffic 9.091 %")
    assert lines[2].split() == ["1", "area", "op1", "op2", "op3"]
    assert lines[3].split() == ["2", "-", "op4"]


def test_an_edgeless_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = {"operators": [{"id": "a", "pa": ["k"]}, {"id": "b", "pa": ["k"]}], "edges": []}
    _, out, _ = run(["--graph", write(tmp_path, graph), "--json"], capsys)
    result = json.loads(out)
    assert result["components"] == [["a"], ["b"]] and result["inter_component_traffic_pct"] == 0


@pytest.mark.parametrize(("change", "message"), [
    ({"operators": []}, "operators must list at least one operator"),
    ({"edges": None}, "edges must be a JSON list, got 'NoneType'"),
    ({"extra": 1}, "extra is not a graph field (one of operators, edges)"),
    ({"operators": [{"id": "a"}]}, "operators[0].pa is required"),
    ({"operators": [{"id": "a", "pa": "area"}]}, "operators[0].pa must be a list of attribute"),
    ({"operators": [{"id": "a", "pa": [], "kind": "map"}]}, "operators[0].kind is not a field"),
    ({"operators": [{"id": 7, "pa": []}]}, "operators[0].id must be a non-empty string, got 7"),
    ({"operators": [*FIG1["operators"], {"id": "op2", "pa": []}]},
     "operators[5].id must be unique (operators[1] has it too), got 'op2'"),
    ({"edges": [{"from": "op1", "to": "op9", "rate": 1}]},
     "edges[0].to must name an operator in operators, got 'op9'"),
    ({"edges": [{"from": "op1", "to": "op1", "rate": 1}]},
     "edges[0] must join two different operators (no self loop), got 'op1'"),
    ({"edges": [{"from": "op1", "to": "op2", "rate": -2}]},
     "edges[0].rate must be a finite number >= 0, got -2"),
    ({"edges": [{"from": "op1", "to": "op2", "rate": "fast"}]}, "edges[0].rate must be a finite"),
    ({"edges": [{"from": "source", "to": "op2"}]}, "--source-pa is needed for edges from"),
    ({"edges": [{"from": "op1", "to": "op2", "rate": 1}, {"from": "op1", "to": "op2", "rate": 2}]},
     "edges[1] must not repeat edges[0], got 'op1 -> op2'"),
    ({"edges": [*FIG1["edges"], {"from": "op4", "to": "op1", "rate": 1}]},
     "edges must form no cycle, got 'op1 -> op2 -> op4 -> op1'"),
])
def test_bad_graphs_are_one_line_errors(change: dict[str, Any], message: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--graph", write(tmp_path, {**FIG1, **change}), "--json"], capsys)
    assert code == 2 and not out
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_options_fail_before_the_graph_is_read(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "missing.json")
    code, out, err = run(["--graph", missing, "--seed", "-1", "--json"], capsys)
    assert code == 2 and not out
    assert err.strip() == "elastream plan: error: --seed must be an integer >= 0, got -1"
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "fuse", "--graph", missing, "--score", "rate"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --score: invalid choice: 'rate'" in err
    assert len(err.strip().splitlines()) == 1


def test_unreadable_graphs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--graph", str(tmp_path / "missing.json")], capsys)
    assert code == 2 and "--graph must be a readable file" in err
    code, _, err = run(["--graph", write(tmp_path, "{not json")], capsys)
    assert code == 2 and "--graph must be valid JSON" in err
    code, _, err = run(["--graph", write(tmp_path, [1, 2])], capsys)
    assert code == 2 and "graph must be a JSON object with operators and edges" in err


def test_a_job_graph_file_is_read_with_its_source(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # elastream run --graph's file: keys (or partition_by) stand for pa, rates default to 1,
    # the job's own operator is "source" with --source-pa.
    job = {"operators": [{"id": "a", "keys": ["o"], "aggs": ["sum:sum_v"]},
                         {"id": "b", "keys": ["o", "d"], "partition_by": ["d"],
                          "aggs": ["sum:sum_v"], "window": "2h"},
                         {"id": "c", "keys": ["o"], "aggs": ["sum:sum_sum_v"]}],
           "edges": [{"from": "source", "to": "a"}, {"from": "source", "to": "b"},
                     {"from": "a", "to": "c", "rate": 3}],
           "fused": 1}
    code, out, err = run(["--graph", write(tmp_path, job), "--source-pa", "o,d", "--json"],
                         capsys)
    assert code == 0 and not err
    assert json.loads(out)["components"] == [["source", "a", "c"], ["b"]]
