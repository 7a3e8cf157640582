# %% [markdown]
# # drevt-sweep from Python
#
# From a trace to a schedule and its metrics in one call, then a small sweep read back from
# the MLflow store as a tidy DataFrame. Run it as a script (`python examples/quickstart.py`;
# CI does, see tests/test_examples.py) or cell by cell (`# %%` cells: VS Code, Jupytext).
# It writes only under a temporary folder (or $DREVT_EXAMPLE_OUT).

# %%
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from drevt_sweep.api import load_sweep, simulate_trace
from drevt_sweep.sim.workload import WorkloadSpec

first_month = WorkloadSpec(max_time=30 * 86400)  # KTH-SP2's first 30 days keep this quick

# %% [markdown]
# ## One trace, two policies
# `simulate_trace` takes a path or a catalogue name (`kth_sp2` is bundled; `lanl_cm5` after
# `drevt-sweep-fetch lanl_cm5`) and returns the jobs, the schedule and the metrics.

# %%
runs = {backfill: simulate_trace("kth_sp2", backfill=backfill, workload=first_month)
        for backfill in ("none", "easy")}
for backfill, run in runs.items():
    print(f"{backfill:>5}: {run.metrics['jobs_simulated']:.0f} jobs, mean wait "
          f"{run.metrics['wait_mean'] / 3600:.2f} h, utilization {run.metrics['utilization']:.1%}")
assert runs["easy"].metrics["wait_mean"] < runs["none"].metrics["wait_mean"]

# %% [markdown]
# `Schedule.to_frame(jobs)` (here `run.frame()`) is one row per job: submit, begin, end, wait ...

# %%
frame = runs["easy"].frame()
print(frame[["job_id", "submit", "num_nodes", "begin", "wait", "run_time"]].head())
print("share of jobs that waited under a minute:", f"{(frame.wait < 60).mean():.1%}")

# %% [markdown]
# ## A sweep, read back as a DataFrame
# `load_sweep(folder)` (or `load_sweep("drevt-sweep")`, an experiment's name) gives one row per
# configuration x seed with its settings and metrics.

# %%
out = Path(os.environ.get("DREVT_EXAMPLE_OUT") or tempfile.mkdtemp(prefix="drevt-example-"))
subprocess.run(
    [sys.executable, "-m", "drevt_sweep", "-m", "policy=fcfs,easy", "run_time=lognormal",
     "replicates=3", "workload.max_time=2592000", "progress=false",
     f"paths.output_root={out}", f"hydra.sweep.dir={out / 'sweep'}"],
    check=True, stdout=subprocess.DEVNULL,
)
seeds = load_sweep(out / "sweep")
print(seeds[["configuration", "seed", "policy.name", "wait_mean", "utilization"]])
by_policy = seeds.groupby("policy.name")["wait_mean"].agg(["mean", "std", "count"])
print(by_policy)
assert len(seeds) == 6 and set(seeds["policy.name"]) == {"fcfs", "easy"}
