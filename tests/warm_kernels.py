"""Compile the numba kernels into numba's on-disk cache, in a process of their own.

``conftest.py`` runs this once per test session under pytest-xdist, before the workers start:
without it, each worker compiles each kernel it needs itself (numba's cache is per process until
a compile has finished and been written), so on a fresh clone the two workers of ``make test``
both paid the minutes of compiling. ``python tests/warm_kernels.py GROUP`` compiles one group
(see ``GROUPS``); the conftest runs the groups side by side, one process each.
Everything goes through the public entry points on tiny problems, so it compiles exactly the
signatures the suite uses, whatever the kernels look like inside. With a warm cache a group
takes about a second (loading the machine code).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobtable_factory import make_jobs  # noqa: E402

from drevt_sweep.sim import engine  # noqa: E402
from drevt_sweep.sim.machine import Partition  # noqa: E402
from drevt_sweep.sim.shared import simulate_shared  # noqa: E402

# Cold compiles in CPU seconds (2-core development VM, 2026-12-06, one process, in this order):
# pool conservative 14, pool Slurm backfill 18.5 (its multifactor signature then 0), shared-node
# Slurm backfill 33, shared-node conservative 17.6, everything else ~11 (since the twenty-ninth
# session's helper compile29 the shared-node ones about 7 and 4 s less: docs/kernel.md, "Compile
# time of the shared kernels"). The session waits for
# the longest group, so the groups are cut to about a third of the work each: with two groups
# (66 and 38 s) the wait was the first's 66 s; three processes share the two cores (~50 s).
GROUPS = ("pool", "shared_slurm", "other")


def _jobs(n: int = 40, seed: int = 1):
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(30.0, n))
    nodes = rng.integers(1, 4, n)
    limit = rng.uniform(100.0, 400.0, n)
    run = limit * rng.uniform(0.2, 1.2, n)
    users = [f"u{i % 5}" for i in range(n)]
    return make_jobs(submit.tolist(), nodes.tolist(), limit.tolist(), run.tolist(), user=users,
                     group=[f"g{i % 2}" for i in range(n)])


def warm(group: str) -> None:
    jobs = _jobs()
    rt = jobs.actual_run_time
    n = len(jobs)
    part = Partition("p", 4, cores=8, gpus=1, memory=1000, sharing="shared")

    def shared(**kwargs):
        simulate_shared(jobs, rt, part, np.full(n, 2), np.zeros(n, dtype=np.int64), np.full(n, 100.0),
                        kernel="fast", **kwargs)

    if group == "pool":
        engine.simulate(jobs, rt, 4, backfill="conservative", kernel="fast")
        engine.simulate(jobs, rt, 4, backfill="slurm", kernel="fast")  # (on the same profile helpers)
        # the same kernel with a dynamic priority (multifactor's arrays: another signature)
        engine.simulate(jobs, rt, 4, priority="multifactor", backfill="slurm", kernel="fast")
        return
    if group == "shared_slurm":  # Slurm's backfill on shared nodes (kernel._shared_slurm)
        shared(backfill="slurm")
        return
    for backfill in ("easy", "easy_drevt", "none"):
        engine.simulate(jobs, rt, 4, backfill=backfill, kernel="fast")
    for priority, estimate, order in (("multifactor", "user", "fcfs"), ("fcfs", "user_history", "sjbf"),
                                      ("wfp3", "actual", "fcfs")):
        engine.simulate(jobs, rt, 4, priority=priority, backfill="easy", estimate=estimate,
                        backfill_order=order, kernel="fast")
    for backfill in ("easy", "conservative", "none"):
        shared(backfill=backfill)
    # shared nodes with a dynamic priority (kernel.shared's queue driver compiled for it, ~3 s)
    shared(priority="multifactor", backfill="easy")


if __name__ == "__main__":
    for name in sys.argv[1:] or GROUPS:
        if name not in GROUPS:
            sys.exit(f"warm_kernels.py: unknown group {name!r}; choose from {', '.join(GROUPS)}")
        warm(name)
