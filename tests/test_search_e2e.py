"""Search sweeps end to end: the real ``drevt-sweep`` in a subprocess on the first 3,000 jobs of
the bundled KTH-SP2 trace, a real sqlite MLflow store, and a dense grid over the same range and
seeds computed independently (hand-built RunSpecs through run_seeds) to check the answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.sim.runtime import RunTimeModel
from drevt_sweep.sim.workload import WorkloadSpec
from drevt_sweep.sweep.seeds import RunSpec, run_seeds
from drevt_sweep.trace import ReadOptions
from drevt_sweep.trace.cache import load_trace

from conftest import BUNDLED_KTH

pytestmark = pytest.mark.slow

JOBS = 3000  # workload.max_jobs: the first 3,000 jobs of KTH-SP2, about 60 ms a run
LOW, HIGH, TARGET = 100, 160, 10000.0  # wait_p95 <= 10,000 s: crosses near 135 nodes
LOGNORMAL = RunTimeModel(mode="distribution", distribution="lognormal", scale=0.5, stddev=1.0)


def search(tmp_path: Path, *overrides: str, run: str = "run") -> dict:
    cmd = [sys.executable, "-m", "drevt_sweep", "search=threshold", "policy=easy",
           f"workload.max_jobs={JOBS}", "search.param=system.total_nodes", f"search.low={LOW}",
           f"search.high={HIGH}", "search.metric=wait_p95", f"search.target={TARGET}",
           f"paths.output_root={tmp_path / 'out'}", f"hydra.run.dir={tmp_path / run}",
           "progress=false", "parallel.n_jobs=2", *overrides]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / run / "search.json").read_text())
    assert result["sentence"] in proc.stdout and (tmp_path / run / "search.html").is_file()
    return result


def grid(run_time: RunTimeModel, seeds: int) -> dict[int, np.ndarray]:
    """wait_p95 of every seed at every node count in [LOW, HIGH]: the dense grid."""
    jobs = load_trace(BUNDLED_KTH, ReadOptions(trace_format="swf", force_simulation=True))
    out = {}
    for nodes in range(LOW, HIGH + 1):
        spec = RunSpec(total_nodes=nodes, backfill="easy", run_time=run_time,
                       workload=WorkloadSpec(max_jobs=JOBS))
        results = run_seeds(jobs, spec, list(range(seeds if spec.stochastic else 1)), n_jobs=2)
        out[nodes] = np.array([r.metrics["wait_p95"] for r in results])
    return out


def test_deterministic_search_equals_the_dense_grid(tmp_path):
    result = search(tmp_path, "run_time=actual")
    values = grid(RunTimeModel(), 1)
    passing = [n for n, v in values.items() if v[0] <= TARGET]
    first = min(passing)
    assert all(n in passing for n in range(first, HIGH + 1)), "grid not monotone: pick another target"
    assert result["answer"] == first and result["bracket"] == [first - 1, first]
    assert result["deterministic"] and result["interval"] == [first - 1, first]
    assert result["runs"] == len(result["probes"]) <= 2 + 3 * 6  # one run a probe, ~log2(60) each
    for probe in result["probes"]:
        assert probe["mean"] == values[probe["value"]][0]


STOCHASTIC = ("run_time=lognormal", "search.seeds=4", "search.max_seeds=16")


@pytest.fixture(scope="module")
def stochastic_search(tmp_path_factory) -> dict:
    """One stochastic search run in one go: checked against the dense grid, and the answer a
    search stopped by Ctrl-C and resumed must give."""
    return search(tmp_path_factory.mktemp("stochastic"), *STOCHASTIC)


def test_stochastic_search_agrees_with_the_dense_grid_over_the_same_seeds(stochastic_search):
    result = stochastic_search
    values = grid(LOGNORMAL, 16)
    # The same seeds give the same numbers: every probe is the grid's mean over its first n seeds.
    for probe in result["probes"]:
        assert probe["mean"] == pytest.approx(values[probe["value"]][:probe["n_seeds"]].mean(), rel=1e-12)
    low, high = result["interval"]
    assert low is not None and high is not None and low < result["answer"] <= high
    # Every crossing of the grid's 16-seed mean lies inside the search's 95% interval, and
    # the grid's mean fails below it and passes above it.
    mean = {n: v.mean() for n, v in values.items()}
    crossings = [n for n in range(LOW + 1, HIGH + 1) if (mean[n] <= TARGET) != (mean[n - 1] <= TARGET)]
    assert crossings and all(low < n <= high for n in crossings), (crossings, low, high)
    assert all(mean[n] > TARGET for n in range(LOW, low + 1))
    assert all(mean[n] <= TARGET for n in range(high, HIGH + 1))
    # Far fewer runs than the grid's 61 x 16.
    assert result["runs"] < 61 * 16 / 4


def test_a_search_is_one_tracked_run_and_a_stopped_one_resumes_from_the_store(tmp_path):
    from mlflow.tracking import MlflowClient

    common = ("run_time=lognormal", "search.seeds=4", "search.max_seeds=8")
    stopped = search(tmp_path, *common, "search.max_probes=3", run="stopped")
    assert stopped["budget_exhausted"] and stopped["simulated_runs"] == stopped["runs"]
    resumed = search(tmp_path, *common, "resume=true", run="resumed")
    assert resumed["reused_runs"] == stopped["runs"]
    assert resumed["simulated_runs"] == resumed["runs"] - stopped["runs"]
    fresh = search(tmp_path, *common, run="fresh", )
    assert (resumed["answer"], resumed["interval"]) == (fresh["answer"], fresh["interval"])
    assert resumed["probes"] == fresh["probes"]

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep")
    runs = client.search_runs([experiment.experiment_id], max_results=5000)
    searches = [r for r in runs if r.data.tags.get("drevt_kind") == "search"]
    assert len(searches) == 3 and all(r.info.status == "FINISHED" for r in searches)
    run = next(r for r in searches if r.info.run_id == fresh["run_id"])
    assert run.data.params["search.param"] == "system.total_nodes"
    assert run.data.params["search.target"] == str(TARGET) and run.data.params["policy.backfill"] == "easy"
    assert run.data.metrics["answer"] == fresh["answer"]
    assert (run.data.metrics["interval_low"], run.data.metrics["interval_high"]) == tuple(fresh["interval"])
    probes = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == run.info.run_id]
    assert len(probes) == len(fresh["probes"])
    assert all(p.data.tags["drevt_kind"] == "configuration" for p in probes)
    by_nodes = {int(p.data.params["system.total_nodes"]): p for p in probes}
    for probe in fresh["probes"]:
        logged = by_nodes[probe["value"]]
        assert logged.data.metrics["wait_p95"] == pytest.approx(probe["mean"])
        seeds = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == logged.info.run_id]
        assert sorted(int(s.data.params["seed"]) for s in seeds) == list(range(probe["n_seeds"]))
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"search.json", "search.html", "search.png"} <= artifacts


def test_optimize_runs_reproducible_optuna_trials_end_to_end(tmp_path):
    common = ("search=optimize", "run_time=lognormal", "search.seeds=3", "search.trials=6",
              "search.space={system.total_nodes:[100,160],policy.backfill:[easy,conservative]}",
              "search.objective=wait_mean", 'search.constraints=["bsld_p95 <= 200"]')
    cmd = [sys.executable, "-m", "drevt_sweep", f"workload.max_jobs={JOBS}", "progress=false",
           f"paths.output_root={tmp_path / 'out'}", *common]
    results = []
    for run in ("a", "b"):
        proc = subprocess.run([*cmd, f"hydra.run.dir={tmp_path / run}", "tracking.enabled=false"],
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results.append(json.loads((tmp_path / run / "search.json").read_text()))
    a, b = results
    assert [t["params"] for t in a["trials"]] == [t["params"] for t in b["trials"]]
    assert [t["value"] for t in a["trials"]] == [t["value"] for t in b["trials"]]
    assert a["best"] is not None and a["best"]["feasible"] and a["sentence"] in proc.stdout


def test_ctrl_c_marks_the_search_killed_and_resume_finishes_it(tmp_path, stochastic_search):
    import signal

    from mlflow.tracking import MlflowClient

    common = STOCHASTIC
    cmd = [sys.executable, "-m", "drevt_sweep", "search=threshold", "policy=easy",
           f"workload.max_jobs={JOBS}", "search.param=system.total_nodes", f"search.low={LOW}",
           f"search.high={HIGH}", "search.metric=wait_p95", f"search.target={TARGET}",
           f"paths.output_root={tmp_path / 'out'}", f"hydra.run.dir={tmp_path / 'stopped'}",
           "progress=false", "parallel.n_jobs=2", *common]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"})
    probes_seen = 0
    for line in proc.stdout:
        probes_seen += " - probe system.total_nodes=" in line
        if probes_seen == 3:
            proc.send_signal(signal.SIGINT)
            break
    proc.communicate(timeout=300)
    assert probes_seen == 3 and proc.returncode == 130
    stopped = json.loads((tmp_path / "stopped" / "search.json").read_text())
    assert stopped["status"] == "KILLED"

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep")
    runs = client.search_runs([experiment.experiment_id], max_results=5000)
    kinds = {(r.data.tags.get("drevt_kind"), r.info.status) for r in runs}
    assert ("search", "KILLED") in kinds and ("configuration", "KILLED") in kinds
    finished_seeds = sum(1 for r in runs if r.data.tags.get("drevt_kind") == "seed" and r.info.status == "FINISHED")
    assert finished_seeds >= 8  # the probes measured before the interrupt

    resumed = search(tmp_path, *common, "resume=true", run="resumed")
    assert resumed["reused_runs"] == finished_seeds
    fresh = stochastic_search  # the same search run in one go (another store)
    assert (resumed["answer"], resumed["interval"], resumed["probes"]) == \
        (fresh["answer"], fresh["interval"], fresh["probes"])


def test_search_runs_carry_provenance_grid_seed_names_and_exact_params(tmp_path):
    """Issue 24 item 5: source tags, git commit and the trace dataset on every search run; seed
    runs named as a grid's; a bisected float's param is the text its probe's name shows."""
    from mlflow.tracking import MlflowClient

    cmd = [sys.executable, "-m", "drevt_sweep", "search=threshold", "policy=easy", "run_time=lognormal",
           "workload.max_jobs=500", "search.param=workload.load_factor", "search.low=0.3",
           "search.high=2.0", "search.metric=wait_mean", "search.target=600", "search.direction=below",
           "search.seeds=2", "search.max_seeds=2", "search.max_probes=5",
           f"paths.output_root={tmp_path / 'out'}", f"hydra.run.dir={tmp_path / 'run'}",
           "progress=false", "parallel.n_jobs=1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("drevt-sweep").experiment_id], max_results=500)
    assert {r.data.tags["drevt_kind"] for r in runs} == {"search", "configuration", "seed"}
    for run in runs:
        tags = run.data.tags
        assert tags["mlflow.source.name"] == "drevt-sweep" and tags["mlflow.user"]
        assert "mlflow.source.git.commit" in tags  # the tests run from a checkout
        (entry,) = run.inputs.dataset_inputs
        assert entry.dataset.name == "kth_sp2"
    seeds = [r for r in runs if r.data.tags["drevt_kind"] == "seed"]
    assert {r.info.run_name for r in seeds} == {f"seed {s}" for s in (0, 1)}
    for probe in (r for r in runs if r.data.tags["drevt_kind"] == "configuration"):
        value = probe.data.params["workload.load_factor"]
        assert probe.info.run_name == f"workload.load_factor={value}"
