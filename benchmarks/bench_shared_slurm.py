"""Slurm's backfill on shared-node pools (``backfill: slurm`` on ``select/cons_tres``): the
reference engine ``sim.shared._SlurmShared`` against the compiled ``kernel._shared_slurm``.

Two parts, CPU time (``process_time``, best of ``REPEATS``; the largest sizes once), the
1-minute load printed before and after:

* ``small``: ``bench_machine.shared_workload`` on NODES nodes of 64 cores, 4 GPUs, 256 GiB at
  core load LOAD (2,000 jobs on 16 nodes by default): the reference and the compiled kernel
  with Slurm's defaults and with ``bf_max_job_test=50``, EASY and conservative (reference)
  beside them, and the mean wait (the same for both engines: they give the same schedule).
* ``growth`` (issue 26's row): the compiled kernel with Slurm's defaults on issue 26's
  4-partition machine of cores and memory (``bench_slurm_kernel.four_partitions``: batch 64
  nodes, gpu 16, bigmem 8, debug 16, 64 cores each, shared; ``shared_workload``'s jobs at core
  load 0.9 on each) for 125k, 250k, 500k and 1M jobs (or FIRST jobs, doubled up to MAX_JOBS) through
  ``sim.partitioned.simulate_machine``:
  jobs/s (target >= 100,000 at 1M), cost per doubling (target <= 2.2x; each size is its own
  draw, so the tested jobs per job are printed too, and the average over all doublings), peak
  RSS, and the kernel's work counters (``_shared_slurm.COUNTERS``: where the time goes).

    PYTHONPATH=. python benchmarks/bench_shared_slurm.py small [JOBS [NODES [LOAD]]]  # 2000 16 0.9
    PYTHONPATH=. python benchmarks/bench_shared_slurm.py growth [MAX_JOBS [FIRST]]      # 1000000 125000
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPEATS = 2
GROWTH_SIZES = (125_000, 250_000, 500_000, 1_000_000)
TARGET_JOBS_PER_S = 100_000
TARGET_DOUBLING = 2.2


def _best(fn, repeats=REPEATS):
    best, out = np.inf, None
    for _ in range(repeats):
        t = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t)
    return best, out


def small(argv: list[str]) -> None:
    from bench_machine import shared_workload

    from drevt_sweep.sim.machine import Machine, Partition
    from drevt_sweep.sim.partitioned import simulate_machine

    n = int(argv[0]) if argv else 2000
    nodes = int(argv[1]) if len(argv) > 1 else 16
    load = float(argv[2]) if len(argv) > 2 else 0.9
    jobs = shared_workload(n, nodes=nodes, load=load)
    machine = Machine("shared", (Partition("shared", nodes, cores=64, gpus=4, memory=262144, sharing="shared"),))
    print(f"{n} jobs, {nodes} nodes, load {load}; 1-min load {os.getloadavg()[0]:.1f}", flush=True)
    simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="fast")  # (loads the kernel)
    for name, kw in (("easy (reference)", dict(backfill="easy", kernel="reference")),
                     ("slurm, defaults (reference)", dict(backfill="slurm", kernel="reference")),
                     ("slurm, defaults (compiled)", dict(backfill="slurm", kernel="fast")),
                     ("slurm, bf_max_job_test=50 (reference)",
                      dict(backfill="slurm", kernel="reference", backfill_params={"bf_max_job_test": 50})),
                     ("slurm, bf_max_job_test=50 (compiled)",
                      dict(backfill="slurm", kernel="fast", backfill_params={"bf_max_job_test": 50})),
                     ("conservative (reference)", dict(backfill="conservative", kernel="reference"))):
        best, s = _best(lambda: simulate_machine(jobs, jobs.actual_run_time, machine, **kw))
        wait = np.nanmean(s.begin - jobs.submit)
        print(f"  {name:40s} CPU {best:7.3f} s {n / best:11,.0f} jobs/s, mean wait {wait:6.0f} s", flush=True)
    print(f"1-min load after: {os.getloadavg()[0]:.1f}")


def _counting(counters: dict):
    """Make every compiled shared Slurm run add its work counters (``_shared_slurm.COUNTERS``)
    to ``counters``: where the time goes."""
    from drevt_sweep.sim.kernel import _shared_slurm

    run = _shared_slurm.run_shared_slurm
    if getattr(run, "counting", None) is not None:
        run = run.counting
    _shared_slurm.run_shared_slurm = lambda *a, **kw: run(*a, counters=counters, **kw)
    _shared_slurm.run_shared_slurm.counting = run


def growth(argv: list[str]) -> None:
    from drevt_sweep.sim.partitioned import simulate_machine

    largest = int(argv[0]) if argv else GROWTH_SIZES[-1]
    sizes = GROWTH_SIZES
    if len(argv) > 1:  # FIRST, doubled while at most MAX_JOBS
        sizes = tuple(int(argv[1]) << k for k in range(40) if int(argv[1]) << k <= largest)
    from bench_slurm_kernel import four_partitions

    print(f"compiled slurm, Slurm's defaults, issue 26's 4 shared partitions, core load 0.9; "
          f"1-min load {os.getloadavg()[0]:.1f}", flush=True)
    jobs, machine = four_partitions(2000)
    simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", kernel="fast")  # (loads the kernel)
    previous = first = None
    for size in (s for s in sizes if s <= largest):
        jobs, machine = four_partitions(size)
        counters: dict = {}
        _counting(counters)
        best, s = _best(lambda: simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm",
                                                 kernel="fast"), 1 if size >= 500_000 else REPEATS)
        wait = np.nanmean(s.begin - jobs.submit)
        note = "" if previous is None else f", x{best / previous:.2f} per doubling (target <= {TARGET_DOUBLING})"
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  {size:>9,} jobs: CPU {best:7.2f} s {size / best:9,.0f} jobs/s, mean wait {wait:6.0f} s, "
              f"peak RSS {rss:,.0f} MiB{note}", flush=True)
        runs = 1 if size >= 500_000 else REPEATS
        fits = max((counters['earliest_fits'] + counters.get('fits_recalled', 0)
                    + counters.get('fits_beyond_window', 0)) // runs, 1)
        print("             per run: " + ", ".join(f"{k} {v // runs:,}" for k, v in counters.items())
              + f"; {best / fits * 1e6:.2f} us of CPU per tested job (earliest fit searched or recalled), "
              f"{fits / size:.1f} tested per job", flush=True)
        previous = best
        first = first or (size, best)
    if first and first[0] < size:
        # Each size is its own generated draw: a single doubling also follows how busy that draw's
        # queues are (the tested jobs per job above), the span over all of them less so.
        doublings = np.log2(size / first[0])
        print(f"  {first[0]:,} -> {size:,} jobs: x{previous / first[1]:.2f} over {doublings:.0f} doublings, "
              f"x{(previous / first[1]) ** (1 / doublings):.2f} per doubling on average")
    print(f"target at 1M: >= {TARGET_JOBS_PER_S:,} jobs/s; 1-min load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    part, *rest = sys.argv[1:] or ["small"]
    {"small": small, "growth": growth}[part](rest)
