"""``elastream plan cores``: the JSON contract, the table, infeasible answers, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from elastream.algorithms.elastic.core_allocation import allocate_cores
from elastream.cli.main import main

CONTRACT = ["status", "cores", "expected_latency", "assignment", "migration_cost", "phi",
            "solve_seconds"]
INSTANCE: dict[str, Any] = {
    "executors": [
        {"rate": 900.0, "service_rate": 250.0, "state": 8e6, "intensity": 1.2e6, "node": 0},
        {"rate": 300.0, "service_rate": 250.0, "state": 4e6, "intensity": 2e5, "node": 1},
        {"rate": 1500.0, "service_rate": 250.0, "state": 2e6, "intensity": 6e6, "node": 1}],
    "nodes": [8, 8],
    "latency_target": 0.006,
    "current": [[2, 0], [0, 4], [2, 2]],
}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["plan", "cores", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def write(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "instance.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_json_is_the_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--instance", write(tmp_path, INSTANCE), "--json"], capsys)
    assert code == 0 and not err
    result = json.loads(out)  # the whole stdout is one JSON document
    assert list(result) == CONTRACT
    expected = allocate_cores([900.0, 300.0, 1500.0], [250.0] * 3, 0.006, 16)
    assert result["cores"] == list(expected.cores) == [5, 2, 8]
    assert result["expected_latency"] == pytest.approx(expected.expected_latency)
    assert result["status"] == "feasible" and result["expected_latency"] <= 0.006
    rows = result["assignment"]
    assert [sum(r) >= k for r, k in zip(rows, result["cores"], strict=True)] == [True] * 3
    assert [sum(col) <= 8 for col in zip(*rows, strict=True)] == [True, True]
    # Executor 2 is data-intensive at 512 KB/s (6e6 / 8 per core) but node 1 cannot hold its
    # 8 cores; φ doubles once, to 1,024,000, where it is not.
    assert result["phi"] == 1_024_000.0
    assert result["migration_cost"] > 0 and result["solve_seconds"] >= 0


def test_defaults_and_optimal_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inst = {"executors": [{"rate": 100.0, "service_rate": 250.0, "state": 1.0, "intensity": 0.0,
                           "node": 0}], "nodes": [2], "latency_target": 0.01}
    code, out, _ = run(["--instance", write(tmp_path, inst), "--json"], capsys)
    result = json.loads(out)
    assert code == 0 and result["status"] == "optimal"  # fewest cores, nothing moved
    assert result["assignment"] == [[1]] and result["phi"] == 512_000.0


def test_infeasible_is_an_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inst = {**INSTANCE, "nodes": [4, 4]}  # 8 cores: stability alone needs 4 + 2 + 7 = 13
    del inst["current"]
    code, out, _ = run(["--instance", write(tmp_path, inst), "--json"], capsys)
    result = json.loads(out)
    assert code == 0 and result["status"] == "infeasible"
    assert result["cores"] == [4, 2, 7]
    assert sum(map(sum, result["assignment"])) == 8


def test_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--instance", write(tmp_path, INSTANCE)], capsys)
    assert code == 0
    assert out.startswith("status feasible   cores 15 of 16")
    assert out.splitlines()[-1].split() == ["2", "1", "1500", "8", "6", "2"]


@pytest.mark.parametrize(("change", "message"), [
    ({"executors": []}, "executors must be a non-empty list"),
    ({"nodes": [8, -1]}, "nodes[1] must be a whole number of cores >= 0"),
    ({"latency_target": 0}, "latency_target must be a finite number of seconds > 0"),
    ({"phi": "fast"}, "phi must be a finite number of bytes/s per core > 0"),
    ({"current": [[1, 0]]}, "current must have one row per executor (3)"),
    ({"current": [[9, 0], [0, 0], [0, 0]]}, "current must not use more cores of node 0"),
    ({"extra": 1}, "extra is not an instance field"),
    ({"executors": [{"rate": 1.0}]}, "executors[0].service_rate is required"),
    ({"executors": [{**INSTANCE["executors"][0], "node": 5}]},
     "executors[0].node must be an integer in [0, 1]"),
    ({"executors": [{**INSTANCE["executors"][0], "service_rate": 0}]},
     "executors[0].service_rate must be a finite number > 0"),
])
def test_bad_instances_are_one_line_errors(change: dict[str, Any], message: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--instance", write(tmp_path, {**INSTANCE, **change}), "--json"],
                         capsys)
    assert code == 2 and not out
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_unreadable_instances(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--instance", str(tmp_path / "missing.json")], capsys)
    assert code == 2 and "--instance must be a readable file" in err
    code, _, err = run(["--instance", write(tmp_path, "{not json")], capsys)
    assert code == 2 and "--instance must be valid JSON" in err
    code, _, err = run(["--instance", write(tmp_path, [1, 2])], capsys)
    assert code == 2 and "instance must be a JSON object" in err
