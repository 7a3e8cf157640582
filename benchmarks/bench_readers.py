"""Trace-reader throughput: a generated 1,000,000-row simple CSV, epoch and ISO + time zone.

Targets (issue 2, on a 2-core machine): >= 1,000,000 rows/s for epoch seconds and >= 300,000
rows/s for ISO date-times in a named zone. Each case is read three times with ``read_trace``
and the median time is reported. The generated files go to ``benchmarks/.work/`` (git-ignored)
and are reused while their size matches.

Run it as ``python benchmarks/bench_readers.py``; ``run()`` returns the rows for
``benchmarks/run_all.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROWS = 1_000_000
REPEATS = 3
WORK = Path(__file__).resolve().parent / ".work"
ZONE = "America/Los_Angeles"
TARGETS = {"simple_epoch_csv": 1_000_000, "simple_iso_tz_csv": 300_000}


def _jobs(rows: int) -> pd.DataFrame:
    """A replay trace: 1M jobs over about a year, seeded, sorted by submit."""
    rng = np.random.default_rng(20240115)
    submit = 1_704_067_200 + np.sort(rng.integers(0, 365 * 86_400, rows))
    wait = rng.integers(0, 3_600, rows)
    run = rng.integers(1, 43_200, rows)
    queues = np.array(["pbatch", "pall", "pdebug", "pbatch1"])
    return pd.DataFrame(
        {
            "job_submit_time": submit,
            "begin_time": submit + wait,
            "end_time": submit + wait + run,
            "num_nodes": rng.integers(1, 256, rows),
            "exit_status": rng.integers(0, 2, rows),
            "queue": queues[rng.integers(0, queues.size, rows)],
            "time_limit": run + rng.integers(0, 3_600, rows),
        }
    )


def _iso_local(epoch: pd.Series) -> pd.Series:
    """Wall-clock ISO text in ZONE (what a local export would write)."""
    local = pd.to_datetime(epoch, unit="s", utc=True).dt.tz_convert(ZONE).dt.tz_localize(None)
    return local.dt.strftime("%Y-%m-%dT%H:%M:%S")


def generate(rows: int = ROWS, work: Path = WORK) -> dict[str, Path]:
    work.mkdir(parents=True, exist_ok=True)
    epoch_path = work / f"simple_epoch_{rows}.csv"
    iso_path = work / f"simple_iso_{rows}.csv"
    if not (epoch_path.exists() and iso_path.exists()):
        jobs = _jobs(rows)
        jobs.to_csv(epoch_path, index=False)
        for column in ("job_submit_time", "begin_time", "end_time"):
            jobs[column] = _iso_local(jobs[column])
        jobs.to_csv(iso_path, index=False)
    return {"simple_epoch_csv": epoch_path, "simple_iso_tz_csv": iso_path}


def _time_read(path: Path, options) -> tuple[float, int]:
    from drevt_sweep.trace import read_trace

    seconds = []
    rows = 0
    for _ in range(REPEATS):
        start = time.perf_counter()
        table = read_trace(path, options)
        seconds.append(time.perf_counter() - start)
        rows = len(table)
    return statistics.median(seconds), rows


def run(rows: int = ROWS) -> list[dict]:
    from drevt_sweep.trace import ReadOptions

    paths = generate(rows)
    cases = {
        "simple_epoch_csv": ReadOptions(timestamp_format="epoch", queues="all"),
        "simple_iso_tz_csv": ReadOptions(timestamp_format="iso", timezone=ZONE, queues="all"),
    }
    results = []
    for name, options in cases.items():
        seconds, kept = _time_read(paths[name], options)
        results.append(
            {
                "benchmark": name,
                "rows": kept,
                "seconds": round(seconds, 3),
                "rows_per_s": round(kept / seconds),
                "target": TARGETS[name],
            }
        )
    return results


def main() -> int:
    results = run()
    for result in results:
        status = "ok" if result["rows_per_s"] >= result["target"] else "BELOW TARGET"
        print(
            f"{result['benchmark']:<20} {result['rows']:>9,} rows  {result['seconds']:>7.3f} s  "
            f"{result['rows_per_s']:>11,} rows/s  (target {result['target']:,}: {status})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
