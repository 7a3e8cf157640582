"""The compiled ``backfill: slurm`` (``sim.kernel._slurm``, issue 26 "Speed") against the
reference, on KTH-SP2.

KTH-SP2 (28,467 jobs, 100 nodes) with Slurm's defaults (``bf_interval=30``, ``bf_window=1440``,
``bf_resolution=60``, ``bf_max_job_test=500``, ``default_queue_depth=100``, ``sched_interval=60``)
and in the EASY reduction (every limit infinite, a cycle at every pass, one reservation), with
FCFS, and with Slurm's defaults under ``priority: multifactor`` (its defaults, classic
fair-share; and with Fair Tree, slurm.conf's default: a tick every 5 min re-keys the queue): CPU time of ``engine.simulate`` (process time, best of ``REPEAT``; the kernel's machine code is loaded by a
warm-up run first), jobs/s, and whether both kernels give the same begin/end times bit for bit.

    PYTHONPATH=. python benchmarks/bench_slurm_kernel.py
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drevt_sweep.sim import engine  # noqa: E402
from drevt_sweep.trace import ReadOptions, read_trace  # noqa: E402

TRACE = ROOT / "drevt_sweep/data/traces/KTH-SP2-1996-2.1-cln.swf.gz"
INF = math.inf
SETTINGS = {  # label: (backfill_params, (priority, priority_params))
    "Slurm's defaults": ({}, ("fcfs", None)),
    "EASY reduction": (dict(bf_interval=0, bf_max_job_test=INF, bf_window=INF, bf_resolution=0,
                            default_queue_depth=INF, sched_interval=0, bf_job_part_count_reserve=1), ("fcfs", None)),
    "multifactor": ({}, ("multifactor", None)),
    "Fair Tree": ({}, ("multifactor", {"fairshare": "fair_tree"})),
}
REPEAT = {"fast": 5, "reference": 2}


def timed(jobs, kernel: str, params: dict, priority: tuple):
    best = INF
    for _ in range(REPEAT[kernel]):
        t0 = time.process_time()
        schedule = engine.simulate(jobs, jobs.actual_run_time, 100, backfill="slurm", kernel=kernel,
                                   backfill_params=params, priority=priority[0], priority_params=priority[1])
        best = min(best, time.process_time() - t0)
    return best, schedule


def main() -> None:
    jobs = read_trace(TRACE, ReadOptions(trace_format="swf", force_simulation=True))
    print(f"KTH-SP2: {len(jobs)} jobs, 100 nodes; load {os.getloadavg()[0]:.1f}")
    engine.simulate(jobs.take(np.arange(100)), jobs.actual_run_time[:100], 100, backfill="slurm", kernel="fast")
    for label, (params, priority) in SETTINGS.items():
        ref_s, ref = timed(jobs, "reference", params, priority)
        fast_s, fast = timed(jobs, "fast", params, priority)
        same = all(np.array_equal(getattr(ref, k).view(np.int64), getattr(fast, k).view(np.int64))
                   for k in ("begin", "end"))
        print(f"  {label:17s} reference {ref_s:7.3f} s {len(jobs) / ref_s:10,.0f} jobs/s | "
              f"kernel {fast_s:6.3f} s {len(jobs) / fast_s:10,.0f} jobs/s | x{ref_s / fast_s:5.1f} | "
              f"bit for bit: {same}")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
