"""Speed of Slurm's multifactor on a shared-node pool (issue 26): the generated shared workload
of ``bench_machine.shared_workload`` (64 nodes of 64 cores, 4 GPUs, 256 GiB, core load 0.9)
with 64 users in 8 accounts (Zipf-like activity), under EASY: static FCFS (the segment-tree
kernel), multifactor classic and Fair Tree (site weights, ``PriorityCalcPeriod`` 5 min), in
the compiled kernel and, on fewer jobs, the reference. CPU time, best of ``--repeats`` after a
warm-up.

    python benchmarks/bench_shared_multifactor.py [--jobs 100000] [--reference-jobs 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PRIORITIES = {
    "fcfs": ("fcfs", None),
    "multifactor classic": ("multifactor", {"fairshare": "classic"}),
    "multifactor fair_tree": ("multifactor", {"fairshare": "fair_tree"}),
}


def with_users(jobs, seed: int = 3, users: int = 64, accounts: int = 8):
    rng = np.random.default_rng(seed)
    weight = 1.0 / np.arange(1, users + 1)
    user = rng.choice(users, size=len(jobs), p=weight / weight.sum()).astype(np.int32)
    return dataclasses.replace(jobs, user_code=user, user_names=tuple(f"u{i}" for i in range(users)),
                               group_code=(user % accounts).astype(np.int32),
                               group_names=tuple(f"acct{i}" for i in range(accounts)))


def cpu_best(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--reference-jobs", type=int, default=5_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    from bench_machine import _shared_machine, shared_workload

    from drevt_sweep.sim.partitioned import simulate_machine

    machine = _shared_machine()
    print(f"load {os.getloadavg()[0]:.2f}")
    for n, kernel in ((args.jobs, "fast"), (args.reference_jobs, "reference")):
        jobs = with_users(shared_workload(n))
        begins = {}
        for name, (priority, params) in PRIORITIES.items():
            def run():
                s = simulate_machine(jobs, jobs.actual_run_time, machine, priority=priority, backfill="easy",
                                     kernel=kernel, priority_params=params)
                begins[name] = s.begin
            cpu = cpu_best(run, args.repeats if kernel == "fast" else 1)
            wait = float(np.nanmean(begins[name] - jobs.submit))
            print(f"{kernel:9s} {n:>8,} jobs  {name:22s} {cpu:7.2f} s CPU  {n / cpu:>10,.0f} jobs/s  "
                  f"mean wait {wait:,.0f} s")
        moved = int((begins["multifactor classic"] != begins["fcfs"]).sum())
        print(f"          jobs whose start differs from FCFS under classic: {moved:,}")
    print(f"load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
