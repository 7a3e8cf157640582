"""Cost of Slurm's association limits (``sim.limits``) in the Slurm backfill, on KTH-SP2.

KTH-SP2 (28,467 jobs, 100 nodes) under ``backfill: slurm`` in the EASY reduction (every limit
infinite, a cycle at every pass; the fastest Slurm-backfill setting, where a per-job limits
cost would show most), three ways: no associations; every (account, user) pair of the trace
with an association and no limit (the counters and tests run, nothing is held); and
``MaxJobs=2`` per user with ``GrpTRES=node=64`` per account (jobs are held). CPU time of
``simulate_machine`` (process time, best of ``REPEAT``), jobs/s, and the held counts.

    PYTHONPATH=. python benchmarks/bench_assoc_limits.py
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drevt_sweep.sim.machine import Machine  # noqa: E402
from drevt_sweep.sim.partitioned import simulate_machine  # noqa: E402
from drevt_sweep.trace import ReadOptions, read_trace  # noqa: E402
from drevt_sweep.trace.associations import read_associations  # noqa: E402

TRACE = ROOT / "drevt_sweep/data/traces/KTH-SP2-1996-2.1-cln.swf.gz"
INF = math.inf
EASY = dict(bf_interval=0, bf_max_job_test=INF, bf_window=INF, bf_resolution=0, default_queue_depth=INF,
            sched_interval=0, bf_job_part_count_reserve=1)
REPEAT = 3
HEADER = "Cluster|Account|User|Partition|Share|GrpJobs|GrpTRES|GrpSubmit|MaxJobs|MaxTRES|MaxSubmit|MaxWall|QOS|Def QOS\n"


def assoc_file(jobs, folder: Path, max_jobs: str, grp_nodes: str) -> Path:
    accounts = sorted({g for g in jobs.group.tolist() if g is not None})
    pairs = sorted({(g, u) for g, u in zip(jobs.group.tolist(), jobs.user.tolist()) if g is not None and u is not None})
    lines = ["c|root||||||||||||normal|\n"]
    lines += [f"c|{a}|||1||{'node=' + grp_nodes if grp_nodes else ''}||||||normal|\n" for a in accounts]
    lines += [f"c|{g}|{u}||1||||{max_jobs}||||normal|\n" for g, u in pairs]
    path = folder / f"assoc-{max_jobs or 'none'}.txt"
    path.write_text(HEADER + "".join(lines))
    return path


def main() -> None:
    jobs = read_trace(TRACE if TRACE.exists() else Path("../shared/traces") / TRACE.name,
                      ReadOptions(trace_format="swf"))
    machine = Machine.single_pool(100)
    with tempfile.TemporaryDirectory() as tmp:
        none = read_associations(assoc_file(jobs, Path(tmp), "", ""))
        tight = read_associations(assoc_file(jobs, Path(tmp), "2", "64"))
    print(f"KTH-SP2: {len(jobs)} jobs; load {os.getloadavg()[0]:.1f}")
    for label, limits in (("no associations", None), ("associations, no limit", none),
                          ("MaxJobs=2, GrpTRES=node=64", tight)):
        best = INF
        for _ in range(REPEAT):
            t0 = time.process_time()
            schedule = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm",
                                        backfill_params=EASY, limits=limits, kernel="reference")
            best = min(best, time.process_time() - t0)
        held = {k: v for k, v in schedule.warnings.items() if k.startswith(("held_", "rejected_")) and v}
        print(f"  {label:28s} {best:6.2f} s CPU  {len(jobs) / best:9,.0f} jobs/s  {held}")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
