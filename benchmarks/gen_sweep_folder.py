"""A sweep folder of many configurations, from real simulations, for the report's benchmark and
its browser test: what ``drevt-sweep -m`` writes (``<n>/result.json``, ``config.yaml``,
``.hydra/overrides.yaml``, ``seed_metrics.csv``, ``schedule_seed<N>.csv.gz``, ``multirun.yaml``)
without Hydra, MLflow or figures, so that 1,000 configurations cost ~1,600 short simulations.

The grid: policies (FCFS, EASY) x machine sizes x run-time models, on the first ``days`` days
of KTH-SP2 (``workload.max_time``) through :func:`drevt_sweep.api.simulate_trace`; stochastic
models run ``seeds`` seeds (the same seeds for every policy: common random numbers).

    python benchmarks/gen_sweep_folder.py OUT [--configurations 1000] [--days 30]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

KTH = "kth_sp2"  # the bundled copy (drevt_sweep.api.trace_path)
POLICIES = (("fcfs", "none"), ("easy", "easy"))
# name -> (run_time argument, stddev, stochastic)
MODELS = {"actual": ("actual", 0.0, False), "limit": ("limit", 0.0, False),
          "lognormal": ("lognormal", 1.0, True), "normal": ("normal", 0.3, True),
          "lognormal_narrow": ("lognormal", 0.5, True)}


def grid(configurations: int) -> tuple[list[int], list[str]]:
    """Machine sizes and models whose product with the policies has ``configurations`` points
    (5 models when it divides, else fewer)."""
    for n_models in (5, 4, 3, 2, 1):
        if configurations % (len(POLICIES) * n_models) == 0:
            sizes = configurations // (len(POLICIES) * n_models)
            return list(range(60, 60 + sizes)), list(MODELS)[:n_models]
    raise ValueError(f"{configurations} configurations do not split into policies x sizes x models")


def _config(trace: Path, policy: str, backfill: str, model: str, nodes: int, days: float, seeds: int) -> dict:
    mode, stddev, stochastic = MODELS[model]
    return {
        "trace": {"name": "kth_sp2", "path": str(trace)},
        "format": {"name": "swf"},
        "timezone": {"name": "trace"},
        "run_time": {"name": model, "mode": "distribution" if stochastic else mode,
                     "distribution": mode if stochastic else "normal", "scale": 1.0, "stddev": stddev,
                     "min_run_time": 1.0},
        "policy": {"name": policy, "priority": "fcfs", "backfill": backfill, "replay": False},
        "system": {"name": "custom", "total_nodes": nodes, "enforce_limits": True},
        "workload": {"name": "window", "max_time": days * 86400.0},
        "parallel": {"n_jobs": 1, "backend": "loky"},
        "tracking": {"enabled": False, "log_schedule": True},
        "paths": {"root": ".", "output_root": "outputs"},
        "seed": 0, "replicates": seeds,
    }


def write_sweep_folder(out: Path, configurations: int = 1000, days: float = 30.0, seeds: int = 2,
                       trace=KTH, schedules: bool = True, sizes: list[int] | None = None,
                       models: list[str] | None = None) -> Path:
    """Simulate the grid (``sizes`` x ``models`` when given, else ``grid(configurations)``) and
    write its sweep folder at ``out``; returns ``out``."""
    from scipy.special import stdtrit

    from drevt_sweep.api import simulate_trace, trace_path
    from drevt_sweep.outputs import write_schedule_csv
    from drevt_sweep.sim.workload import WorkloadSpec

    out = Path(out)
    out.mkdir(parents=True, exist_ok=False)
    trace = trace_path(trace)
    if sizes is None or models is None:
        sizes, models = grid(configurations)
    workload = WorkloadSpec(max_time=days * 86400.0)
    num = 0
    for policy, backfill in POLICIES:
        for nodes in sizes:
            for model in models:
                run_time, stddev, stochastic = MODELS[model]
                seed_list = list(range(seeds)) if stochastic else [0]
                runs = [simulate_trace(trace, backfill=backfill, total_nodes=nodes, run_time=run_time,
                                       stddev=stddev, seed=s, workload=workload) for s in seed_list]
                job = out / str(num)
                (job / ".hydra").mkdir(parents=True)
                overrides = [f"policy={policy}", "system=custom", f"system.total_nodes={nodes}",
                             f"run_time={model}", "workload=window", f"workload.max_time={days * 86400:g}"]
                (job / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
                (job / "config.yaml").write_text(
                    yaml.safe_dump(_config(trace, policy, backfill, model, nodes, days, seeds), sort_keys=False))
                frame = pd.DataFrame([{"seed": s, **r.metrics} for s, r in zip(seed_list, runs)])
                (job / "seed_metrics.csv").write_text(frame.to_csv(index=False))
                metrics = {}
                for name in runs[0].metrics:
                    values = frame[name].to_numpy(dtype=float)
                    metrics[name] = float(values.mean())
                    spread = float(values.std(ddof=1)) if len(values) > 1 else 0.0
                    metrics[f"{name}_std"] = spread
                    metrics[f"{name}_ci95"] = (float(stdtrit(len(values) - 1, 0.975) * spread / np.sqrt(len(values)))
                                               if len(values) > 1 else 0.0)
                if schedules:
                    write_schedule_csv(job / f"schedule_seed{seed_list[0]}.csv.gz", runs[0].jobs, runs[0].schedule)
                label = (f"trace=kth_sp2 policy={policy} run_time={model} system=custom workload=window "
                         f"system.total_nodes={nodes}")
                result = {"label": label, "status": "FINISHED", "parent_run_id": None,
                          "config_hash": f"gen{num:06d}", "trace_checksum": runs[0].jobs.meta.checksum,
                          "total_nodes": nodes, "jobs": len(runs[0].jobs), "seeds": seed_list,
                          "metrics": metrics}
                (job / "result.json").write_text(json.dumps(result, indent=2))
                num += 1
    task = [f"policy={','.join(p for p, _ in POLICIES)}", "system=custom",
            f"system.total_nodes=range({sizes[0]},{sizes[-1] + 1})", f"run_time={','.join(models)}",
            "workload=window", f"workload.max_time={days * 86400:g}", f"replicates={seeds}"]
    (out / "multirun.yaml").write_text(yaml.safe_dump({"hydra": {"overrides": {
        "hydra": [f"hydra.sweep.dir={out}", "hydra.mode=MULTIRUN"], "task": task}}}))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--configurations", type=int, default=1000)
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args(argv)
    print(write_sweep_folder(args.out, args.configurations, args.days, args.seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
