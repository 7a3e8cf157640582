"""Sweeps at scale (issue 23): ``drevt-sweep -m`` against the hand-written loop, same minutes.

Case (issue 23's first row): KTH-SP2, first 30 days (``workload.max_time``), ``policy=fcfs,easy``
x ``system.total_nodes=range(LOW, HIGH)``, one deterministic seed each, tracking and report on.

- ``sweep``: the real command in a subprocess (a fresh output folder, the parsed-trace cache
  warm): Hydra, validation, every configuration's folder (config.yaml, seed_metrics.csv,
  result.json), its MLflow runs (sweep -> configuration -> seed), summary.csv, the report;
- ``hand``: ``benchmarks/hand_loop.py``, the same simulations in a ``joblib.Parallel`` loop, one CSV.

Each sweep makes a new MLflow store (a user's first sweep) unless ``--warm-store``: then they
all write to one store made before the first repeat (a user's later sweeps). They alternate (``--repeats``) so that a noisy neighbour hits both; each row has the wall time,
the CPU seconds of the process and its children, and the sweep's peak RSS. The sweep's own
phases come from its configurations' ``result.json`` marks.

Other rows of issue 23's table:

- ``--case seeds``: 100 seeds of one configuration (``drevt-sweep replicates=100
  run_time=lognormal policy=easy``, no ``-m``, KTH-SP2 whole, warm store) against its seeds
  alone (``run_seeds`` on 2 fresh loky workers in a process holding the parsed trace), both
  from ``bench_sweep.py`` (issue 16's definitions), alternated; target wall <= 1.5 x + 2 s;
- ``--case whole``: the 10,000-configuration sweep, whole (``--high 5060 --days 3``: fcfs,easy
  x 5,000 machine sizes on KTH-SP2's first 3 days) against the hand loop, and the sweep's peak
  RSS (target <= 1 GB); long on a loaded machine: run it once, in the background, with nice.

    python benchmarks/bench_sweep_scale.py [--low 60 --high 160] [--days 30] [--repeats 1] [--warm-store]
    python benchmarks/bench_sweep_scale.py --case seeds [--repeats 3]
    nice python benchmarks/bench_sweep_scale.py --case whole --high 5060 --days 3
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DAYS = 30  # (--days)


def _timed(cmd: list[str], cwd: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed:\n{proc.stderr[-3000:]}")
    return {"wall_s": round(wall, 1),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            "peak_rss_mb": round(after.ru_maxrss / 1024)}


def _trace_cache() -> Path:
    """The parsed-trace cache the hand loop reads (``api.simulate_trace``'s default), warm for
    both sides; the sweep's own default, ``<output_root>/cache``, would be new in every fresh
    output folder and parse the SWF again (0.15 s) where the hand loop does not."""
    sys.path.insert(0, str(HERE.parent))
    from drevt_sweep.trace.cache import default_cache_dir

    return default_cache_dir()


def sweep(low: int, high: int, folder: Path, extra: tuple[str, ...] = (), store: Path | None = None) -> dict:
    """``store``: the output root whose MLflow store the sweep writes to (an existing one: a
    user's second sweep); by default a new one in ``folder`` (a user's first)."""
    started = time.time()
    cmd = [str(Path(sys.executable).with_name("drevt-sweep")), "-m", "policy=fcfs,easy",
           "system=custom", f"system.total_nodes=range({low},{high})",
           f"workload.max_time={DAYS * 86400}", "progress=false",
           f"paths.output_root={store or folder / 'out'}", f"hydra.sweep.dir={folder / 'sweep'}",
           f"paths.cache_dir={_trace_cache()}", *extra]
    row = _timed(cmd, folder)
    results = [json.loads(p.read_text()) for p in (folder / "sweep").glob("*/result.json")]
    assert len(results) == 2 * (high - low) and all(r["status"] == "FINISHED" for r in results)
    first = min(r["marks"]["configuration"] for r in results)
    start = min(r["marks"]["main"] for r in results)
    last = max(r["marks"]["result"] for r in results)
    row.update(configurations=len(results), first_configuration_s=round(first - start, 1),
               last_result_s=round(last - started, 1),  # the rest: summary, report, sweep run
               load=os.getloadavg()[0])
    log = folder / "sweep" / "drevt-sweep.log"  # the engine's per-configuration CPU line
    lines = [l for l in log.read_text().splitlines() if "per configuration: composing" in l] \
        if log.is_file() else []
    if lines:
        row["engine_cpu_per_configuration"] = lines[-1].split("per configuration: ", 1)[1]
    return row


def hand(low: int, high: int, folder: Path) -> dict:
    cmd = [sys.executable, str(HERE / "hand_loop.py"), "--policies", "fcfs,easy",
           "--nodes", f"{low}:{high}", "--days", str(DAYS), "--out", str(folder / "hand.csv")]
    return _timed(cmd, folder)


def seeds_case(repeats: int) -> list[dict]:
    """100 seeds of one configuration against its seeds alone (``bench_sweep.py``'s runs)."""
    sys.path.insert(0, str(HERE))
    import bench_sweep

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        bench_sweep._sweep(Path(tmp), "cold", "parallel.n_jobs=2")  # the store and cache made
        for i in range(repeats):
            run = bench_sweep._sweep(Path(tmp), f"warm-{i}", "parallel.n_jobs=2")
            alone = bench_sweep._seeds_alone(Path(tmp))["seconds"]
            row = {"case": "seeds", "repeat": i, "wall_s": round(run["wall"], 2),
                   "seeds_alone_s": round(alone, 2), "allowed_s": round(1.5 * alone + 2, 2),
                   "load": os.getloadavg()[0],
                   "phases": {k: round(v, 2) for k, v in run["phases"].items()},
                   "cpu": run.get("cpu")}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def run(low: int, high: int, repeats: int, warm_store: bool = False) -> list[dict]:
    """Sweep and hand loop alternated; ``warm_store``: every sweep writes to one store, made
    by a sweep before the first repeat (not counted), as a user's sweeps after their first do."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store" if warm_store else None
        if store is not None:
            (Path(tmp) / "first").mkdir()
            sweep(low, low + 2, Path(tmp) / "first", store=store)
        for i in range(repeats):
            for name, fn in (("sweep", lambda *a: sweep(*a, store=store)), ("hand", hand)):
                folder = Path(tmp) / f"{name}{i}"
                folder.mkdir()
                row = {"case": name, "repeat": i, **fn(low, high, folder)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--low", type=int, default=60)
    parser.add_argument("--high", type=int, default=160)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--days", type=int, default=DAYS)
    parser.add_argument("--case", choices=("grid", "seeds", "whole"), default="grid")
    parser.add_argument("--warm-store", action="store_true",
                        help="the sweeps write to one existing MLflow store (a user's second sweep on)")
    args = parser.parse_args()
    DAYS = args.days
    # An installed package has its .pyc files; an editable install run with
    # PYTHONDONTWRITEBYTECODE (this VM's shell sets it) would compile every module in every
    # process of each run -- the sweep's, its workers', its helper's and the hand loop's.
    compileall.compile_dir(str(HERE.parent / "drevt_sweep"), quiet=1)
    if args.case == "seeds":
        seeds_case(args.repeats)
        raise SystemExit(0)
    rows = run(args.low, args.high, args.repeats, args.warm_store)
    for i in range(args.repeats):
        s, h = (next(r for r in rows if r["case"] == c and r["repeat"] == i) for c in ("sweep", "hand"))
        print(f"repeat {i}: sweep/hand wall {s['wall_s'] / h['wall_s']:.2f}x, "
              f"CPU {s['cpu_s'] / h['cpu_s']:.2f}x")
