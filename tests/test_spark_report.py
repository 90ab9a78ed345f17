"""The report of a real run's output folder: a tiny CSV job on local Spark with malformed rows
and a routing change every batch, reported through the CLI and the Python API's renderer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.report_runs import drawn_and_skipped
from tests.spark_jobs import make_spec, random_stream, run_job

from elastream.cli.main import main
from elastream.report import PLOTS

pytestmark = pytest.mark.spark

BAD = ["yesterday,k1,3.0", "2001-03-01 05:00:00,,2.0", "2001-03-01 06:00:00,k2,abc"]


def test_report_of_a_real_run(spark: Any, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    df = random_stream(seed=7, rows=200, keys=5)
    text = df.assign(ts=df["ts"].dt.strftime("%Y-%m-%d %H:%M:%S"),
                     v=df["v"].map(lambda x: "" if pd.isna(x) else repr(float(x))))
    lines = [",".join(map(str, row)) for row in text.itertuples(index=False)]
    path = tmp_path / "in.csv"
    path.write_text("ts,key,v\n" + "\n".join(lines[:50] + BAD + lines[50:]) + "\n")
    spec = make_spec(path, tmp_path / "out", aggs=["sum:v"], windows=["1h"], format="csv",
                     rows_per_batch=70)
    run = run_job(spark, spec, force_moves=True)
    capsys.readouterr()

    assert main(["report", str(spec.files.output), "--png", str(tmp_path / "png"), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    html = Path(answer["html"]).read_text()
    drawn, skipped = drawn_and_skipped(html)
    # Moves every batch hand key-group state over; no hot key is split, no scale event.
    assert {"rates", "batch-duration", "slot-load", "slot-balance", "routing", "hand-offs",
            "execution", "state-size", "dead-letter"} <= drawn
    assert "hot-keys" in skipped
    assert drawn | skipped == {p.id for p in PLOTS} and not drawn & skipped
    assert sorted(Path(p).stem for p in answer["png"]) == sorted(drawn)
    summary = json.loads((spec.files.output / "summary.json").read_text())
    assert summary["dead_letter_rows"] == len(BAD)
    assert summary["input_rows"] == len(df) + len(BAD) == run.summary["input_rows"]
    for key, value in summary.items():
        assert f'data-key="{key}">{json.dumps(value)}<' in html
    assert f'{len(BAD)} rows, {len(BAD)} reasons' in html
    for reason in ("ts: cannot parse time", "key: missing key", "v: not a number"):
        assert f"<td>{reason}</td>" in html  # the counts table
    assert "<td>v: not a number 'abc'</td>" in html  # an example row
