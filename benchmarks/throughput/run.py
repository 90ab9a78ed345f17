"""Throughput of the default flights job and of the route-keyed job, side by side in one run.

Engines, each a process of its own; the Spark ones on the same local Spark (``local[2]``, the
default job's slots and rows per micro-batch; the baseline at its own 100,000):

* ``baseline`` — elastream at commit 8a908d8, run from a git worktree under ``work/`` (its
  ``elastream run`` with the same options);
* ``now`` — this checkout's ``elastream run``;
* ``native`` — Spark's own ``groupBy(window(...))`` per window spec, unioned into one query;
* ``builtin`` — Spark's single tumbling ``1h`` aggregation (the ceiling);
* ``flink`` — Apache Flink 2.3 (PyFlink SQL window TVFs, ``flink_job.py``), heap state,
  parallelism 2, no checkpoints; ``flink-rocksdb-cp5`` — the same with RocksDB state and an
  incremental checkpoint every 5 s. PyFlink runs from its own virtual environment
  (``--flink-python``, made by ``make bench-flink``) on a CSV copy of the input.

Jobs: ``default`` (key ``origin``, ~300 keys), ``route`` (key ``origin-destination``, 3,399
keys) and ``zipf`` (the same flights keyed by 1,000 keys drawn from Zipf z = 1.5); windows
``1h``, ``6h/1h``, ``24h/1h``; aggregates sum, count and avg of ``delay``. Per run:
``rows_per_s``, the input rows over the engine's processing time (``processing_s``: for
Spark the summed micro-batch durations, ``triggerExecution``, the first batch included; for
Flink its net job runtime), and ``rows_per_s_wall`` over the whole process's wall time
(``process_wall_s``: start-up and preparation included); for Spark also batch p50/p95 and the
mean batch of the first and the last third, for Flink the number of its last completed
checkpoint (``flink_checkpoints``); the peak resident memory of the JVMs, of the Python
driver and of the Python workers (sampled from ``/proc`` every 0.2 s; each the largest sum over
the processes of its kind); and the :mod:`oracle`'s check of every window the run wrote
(``exact``, ``windows``, ``oracle_windows`` and the differences). With ``--repeat N`` the
engines take turns, N rounds; ``medians`` holds each engine's medians, ``vs_flink`` its rows/s
over ``flink``'s. Writes ``results/throughput.csv``, ``.json`` and ``throughput.png``.

    python benchmarks/throughput/run.py [--rows N] [--engines now,flink,...] [--jobs ...]
        [--repeat N] [--flink-python PATH] [--results DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import oracle  # noqa: E402
from common import first_flights, run_meta, write_csv, write_json  # noqa: E402
from elastream.core.options import default  # noqa: E402
from elastream.workloads.replay import ROW_GROUPS  # noqa: E402
from elastream.workloads.zipf import zipf_probabilities  # noqa: E402

BASELINE = "8a908d8"
FLINK = {"flink": ("hashmap", 0), "flink-rocksdb-cp5": ("rocksdb", 5)}
"""Flink engine -> (state backend, checkpoint interval in s, 0: none)."""
ENGINES = ("baseline", "now", "native", "builtin", *FLINK)
JOBS = {"default": "origin", "route": "route", "zipf": "zipf"}
ZIPF_KEYS, ZIPF_Z, ZIPF_SEED = 1_000, 1.5, 0
"""The ``zipf`` job's keys: 1,000 keys drawn per flight from Zipf z = 1.5 (the heaviest ~39 %)."""
ROWS_PER_BATCH = default("rows_per_batch")
"""Rows per micro-batch of ``now``, ``native`` and ``builtin``: the default job's."""
BASELINE_ROWS_PER_BATCH = 100_000
"""The baseline's own default job: 100,000 rows per micro-batch."""
WINDOWS = ("1h", "6h/1h", "24h/1h")
AGGS = ("sum:delay", "count", "avg:delay")
FLINK_PYTHON = ROOT / ".venv-flink" / "bin" / "python"
FLIGHT_COLUMNS = ("date", "delay", "distance", "origin", "destination")
"""The CSV's columns for Flink (``flink_job.py`` reads them in this order), then the key's."""


