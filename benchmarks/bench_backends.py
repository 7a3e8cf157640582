"""The engine's task chunks on loky, a Dask LocalCluster and local Ray, same minutes (issue 23).

Case: issue 23's 200 configurations (KTH-SP2 first 30 days, ``policy=fcfs,easy`` x
``system.total_nodes=range(60,160)``, one deterministic seed each), on every local core.

Two levels, each back-end in a fresh process so that its start-up is paid as a user pays it:

- ``tasks``: ``seeds.run_tasks`` over the 200 (configuration, seed) tasks, twice in one process:
  the first call includes connecting (the LocalCluster or Ray instance starting, the workers
  importing the simulator and loading its kernel), the second is the steady state;
- ``sweep``: the whole ``drevt-sweep -m ... parallel.backend=B`` command (tracking and report on).

The back-ends alternate within each repeat (loky, dask, ray, loky, ...) so that a noisy
neighbour hits all of them. Figures: wall seconds, CPU seconds of the process and the children
it waited for, the load average. Ray binds to the machine's address, so when run as root the
whole benchmark re-runs itself in a network namespace of its own with loopback only.

    python benchmarks/bench_backends.py [--level tasks,sweep] [--backends loky,dask,ray] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DAYS = 30
LOW, HIGH = 60, 160
ISOLATED = "DREVT_BENCH_NETNS"


def _tasks():
    from drevt_sweep.api import trace_path
    from drevt_sweep.sim.workload import WorkloadSpec
    from drevt_sweep.sweep.seeds import RunSpec, SeedTask
    from drevt_sweep.trace import ReadOptions
    from drevt_sweep.trace.cache import load_trace

    jobs = load_trace(trace_path("kth_sp2"), ReadOptions(trace_format="swf", force_simulation=True))
    workload = WorkloadSpec(max_time=DAYS * 86400.0)
    tasks = [SeedTask(key, 0, RunSpec(total_nodes=nodes, priority="fcfs", backfill=backfill,
                                      workload=workload), 0)
             for key, (backfill, nodes) in enumerate(
                 (b, n) for b in ("none", "easy") for n in range(LOW, HIGH))]
    return [jobs], tasks


def inner_tasks(backend: str, chunk_size: int | None) -> dict:
    """In a fresh process: run_tasks twice (cold: start-up included; warm)."""
    from drevt_sweep.sweep.seeds import run_tasks

    traces, tasks = _tasks()
    row = {}
    for name in ("cold", "warm"):
        started, cpu = time.perf_counter(), time.process_time()
        out = run_tasks(traces, tasks, n_jobs=-1, backend=backend, chunk_size=chunk_size)
        row[f"{name}_wall_s"] = round(time.perf_counter() - started, 2)
        row[f"{name}_driver_cpu_s"] = round(time.process_time() - cpu, 2)
        assert len(out) == len(tasks) and all(r[0].ok for r in out.values())
    row["wait_mean_sum"] = sum(out[key][0].metrics["wait_mean"] for key in sorted(out))
    from drevt_sweep.sweep.backends import close_dask, close_ray

    close_dask()
    close_ray()
    return row


def _timed(cmd: list[str], cwd: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd[:6])} failed (exit {proc.returncode}):\n"
                         f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return {"wall_s": round(wall, 1),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            "stdout": proc.stdout}


def tasks_row(backend: str, folder: Path, chunk_size: int | None) -> dict:
    cmd = [sys.executable, __file__, "--inner", backend]
    if chunk_size:
        cmd += ["--chunk-size", str(chunk_size)]
    row = _timed(cmd, folder)
    row.update(json.loads(row.pop("stdout").strip().splitlines()[-1]))
    return row


def sweep_row(backend: str, folder: Path, chunk_size: int | None) -> dict:
    cmd = [str(Path(sys.executable).with_name("drevt-sweep")), "-m", "policy=fcfs,easy",
           "system=custom", f"system.total_nodes=range({LOW},{HIGH})",
           f"workload.max_time={DAYS * 86400}", "progress=false", f"parallel.backend={backend}",
           f"paths.output_root={folder / 'out'}", f"hydra.sweep.dir={folder / 'sweep'}"]
    if chunk_size:
        cmd.append(f"parallel.chunk_size={chunk_size}")
    row = _timed(cmd, folder)
    row.pop("stdout")
    results = [json.loads(p.read_text()) for p in sorted((folder / "sweep").glob("*/result.json"))]
    assert len(results) == 2 * (HIGH - LOW) and all(r["status"] == "FINISHED" for r in results)
    row["wait_mean_sum"] = sum(r["metrics"]["wait_mean"] for r in results)
    # The wave's seeds: from the last configuration prepared to the first completed.
    prepared = max(r["marks"]["trace_prepared"] for r in results)
    completed = min(r["marks"]["seeds"] for r in results)
    row["seeds_wall_s"] = round(completed - prepared, 1)
    return row


def run(levels: list[str], backends: list[str], repeats: int, chunk_size: int | None) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            for level in levels:
                for backend in backends:
                    folder = Path(tmp) / f"{level}-{backend}-{i}"
                    folder.mkdir()
                    load = os.getloadavg()[0]
                    fn = tasks_row if level == "tasks" else sweep_row
                    row = {"level": level, "backend": backend, "repeat": i, "load1": round(load, 1),
                           **fn(backend, folder, chunk_size)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    for level in levels:
        for i in range(repeats):
            base = next((r for r in rows if r["level"] == level and r["repeat"] == i
                         and r["backend"] == "loky"), None)
            if base is None:
                continue
            for r in rows:
                if r["level"] == level and r["repeat"] == i and r["backend"] != "loky":
                    same = r["wait_mean_sum"] == base["wait_mean_sum"]
                    print(f"{level} repeat {i}: {r['backend']}/loky wall {r['wall_s'] / base['wall_s']:.2f}x, "
                          f"CPU {r['cpu_s'] / max(base['cpu_s'], 0.1):.2f}x, same results: {same}")
    return rows


def _rerun_isolated() -> None:
    unshare = shutil.which("unshare")
    if os.environ.get(ISOLATED) or unshare is None or os.geteuid() != 0:
        return
    inner = "ip link set lo up && exec " + shlex.join([sys.executable, *sys.argv])
    os.execvpe(unshare, [unshare, "--net", "sh", "-c", inner], {**os.environ, ISOLATED: "1"})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default="tasks,sweep")
    parser.add_argument("--backends", default="loky,dask,ray")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--chunk-size", type=int, default=None)
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        print(json.dumps(inner_tasks(args.inner, args.chunk_size)))
        sys.exit(0)
    if "ray" in args.backends:
        _rerun_isolated()
    run(args.level.split(","), args.backends.split(","), args.repeats, args.chunk_size)
