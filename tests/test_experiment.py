"""Seed fan-out: results depend on the seed only, never on workers or their order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.sweep.seeds import RunSpec, aggregate, run_seed, run_seeds, seeds_for
from drevt_sweep.sim.runtime import RunTimeModel
from drevt_sweep.trace import ReadOptions, read_trace

TINY = Path(__file__).parent / "data" / "traces" / "sweep_tiny.csv"
LOGNORMAL = RunTimeModel(mode="distribution", distribution="lognormal", scale=0.5, stddev=1.0)


@pytest.fixture(scope="module")
def jobs():
    return read_trace(TINY, ReadOptions(trace_format="simple", queues="all"))


def test_results_do_not_depend_on_n_jobs_or_order(jobs):
    spec = RunSpec(total_nodes=10, backfill="easy", run_time=LOGNORMAL)
    seeds = [3, 1, 4, 0, 2]
    one = run_seeds(jobs, spec, seeds, n_jobs=1, keep_schedule_of=None)
    two = run_seeds(jobs, spec, list(reversed(seeds)), n_jobs=2)
    assert [r.seed for r in two] == sorted(seeds)
    by_seed_one = {r.seed: r.metrics for r in one}
    by_seed_two = {r.seed: r.metrics for r in two}
    assert by_seed_one == by_seed_two  # bit-identical floats
    lone = run_seed(jobs, spec, 4, keep_schedule=True)
    assert lone.metrics == by_seed_one[4]


def test_schedules_are_bit_identical_across_processes(jobs):
    spec = RunSpec(total_nodes=10, backfill="conservative", run_time=LOGNORMAL)
    here = run_seed(jobs, spec, 7, keep_schedule=True).schedule
    there = run_seeds(jobs, spec, [6, 7], n_jobs=2, keep_schedule_of=7)[1].schedule
    for name in ("begin", "end", "run_time"):
        assert np.array_equal(getattr(here, name), getattr(there, name), equal_nan=True)


def test_deterministic_models_run_one_seed():
    assert seeds_for(RunSpec(total_nodes=1, run_time=RunTimeModel(mode="limit")), 5, 10) == [5]
    assert seeds_for(RunSpec(total_nodes=1, replay=True, run_time=LOGNORMAL), 0, 10) == [0]
    assert seeds_for(RunSpec(total_nodes=1, run_time=LOGNORMAL), 5, 3) == [5, 6, 7]


def test_a_failing_seed_becomes_a_result_not_a_crash(jobs):
    spec = RunSpec(total_nodes=10, run_time=RunTimeModel(mode="distribution", scale=-1.0))
    result = run_seed(jobs, spec, 0)
    assert not result.ok and "scale" in result.error


def test_aggregate_gives_mean_std_and_t_interval():
    from drevt_sweep.sweep.seeds import SeedResult

    results = [SeedResult(s, metrics={"wait_mean": w}) for s, w in enumerate([10.0, 12.0, 14.0])]
    agg = aggregate(results)
    assert agg["wait_mean"] == pytest.approx(12.0)
    assert agg["wait_mean_std"] == pytest.approx(2.0)
    # t(0.975, 2) = 4.302653; half-width = 4.302653 * 2 / sqrt(3)
    assert agg["wait_mean_ci95"] == pytest.approx(4.302653 * 2 / 3**0.5, rel=1e-5)
    # One seed: the mean only, no _std/_ci95 of 0 (or NaN) to mislead a reader of the store.
    for stochastic in (False, True):
        assert aggregate(results[:1], stochastic=stochastic) == {"wait_mean": 10.0}


def test_the_worker_side_imports_neither_mlflow_nor_hydra():
    import subprocess
    import sys

    code = (
        "import sys, drevt_sweep.sweep.seeds as e; "
        "bad = [m for m in ('mlflow', 'hydra', 'omegaconf') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_stop_request_hands_out_no_more_seeds_and_is_raised_after_the_running_ones(jobs, n_jobs, capfd):
    """How a sweep stops when its tracking store fails mid-way: no new seed starts, the ones
    running finish, the error comes back, and loky's threads do not crash on the way."""
    spec = RunSpec(total_nodes=10, backfill="easy", run_time=LOGNORMAL)
    asked = []

    def stop() -> None:
        asked.append(1)
        if len(asked) > 2:
            raise RuntimeError("the store failed")

    done = []
    with pytest.raises(RuntimeError, match="the store failed"):
        run_seeds(jobs, spec, list(range(40)), n_jobs=n_jobs, stop_if=stop,
                  progress=type("P", (), {"advance": lambda self: done.append(1)})())
    assert 0 < len(done) < 40
    assert "Traceback" not in capfd.readouterr().err
