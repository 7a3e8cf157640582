"""Resume at scale (issue 23 item 5): how long ``resume=true`` takes to get going on a big sweep.

A sweep of N configurations (default 10,000: ``system.total_nodes=range(10, 10+N)`` on the
tiny test trace, one deterministic seed each, tracking on, figures off) is run in three steps in
one sweep folder:

1. ``half``: the first N/2 configurations (``range(10, 10+N/2)``), from nothing;
2. ``resume-half``: all N with ``resume=true``: N/2 seeds reused, N/2 run; the figure is the
   time from the command to the first new simulation (the first wave holding a configuration
   with a seed to run is handed out when its last configuration is prepared: its
   ``trace_prepared`` mark), and the whole command;
3. ``resume-all``: all N again with ``resume=true``: nothing left to run; the whole command.

Since a resume skips the configurations already done before composing them
(``drevt_sweep/sweep/resume.py``), ``resume-half`` prepares only the N/2 new ones and
``resume-all`` none; the log line ``resume: P of N configurations prepared, S skipped`` is
kept in each row.

The simulations are milliseconds each, so the figures are what resuming itself costs:
composing and checking N configurations, the one lookup of FINISHED seed runs, preparing and
completing every configuration. Wall and CPU seconds (process and children), load average.

    python benchmarks/bench_resume_scale.py [--configs 10000] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TINY = HERE.parent / "tests" / "data" / "traces" / "sweep_tiny.csv"


def command(folder: Path, low: int, high: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "drevt_sweep", "-m", "trace=custom", f"trace.path={TINY}",
            "format=simple", "format.queues=[all]", "system=custom",
            f"system.total_nodes=range({low},{high})", "policy=fcfs", "figures=none",
            "progress=false", f"paths.output_root={folder / 'out'}",
            f"hydra.sweep.dir={folder / 'sweep'}", *extra]


def timed(cmd: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    started_epoch, started = time.time(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=6 * 3600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    resume = [line for line in proc.stdout.splitlines() if line.startswith("resume: ")]
    skipped = [line.split("resume: ", 1)[1] for line in (proc.stdout + proc.stderr).splitlines()
               if "configurations prepared," in line]
    return {"wall_s": round(wall, 1), "load1": round(load, 1),
            "load1_end": round(os.getloadavg()[0], 1), "started": started_epoch,
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            "peak_rss_mb": round(after.ru_maxrss / 1024), "resume": resume[-1] if resume else "",
            "prepared": skipped[-1].split(" (")[0] if skipped else ""}


def first_new_simulation(sweep: Path, started: float) -> float | None:
    """Seconds from the command to the hand-out of the first wave with a seed to run: the
    engine's waves (``batch.prepared_waves``) replayed from the folder -- the configurations a
    resume skipped (``marks["resumed"]``) are in none -- and the last ``trace_prepared`` mark
    of that wave."""
    from drevt_sweep.sweep.batch import WAVE, prepared_waves

    results = {int(p.parent.name): json.loads(p.read_text()) for p in sweep.glob("*/result.json")}
    fresh = {n for n, r in results.items()
             if len(r.get("seeds") or []) > len(r.get("reused_seeds") or [])}
    if not fresh:
        return None
    skipped = {n for n, r in results.items() if "resumed" in (r.get("marks") or {})
               and (r["marks"]["resumed"] >= started)}
    for wave in prepared_waves(max(results) + 1, WAVE, lambda n: n in skipped):
        if fresh.intersection(wave):
            return round(max(results[n]["marks"]["trace_prepared"] for n in wave
                             if n in results) - started, 1)
    return None


def run(configs: int, folder: Path) -> list[dict]:
    rows = []
    half = configs // 2
    for step, high, extra in (("half", 10 + half, ()), ("resume-half", 10 + configs, ("resume=true",)),
                              ("resume-all", 10 + configs, ("resume=true",))):
        row = {"step": step, "configurations": high - 10, **timed(command(folder, 10, high, *extra))}
        if step == "resume-half":
            row["first_new_simulation_s"] = first_new_simulation(folder / "sweep", row["started"])
        row.pop("started")
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=10_000)
    parser.add_argument("--out", default=None, help="keep the sweep here (default: a temporary folder)")
    args = parser.parse_args()
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        run(args.configs, Path(args.out))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run(args.configs, Path(tmp))
