"""Example reports: two real ``elastream run`` jobs on local Spark, reported and photographed.

* ``fish``: the real flights (the default job: key ``origin``, windows 1h, 6h/1h, 24h/1h) with
  the ``fish`` planner on 8 slots, which splits hot keys over slots (hot: above 1/(4·8) of the
  rows, FISH's default threshold, which ORD, DFW, ATL and LAX reach; on 4 slots none does);
* ``scaling``: the same flights with the default planner in micro-batches of 12,500, scaled out
  from 2 to 4 slots at micro-batch 3 and back in to 2 at micro-batch 13, 8 key groups moved a
  micro-batch at most (live hand-offs).

Each runs ``--rows`` flights in micro-batches of ``--rows-per-batch`` (commands below), then
``elastream report`` writes its page; headless Chromium (Debian's package) renders the page to
a screenshot. Writes ``results/<name>.html`` (the page: self-contained, opens offline),
``results/<name>.jpg`` (its screenshot, JPEG to stay small) and ``results/examples.json``
(the commands, the summaries, the plots drawn and skipped). Scratch goes to ``work/``
(git-ignored), emptied at the start.

    nice -n 5 .venv/bin/python benchmarks/run_report/examples.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
from PIL import Image, ImageOps

from elastream.workloads.flights import fetch_flights

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # benchmarks/common.py
from common import positive, run_meta, write_json  # noqa: E402

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
JOBS = {
    "fish": ["--planner", "fish", "--slots", "8"],
    "scaling": ["--slots", "2", "--scale-at", "3:4", "--scale-at", "13:2", "--max-moves", "8",
                "--rows-per-batch", "12500"],
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=positive, default=300_000, help="flights (300000)")
    p.add_argument("--rows-per-batch", type=positive, default=25_000,
                   help="flights per micro-batch (25000)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    return p.parse_args(argv)


def elastream(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``elastream ARGS`` in this interpreter, run in ``cwd``; fails the program on a non-zero
    exit."""
    done = subprocess.run([sys.executable, "-m", "elastream.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"elastream {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done


def screenshot(page: Path, target: Path, scratch: Path) -> None:
    """``page`` rendered by headless Chromium, 1000 px wide, saved as a JPEG."""
    browser = shutil.which("chromium")
    if browser is None:
        sys.exit("no chromium on PATH: install Debian's chromium package (make test does)")
    png = scratch / f"{target.stem}.png"
    subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={scratch / 'profile'}",
                    f"--screenshot={png}", "--window-size=1000,9000",
                    page.resolve().as_uri()], capture_output=True, check=True, timeout=300)
    shot = Image.open(png).convert("RGB")
    ink = ImageOps.invert(shot).getbbox()  # the page's content, without the blank below it
    shot.crop((0, 0, shot.width, min(shot.height, ink[3] + 20) if ink else shot.height)).save(
        target, quality=60, optimize=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = HERE / "work" / "examples"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    flights = pd.read_parquet(fetch_flights(quiet=True)).sort_values("date", kind="stable")
    source = work / "flights.parquet"
    flights.head(args.rows).to_parquet(source, index=False)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {}
    for name, options in JOBS.items():
        # Run from the scratch folder with relative paths, as a user would: the page's title
        # and the commands kept in examples.json then name no folder of this machine.
        command = ["run", "--input", source.name, "--time-col", "date", "--key-col", "origin",
                   "--rows-per-batch", str(args.rows_per_batch), *options,
                   "--output", name, "--quiet"]
        summary = json.loads(elastream(*command, cwd=work).stdout)
        page = args.out.resolve() / f"{name}.html"
        report = json.loads(elastream("report", name, "--html", str(page), "--json",
                                      cwd=work).stdout)
        screenshot(page, args.out / f"{name}.jpg", work)
        runs[name] = {"command": ["elastream", *command], "summary": summary,
                      "plots": report["plots"], "skipped": report["skipped"]}
        print(f"{name}: {summary['input_rows']:,} rows, {len(report['plots'])} plots drawn, "
              f"skipped {sorted(report['skipped'])}", file=sys.stderr, flush=True)
    write_json(args.out / "examples.json", run_meta("run_report/examples.py", argv, args),
               runs=runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
