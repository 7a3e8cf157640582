"""The sweep: 100 seeded runs (KTH-SP2, FCFS+EASY, lognormal run times) with MLflow logging on an
embedded store in a temporary folder, through the real ``drevt-sweep`` command (issues 5 and 16).

Targets (issue 16 item 4), on 2 cores, warm store and cache:
- wall time <= 1.5 x "its seeds alone" + 2 s, where *its seeds alone* is the wall time of the
  same 100 simulations (same trace, spec and seeds, composed by Hydra from the same overrides)
  fanned out over 2 fresh loky workers with ``run_seeds`` -- worker start-up and kernel loading
  included -- in a process that already holds the parsed trace: no Hydra, outputs, figures or
  tracking (``_seeds_alone``, a subprocess timing only that call);
- tracking adds <= 10% to the wall time: (wall - wall with ``tracking.enabled=false``) / wall;
- a configuration's figures <= 0.5 s (``result.json`` ``timings.figures``);
- and, from issue 5, parallel efficiency of the seed phase at 2 workers >= 85%.

Runs (each a subprocess ``drevt-sweep replicates=100 run_time=lognormal policy=easy
paths.output_root=<tmp> hydra.run.dir=<tmp>/<run> parallel.n_jobs=<k> progress=false``, timed
from ``Popen`` to exit):

1. ``cold``: n_jobs=2 in a fresh folder: creates the sqlite store (schema migration) and the
   parsed-trace cache -- a user's first sweep;
2. ``warm`` (the target figure): n_jobs=2 again, same store and cache;
3. ``serial``: n_jobs=1, same store;
4. ``untracked``: n_jobs=2 with ``tracking.enabled=false`` -- for what tracking costs;
5. ``untracked_serial``: n_jobs=1, tracking off -- with 4, for the parallel efficiency;
6. ``seeds_alone``: the seeds of 2 alone, as defined above.

Runs 2-6 are repeated (``REPEATS``), interleaved so that a noisy neighbour hits them alike, and
their medians used. Per phase, from the instants ``result.json`` records (``marks``, epoch
seconds) between the benchmark's ``Popen`` and the process's exit: Python and the app's
imports, Hydra's start-up (composing the config), reading the trace from the cache, preparing
the workload, waiting for the workers (start-up and kernel loading), the seeds, the outputs,
the figures, waiting for the tracking helper, writing result.json, and the summary and exit.
CPU seconds per process (the sweep, its tracking helper, its workers) are sampled from /proc
while each run goes: where the helper's cost lands on a machine with few cores.

Run it as ``python benchmarks/bench_sweep.py [--quick]``; ``run()`` returns the rows.
"""

from __future__ import annotations

import argparse
import compileall
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
OVERRIDES = ("run_time=lognormal", "policy=easy")
TARGET_SLOWDOWN, TARGET_SLACK = 1.5, 2.0  # wall <= 1.5 x seeds alone + 2 s
TARGET_EFFICIENCY = 0.85
TARGET_MLFLOW_SHARE = 0.10
TARGET_FIGURES = 0.5
TIMEOUT = 900.0
# Phase name -> (the mark that ends it, the mark that starts it); "popen"/"exit" are the
# benchmark's own instants.
PHASES = {
    "python and imports": ("main", "popen"),
    "hydra start-up": ("configuration", "main"),
    "  of which Hydra composing": ("composed", "main"),
    "  of which the store opening (workers starting)": ("store", "composed"),
    "trace read (cache)": ("trace", "configuration"),
    "workload and spec": ("trace_prepared", "trace"),
    "wait for workers (start-up, kernel)": ("workers", "trace_prepared"),
    "seeds": ("seeds", "workers"),
    "outputs": ("outputs", "seeds"),
    "figures": ("figures", "outputs"),
    "wait for tracking": ("tracking", "figures"),
    "result.json": ("result", "tracking"),
    "summary and exit": ("exit", "result"),
}


def _command() -> list[str]:
    script = Path(sys.executable).parent / "drevt-sweep"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "drevt_sweep"]


