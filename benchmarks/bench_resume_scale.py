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
    return {"wall_s": round(wall, 1), "load1": round(load, 1), "started": started_epoch,
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            "peak_rss_mb": round(after.ru_maxrss / 1024), "resume": resume[-1] if resume else ""}


def first_new_simulation(sweep: Path, started: float, wave: int = 256) -> float | None:
    """Seconds from the command to the hand-out of the first wave with a seed to run."""
    results = {int(p.parent.name): json.loads(p.read_text()) for p in sweep.glob("*/result.json")}
    fresh = sorted(n for n, r in results.items()
                   if len(r.get("seeds") or []) > len(r.get("reused_seeds") or []))
    if not fresh:
        return None
    first_wave = fresh[0] // wave
    members = [r for n, r in results.items() if n // wave == first_wave]
    return round(max(r["marks"]["trace_prepared"] for r in members) - started, 1)


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
