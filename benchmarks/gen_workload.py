"""A seeded synthetic workload for the engine benchmarks: any number of jobs at a chosen load.

The shape follows the public parallel-workload traces loosely (it is a stress test, not a
model of one machine):

* sizes: a quarter serial jobs, the rest log-uniform on [2, nodes/2] nodes, half of them
  rounded to a power of two;
* run times: log-normal, median 15 min, sigma 1.6, at most 36 h; 1 % of the jobs fail at
  start (run time 0);
* time limits: the run time over-estimated 1-5x, rounded up to whole minutes, at least 5 min;
  3 % of the jobs run past their limit (killed there while limits are enforced);
* arrivals: a Poisson process whose rate is set so that the *offered load*
  (sum of nodes x time actually run, with kills at the limit) / (nodes x submit span) is
  exactly ``load``; submit times are whole seconds (so simultaneous submits happen).

At an offered load of 0.95 EASY cannot keep up with this mix, so the queue grows through the
run (thousands to tens of thousands of waiting jobs): the case that makes a naive backfill
scan O(jobs x queue).

``python benchmarks/gen_workload.py N`` prints a summary; :func:`generate` returns a
``JobTable`` (``actual_run_time`` filled) ready for ``drevt_sweep.sim.engine.simulate``.
"""

from __future__ import annotations

import sys

import numpy as np

SEED = 20240501
NODES = 1024


def generate(n_jobs: int, *, nodes: int = NODES, load: float = 0.95, seed: int = SEED):
    rng = np.random.default_rng(seed)
    n = int(n_jobs)
    # sizes
    size = np.exp(rng.uniform(np.log(2), np.log(max(nodes // 2, 2)), n))
    pow2 = rng.random(n) < 0.5
    size = np.where(pow2, 2.0 ** np.round(np.log2(size)), np.round(size))
    size = np.clip(size, 1, nodes).astype(np.int64)
    size[rng.random(n) < 0.25] = 1
    # run times and limits
    run = np.minimum(np.round(rng.lognormal(np.log(900.0), 1.6, n)), 36 * 3600.0)
    run = np.maximum(run, 1.0)
    limit = np.maximum(np.ceil(run * rng.uniform(1.0, 5.0, n) / 60.0) * 60.0, 300.0)
    over = rng.random(n) < 0.03
    run = np.where(over, np.round(limit * rng.uniform(1.01, 1.5, n)), run)
    run[rng.random(n) < 0.01] = 0.0
    # arrivals at the requested offered load
    work = float((size * np.minimum(run, limit)).sum())
    span = work / (load * nodes)
    gaps = rng.exponential(1.0, n)
    submit = np.round(np.cumsum(gaps) * (span / gaps.sum()))
    submit -= submit[0]

    return job_table(submit, size, run, limit, f"<generated n={n} load={load} seed={seed}>", nodes)


def job_table(submit, size, run, limit, label: str, nodes: int):
    """A simulation-mode ``JobTable`` of generated jobs (``actual_run_time`` filled)."""
    from drevt_sweep.jobs import JobTable, TraceMeta

    n = len(submit)
    meta = TraceMeta(
        path=label,
        trace_format="generated",
        mode="simulation",
        checksum="0" * 64,
        timezone="UTC",
        timestamp_format="relative",
        machine_nodes=nodes,
        has_actual_run_time=True,
        rows_read=n,
        rows_kept=n,
    )
    return JobTable(
        job_id=np.arange(n, dtype=np.int64),
        source_line=np.arange(1, n + 1, dtype=np.int64),
        submit=np.asarray(submit, dtype=np.float64),
        begin=np.full(n, np.nan),
        end=np.full(n, np.nan),
        num_nodes=np.asarray(size, dtype=np.int64),
        time_limit=np.asarray(limit, dtype=np.float64),
        actual_run_time=np.asarray(run, dtype=np.float64),
        queue_code=np.zeros(n, dtype=np.int32),
        queue_names=("batch",),
        exit_status=np.full(n, -1, dtype=np.int64),
        meta=meta,
    )


def offered_load(jobs, nodes: int) -> float:
    """Sum of nodes x time run (cut at the limit) over nodes x submit span."""
    run = np.minimum(jobs.actual_run_time, jobs.time_limit)
    span = float(jobs.submit[-1] - jobs.submit[0])
    return float((jobs.num_nodes * run).sum() / (nodes * span))


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    table = generate(count)
    print(
        f"{len(table):,} jobs on {NODES} nodes, offered load {offered_load(table, NODES):.4f}, "
        f"span {(table.submit[-1] - table.submit[0]) / 86400:.1f} days, "
        f"median size {int(np.median(table.num_nodes))}, killed at limit "
        f"{int((table.actual_run_time > table.time_limit).sum()):,}"
    )
