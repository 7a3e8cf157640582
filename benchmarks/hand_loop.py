"""The yardstick for sweeps (issue 23): what a researcher writes instead of ``drevt-sweep -m``.

A ``joblib.Parallel`` loop over ``drevt_sweep.api.simulate_trace``, one deterministic seed per
(policy, nodes) pair, the metrics written to one CSV. It does no tracking, no per-configuration
folders, no validation, no resume, no report: only the simulations and a table.

    python benchmarks/hand_loop.py --policies fcfs,easy --nodes 60,70,80 [--days 30] [--out f.csv]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd
from joblib import Parallel, delayed

from drevt_sweep.api import simulate_trace
from drevt_sweep.sim.workload import WorkloadSpec

BACKFILL = {"fcfs": ("fcfs", "none"), "easy": ("fcfs", "easy"), "sjf": ("sjf", "none"),
            "conservative": ("fcfs", "conservative")}


def one(policy: str, nodes: int, days: float | None) -> dict:
    priority, backfill = BACKFILL[policy]
    workload = WorkloadSpec(max_time=days * 86400.0) if days else None
    sim = simulate_trace("kth_sp2", priority=priority, backfill=backfill, total_nodes=nodes,
                         workload=workload)
    return {"policy": policy, "total_nodes": nodes, **sim.metrics}


def run(policies: list[str], nodes: list[int], days: float | None, n_jobs: int = -1) -> pd.DataFrame:
    rows = Parallel(n_jobs=n_jobs)(delayed(one)(p, n, days) for p in policies for n in nodes)
    return pd.DataFrame(rows)


def _ints(text: str) -> list[int]:
    if ":" in text:  # 60:160 = range(60, 160)
        low, high = (int(x) for x in text.split(":"))
        return list(range(low, high))
    return [int(x) for x in text.split(",")]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default="fcfs,easy")
    parser.add_argument("--nodes", default="60,70,80,90,100,110,120,140,160,200",
                        help="a list, or LOW:HIGH for range(LOW, HIGH)")
    parser.add_argument("--days", type=float, default=None, help="only the first DAYS days")
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--out", default="hand_loop.csv")
    args = parser.parse_args()
    started, cpu = time.perf_counter(), time.process_time()
    frame = run(args.policies.split(","), _ints(args.nodes), args.days, args.n_jobs)
    frame.to_csv(args.out, index=False)
    print(f"hand loop: {len(frame)} simulations in {time.perf_counter() - started:.1f} s "
          f"(this process {time.process_time() - cpu:.1f} s CPU) -> {args.out}")