def prepared_inputs(rows: int, work: Path) -> dict[str, Path]:
    """Per job, the first ``rows`` flights in time order as one file (``route``, ``zipf`` added).

    ``zipf``: a key per flight drawn from Zipf(``ZIPF_Z``) over ``ZIPF_KEYS`` keys (seeded), so
    the same flights' times and delays stream with a skewed key.
    """
    path = work / f"flights-{rows}.parquet"
    if not path.exists() or "zipf" not in pq.read_schema(path).names:
        flights = first_flights(rows)
        flights["route"] = flights["origin"] + "-" + flights["destination"]
        ranks = np.random.default_rng(ZIPF_SEED).choice(
            ZIPF_KEYS, size=len(flights), p=zipf_probabilities(ZIPF_Z, ZIPF_KEYS))
        flights["zipf"] = np.char.add("k", ranks.astype(str))
        work.mkdir(parents=True, exist_ok=True)
        flights.to_parquet(path, index=False, coerce_timestamps="us")
    return {job: path for job in JOBS}


def chunks(source: Path, work: Path, rows: int = ROWS_PER_BATCH) -> Path:
    """``source`` cut into files of ``rows`` rows, oldest first by mtime.

    Each in ``ROW_GROUPS`` row groups, as ``elastream run`` writes its replay chunks.
    """
    folder = work / f"chunks-{source.stem}-{rows}-rg{ROW_GROUPS}"
    if folder.exists() and pq.read_schema(next(folder.iterdir())).names == pq.read_schema(
            source).names:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    table = pq.read_table(source)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for index, start in enumerate(range(0, table.num_rows, rows)):
        path = tmp / f"chunk-{index:05d}.parquet"
        pq.write_table(table.slice(start, rows), path, row_group_size=-(-rows // ROW_GROUPS))
        os.utime(path, (1e9 + index, 1e9 + index))
    tmp.rename(folder)
    return folder


def flink_csv(source: Path, job: str) -> Path:
    """``source`` as ``flink_job.py`` reads it (made once, beside it): CSV without a header,
    dates as 'YYYY-MM-DD HH:MM:SS', the same rows in the same order; the job's key column after
    the flights' own when it is none of them."""
    key = JOBS[job]
    path = source.with_name(f"{source.stem}-{job}.csv")
    if not path.exists():
        table = pq.read_table(source, columns=list(dict.fromkeys((*FLIGHT_COLUMNS, key))))
        seconds = pc.cast(table["date"], pa.timestamp("s"))  # fails on sub-second times
        table = table.set_column(0, "date", pc.strftime(seconds, format="%Y-%m-%d %H:%M:%S"))
        tmp = path.with_name(path.name + ".tmp")
        pacsv.write_csv(table, tmp, write_options=pacsv.WriteOptions(
            include_header=False, quoting_style="none"))  # fails on a comma in a value
        tmp.rename(path)
    return path


def baseline_tree(work: Path) -> Path:
    """A git worktree of the baseline commit (made once)."""
    tree = work / "baseline"
    if not (tree / "src").exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force",
                        str(tree), BASELINE], check=True, capture_output=True)
    return tree


