"""``elastream simulate``: every scheme on the same stream, baselines normalised as in FISH."""

from __future__ import annotations

import json

import pytest

from elastream.cli.main import main
from elastream.cli.simulate import COLUMNS


def test_simulate_prints_one_row_per_scheme_normalised_to_sg_and_fg(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "--scheme", "fg", "--scheme", "pkg", "--scheme", "fish",
                 "--workers", "8", "--dataset", "zipf:z=1.5,tuples=50000,keys=2000", "--json"])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["scheme"] for r in rows] == ["fg", "pkg", "fish"]
    assert all(set(r) == set(COLUMNS) and r["tuples"] == 50_000 for r in rows)
    fg = rows[0]
    assert fg["memory_vs_fg"] == 1.0
    # FG never replicates state but is the worst balancer on a skewed stream.
    assert all(r["memory_vs_fg"] >= 1.0 for r in rows)
    assert fg["exec_time_vs_sg"] > max(r["exec_time_vs_sg"] for r in rows[1:])
    assert all(r["exec_time_vs_sg"] >= 0.999 for r in rows)


@pytest.mark.parametrize(("args", "needle"), [
    (["--scheme", "nope", "--workers", "4"], "scheme must be one of"),
    (["--scheme", "sg", "--workers", "0"], "--workers must be an integer >= 1"),
    (["--scheme", "sg", "--workers", "4", "--dataset", "zipf:q=1"], "--dataset zipf takes"),
    (["--scheme", "sg", "--workers", "4", "--dataset", "kafka:x"], "--dataset must start with"),
])
def test_bad_options_fail_with_one_line(args: list[str], needle: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1
