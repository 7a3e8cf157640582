"""md5 of the pure-Python reference engine's schedules, to prove a change to the reference
(``sim.engine``, ``sim.policies``, ``sim.shared``) changes no result, and its CPU per case.

    python benchmarks/reference_md5.py record FILE   # before the change
    python benchmarks/reference_md5.py check FILE    # after each step

Every case runs with ``kernel="reference"``: whole nodes (KTH-SP2's first 3,000 jobs on 100
nodes, as the tests) and shared nodes (``bench_machine.shared_workload``'s first 1,200 jobs,
with 64 users in 8 accounts, on 8 nodes of 64 cores: a queue of tens of jobs), every backfill
policy under static and dynamic priorities, Slurm's backfill under three limit sets. A case's
value is the md5 of the begin and end arrays (as ``kernel_md5.py``, whose ``main`` runs this
one too); ``check`` prints every case that differs and exits 1 if any does, and both print each
case's CPU seconds (process time) and their sum. Terms after the file keep only some cases (as
``kernel_md5.py``). ``benchmarks/reference_md5.json``: main's md5s before the thirtieth
session's changes to the reference (all of which left them as they were).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import kernel_md5  # noqa: E402
from kernel_md5 import KTH, SLURM_LIMITS, _md5, _selected  # noqa: E402

POOL_JOBS = 3_000
SHARED_JOBS = 1_200
SHARED_NODES = 8
MULTIFACTOR = ("multifactor", {"calc_period": 60.0})
FAIR_TREE = ("multifactor", {"fairshare": "fair_tree", "calc_period": 60.0})
PRIORITIES = {"fcfs": ("fcfs", None), "sjf": ("sjf", None), "multifactor": MULTIFACTOR, "fair_tree": FAIR_TREE}


def _pool_cases():
    for name, (p, pp) in PRIORITIES.items():
        for b in ("none", "easy", "easy_drevt"):
            yield f"{name}/{b}", dict(priority=p, priority_params=pp, backfill=b)
        for c in ("compress_first", "interleaved", "one_pass"):
            if c == "compress_first" or name in ("fcfs", "multifactor"):
                yield f"{name}/conservative/{c}", dict(priority=p, priority_params=pp, backfill="conservative",
                                                       compression=c)
        for lim in ("defaults", "easy", "tight"):
            yield f"{name}/slurm/{lim}", dict(priority=p, priority_params=pp, backfill="slurm",
                                              backfill_params=SLURM_LIMITS[lim])
    yield "wfp3/easy", dict(priority="wfp3", backfill="easy")
    yield "wfp3/slurm/defaults", dict(priority="wfp3", backfill="slurm")
    yield "fcfs/conservative/no-limits", dict(backfill="conservative", enforce_limits=False)
    yield "fcfs/easy/no-limits", dict(backfill="easy", enforce_limits=False)
    yield "fcfs/easy/actual", dict(backfill="easy", estimate="actual")
    yield "fcfs/conservative/user_history", dict(backfill="conservative", estimate="user_history")


def _shared_cases():
    for name, (p, pp) in PRIORITIES.items():
        for b in ("none", "easy", "easy_drevt", "conservative"):
            yield f"{name}/{b}", dict(priority=p, priority_params=pp, backfill=b)
        for lim in ("defaults", "exact", "tight"):
            yield f"{name}/slurm/{lim}", dict(priority=p, priority_params=pp, backfill="slurm",
                                              backfill_params=SLURM_LIMITS[lim])
    yield "fcfs/conservative/no-limits", dict(backfill="conservative", enforce_limits=False)
    yield "sjf/easy/no-limits", dict(priority="sjf", backfill="easy", enforce_limits=False)


def _inputs():
    import numpy as np
    from bench_machine import shared_workload
    from bench_shared_multifactor import with_users

    from drevt_sweep.sim.machine import Machine, Partition
    from drevt_sweep.trace import ReadOptions, read_trace

    kth = read_trace(KTH, ReadOptions(trace_format="swf", force_simulation=True)).take(np.arange(POOL_JOBS))
    shared = with_users(shared_workload(SHARED_JOBS, nodes=SHARED_NODES, load=1.1))
    machine = Machine("shared8", (Partition("shared", SHARED_NODES, cores=64, gpus=4, memory=262144,
                                            sharing="shared"),))
    return kth, shared, machine


def compute(terms: list[str]) -> dict[str, str]:
    """The md5 of every selected case; prints each case's CPU seconds and their sum."""
    from drevt_sweep.sim.engine import simulate
    from drevt_sweep.sim.partitioned import simulate_machine

    kth, shared, machine = _inputs()
    runs = [(f"pool/{name}", lambda kw=kw: simulate(kth, kth.actual_run_time, 100, kernel="reference", **kw))
            for name, kw in _pool_cases()]
    runs += [(f"shared/{name}", lambda kw=kw: simulate_machine(shared, shared.actual_run_time, machine,
                                                               kernel="reference", **kw))
             for name, kw in _shared_cases()]
    md5, total = {}, 0.0
    for key, run in runs:
        if not _selected(key, terms):
            continue
        t = time.process_time()
        schedule = run()
        cpu = time.process_time() - t
        total += cpu
        md5[key] = _md5(schedule)
        print(f"{cpu:7.2f} s  {key}", flush=True)
    print(f"{total:.1f} s of CPU in all")
    return md5


if __name__ == "__main__":
    sys.exit(kernel_md5.main(sys.argv[1:], compute, __doc__))