class MemoryPeaks:
    """Peak resident memory of a process tree by kind, sampled from /proc."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peaks = {"jvm": 0, "python_driver": 0, "python_workers": 0, "total": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        return {f"peak_{k}_mib": round(v / 2**20, 1) for k, v in self.peaks.items()}

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            sums = dict.fromkeys(self.peaks, 0)
            kinds: dict[int, str | None] = {}
            for pid, parent in _tree(self.pid):
                kind, rss = _kind_and_rss(pid)
                kinds[pid] = kind
                if kind == "jvm" and kinds.get(parent) == "jvm":
                    # A child the JVM is spawning (vfork, before its exec) shows the JVM's
                    # own pages: counting it would double the JVM for one sample.
                    continue
                if kind:
                    sums[kind] += rss
                    sums["total"] += rss
            for k, v in sums.items():
                self.peaks[k] = max(self.peaks[k], v)


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            out.setdefault(parent, []).append(int(entry))
    return out


def _tree(root: int) -> list[tuple[int, int]]:
    """The processes under ``root`` (itself included), parents first, with their parents."""
    children, found, todo = _children(), [], [(root, 0)]
    while todo:
        pid, parent = todo.pop()
        found.append((pid, parent))
        todo.extend((child, pid) for child in children.get(pid, []))
    return found


def _kind_and_rss(pid: int) -> tuple[str | None, int]:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return None, 0
    if "java" in cmd.split(" ", 1)[0]:
        return "jvm", rss
    if "pyspark.daemon" in cmd or "pyspark.worker" in cmd:
        return "python_workers", rss
    if "python" in cmd.split(" ", 1)[0] or "elastream" in cmd:
        return "python_driver", rss
    return None, 0


def command(engine: str, job: str, source: Path, out: Path, work: Path,
            flink_python: Path = FLINK_PYTHON, rows_per_batch: int = ROWS_PER_BATCH
            ) -> tuple[list[str], dict[str, str]]:
    """The command of one run, and its environment (the baseline at its own batch size)."""
    env = dict(os.environ)
    python = sys.executable
    if engine in ("native", "builtin"):
        return [python, str(HERE / "spark_native.py"), "--engine", engine, "--chunks",
                str(chunks(source, work, rows_per_batch)), "--key", JOBS[job], "--output",
                str(out)], env
    if engine in FLINK:
        state, checkpoint_s = FLINK[engine]
        env.pop("PYTHONPATH", None)  # PyFlink's own environment, nothing of elastream's
        return [str(flink_python), str(HERE / "flink_job.py"), "--input",
                str(flink_csv(source, job)), "--key", JOBS[job], "--output", str(out),
                "--parallelism", "2", "--state", state,
                "--checkpoint-interval-s", str(checkpoint_s)], env
    if engine == "baseline":
        env["PYTHONPATH"] = str(baseline_tree(work) / "src")
        rows_per_batch = BASELINE_ROWS_PER_BATCH
    argv = [python, "-c", "from elastream.cli.main import main; raise SystemExit(main())",
            "run", "--input", str(source), "--time-col", "date", "--key-col", JOBS[job],
            "--output", str(out), "--rows-per-batch", str(rows_per_batch)]
    for window in WINDOWS:
        argv += ["--window", window]
    for agg in AGGS:
        argv += ["--agg", agg]
    return argv, env


def measure(engine: str, job: str, source: Path, work: Path,
            flink_python: Path = FLINK_PYTHON, rows_per_batch: int = ROWS_PER_BATCH
            ) -> dict[str, Any]:
    """Run one engine on one job; its figures and the oracle's check of its windows."""
    out = work / "out" / f"{engine}-{job}"
    shutil.rmtree(out, ignore_errors=True)
    argv, env = command(engine, job, source, out, work, flink_python, rows_per_batch)
    started = time.time()
    process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    memory = MemoryPeaks(process.pid)
    stdout, _ = process.communicate()
    wall = time.time() - started
    peaks = memory.stop()
    if process.returncode != 0:
        raise RuntimeError(f"{engine} on {job} failed ({process.returncode}): {argv}")
    checkpoints = None
    if engine in FLINK:
        rows = pq.read_metadata(source).num_rows
        summary = json.loads((out / "summary.json").read_text())
        measured = flink_figures(rows, summary["net_runtime_s"])
        checkpoints = summary["last_checkpoint"]
    elif engine in ("native", "builtin"):
        report = json.loads(stdout.strip().splitlines()[-1])
        measured = figures(report["input_rows"], report["batch_ms_each"])
    else:
        batches = batches_of(out)
        rows = json.loads((out / "summary.json").read_text())["input_rows"]
        measured = figures(rows, batches)
    return {"job": job, "engine": engine, **measured, "process_wall_s": round(wall, 1),
            "rows_per_s_wall": round(measured["rows"] / wall, 1),
            "flink_checkpoints": checkpoints, **peaks,
            **oracle_check(engine, job, source, out)}


def batches_of(out: Path) -> list[int]:
    """Every micro-batch's duration of an ``elastream run`` into ``out``, from its metrics.

    The last ones without input rows too: they close the windows still open (the replay's
    punctuation), as Flink's net runtime includes its last windows.
    """
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()
               if line.strip()]
    return [ms for r in records for ms in r.get("batch_ms_each", [r["batch_ms"]])]


def oracle_check(engine: str, job: str, source: Path, out: Path) -> dict[str, Any]:
    """The oracle's check of the windows a run wrote (``builtin``: the 1h windows only)."""
    expected = oracle.expected(source, JOBS[job], (1,) if engine == "builtin" else (1, 6, 24))
    try:
        actual = (oracle.read_flink(out) if engine in FLINK
                  else oracle.read_parquet_results(out / "results"))
    except (OSError, ValueError, KeyError) as error:  # unreadable output: recorded, not fatal
        return {"windows": None, "oracle_windows": len(expected), "exact": False,
                **dict.fromkeys(oracle.COUNTS), "oracle_error": repr(error)}
    return {**oracle.check(actual, expected), "oracle_error": None}


