"""Every ``--json`` command's stdout is one JSON document, whatever the dependencies print.

Each command runs as a subprocess (as a user runs it: nothing captured or patched in-process)
and its whole stdout goes through ``json.loads``, which fails on anything before or after the
document — such as the banner highspy 1.16 prints from C when a ``highspy.Highs`` is built.
``make test`` runs this file also in the environment installed without the constraints file
(``.venv-latest``, the newest versions pyproject's ranges allow). ``elastream run``'s summary is
checked in ``test_spark_run_cli.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.report_runs import busy_steps, write_run

from elastream.algorithms.balance.highs_silent import silent_highs
from elastream.cli.json_output import JsonAnswer, print_answer, stdout_reserved
from elastream.cli.main import build_parser
from elastream.core.fd_redirect import STDERR_FD, STDOUT_FD, redirected

MIGRATION = {
    "work": [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8],
    "state": [2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5],
    "intervals": [[0, 4], [4, 8], [8, 12]],
    "target_nodes": 4,
    "tau": 0.5,
    "mtm": [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0.5, 0.5], [0, 0, 0.6, 0, 0.4],
            [0, 0, 0.3, 0.7, 0]],
}

CORES = {
    "executors": [{"rate": 900.0, "service_rate": 250.0, "state": 8e6, "intensity": 1.2e6,
                   "node": 0},
                  {"rate": 1500.0, "service_rate": 250.0, "state": 2e6, "intensity": 6e6,
                   "node": 1}],
    "nodes": [8, 8], "latency_target": 0.006,
}

FUSION = {
    "operators": [{"id": "op1", "pa": ["user", "area"]}, {"id": "op2", "pa": ["area"]},
                  {"id": "op3", "pa": []}],
    "edges": [{"from": "op1", "to": "op2", "rate": 10.0},
              {"from": "op2", "to": "op3", "rate": 1.0}],
}


def random_snapshot(nodes: int, key_groups: int, seed: int) -> dict[str, Any]:
    """A cluster snapshot with random loads, state sizes, placement and traffic."""
    rng = np.random.default_rng(seed)
    node_ids = [f"node-{i}" for i in range(nodes)]
    groups = [{"id": f"kg-{k}", "load": float(rng.uniform(0.5, 2.0)),
               "state_size": float(rng.uniform(0.5, 4)), "node": str(rng.choice(node_ids))}
              for k in range(key_groups)]
    pairs = rng.choice(key_groups, size=(key_groups // 4, 2))
    traffic = [[f"kg-{a}", f"kg-{b}", float(rng.uniform(0, 5))] for a, b in pairs if a != b]
    return {"nodes": [{"id": n} for n in node_ids], "key_groups": groups, "traffic": traffic}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "elastream.cli.main", *args],
                          capture_output=True, text=True, timeout=300, check=False)


def write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data))
    return str(path)


COMMANDS = {
    "simulate": ["simulate", "--scheme", "fish", "--scheme", "pkg", "--workers", "8",
                 "--dataset", "zipf:z=1.5,tuples=20000,keys=500"],
    "balance-milp-synthetic": ["plan", "balance", "--algo", "milp", "--nodes", "30",
                               "--key-groups", "600", "--max-migrations", "60"],
    "balance-milp-snapshot": ["plan", "balance", "--algo", "milp", "--snapshot", "{snapshot}",
                              "--max-migrations", "60"],
    "balance-albic": ["plan", "balance", "--algo", "albic", "--nodes", "12", "--key-groups",
                      "120", "--operators", "2", "--collocation", "50", "--rounds", "2",
                      "--max-migrations", "6"],
    "balance-flux-snapshot": ["plan", "balance", "--algo", "flux", "--snapshot", "{snapshot}",
                              "--max-migrations", "60"],
    "migrate-ssm": ["plan", "migrate", "--algo", "ssm", "--instance", "{instance}"],
    "migrate-mtm": ["plan", "migrate", "--algo", "mtm", "--instance", "{instance}"],
    "migrate-oms": ["plan", "migrate", "--algo", "oms", "--instance", "{instance}"],
    "cores": ["plan", "cores", "--instance", "{cores}"],
    "fuse": ["plan", "fuse", "--graph", "{graph}", "--score", "baseline"],
    "report": ["report", "--png", "{png}", "{run}"],
}
"""Every command with ``--json`` (``elastream run``'s is in test_spark_run_cli.py)."""


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_stdout_is_one_json_document(command: list[str], tmp_path: Path) -> None:
    files = {"{snapshot}": write(tmp_path / "snapshot.json", random_snapshot(30, 600, seed=5)),
             "{instance}": write(tmp_path / "instance.json", MIGRATION),
             "{cores}": write(tmp_path / "cores.json", CORES),
             "{graph}": write(tmp_path / "graph.json", FUSION),
             "{png}": str(tmp_path / "png"),
             "{run}": str(write_run(tmp_path / "run", busy_steps(), reasons=["key: missing"]))}
    done = cli(*[files.get(a, a) for a in command], "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # the whole stdout: a banner or a stray line fails
    assert document


def json_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
                  ) -> set[tuple[str, ...]]:
    """Every sub-command path whose parser has ``--json`` or answers in JSON always."""
    found = {path} if "--json" in parser._option_string_actions or parser.get_default("json") \
        else set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= json_commands(sub, (*path, name))
    return found


def test_every_json_command_is_checked() -> None:
    checked = {tuple(a for a in c[:2] if not a.startswith("-")) for c in COMMANDS.values()}
    # run: test_spark_run_cli.py; kafka start, stop, produce: test_kafka_broker.py (a broker).
    assert json_commands(build_parser()) == checked | {
        ("run",), ("kafka", "start"), ("kafka", "stop"), ("kafka", "produce")}


def test_silent_highs_prints_nothing_on_stdout() -> None:
    # A fresh process: highspy 1.16 prints its banner once per process, at the first Highs().
    code = ("from elastream.algorithms.balance.highs_silent import silent_highs\n"
            "h = silent_highs()\nh.run()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_silent_highs_has_every_output_option_off() -> None:
    options = silent_highs().getOptions()
    assert options.output_flag is False
    assert options.log_to_console is False


def test_redirected_moves_what_c_writes_to_descriptor_1(capfd: pytest.CaptureFixture[str]
                                                       ) -> None:
    os.write(1, b"before\n")
    with redirected(STDOUT_FD, STDERR_FD):
        os.write(1, b"noise from C\n")
    with redirected(STDOUT_FD, os.devnull):
        os.write(1, b"silenced\n")
    os.write(1, b"after\n")
    out, err = capfd.readouterr()
    assert out == "before\nafter\n"
    assert err == "noise from C\n"


def test_a_json_answer_is_printed_alone_after_the_work(capfd: pytest.CaptureFixture[str]
                                                       ) -> None:
    with stdout_reserved(True):
        os.write(1, b"Running HiGHS 1.16.0\n")
    assert print_answer(JsonAnswer({"rows": [1, 2]}, 3)) == 3
    out, err = capfd.readouterr()
    assert json.loads(out) == {"rows": [1, 2]}
    assert err == "Running HiGHS 1.16.0\n"


def test_a_reader_closing_the_pipe_early_gets_no_traceback(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """``elastream … --json | head -c 20``: the printing stops quietly, the status stays."""
    from elastream.cli.json_output import JsonAnswer, print_answer

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the document is written
    with os.fdopen(write_end, "w") as closed:
        monkeypatch.setattr("sys.stdout", closed)
        assert print_answer(JsonAnswer({"rows": list(range(10))}, 3)) == 3