def _sweep(tmp: Path, run_name: str, *overrides: str, replicates: int = REPLICATES) -> dict:
    run_dir = tmp / run_name
    command = _command() + [
        f"replicates={replicates}", *OVERRIDES,
        f"paths.output_root={tmp}", f"hydra.run.dir={run_dir}", "progress=false", *overrides,
    ]
    env = dict(os.environ, DREVT_ROOT=str(ROOT))
    log_path = tmp / f"{run_name}.log"
    with open(log_path, "w") as log:
        popen = time.time()
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
    marks = {**result.get("marks", {}), "popen": popen, "exit": popen + wall}
    marks.setdefault("tracking", marks.get("figures"))  # tracking off: no wait
    phases = {name: marks[end] - marks[begin] for name, (end, begin) in PHASES.items()
              if marks.get(end) is not None and marks.get(begin) is not None}
    return {"wall": wall, "seconds": float(result["seconds"]), "timings": result.get("timings"),
            "phases": phases, "seeds": len(result.get("seeds", [])), "cpu": cpu}


SEEDS_ALONE = """
import json, sys, time
from hydra import compose, initialize_config_module
from drevt_sweep.sweep.app import run_spec
from drevt_sweep.sweep.config import register_configs
from drevt_sweep.sweep.seeds import run_seeds, seeds_for
from drevt_sweep.sweep.workload_config import workload_spec
from drevt_sweep.trace.cache import load_trace
from drevt_sweep.trace.options import read_options, resolve_trace_path

register_configs()
with initialize_config_module("drevt_sweep.conf", version_base="1.3"):
    cfg = compose("config", overrides=sys.argv[1:])
jobs = load_trace(resolve_trace_path(str(cfg.trace.path), cfg.paths.root), read_options(cfg),
                  cache_dir=cfg.paths.cache_dir)
spec = run_spec(cfg, jobs.meta.machine_nodes, workload_spec(cfg.workload, cfg.system.total_nodes))
seeds = seeds_for(spec, int(cfg.seed), int(cfg.replicates))
started = time.perf_counter()
results = run_seeds(jobs, spec, seeds, n_jobs=int(cfg.parallel.n_jobs), backend="loky")
seconds = time.perf_counter() - started
assert len(results) == len(seeds) and all(r.ok for r in results)
print(json.dumps({"seconds": seconds, "seeds": len(seeds)}))
"""