def figures(rows: int, batch_ms: list[int]) -> dict[str, Any]:
    """Rows/s over the summed batches; p50/p95; mean batch of the first and last third."""
    ms = np.array(batch_ms, dtype=float)
    third = max(1, len(ms) // 3)
    return {"rows": rows, "batches": len(ms), "batch_seconds": round(ms.sum() / 1000, 2),
            "processing_s": round(ms.sum() / 1000, 2),
            "rows_per_s": round(rows / (ms.sum() / 1000), 1),
            "first_batch_ms": int(ms[0]), "p50_ms": int(np.percentile(ms, 50)),
            "p95_ms": int(np.percentile(ms, 95)),
            "first_third_mean_ms": int(ms[1:third + 1].mean()) if len(ms) > 1 else None,
            "last_third_mean_ms": int(ms[-third:].mean())}


def flink_figures(rows: int, net_runtime_s: float) -> dict[str, Any]:
    """Rows/s over Flink's net job runtime; Flink has no micro-batches to time."""
    return {"rows": rows, "batches": None, "batch_seconds": None,
            "processing_s": round(net_runtime_s, 2),
            "rows_per_s": round(rows / net_runtime_s, 1), "first_batch_ms": None,
            "p50_ms": None, "p95_ms": None, "first_third_mean_ms": None,
            "last_third_mean_ms": None}


def medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per job and engine over the rounds: each figure's median, the oracle's worst round
    (``exact`` only when every round was) and ``vs_flink``, rows/s over ``flink``'s median."""
    out = []
    for key in dict.fromkeys((r["job"], r["engine"]) for r in rows):
        mine = [r for r in rows if (r["job"], r["engine"]) == key]
        summary: dict[str, Any] = {"job": key[0], "engine": key[1], "rounds": len(mine)}
        for field in mine[0]:
            if field in ("job", "engine", "round", "oracle_error"):
                continue
            values = [r[field] for r in mine if r[field] is not None]
            if field == "exact":
                summary[field] = all(values)
            elif field in oracle.COUNTS:
                summary[field] = max(values, default=None)
            else:
                summary[field] = float(np.median(values)) if values else None
        out.append(summary)
    for summary in out:
        flink = next((s["rows_per_s"] for s in out
                      if s["job"] == summary["job"] and s["engine"] == "flink"), None)
        summary["vs_flink"] = round(summary["rows_per_s"] / flink, 3) if flink else None
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    jobs = sorted({r["job"] for r in rows})
    engines = [e for e in ENGINES if any(r["engine"] == e for r in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, field, label in ((axes[0], "rows_per_s",
                              "rows/s (processing: batches / Flink net runtime)"),
                             (axes[1], "peak_total_mib", "peak resident memory (MiB)")):
        width = 0.8 / len(engines)
        for i, engine in enumerate(engines):
            values = [next((r[field] or 0 for r in rows
                            if r["job"] == j and r["engine"] == engine), 0) for j in jobs]
            ax.bar(np.arange(len(jobs)) + i * width, values, width, label=engine)
        ax.set_xticks(np.arange(len(jobs)) + width * (len(engines) - 1) / 2, jobs)
        ax.set_ylabel(label)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--jobs", default=",".join(JOBS))
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds; each round runs every engine once, in turn")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    parser.add_argument("--rows-per-batch", type=int, default=ROWS_PER_BATCH,
                        help="micro-batch rows of now, native and builtin (default: the "
                        f"default job's, {ROWS_PER_BATCH:,}; the baseline runs its own, "
                        f"{BASELINE_ROWS_PER_BATCH:,})")
    parser.add_argument("--flink-python", type=Path, default=FLINK_PYTHON,
                        help="the Python of PyFlink's environment (default: .venv-flink's, "
                        "made by make bench-flink)")
    args = parser.parse_args(argv)
    engines = args.engines.split(",")
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        parser.error(f"--engines: unknown {', '.join(unknown)} (one of {', '.join(ENGINES)})")
    if any(e in FLINK for e in engines) and not args.flink_python.exists():
        raise SystemExit(f"run.py: no PyFlink Python at {args.flink_python}: run "
                         "`make bench-flink` (makes .venv-flink), or pass --flink-python PATH")
    work = HERE / "work"
    inputs = prepared_inputs(args.rows, work)
    rows = []
    for job in args.jobs.split(","):
        for round_ in range(args.repeat):
            for engine in engines:
                row = {"round": round_, **measure(engine, job, inputs[job], work,
                                                  args.flink_python, args.rows_per_batch)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    write_csv(rows, args.results / "throughput.csv")
    middle = medians(rows)
    for summary in middle:
        print(f"{summary['job']:8} {summary['engine']:18} {summary['rows_per_s']:>10,.0f} rows/s"
              f"  peak {summary['peak_total_mib']:>7,.0f} MiB  exact {summary['exact']}"
              f"  vs flink {summary['vs_flink']}", file=sys.stderr)
    write_json(args.results / "throughput.json", run_meta("throughput/run.py", argv, args),
               runs=rows, medians=middle)
    plot(middle, args.results / "throughput.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
