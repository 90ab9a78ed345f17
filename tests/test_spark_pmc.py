"""PMC on Spark: the Spark map is builtins ``map`` (same results, same order, same PMC table)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests import test_migration_cli

from elastream.algorithms.migration import pmc
from elastream.cli.main import main
from elastream.runtimes.spark.pmc_map import spark_map

pytestmark = pytest.mark.spark

# 12 tasks moving between 3, 4 and 5 nodes: 58 partitionings meet tau = 0.5 (exhaustive space).
# gamma = 0.3 keeps value iteration to about 20 sweeps, i.e. 20 Spark jobs.
INSTANCE: dict[str, Any] = {**test_migration_cli.INSTANCE, "gamma": 0.3}


def small_pmc_inputs() -> tuple[pmc.StateSpace, np.ndarray, np.ndarray, np.ndarray]:
    work = np.array(INSTANCE["work"], dtype=float)
    state = np.array(INSTANCE["state"], dtype=float)
    return (pmc.exhaustive_space(work, INSTANCE["tau"], [3, 4, 5]), work, state,
            pmc.check_mtm(INSTANCE["mtm"]))


def test_results_come_back_in_maps_order(spark: Any) -> None:
    blocks = [range(lo, lo + 3) for lo in range(0, 30, 3)]  # 10 items over 4 uneven slices
    with spark_map(spark, slices=4) as smap:
        assert smap(sum, blocks) == list(map(sum, blocks))
        assert smap(sum, []) == []


def test_spark_gives_the_local_pmc_table(spark: Any) -> None:
    space, work, state, mtm = small_pmc_inputs()
    assert len(space) == 58
    local = pmc.precompute_pmc(space, work, state, 0.5, mtm, INSTANCE["gamma"])
    # broadcast_bytes=0: every keyword array travels as a broadcast, as the 72 MB costs do at
    # the benchmark's size; the read-only costs are broadcast once and kept for every sweep.
    with spark_map(spark, broadcast_bytes=0) as smap:
        costs = pmc.migration_costs(space, state, map_fn=smap)
        on_spark = pmc.precompute_pmc(space, work, state, 0.5, mtm, INSTANCE["gamma"],
                                      map_fn=smap, costs=costs)
        # A writeable array may change between calls: broadcast afresh for each one.
        few = pmc.precompute_pmc(space, work, state, 0.5, mtm, INSTANCE["gamma"], map_fn=smap,
                                 costs=np.array(costs), max_iterations=3)
    assert np.array_equal(costs, pmc.migration_costs(space, state))
    assert local.converged and local.iterations > 3
    assert np.array_equal(on_spark.values, local.values)
    assert (on_spark.iterations, on_spark.residual) == (local.iterations, local.residual)
    three = pmc.precompute_pmc(space, work, state, 0.5, mtm, INSTANCE["gamma"], max_iterations=3)
    assert np.array_equal(few.values, three.values)


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["plan", "migrate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_spark_engine_gives_the_local_plan(spark: Any, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(INSTANCE))
    plans = {}
    for engine in ("local", "spark"):
        code, out, _ = cli(["--algo", "mtm", "--instance", str(path), "--json",
                            "--pmc-engine", engine], capsys)
        assert code == 0
        plans[engine] = json.loads(out)
        del plans[engine]["solve_seconds"]
    assert plans["spark"] == plans["local"]
    assert plans["local"]["status"] == "optimal" and len(plans["local"]["intervals"]) == 4


def test_cli_fails_in_one_line_when_spark_cannot_start(tmp_path: Path) -> None:
    # A fresh process (the test session's Spark is already up): no Java where JAVA_HOME says.
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(INSTANCE))
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    done = subprocess.run([sys.executable, "-m", "elastream.cli.main", "plan", "migrate",
                           "--algo", "mtm", "--instance", str(path), "--pmc-engine", "spark"],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and not done.stdout
    assert "Traceback" not in done.stderr
    # Spark's launcher script prints its own complaint first; ours is the last line.
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("elastream plan: error: --pmc-engine spark: Spark could not start (")
    assert last.endswith("; use --pmc-engine local")
