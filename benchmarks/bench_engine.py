"""Simulation-engine speed: the compiled kernel (and the reference, for the ratio) on real and
generated traces, against the targets of issue 5.

What is timed: ``drevt_sweep.sim.engine.simulate(jobs, run_time, total_nodes, ...)`` on a trace
that is already loaded (reading the file is not included; validation, priority ranks and the
event loop are). Each case is warmed up once first, so numba's compilation or cache load is
excluded, then timed ``REPEATS`` times and the median is reported. ``seconds`` (and jobs/s,
and the targets) use the process's CPU time (``time.process_time``): the engine runs on one
core, single-threaded, so on an idle machine this equals wall time, and on a shared one (the
2-core development machine runs other jobs) it leaves out the time other processes took the
core. The median wall time is reported beside it (``wall_seconds``), with the load average.
The reference engine (``kernel="reference"``) is timed the same way but fewer times where it is
slow (conservative: once).

Cases and targets (one core):

* ``fcfs+easy`` on KTH-SP2 (bundled) and LANL-CM5 (``<repo>/../shared/traces``): >= 1,000,000
  jobs/s; ``fcfs+conservative`` on KTH-SP2: >= 200,000 jobs/s (LANL-CM5 conservative is
  measured too, without a target). A missing trace is skipped with a message.
* growth: a generated trace (``gen_workload.py``, fixed seed, offered load 0.95, 1,024 nodes)
  of 125k, 250k, 500k and 1M jobs under fcfs+easy: the 1M run <= 10 s and each doubling of the
  size <= 2.2x the time.
* memory: peak resident set size (``ru_maxrss``) of a fresh subprocess that generates the 1M-job
  trace and simulates it (fcfs+easy) - the whole process: Python, numpy, numba, the job table
  and the engine's arrays - <= 1 GB. The same subprocess also reports the RSS just before the
  simulation, so the engine's own share is visible.

``run()`` returns one dict per row: ``benchmark``, ``jobs``, ``seconds`` (CPU), ``jobs_per_s``,
``target`` (text), ``met`` (bool, None when there is no target or the case was skipped), plus
``wall_seconds``, ``reference_jobs_per_s`` / ``speedup`` where measured and ``note``. ``python
benchmarks/bench_engine.py`` prints the table (``--quick``: fewer repetitions); ``--profile``
prints a cProfile summary of the reference engine on KTH-SP2 (what the kernel replaces).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUNDLED_KTH = REPO / "drevt_sweep" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
SHARED_TRACES = REPO.parent / "shared" / "traces"
LANL = SHARED_TRACES / "LANL-CM5-1994-4.1-cln.swf.gz"

REPEATS = 5
GROWTH_SIZES = (125_000, 250_000, 500_000, 1_000_000)
GROWTH_REPEATS = 5
TARGET_EASY = 1_000_000
TARGET_CONSERVATIVE = 200_000
TARGET_1M_SECONDS = 10.0
TARGET_DOUBLING = 2.2
TARGET_MEMORY_BYTES = 1 << 30

if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def _load_swf(path: Path):
    from drevt_sweep.trace import ReadOptions, read_trace

    return read_trace(path, ReadOptions(trace_format="swf", force_simulation=True))


def _time(fn, repeats: int) -> tuple[float, float]:
    """(median CPU seconds, median wall seconds) of ``repeats`` calls after one warm-up call."""
    fn()  # warm-up: numba compile / cache load, first-touch of memory
    cpu, wall = [], []
    for _ in range(repeats):
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    return statistics.median(cpu), statistics.median(wall)


def _simulate_case(jobs, total: int, backfill: str, kernel: str):
    from drevt_sweep.sim.engine import simulate

    run_time = jobs.actual_run_time
    return lambda: simulate(jobs, run_time, total, priority="fcfs", backfill=backfill, kernel=kernel)


def _trace_rows(name: str, path: Path, total: int | None, cases, repeats: int = REPEATS) -> list[dict]:
    if not path.is_file():
        print(f"[bench_engine] skipped {name}: trace not found at {path}", file=sys.stderr)
        return [
            {"benchmark": f"{name} fcfs+{backfill}", "jobs": None, "seconds": None, "jobs_per_s": None,
             "target": _target_text(target), "met": None, "note": f"skipped: {path} not found"}
            for backfill, target, _ in cases
        ]
    jobs = _load_swf(path)
    total = total or jobs.meta.machine_nodes
    rows = []
    for backfill, target, ref_repeats in cases:
        seconds, wall = _time(_simulate_case(jobs, total, backfill, "fast"), repeats)
        ref_seconds, _ = _time(_simulate_case(jobs, total, backfill, "reference"), ref_repeats)
        rate = len(jobs) / seconds
        rows.append(
            {
                "benchmark": f"{name} fcfs+{backfill}",
                "jobs": len(jobs),
                "seconds": round(seconds, 4),
                "wall_seconds": round(wall, 4),
                "jobs_per_s": round(rate),
                "target": _target_text(target),
                "met": None if target is None else rate >= target,
                "reference_jobs_per_s": round(len(jobs) / ref_seconds),
                "speedup": round(ref_seconds / seconds, 1),
                "note": f"{total} nodes; median of {repeats} (reference: {ref_repeats})",
            }
        )
    return rows


def _target_text(target) -> str:
    return "" if target is None else f">= {target:,} jobs/s"


def growth_rows(sizes=GROWTH_SIZES, repeats: int = GROWTH_REPEATS) -> list[dict]:
    from gen_workload import NODES, generate, offered_load

    rows = []
    previous = None
    for n in sizes:
        jobs = generate(n)
        load = offered_load(jobs, NODES)
        seconds, wall = _time(_simulate_case(jobs, NODES, "easy", "fast"), repeats)
        ratio = None if previous is None else seconds / previous
        checks = []
        if ratio is not None:
            checks.append(ratio <= TARGET_DOUBLING)
        if n == 1_000_000:
            checks.append(seconds <= TARGET_1M_SECONDS)
        target = []
        if ratio is not None:
            target.append(f"<= {TARGET_DOUBLING}x previous")
        if n == 1_000_000:
            target.append(f"<= {TARGET_1M_SECONDS:g} s")
        rows.append(
            {
                "benchmark": f"generated {n // 1000}k fcfs+easy",
                "jobs": n,
                "seconds": round(seconds, 3),
                "wall_seconds": round(wall, 3),
                "jobs_per_s": round(n / seconds),
                "target": ", ".join(target),
                "met": all(checks) if checks else None,
                "growth": None if ratio is None else round(ratio, 2),
                "note": f"offered load {load:.3f}, {NODES} nodes; median of {repeats}",
            }
        )
        previous = seconds
    return rows


_MEMORY_CHILD = """
import json, resource, sys, time
sys.path.insert(0, {here!r})
from gen_workload import NODES, generate
from drevt_sweep.sim import kernel as fast
from drevt_sweep.sim.engine import simulate
fast.load()
jobs = generate({n})
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
before = rss()
start = time.process_time()
s = simulate(jobs, jobs.actual_run_time, NODES, priority="fcfs", backfill="easy", kernel="fast")
seconds = time.process_time() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"before": before, "peak": peak, "seconds": seconds}}))
"""


def memory_row(n: int = 1_000_000) -> dict:
    code = _MEMORY_CHILD.format(here=str(HERE), n=n)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    peak = data["peak"]
    return {
        "benchmark": f"generated {n // 1000}k fcfs+easy peak memory",
        "jobs": n,
        "seconds": round(data["seconds"], 3),
        "jobs_per_s": round(n / data["seconds"]),
        "target": "<= 1 GB peak RSS",
        "met": peak <= TARGET_MEMORY_BYTES,
        "peak_rss_mb": round(peak / 2**20, 1),
        "note": (
            f"ru_maxrss of a fresh subprocess (Python + numpy + numba + trace + engine): "
            f"{peak / 2**20:.0f} MiB; RSS just before simulate {data['before'] / 2**20:.0f} MiB; "
            f"one cold run (no warm-up)"
        ),
    }


def run(quick: bool = False) -> list[dict]:
    """All rows (about a minute); ``quick``: fewer repetitions (3, reference once)."""
    from drevt_sweep.sim import kernel as fast

    if fast.load(warn=False) is None:
        raise RuntimeError(f"the compiled kernel is unavailable: {fast.unavailable_reason()}")
    repeats = 3 if quick else REPEATS
    ref = 1 if quick else 3
    rows = []
    rows += _trace_rows(
        "KTH-SP2",
        BUNDLED_KTH,
        100,
        [("easy", TARGET_EASY, ref), ("conservative", TARGET_CONSERVATIVE, 1)],
        repeats,
    )
    rows += _trace_rows("LANL-CM5", LANL, 1024, [("easy", TARGET_EASY, ref), ("conservative", None, 1)], repeats)
    rows += growth_rows(repeats=3 if quick else GROWTH_REPEATS)
    rows.append(memory_row())
    return rows


def format_table(rows: list[dict]) -> str:
    lines = [
        f"{'benchmark':<40} {'jobs':>9} {'seconds':>8} {'wall':>7} {'jobs/s':>11} {'ref jobs/s':>10} {'x ref':>6} "
        f"{'growth':>6}  {'target':<28} met",
    ]
    for r in rows:
        def cell(key, fmt):
            v = r.get(key)
            return "-" if v is None else format(v, fmt)

        met = {True: "yes", False: "NO", None: "-"}[r.get("met")]
        lines.append(
            f"{r['benchmark']:<40} {cell('jobs', ',') :>9} {cell('seconds', '.3f'):>8} {cell('wall_seconds', '.3f'):>7} "
            f"{cell('jobs_per_s', ','):>11} {cell('reference_jobs_per_s', ','):>10} {cell('speedup', ''):>6} "
            f"{cell('growth', ''):>6}  {r.get('target', ''):<28} {met}"
        )
        if r.get("note"):
            lines.append(f"{'':<4}{r['note']}")
    return "\n".join(lines)


def profile_reference(top: int = 8) -> str:
    """cProfile of the reference engine on KTH-SP2 (fcfs+easy, fcfs+conservative)."""
    import cProfile
    import io
    import pstats

    from drevt_sweep.sim.engine import simulate

    jobs = _load_swf(BUNDLED_KTH)
    out = io.StringIO()
    for backfill in ("easy", "conservative"):
        profiler = cProfile.Profile()
        profiler.enable()
        simulate(jobs, jobs.actual_run_time, 100, backfill=backfill, kernel="reference")
        profiler.disable()
        out.write(f"--- reference, KTH-SP2 fcfs+{backfill}\n")
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--profile" in argv:
        print(profile_reference())
        return 0
    started = time.perf_counter()
    load = os.getloadavg()[0]
    rows = run(quick="--quick" in argv)
    print(format_table(rows))
    print(f"\n(total {time.perf_counter() - started:.0f} s on {os.cpu_count()} cores, load average "
          f"{load:.1f} -> {os.getloadavg()[0]:.1f}; seconds = median CPU time of the engine on one "
          f"core, wall = median wall time; compilation excluded: every case is warmed up first)")
    return 0 if all(r["met"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
