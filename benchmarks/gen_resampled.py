"""A workload of any size with a real trace's job mix and arrival pattern.

For the conservative-backfilling growth benchmark (issue 16). From a real trace -- LANL-CM5 by
default: 1,024 nodes, sizes 32-1,024 in powers of two, limits as its users gave them:

* each job's size, actual run time and time limit are drawn together (one recorded job each,
  with replacement, seeded);
* the arrivals (``arrivals="trace"``, the default) are the trace's own submit times -- its daily
  and weekly cycles, bursts, quiet weeks -- repeated end to end as often as ``n_jobs`` needs
  (each copy starts a whole number of weeks after the previous one, so the cycles line up)
  and then scaled in time by one factor so that the *offered load* (sum of nodes x run time
  cut at the limit, over nodes x submit span) is exactly ``load``: what ``load_factor`` does
  to a trace, the usual way load studies raise a real workload's load.
  ``arrivals="poisson"`` instead spreads them as a Poisson process of the same mean rate.

Why the trace's arrivals: at the same offered load a Poisson stream is much smoother than a
real one, and the queue a scheduler sees is mostly made in the bursts. With the LANL-CM5 mix
at offered load 0.95, Poisson arrivals give a mean queue of only 55-64 jobs; the trace's own
pattern gives the long queues load studies see (``bench_conservative.py`` reports the mean
queue of every run; RESULTS.md has the figures). Submit times are whole seconds, so
simultaneous submits happen. Unlike ``gen_workload.py`` (a synthetic mix), the queue this
gives is the queue of a real size/limit mix and arrival pattern at that load.

``python benchmarks/gen_resampled.py N [LOAD] [poisson]`` prints a summary.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
LANL = HERE.parent.parent / "shared" / "traces" / "LANL-CM5-1994-4.1-cln.swf.gz"
SEED = 20261201
NODES = 1024


WEEK = 7 * 86400.0


def source_mix(path: Path = LANL, nodes: int = NODES):
    """(nodes, run time, limit, submit time) of the trace's jobs that can run on ``nodes`` nodes."""
    from drevt_sweep.trace import ReadOptions, read_trace

    jobs = read_trace(path, ReadOptions(trace_format="swf", force_simulation=True))
    ok = (jobs.num_nodes <= nodes) & (jobs.num_nodes >= 1) & (jobs.time_limit > 0)
    ok &= np.isfinite(jobs.actual_run_time) & (jobs.actual_run_time >= 0)
    return (np.asarray(jobs.num_nodes)[ok], np.asarray(jobs.actual_run_time)[ok],
            np.asarray(jobs.time_limit)[ok], np.sort(np.asarray(jobs.submit, dtype=np.float64)[ok]))


def trace_arrivals(submit: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` submit times of the trace's arrival pattern repeated end to end (from 0;
    each copy a whole number of weeks after the previous one)."""
    base = submit - submit[0]
    period = np.ceil((base[-1] + 1.0) / WEEK) * WEEK
    copies = -(-n // base.shape[0])
    return (base[None, :] + period * np.arange(copies)[:, None]).ravel()[:n]


def generate(n_jobs: int, *, load: float = 0.95, seed: int = SEED, mix=None, nodes: int = NODES,
             arrivals: str = "trace"):
    from gen_workload import job_table

    size_all, run_all, limit_all, submit_all = mix if mix is not None else source_mix(nodes=nodes)
    rng = np.random.default_rng(seed)
    n = int(n_jobs)
    pick = rng.integers(0, size_all.shape[0], n)
    size = size_all[pick].astype(np.int64)
    run = run_all[pick].astype(np.float64)
    limit = limit_all[pick].astype(np.float64)
    work = float((size * np.minimum(run, limit)).sum())
    span = work / (load * nodes)
    if arrivals == "trace":
        times = trace_arrivals(submit_all, n)
    elif arrivals == "poisson":
        times = np.cumsum(rng.exponential(1.0, n))
        times -= times[0]
    else:
        raise ValueError(f"arrivals must be 'trace' or 'poisson', not {arrivals!r}")
    submit = np.round(times * (span / times[-1]))
    return job_table(submit, size, run, limit,
                     f"<resampled from LANL-CM5 n={n} load={load} seed={seed} arrivals={arrivals}>", nodes)


def mean_queue(jobs, schedule) -> float:
    """Time-averaged number of waiting jobs (submit to begin) over the submit span."""
    begin = np.asarray(schedule.begin)
    ok = np.isfinite(begin)
    wait = (begin - np.asarray(jobs.submit))[ok].sum()
    span = float(np.nanmax(begin) - jobs.submit[0])
    return float(wait / span) if span > 0 else 0.0


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    load = float(sys.argv[2]) if len(sys.argv) > 2 else 0.95
    kind = sys.argv[3] if len(sys.argv) > 3 else "trace"
    table = generate(count, load=load, arrivals=kind)
    print(f"{len(table):,} jobs on {NODES} nodes at offered load {load} ({kind} arrivals), median size "
          f"{int(np.median(table.num_nodes))}, span {(table.submit[-1]) / 86400:.1f} days")
