"""The compiled ``backfill: slurm`` (``sim.kernel._slurm``, issue 26 "Speed") against the
reference, on KTH-SP2, and Slurm mode on a 1M-job, 4-partition machine.

KTH-SP2 (28,467 jobs, 100 nodes) with Slurm's defaults (``bf_interval=30``, ``bf_window=1440``,
``bf_resolution=60``, ``bf_max_job_test=500``, ``default_queue_depth=100``, ``sched_interval=60``)
and in the EASY reduction (every limit infinite, a cycle at every pass, one reservation), with
FCFS, and with Slurm's defaults under ``priority: multifactor`` (its defaults, classic
fair-share; and with Fair Tree, slurm.conf's default: a tick every 5 min re-keys the queue): CPU
time of ``engine.simulate`` (process time, best of ``REPEAT``; the kernel's machine code is
loaded by a warm-up run first), jobs/s, and whether both kernels give the same begin/end times
bit for bit (``--no-reference``: the kernel alone).

``--machine``: the issue's second target, >= 100,000 jobs/s on a 1M-job, 4-partition,
cores-and-memory machine at load 0.9, each doubling of the trace (125k to 1M jobs) at most
2.2x the time. The machine (``four_partitions``): batch 64 nodes, gpu 16 (4 GPUs each), bigmem
8, debug 16; every node 64 cores, 256 GiB (gpu 512 GiB, bigmem 1 TiB), shared (Slurm's
``select/cons_tres`` with ``CR_Core_Memory``: jobs packed by cores, GPUs and memory). Each
partition gets its share of the jobs (60/15/10/15 %) from ``bench_machine.shared_workload``
(1 core to whole nodes, a fifth asking for GPUs, memory 1-4 GiB per core) at offered core load
0.9 on its own nodes. The shared pools run ``backfill: easy``, compiled: what ``backfill: slurm``
ran there until Slurm's backfill on shared nodes came (``sim.shared._SlurmShared``; compiled in
``kernel._shared_slurm``, but still far too slow for a million jobs: ``bench_shared_slurm.py
growth`` runs it on this machine; docs/slurm.md). Beside
it, the same four partitions with whole nodes (``exclusive``; jobs from ``gen_workload.generate``
at node load 0.9), where Slurm's backfill with its default limits runs in ``_slurm.slurm_steps``
on each partition. CPU time of ``partitioned.simulate_machine`` (one warm-up on 20,000 jobs;
best of 3 up to 250k jobs, one run above) and the mean queue an arriving job sees.

    PYTHONPATH=. python benchmarks/bench_slurm_kernel.py [--no-reference] [--machine]
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
sys.path.insert(0, str(ROOT / "benchmarks"))

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
REPEAT = {"fast": 7, "reference": 2}
# the 4-partition machine: name, nodes, share of the jobs, memory per node (MiB), GPUs per node
PARTITIONS = (("batch", 64, 0.60, 262144, None), ("gpu", 16, 0.15, 524288, 4),
              ("bigmem", 8, 0.10, 1048576, None), ("debug", 16, 0.15, 262144, None))
MACHINE_SIZES = (125_000, 250_000, 500_000, 1_000_000)
TARGET_MACHINE = 100_000
TARGET_DOUBLING = 2.2


def timed(jobs, kernel: str, params: dict, priority: tuple):
    best = INF
    for _ in range(REPEAT[kernel]):
        t0 = time.process_time()
        schedule = engine.simulate(jobs, jobs.actual_run_time, 100, backfill="slurm", kernel=kernel,
                                   backfill_params=params, priority=priority[0], priority_params=priority[1])
        best = min(best, time.process_time() - t0)
    return best, schedule


def kth(reference: bool = True) -> None:
    jobs = read_trace(TRACE, ReadOptions(trace_format="swf", force_simulation=True))
    print(f"KTH-SP2: {len(jobs)} jobs, 100 nodes; load {os.getloadavg()[0]:.1f}")
    engine.simulate(jobs.take(np.arange(100)), jobs.actual_run_time[:100], 100, backfill="slurm", kernel="fast")
    for label, (params, priority) in SETTINGS.items():
        fast_s, fast = timed(jobs, "fast", params, priority)
        line = f"  {label:17s} kernel {fast_s:6.3f} s {len(jobs) / fast_s:10,.0f} jobs/s"
        if reference:
            ref_s, ref = timed(jobs, "reference", params, priority)
            same = all(np.array_equal(getattr(ref, k).view(np.int64), getattr(fast, k).view(np.int64))
                       for k in ("begin", "end"))
            line += (f" | reference {ref_s:7.3f} s {len(jobs) / ref_s:10,.0f} jobs/s | x{ref_s / fast_s:5.1f} | "
                     f"bit for bit: {same}")
        print(line, flush=True)
    print(f"load after: {os.getloadavg()[0]:.1f}")


def four_partitions(n_jobs: int, shared: bool = True, seed: int = 26):
    """The jobs and machine of ``--machine`` (see the module docstring)."""
    from bench_machine import shared_workload
    from gen_workload import generate

    from drevt_sweep.jobs import JobTable
    from drevt_sweep.sim.machine import Machine, Partition

    counts = [int(round(n_jobs * share)) for _, _, share, _, _ in PARTITIONS]
    counts[0] = n_jobs - sum(counts[1:])
    tables = [shared_workload(m, seed=seed + k, nodes=p[1], load=0.9) if shared
              else generate(m, nodes=p[1], load=0.9, seed=seed + k) for k, (m, p) in enumerate(zip(counts, PARTITIONS))]
    cols = {c: np.concatenate([getattr(t, c) for t in tables]) for c in JobTable.COLUMNS}
    cols["queue_code"] = cols["partition_code"] = np.concatenate(
        [np.full(len(t), k, np.int32) for k, t in enumerate(tables)])
    names = tuple(p[0] for p in PARTITIONS)
    jobs = JobTable(**cols, queue_names=names, partition_names=names, meta=tables[0].meta)
    jobs = jobs.take(np.argsort(jobs.submit, kind="stable"))
    if shared:
        parts = tuple(Partition(name, nodes, cores=64, gpus=gpus, memory=memory, sharing="shared")
                      for name, nodes, _, memory, gpus in PARTITIONS)
    else:
        parts = tuple(Partition(name, nodes) for name, nodes, _, _, _ in PARTITIONS)
    return jobs, Machine("four", parts)


def machine() -> None:
    from bench_machine import mean_queue

    from drevt_sweep.sim.partitioned import simulate_machine

    for shared in (True, False):
        kind = "cores and memory (shared pools, EASY)" if shared else "whole nodes (Slurm's backfill, defaults)"
        backfill = "easy" if shared else "slurm"
        print(f"4 partitions, {kind}; load {os.getloadavg()[0]:.1f}", flush=True)
        warm, m = four_partitions(20_000, shared)
        simulate_machine(warm, warm.actual_run_time, m, backfill=backfill, kernel="fast")
        previous = None
        for size in MACHINE_SIZES:
            jobs, m = four_partitions(size, shared)
            best = INF
            for _ in range(3 if size <= 250_000 else 1):
                t0 = time.process_time()
                schedule = simulate_machine(jobs, jobs.actual_run_time, m, backfill=backfill, kernel="fast")
                best = min(best, time.process_time() - t0)
            growth = "" if previous is None else f", x{best / previous:.2f} per doubling"
            print(f"  {size:>9,} jobs {best:7.3f} s {size / best:10,.0f} jobs/s, mean queue "
                  f"{mean_queue(jobs.submit, schedule.begin):.1f}{growth}", flush=True)
            previous = best
        print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if "--machine" in sys.argv:
        machine()
    else:
        kth(reference="--no-reference" not in sys.argv)