def _seeds_alone(tmp: Path, replicates: int = REPLICATES, n_jobs: int = 2) -> dict:
    """The same seeds as the sweep, fanned out over ``n_jobs`` fresh loky workers with
    ``run_seeds`` in a process that already holds the parsed trace (from the same cache)."""
    overrides = [f"replicates={replicates}", *OVERRIDES, f"paths.output_root={tmp}",
                 f"parallel.n_jobs={n_jobs}"]
    env = dict(os.environ, DREVT_ROOT=str(ROOT))
    out = subprocess.run([sys.executable, "-c", SEEDS_ALONE, *overrides], capture_output=True,
                         text=True, cwd=str(ROOT), env=env, timeout=TIMEOUT)
    if out.returncode != 0:
        raise RuntimeError(f"seeds alone: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


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


def _median_of(dicts: list[dict]) -> dict:
    keys = set.intersection(*(set(d) for d in dicts)) if dicts else set()
    return {k: statistics.median(float(d[k]) for d in dicts) for k in sorted(keys)}


def _medians(runs: list[dict]) -> dict:
    out = {"wall": statistics.median(r["wall"] for r in runs),
           "seconds": statistics.median(r["seconds"] for r in runs),
           "all_wall": [round(r["wall"], 2) for r in runs]}
    cpus = [r["cpu"] for r in runs if r.get("cpu")]
    if cpus:
        roles = sorted(set().union(*cpus))
        out["cpu"] = {k: round(statistics.median(c.get(k, 0.0) for c in cpus), 2) for k in roles}
    out["timings"] = _median_of([r["timings"] or {} for r in runs])
    phases = _median_of([r["phases"] for r in runs])
    out["phases"] = {name: round(phases[name], 3) for name in PHASES if name in phases}
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
        alone: list[float] = []
        for i in range(repeats):
            for name, overrides in variants.items():
                done[name].append(_sweep(tmp, f"{name}-{i}", *overrides))
            alone.append(_seeds_alone(tmp)["seconds"])
        warm, serial, untracked, untracked_serial = (_medians(done[name]) for name in variants)
        seeds_alone = statistics.median(alone)
        # The seed phase alone, tracking off: with it on, the helper runs beside a serial
        # seed loop but waits behind two workers, which skews the ratio either way.
        seeds1, seeds2 = untracked_serial["timings"]["seeds"], untracked["timings"]["seeds"]
        efficiency = seeds1 / (2.0 * seeds2) if seeds2 > 0 else float("nan")
        tracked1, tracked2 = serial["timings"]["seeds"], warm["timings"]["seeds"]
        added = warm["wall"] - untracked["wall"]
        share = added / warm["wall"]
        waited = warm["timings"].get("tracking_wait", 0.0)
        allowed = TARGET_SLOWDOWN * seeds_alone + TARGET_SLACK
        figures = [r["timings"]["figures"] for r in done["warm"]]
        cmd = ("drevt-sweep replicates=100 run_time=lognormal policy=easy paths.output_root=<tmp> "
               "hydra.run.dir=<tmp>/<run> progress=false parallel.n_jobs=2")
        rows += [
            {**common, "benchmark": "sweep 100 seeds, 2 workers (warm store) vs its seeds alone",
             "command": cmd, "seconds": round(warm["wall"], 2), "all_seconds": warm["all_wall"],
             "seeds_alone_seconds": round(seeds_alone, 2),
             "all_seeds_alone_seconds": [round(x, 2) for x in alone],
             "result_seconds": round(warm["seconds"], 2), "repeats": repeats,
             "phases": warm["phases"], "phases_untracked": untracked["phases"],
             "timings": {k: round(v, 3) for k, v in warm["timings"].items()},
             "cpu_seconds_by_process": warm.get("cpu"),
             "how": ("wall of the command vs 1.5 x the wall of run_seeds for the same 100 seeds on "
                     "2 fresh loky workers (start-up and kernel loading included) + 2 s; medians "
                     "of interleaved runs"),
             "target": round(allowed, 2), "target_op": "<=", "unit": "s",
             "met": warm["wall"] <= allowed},
            {**common, "benchmark": "sweep 100 seeds, 2 workers (fresh store)", "command": cmd,
             "seconds": round(cold["wall"], 2), "result_seconds": round(cold["seconds"], 2),
             "repeats": 1, "note": "creates the sqlite store and parses the trace into the cache",
             "phases": {k: round(v, 3) for k, v in cold["phases"].items()},
             "cpu_seconds_by_process": cold.get("cpu"), "unit": "s",
             "how": "reported beside the warm figure, which the target is for"},
            {**common, "benchmark": "sweep MLflow share of wall time",
             "value": round(share, 3), "unit": "ratio", "mlflow_seconds": round(added, 2),
             "wall_untracked": round(untracked["wall"], 2),
             "all_wall_untracked": untracked["all_wall"], "all_wall_tracked": warm["all_wall"],
             "tracking_wait_seconds": round(waited, 2),
             "cpu_seconds_by_process": warm.get("cpu"),
             "cpu_seconds_by_process_untracked": untracked.get("cpu"),
             "tracking_wait_share": round(waited / warm["wall"], 3),
             "how": "(wall - wall with tracking.enabled=false) / wall, medians of interleaved runs",
             "target": TARGET_MLFLOW_SHARE, "target_op": "<=", "met": share <= TARGET_MLFLOW_SHARE},
            {**common, "benchmark": "sweep figures of one configuration",
             "seconds": round(statistics.median(figures), 3),
             "all_seconds": [round(x, 3) for x in figures], "unit": "s",
             "cpu_seconds": round(warm["timings"].get("figures_cpu", float("nan")), 3),
             "how": ("result.json timings.figures of the warm runs: importing matplotlib, "
                     "drawing and encoding the three PNGs in the sweep's process (its CPU "
                     "seconds beside it)"),
             "target": TARGET_FIGURES, "target_op": "<=",
             "met": statistics.median(figures) <= TARGET_FIGURES},
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
    compileall.compile_dir(str(ROOT / "drevt_sweep"), quiet=1)  # as installed (bench_cli.py)
    for row in run(quick=args.quick):
        print(json.dumps(row, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
