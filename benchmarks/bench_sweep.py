"""The sweep: 100 seeded runs (KTH-SP2, FCFS+EASY, lognormal run times) with MLflow logging on an
embedded store in a temporary folder, through the real ``drevt-sweep`` command (issue 5).

Targets: wall time <= 30 s on 2 cores; parallel efficiency at 2 workers >= 85%; MLflow logging
<= 10% of the sweep's wall time.

Runs (each a subprocess ``drevt-sweep replicates=100 run_time=lognormal policy=easy
paths.output_root=<tmp> hydra.run.dir=<tmp>/<run> parallel.n_jobs=<k> progress=false``, timed
from ``Popen`` to exit):

1. ``cold``: n_jobs=2 in a fresh folder: creates the sqlite store (schema migration) and the
   parsed-trace cache -- a user's first sweep;
2. ``warm`` (the target figure): n_jobs=2 again, same store and cache;
3. ``serial``: n_jobs=1, same store;
4. ``untracked``: n_jobs=2 with ``tracking.enabled=false`` -- for what tracking costs;
5. ``untracked_serial``: n_jobs=1, tracking off -- with 4, for the parallel efficiency.

Runs 2-5 are repeated (``REPEATS``), interleaved (warm, serial, untracked, warm, ...) so that
a noisy neighbour hits them alike, and their medians used. ``result.json``'s ``timings`` give
the phases (``read``, ``seeds``, ``outputs``, ``figures``, ``tracking_wait``, seconds each):

- parallel efficiency = seeds(n_jobs=1) / (2 x seeds(n_jobs=2)), tracking off (``untracked``
  and ``untracked_serial`` runs): the seed phase alone; both seed phases start with the compiled
  kernel loaded. With tracking on the helper runs beside a serial seed loop but waits behind two
  workers, which skews the ratio; that figure is reported beside it;
- MLflow share of the wall time = (wall - wall with tracking off) / wall: what tracking adds to
  the sweep, since MLflow works in a helper process beside the sweep rather than in it (the
  time the sweep itself waits for the helper, ``tracking_wait``, is reported beside it);
- CPU seconds per process (the sweep, its tracking helper, its workers), sampled from /proc
  while each run goes: where the helper's cost lands on a machine with few cores.

Run it as ``python benchmarks/bench_sweep.py [--quick]``; ``run()`` returns the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KTH = ROOT / "drevt_sweep/data/traces/KTH-SP2-1996-2.1-cln.swf.gz"
REPLICATES = 100
REPEATS = {"quick": 1, "full": 5}
TARGET_WALL = 30.0
TARGET_EFFICIENCY = 0.85
TARGET_MLFLOW_SHARE = 0.10
TIMEOUT = 900.0


def _command() -> list[str]:
    script = Path(sys.executable).parent / "drevt-sweep"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "drevt_sweep"]


def _sweep(tmp: Path, run_name: str, *overrides: str, replicates: int = REPLICATES) -> dict:
    run_dir = tmp / run_name
    command = _command() + [
        f"replicates={replicates}", "run_time=lognormal", "policy=easy",
        f"paths.output_root={tmp}", f"hydra.run.dir={run_dir}", "progress=false", *overrides,
    ]
    env = dict(os.environ, DREVT_ROOT=str(ROOT))
    log_path = tmp / f"{run_name}.log"
    with open(log_path, "w") as log:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT),
                                env=env)
        cpu = _cpu_by_role(proc)
        wall = time.perf_counter() - started
    result_path = run_dir / "result.json"
    if proc.returncode != 0 or not result_path.exists():
        tail = log_path.read_text().strip().splitlines()[-4:]
        raise RuntimeError(f"drevt-sweep exit {proc.returncode}: {' | '.join(tail)}")
    result = json.loads(result_path.read_text())
    if result.get("status") != "FINISHED":
        raise RuntimeError(f"sweep {run_name} ended {result.get('status')}: {result.get('error')}")
    return {"wall": wall, "seconds": float(result["seconds"]), "timings": result.get("timings"),
            "seeds": len(result.get("seeds", [])), "cpu": cpu}


def _cpu_by_role(proc: subprocess.Popen) -> dict[str, float] | None:
    """Wait for ``proc``, sampling /proc every 20 ms: CPU seconds of the sweep's process, its
    tracking helper (a forked child running the same command line), its loky workers and the
    rest. ``None`` where /proc is missing (the run is still waited for)."""
    if not Path(f"/proc/{proc.pid}").exists():
        proc.wait(timeout=TIMEOUT)
        return None
    tick = os.sysconf("SC_CLK_TCK")
    seen: dict[int, tuple[str, float]] = {}
    deadline = time.time() + TIMEOUT
    own = None
    while proc.poll() is None and time.time() < deadline:
        todo = [proc.pid]
        while todo:
            pid = todo.pop()
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    todo += [int(c) for c in
                             Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if not cmdline and pid in seen:  # exiting: a zombie has no command line
                role = seen[pid][0]
            elif pid == proc.pid:  # (its command line changes once: at exec)
                own, role = cmdline, "sweep"
            elif b"popen_loky_posix" in cmdline:
                role = "workers"
            elif cmdline == own:
                role = "tracking helper"
            else:
                role = "other"
            seen[pid] = (role, (int(fields[11]) + int(fields[12])) / tick)
        time.sleep(0.02)
    proc.wait(timeout=max(1.0, deadline - time.time()))
    totals: dict[str, float] = {}
    for role, seconds in seen.values():
        totals[role] = round(totals.get(role, 0.0) + seconds, 2)
    return totals


def _medians(runs: list[dict]) -> dict:
    out = {"wall": statistics.median(r["wall"] for r in runs),
           "seconds": statistics.median(r["seconds"] for r in runs),
           "all_wall": [round(r["wall"], 2) for r in runs]}
    cpus = [r["cpu"] for r in runs if r.get("cpu")]
    if cpus:
        roles = sorted(set().union(*cpus))
        out["cpu"] = {k: round(statistics.median(c.get(k, 0.0) for c in cpus), 2) for k in roles}
    timings = [r["timings"] or {} for r in runs]
    keys = set.intersection(*(set(t) for t in timings))
    out["timings"] = {k: statistics.median(float(t[k]) for t in timings) for k in sorted(keys)}
    return out


def run(quick: bool = False) -> list[dict]:
    if not KTH.exists():
        return [{"benchmark": "sweep", "group": "sweep", "skipped": f"trace missing: {KTH}"}]
    repeats = REPEATS["quick" if quick else "full"]
    tmp = Path(tempfile.mkdtemp(prefix="drevt-bench-sweep-"))
    common = {"group": "sweep", "jobs": 28467, "seeds": REPLICATES}
    rows: list[dict] = []
    try:
        cold = _sweep(tmp, "cold", "parallel.n_jobs=2")
        variants = {"warm": ("parallel.n_jobs=2",), "serial": ("parallel.n_jobs=1",),
                    "untracked": ("parallel.n_jobs=2", "tracking.enabled=false"),
                    "untracked_serial": ("parallel.n_jobs=1", "tracking.enabled=false")}
        done: dict[str, list[dict]] = {name: [] for name in variants}
        for i in range(repeats):
            for name, overrides in variants.items():
                done[name].append(_sweep(tmp, f"{name}-{i}", *overrides))
        warm, serial, untracked, untracked_serial = (_medians(done[name]) for name in variants)
        # The seed phase alone, tracking off: with it on, the helper runs beside a serial
        # seed loop but waits behind two workers, which skews the ratio either way.
        seeds1, seeds2 = untracked_serial["timings"]["seeds"], untracked["timings"]["seeds"]
        efficiency = seeds1 / (2.0 * seeds2) if seeds2 > 0 else float("nan")
        tracked1, tracked2 = serial["timings"]["seeds"], warm["timings"]["seeds"]
        added = warm["wall"] - untracked["wall"]
        share = added / warm["wall"]
        waited = warm["timings"].get("tracking_wait", 0.0)
        cmd = ("drevt-sweep replicates=100 run_time=lognormal policy=easy paths.output_root=<tmp> "
               "hydra.run.dir=<tmp>/<run> progress=false parallel.n_jobs=2")
        rows += [
            {**common, "benchmark": "sweep 100 seeds, 2 workers (warm store)", "command": cmd,
             "seconds": round(warm["wall"], 2), "all_seconds": warm["all_wall"],
             "result_seconds": round(warm["seconds"], 2), "repeats": repeats,
             "timings": {k: round(v, 3) for k, v in warm["timings"].items()},
             "cpu_seconds_by_process": warm.get("cpu"),
             "target": TARGET_WALL, "target_op": "<=", "unit": "s",
             "met": warm["wall"] <= TARGET_WALL},
            {**common, "benchmark": "sweep 100 seeds, 2 workers (fresh store)", "command": cmd,
             "seconds": round(cold["wall"], 2), "result_seconds": round(cold["seconds"], 2),
             "repeats": 1, "note": "creates the sqlite store and parses the trace into the cache",
             "target": TARGET_WALL, "target_op": "<=", "unit": "s",
             "met": cold["wall"] <= TARGET_WALL},
            {**common, "benchmark": "sweep parallel efficiency, 2 workers",
             "value": round(efficiency, 3), "unit": "ratio",
             "seconds_1_worker": round(seeds1, 2), "seconds_2_workers": round(seeds2, 2),
             "wall_1_worker": round(untracked_serial["wall"], 2),
             "wall_2_workers": round(untracked["wall"], 2),
             "all_seeds_1_worker": [round(r["timings"]["seeds"], 2) for r in done["untracked_serial"]],
             "all_seeds_2_workers": [round(r["timings"]["seeds"], 2) for r in done["untracked"]],
             "tracked_seconds_1_worker": round(tracked1, 2), "tracked_seconds_2_workers": round(tracked2, 2),
             "tracked_efficiency": round(tracked1 / (2.0 * tracked2), 3) if tracked2 > 0 else None,
             "how": ("result.json timings.seeds, n_jobs=1 vs 2, tracking off (kernel loaded "
                     "before both seed phases)"),
             "target": TARGET_EFFICIENCY, "target_op": ">=", "met": efficiency >= TARGET_EFFICIENCY},
            {**common, "benchmark": "sweep MLflow share of wall time",
             "value": round(share, 3), "unit": "ratio", "mlflow_seconds": round(added, 2),
             "wall_untracked": round(untracked["wall"], 2),
             "all_wall_untracked": untracked["all_wall"],
             "tracking_wait_seconds": round(waited, 2),
             "cpu_seconds_by_process": warm.get("cpu"),
             "cpu_seconds_by_process_untracked": untracked.get("cpu"),
             "tracking_wait_share": round(waited / warm["wall"], 3),
             "how": "(wall - wall with tracking.enabled=false) / wall, medians of interleaved runs",
             "target": TARGET_MLFLOW_SHARE, "target_op": "<=", "met": share <= TARGET_MLFLOW_SHARE},
        ]
    except Exception as exc:  # noqa: BLE001 - reported as skipped, never fatal
        rows.append({"benchmark": "sweep", "group": "sweep",
                     "skipped": f"failed: {type(exc).__name__}: {exc}"})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition of each run")
    args = parser.parse_args()
    for row in run(quick=args.quick):
        print(json.dumps(row, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
