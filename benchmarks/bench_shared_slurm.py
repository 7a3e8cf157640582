"""Slurm's backfill on a shared-node pool (``backfill: slurm`` on ``select/cons_tres``; the
reference engine ``sim.shared._SlurmShared``) beside the shared engine's EASY (compiled when
numba pays off: ``kernel=reference`` here for all, so the figures compare Python with Python)
and conservative. ``bench_machine.shared_workload`` on NODES nodes of 64 cores, 4 GPUs, 256 GiB
at core load LOAD; CPU time (``process_time``), best of 2, and the mean wait.

    PYTHONPATH=. python benchmarks/bench_shared_slurm.py [JOBS [NODES [LOAD]]]   # 2000 16 0.9
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str]) -> None:
    from bench_machine import shared_workload

    from drevt_sweep.sim.machine import Machine, Partition
    from drevt_sweep.sim.partitioned import simulate_machine

    n = int(argv[0]) if argv else 2000
    nodes = int(argv[1]) if len(argv) > 1 else 16
    load = float(argv[2]) if len(argv) > 2 else 0.9
    jobs = shared_workload(n, nodes=nodes, load=load)
    machine = Machine("shared", (Partition("shared", nodes, cores=64, gpus=4, memory=262144, sharing="shared"),))
    print(f"{n} jobs, {nodes} nodes, load {load}; 1-min load {os.getloadavg()[0]:.1f}", flush=True)
    for name, kw in (("easy (reference)", dict(backfill="easy")),
                     ("slurm, Slurm's defaults", dict(backfill="slurm")),
                     ("slurm, bf_max_job_test=50", dict(backfill="slurm", backfill_params={"bf_max_job_test": 50})),
                     ("conservative (reference)", dict(backfill="conservative"))):
        best = np.inf
        for _ in range(2):
            t = time.process_time()
            s = simulate_machine(jobs, jobs.actual_run_time, machine, kernel="reference", **kw)
            best = min(best, time.process_time() - t)
        wait = np.nanmean(s.begin - jobs.submit)
        print(f"  {name:28s} CPU {best:6.2f} s {n / best:9,.0f} jobs/s, mean wait {wait:6.0f} s", flush=True)
    print(f"1-min load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
