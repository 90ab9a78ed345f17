"""``elastream plan migrate``: the JSON contract, the table, and one-line errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from elastream.cli.main import main

CONTRACT = ["algo", "status", "intervals", "node_of_interval", "cost", "max_load_ratio",
            "solve_seconds"]
INSTANCE: dict[str, Any] = {
    "work": [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8],
    "state": [2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5],
    "intervals": [[0, 4], [4, 8], [8, 12]],
    "target_nodes": 4,
    "tau": 0.5,
    "mtm": [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0.5, 0.5], [0, 0, 0.6, 0, 0.4],
            [0, 0, 0.3, 0.7, 0]],
    "gamma": 0.8,
}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["plan", "migrate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def write(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "instance.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


@pytest.mark.parametrize("algo", ["ssm", "mtm", "ch", "storm", "redist", "oms"])
def test_json_has_exactly_the_contract(algo: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--algo", algo, "--instance", write(tmp_path, INSTANCE), "--json"],
                         capsys)
    assert code == 0 and not err
    result = json.loads(out)
    extra = {"ch": ["reason"], "oms": ["sequence"]}.get(algo, [])  # ch breaks τ here
    assert list(result) == CONTRACT + extra
    assert result["algo"] == algo and result["solve_seconds"] >= 0
    bounds = [result["intervals"][0][0], *(ub for _, ub in result["intervals"])]
    assert bounds[0] == 0 and bounds[-1] == 12 and bounds == sorted(bounds)
    assert len(result["node_of_interval"]) == len(result["intervals"])
    if algo in ("ssm", "mtm", "oms"):
        assert result["status"] == "optimal" and len(result["intervals"]) == 4
        assert result["max_load_ratio"] <= 1.5 + 1e-9
        assert sorted(result["node_of_interval"]) == [0, 1, 2, 3]  # 3 is the new node


def test_ssm_cost_is_the_least(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, INSTANCE)
    costs = {}
    for algo in ("ssm", "storm", "redist", "ch"):
        _, out, _ = run(["--algo", algo, "--instance", path, "--json"], capsys)
        costs[algo] = json.loads(out)["cost"]
    assert costs["ssm"] == min(costs.values())


def test_oms_sequence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {**INSTANCE, "target_nodes": [4, 5, 3]}
    code, out, _ = run(["--algo", "oms", "--instance", write(tmp_path, data), "--json"], capsys)
    assert code == 0
    result = json.loads(out)
    assert [len(s["intervals"]) for s in result["sequence"]] == [4, 5, 3]
    assert result["sequence"][0]["cost"] == result["cost"]


def test_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--algo", "ssm", "--instance", write(tmp_path, INSTANCE)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("algo ssm   status optimal   n 3 -> n' 4")
    assert lines[1].startswith("cost ") and "% of all state" in lines[1]
    assert lines[2].split() == ["interval", "node", "work", "state"]
    assert len(lines) == 3 + 4 and sum("new" in line for line in lines[3:]) == 1


def test_infeasible_is_an_answer_not_an_error(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = {**INSTANCE, "tau": 0.0}
    code, out, _ = run(["--algo", "ssm", "--instance", write(tmp_path, data), "--json"], capsys)
    assert code == 0
    result = json.loads(out)
    assert result["status"] == "infeasible" and result["intervals"] == []
    assert result["cost"] is None and "need at least 6 intervals" in result["reason"]


def bad(change: str) -> Any:
    data = json.loads(json.dumps(INSTANCE))
    if change == "missing work":
        del data["work"]
    elif change == "string work":
        data["work"][2] = "x"
    elif change == "short state":
        data["state"] = data["state"][:5]
    elif change == "negative state":
        data["state"][1] = -2
    elif change == "gap":
        data["intervals"][1] = [5, 8]
    elif change == "zero nodes":
        data["target_nodes"] = 0
    elif change == "list nodes":
        data["target_nodes"] = [4, 5]
    elif change == "negative tau":
        data["tau"] = -1
    elif change == "unknown key":
        data["taus"] = 1
    elif change == "row sum":
        data["mtm"][2] = [0, 0, 0, 0.5, 0.4]
    elif change == "gamma":
        data["gamma"] = 1.5
    elif change == "no mtm":
        del data["mtm"]
    elif change == "small mtm":
        data["mtm"] = [[0, 1], [1, 0]]
    return data


@pytest.mark.parametrize(("algo", "change", "needle"), [
    ("ssm", "missing work", "work is required in the instance"),
    ("ssm", "string work", "work[2] must be a finite number, got 'x'"),
    ("ssm", "short state", "state must hold one number per task (m=12), got 5"),
    ("ssm", "negative state", "state[1] must be a finite number >= 0, got -2.0"),
    ("ssm", "gap", "intervals[1] must start where intervals[0] ends (4), got [5, 8]"),
    ("ssm", "zero nodes", "target_nodes must be an integer >= 1, got 0"),
    ("ssm", "list nodes", "target_nodes must be an integer >= 1 (a list only with --algo oms)"),
    ("ssm", "negative tau", "tau must be a finite number >= 0, got -1"),
    ("ssm", "unknown key", "taus is not an instance field (one of work, state"),
    ("mtm", "row sum", "mtm[2] must sum to 1 (or be all zero: never left), got 0.9"),
    ("mtm", "gamma", "gamma must be a number in [0, 1), got 1.5"),
    ("mtm", "no mtm", "mtm is required in the instance for --algo mtm"),
    ("mtm", "small mtm", "mtm must be at least n' x n' = 4 x 4, got [2, 2]"),
])
def test_bad_instance_fails_with_one_line(algo: str, change: str, needle: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--algo", algo, "--instance", write(tmp_path, bad(change))], capsys)
    assert code == 2 and not out
    assert needle in err and len(err.strip().splitlines()) == 1
    assert err.startswith("elastream plan: error: ")


@pytest.mark.parametrize(("content", "needle"), [
    ("{not json", "--instance must be valid JSON (Expecting property name"),
    ("[1, 2]", "instance must be a JSON object with work, state, intervals"),
])
def test_malformed_file(content: str, needle: str, tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--algo", "ssm", "--instance", write(tmp_path, content)], capsys)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--algo", "flux", "--instance", write(tmp_path, INSTANCE)], capsys)
    assert code == 2 and "--algo must be one of ssm, oms, mtm, ch, storm, redist, got 'flux'" \
        in err
    code, _, err = run(["--algo", "ssm", "--instance", str(tmp_path / "missing.json")], capsys)
    assert code == 2 and "--instance must be a readable file" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "migrate", "--algo", "ssm"])
    assert exit_info.value.code == 2
    assert "the following arguments are required: --instance" in capsys.readouterr().err


def test_pmc_engine_is_for_mtm_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, INSTANCE)
    code, out, err = run(["--algo", "ssm", "--instance", path, "--pmc-engine", "spark"], capsys)
    assert code == 2 and not out and len(err.strip().splitlines()) == 1
    assert "--pmc-engine must be local unless --algo mtm (only mtm pre-computes projected " \
        "costs), got 'spark'" in err
    code, out, _ = run(["--algo", "ssm", "--instance", path, "--pmc-engine", "local", "--json"],
                       capsys)
    assert code == 0 and json.loads(out)["algo"] == "ssm"
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "migrate", "--algo", "mtm", "--instance", path, "--pmc-engine", "gpu"])
    assert exit_info.value.code == 2
    assert "argument --pmc-engine: invalid choice: 'gpu'" in capsys.readouterr().err
