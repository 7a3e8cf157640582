"""Compile every numba kernel into its on-disk cache, in a process of its own.

``conftest.py`` starts this when a test session begins on a fresh checkout, so that the
compiling (minutes on a 2-core machine) runs on the second core while the first tests run on
the first, instead of inside whichever test first needs each kernel. It compiles the kernels
the suite needs last first (shared nodes, dynamic priorities, then the pool drivers), so the
tests rarely compile the same one at the same time. Nothing depends on it: a test that needs a
kernel it has not finished compiles it itself (numba writes each cache file whole).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobtable_factory import make_jobs  # noqa: E402

from drevt_sweep.sim import engine  # noqa: E402
from drevt_sweep.sim.machine import Machine, Partition  # noqa: E402
from drevt_sweep.sim.partitioned import simulate_machine  # noqa: E402


def _jobs(n: int = 40, seed: int = 1):
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(30.0, n))
    nodes = rng.integers(1, 4, n)
    limit = rng.uniform(100.0, 400.0, n)
    run = limit * rng.uniform(0.2, 1.2, n)
    users = [f"u{i % 5}" for i in range(n)]
    return make_jobs(submit.tolist(), nodes.tolist(), limit.tolist(), run.tolist(), user=users,
                     group=[f"g{i % 2}" for i in range(n)])


def main() -> None:
    jobs = _jobs()
    rt = jobs.actual_run_time
    shared = jobs.replace(cores_per_node=np.full(len(jobs), 2), gpus_per_node=np.zeros(len(jobs), dtype=int),
                          memory_per_node=np.full(len(jobs), 100.0))
    machine = Machine("warm", (Partition("p", 4, cores=8, gpus=0, memory=1000, sharing="shared"),))
    for backfill in ("easy", "conservative", "none"):
        for enforce in (True, False):
            simulate_machine(shared, rt, machine, backfill=backfill, enforce_limits=enforce, kernel="fast")
    for priority, estimate, order in (("multifactor", "user", "fcfs"), ("fcfs", "user_history", "sjbf"),
                                      ("wfp3", "actual", "fcfs")):
        for enforce in (True, False):
            engine.simulate(jobs, rt, 4, priority=priority, backfill="easy", enforce_limits=enforce,
                            estimate=estimate, backfill_order=order, kernel="fast")
    for backfill in ("conservative", "easy_drevt", "easy", "none"):
        for enforce in (True, False):
            engine.simulate(jobs, rt, 4, backfill=backfill, enforce_limits=enforce, kernel="fast")


if __name__ == "__main__":
    main()
