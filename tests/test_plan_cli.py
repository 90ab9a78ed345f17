"""``elastream plan balance``: the contract's columns, JSON shape, snapshot assignment, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from elastream.cli.main import main
from elastream.runtimes.sim.rounds import CONTRACT_COLUMNS

SNAPSHOT: dict[str, Any] = {
    "nodes": [{"id": "a", "capacity": 1.0, "remove": False},
              {"id": "b", "capacity": 1.0, "remove": False},
              {"id": "c", "capacity": 2.0, "remove": True}],
    "key_groups": [{"id": f"k{i}", "load": float(load), "state_size": 1.0 + i % 3,
                    "node": node}
                   for i, (load, node) in enumerate(
                       [(9, "a"), (8, "a"), (7, "a"), (1, "b"), (2, "c"), (3, "c")])],
    "traffic": [["k0", "k3", 4.0], ["k1", "k4", 1.5]],
}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["plan", "balance", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def write(tmp_path: Path, data: Any, name: str = "snap.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_table_has_the_contract_columns_one_row_per_round(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--algo", "flux", "--nodes", "8", "--key-groups", "80",
                          "--operators", "4", "--vary", "20", "--collocation", "50",
                          "--max-migrations", "5", "--rounds", "3"], capsys)
    assert code == 0 and not err
    lines = out.strip().splitlines()
    assert lines[0].split() == list(CONTRACT_COLUMNS)
    assert [line.split()[:2] for line in lines[1:]] == [["1", "flux"], ["2", "flux"],
                                                        ["3", "flux"]]


def test_json_is_a_list_of_rounds_with_exactly_the_contract_fields(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--algo", "milp", "--nodes", "6", "--key-groups", "30", "--vary", "30",
                        "--max-migrations", "4", "--rounds", "2", "--remove", "n1",
                        "--time-limit", "5", "--json"], capsys)
    assert code == 0
    rows = json.loads(out)
    assert isinstance(rows, list) and len(rows) == 2
    for number, row in enumerate(rows, start=1):
        assert list(row) == list(CONTRACT_COLUMNS)
        assert row["round"] == number and row["algo"] == "milp"
        assert row["status"] in ("optimal", "feasible", "fallback", "unchanged")
        assert 0 <= row["migrations"] <= 4 and row["migration_cost"] >= 0
        assert row["collocation_factor"] == 100.0  # no traffic without --collocation
    assert rows[0]["load_index"] == pytest.approx(100.0)


def test_snapshot_prints_the_new_assignment(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, SNAPSHOT)
    code, out, _ = run(["--algo", "milp", "--snapshot", path, "--max-migrations", "3",
                        "--rounds", "2", "--json"], capsys)
    assert code == 0
    rows = json.loads(out)
    assert [set(r) for r in rows] == [{*CONTRACT_COLUMNS, "assignment"}] * 2
    for row in rows:
        assert set(row["assignment"]) == {f"k{i}" for i in range(6)}
        assert set(row["assignment"].values()) <= {"a", "b", "c"}
    assert "c" not in rows[-1]["assignment"].values()  # marked "remove": drained
    for row in rows:  # traffic: k0→k3 at 4.0, k1→k4 at 1.5
        where = row["assignment"]
        kept = 4.0 * (where["k0"] == where["k3"]) + 1.5 * (where["k1"] == where["k4"])
        assert row["collocation_factor"] == pytest.approx(100 * kept / 5.5)

    code, out, _ = run(["--algo", "flux", "--snapshot", path, "--max-migrations", "2"], capsys)
    assert code == 0
    header, assignment = out.split("# assignment after round 1 (key group: node)")
    assert header.split()[: len(CONTRACT_COLUMNS)] == list(CONTRACT_COLUMNS)
    assert set(json.loads(assignment)) == {f"k{i}" for i in range(6)}


def test_cost_budget_counts_state_size(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, SNAPSHOT)
    code, out, _ = run(["--algo", "milp", "--snapshot", path, "--max-migration-cost", "2.5",
                        "--json"], capsys)
    assert code == 0
    assert json.loads(out)[0]["migration_cost"] <= 2.5


def bad_snapshot(change: str) -> Any:
    data = json.loads(json.dumps(SNAPSHOT))
    if change == "unknown node":
        data["key_groups"][2]["node"] = "zz"
    elif change == "negative load":
        data["key_groups"][1]["load"] = -1
    elif change == "zero capacity":
        data["nodes"][0]["capacity"] = 0
    elif change == "unknown traffic kg":
        data["traffic"][1][1] = "k99"
    elif change == "duplicate id":
        data["key_groups"][3]["id"] = "k0"
    elif change == "no key_groups":
        del data["key_groups"]
    elif change == "all removed":
        for node in data["nodes"]:
            node["remove"] = True
    return data


@pytest.mark.parametrize(("change", "needle"), [
    ("unknown node", "key_groups[2].node must name a node in nodes, got 'zz'"),
    ("negative load", "key_groups[1].load must be a finite number >= 0, got -1"),
    ("zero capacity", "nodes[0].capacity must be a finite number > 0, got 0"),
    ("unknown traffic kg", "traffic[1][1] must name a key group in key_groups, got 'k99'"),
    ("duplicate id", "key_groups[3].id must be unique, got 'k0'"),
    ("no key_groups", "key_groups is required in the snapshot"),
    ("all removed", "nodes must keep at least one node with remove false"),
])
def test_bad_snapshot_fails_with_one_line(change: str, needle: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, bad_snapshot(change))
    code, out, err = run(["--algo", "flux", "--snapshot", path], capsys)
    assert code == 2 and not out
    assert needle in err and len(err.strip().splitlines()) == 1
    assert err.startswith("elastream plan: error: ")


@pytest.mark.parametrize(("args", "needle"), [
    (["--algo", "nope", "--nodes", "4", "--key-groups", "8"], "--algo must be one of hash"),
    (["--algo", "flux", "--nodes", "4"], "--key-groups is required without --snapshot"),
    (["--algo", "flux", "--nodes", "0", "--key-groups", "8"], "--nodes must be an integer >= 1"),
    (["--algo", "flux", "--nodes", "4", "--key-groups", "2"], "--key-groups must be an integer"),
    (["--algo", "flux", "--nodes", "4", "--key-groups", "8", "--vary", "150"],
     "--vary must be a percent in [0, 100], got 150.0"),
    (["--algo", "flux", "--nodes", "4", "--key-groups", "8", "--collocation", "-5"],
     "--collocation must be a percent in [0, 100], got -5.0"),
    (["--algo", "flux", "--nodes", "4", "--key-groups", "8", "--operators", "9"],
     "--operators must be at most --key-groups (8), got 9"),
    (["--algo", "flux", "--nodes", "4", "--key-groups", "8", "--remove", "n1,x"],
     "--remove must name nodes of the cluster (n0, n1, n2, …), got 'x'"),
    (["--algo", "flux", "--nodes", "2", "--key-groups", "8", "--remove", "n0,n1"],
     "--remove must leave at least one node"),
    (["--algo", "flux", "--nodes", "4", "--key-groups", "8", "--rounds", "0"],
     "--rounds must be an integer >= 1, got 0"),
    (["--algo", "flux", "--nodes", "4", "--key-groups", "8", "--max-migrations", "-1"],
     "--max-migrations must be an integer >= 0, got -1"),
    (["--algo", "flux", "--nodes", "4", "--key-groups", "8", "--max-migration-cost", "3"],
     "--max-migration-cost needs a planner with a cost budget"),
    (["--algo", "milp", "--nodes", "4", "--key-groups", "8", "--time-limit", "0"],
     "--time-limit must be a finite number of seconds > 0"),
    (["--algo", "flux", "--nodes", "4", "--key-groups", "8", "--max-migrations", "2",
      "--max-migration-cost", "3"], "not allowed with argument"),
    (["--algo", "flux", "--nodes", "four", "--key-groups", "8"], "invalid int value: 'four'"),
    (["--nodes", "4", "--key-groups", "8"], "the following arguments are required: --algo"),
])
def test_bad_options_fail_with_one_line(args: list[str], needle: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        raise SystemExit(main(["plan", "balance", *args]))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(("content", "needle"), [
    ("{not json", "--snapshot must be valid JSON (Expecting property name"),
    ("[1, 2]", "snapshot must be a JSON object with nodes and key_groups, got 'list'"),
])
def test_malformed_snapshot_file(content: str, needle: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--algo", "flux", "--snapshot", write(tmp_path, content)], capsys)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_snapshot_excludes_synthetic_options_and_must_exist(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, SNAPSHOT)
    code, _, err = run(["--algo", "flux", "--snapshot", path, "--nodes", "4"], capsys)
    assert code == 2 and "--nodes cannot be combined with --snapshot, got 4" in err
    code, _, err = run(["--algo", "flux", "--snapshot", str(tmp_path / "missing.json")],
                       capsys)
    assert code == 2 and "--snapshot must be a readable file" in err
