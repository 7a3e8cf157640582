"""Run-time models: the seeds' cases, the distributions' parameters, clipping and seeding."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jobtable_factory
from drevt_sweep.errors import ConfigError
from drevt_sweep.jobs import JobTable
from drevt_sweep.sim.runtime import (
    DEFAULT_MIN_RUN_TIME,
    STREAMS,
    RunTimeModel,
    draw_run_times,
    is_stochastic,
    stream_rng,
)


def make_jobs(time_limit, actual_run_time=None) -> JobTable:
    """A simulation-mode table: jobs submitted one second apart, one node each."""
    n = len(time_limit)
    return jobtable_factory.make_jobs(list(range(n)), [1] * n, time_limit, actual_run_time,
                                      path="jobs.csv")


N = 20_000
L = 1000.0
MANY = make_jobs(np.full(N, L).tolist())


def normal(scale, stddev, **kw):
    return RunTimeModel(mode="distribution", distribution="normal", scale=scale, stddev=stddev, **kw)


def lognormal(scale, stddev, **kw):
    return RunTimeModel(mode="distribution", distribution="lognormal", scale=scale, stddev=stddev, **kw)


def uniform(low, high, **kw):
    return RunTimeModel(mode="distribution", distribution="uniform", scale=low, stddev=high, **kw)


# --- the seeds' test cases -------------------------------------------------------------------


def test_simulation_mode_with_exact_durations_actual_duration_equals_time_limit():
    jobs = make_jobs([100, 50, 80.5])
    run = draw_run_times(jobs, RunTimeModel(mode="limit"), seed=0)
    assert run.tolist() == [100.0, 50.0, 80.5]
    assert run is not jobs.time_limit  # a copy: the table stays immutable


def test_simulation_mode_with_column_uses_provided_actual_duration():
    jobs = make_jobs([100, 20], actual_run_time=[87, 18])
    run = draw_run_times(jobs, RunTimeModel(mode="actual"), seed=0)
    assert run.tolist() == [87.0, 18.0]


def test_actual_longer_than_limit_is_left_to_the_engine():
    # The engine kills such a job at its limit (and counts it); the model does not clip it.
    jobs = make_jobs([100], actual_run_time=[150])
    assert draw_run_times(jobs, RunTimeModel(mode="actual"), seed=0).tolist() == [150.0]


def test_normal_mean_is_limit_times_scale():
    # N(L*0.8, L*0.1): the mean's standard error is 100/sqrt(20000) = 0.71 s; allow 5 s.
    run = draw_run_times(MANY, normal(0.8, 0.1), seed=1, enforce_limits=False)
    assert abs(run.mean() - 800.0) < 5.0
    assert abs(run.std() - 100.0) < 3.0


def test_lognormal_median_is_limit_times_scale():
    # LogNormal(log(L*0.5), 1.0): log-draws are N(log 500, 1); the sample median of the logs
    # has standard error 1.2533/sqrt(20000) = 0.009, allow 0.04.
    run = draw_run_times(MANY, lognormal(0.5, 1.0), seed=2, enforce_limits=False)
    logs = np.log(run)
    assert abs(np.median(logs) - math.log(500.0)) < 0.04
    assert abs(logs.std() - 1.0) < 0.03
    assert abs(np.median(run) / 500.0 - 1.0) < 0.04


def test_uniform_stays_within_low_and_high():
    run = draw_run_times(MANY, uniform(0.2, 0.6), seed=3)
    assert run.min() >= 200.0 and run.max() <= 600.0
    assert abs(run.mean() - 400.0) < 3.0  # sd of U(200,600) = 115, s.e. 0.8 s
    assert run.min() < 205.0 and run.max() > 595.0  # it really covers the range


# --- clipping ---------------------------------------------------------------------------------


def test_draws_are_clipped_to_min_run_time_and_to_the_limit():
    run = draw_run_times(MANY, normal(0.5, 2.0), seed=4)  # half the draws are negative
    assert run.min() == DEFAULT_MIN_RUN_TIME
    assert run.max() == L
    assert (run == DEFAULT_MIN_RUN_TIME).mean() > 0.3


def test_without_enforced_limits_draws_may_exceed_the_limit():
    run = draw_run_times(MANY, uniform(0.5, 1.5), seed=5, enforce_limits=False)
    assert run.max() > L and run.max() <= 1.5 * L


def test_min_run_time_is_configurable_and_the_limit_wins_over_it():
    jobs = make_jobs([5.0, 100.0])
    run = draw_run_times(jobs, uniform(0.0, 0.01, min_run_time=30.0), seed=0)
    # draws are below 1 s; clipped up to 30 s, but the 5 s job cannot exceed its limit
    assert run.tolist() == [5.0, 30.0]


# --- seeding ----------------------------------------------------------------------------------


def test_same_seed_gives_bit_identical_draws():
    model = lognormal(0.5, 1.0)
    a = draw_run_times(MANY, model, seed=42)
    b = draw_run_times(MANY, model, seed=42)
    assert a.tobytes() == b.tobytes()


def test_different_seeds_give_different_draws():
    model = lognormal(0.5, 1.0)
    assert not np.array_equal(draw_run_times(MANY, model, 0), draw_run_times(MANY, model, 1))


def test_the_run_time_stream_is_documented_and_independent_of_other_streams():
    expected = np.random.Generator(np.random.PCG64(np.random.SeedSequence(7).spawn(2)[0]))
    assert stream_rng(7, "run_time").random(5).tolist() == expected.random(5).tolist()
    a = stream_rng(7, "run_time").random(5)
    b = stream_rng(7, "input_shaking").random(5)
    assert not np.array_equal(a, b)
    assert STREAMS["run_time"] == 0  # changing it would change every published result


def test_deterministic_models_ignore_the_seed():
    jobs = make_jobs([10, 20], actual_run_time=[5, 6])
    for model in (RunTimeModel(mode="limit"), RunTimeModel(mode="actual"), normal(0.8, 0.0)):
        assert np.array_equal(draw_run_times(jobs, model, 0), draw_run_times(jobs, model, 99))


def test_draws_do_not_depend_on_the_policy():
    # Common random numbers: the draws are made before, and without, the scheduler; check it
    # end to end where the engine exists.
    engine = pytest.importorskip("drevt_sweep.sim.engine")
    jobs = make_jobs([100.0] * 200).replace(num_nodes=np.arange(200, dtype=np.int64) % 7 + 1)
    model = lognormal(0.5, 1.0)
    runs = []
    for priority, backfill in (("fcfs", "easy"), ("sjf", "conservative"), ("largest", "none")):
        schedule = engine.simulate(
            jobs, draw_run_times(jobs, model, 11), 8, priority=priority, backfill=backfill
        )
        runs.append(schedule.run_time)
    assert all(np.array_equal(runs[0], r) for r in runs[1:])


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True, None])
def test_a_bad_seed_is_a_config_error(seed):
    with pytest.raises(ConfigError, match="seed"):
        draw_run_times(MANY, lognormal(0.5, 1.0), seed=seed)


# --- errors -------------------------------------------------------------------------------------


def test_actual_without_run_times_is_an_error_that_suggests_the_alternatives():
    jobs = make_jobs([100, 50])
    with pytest.raises(ConfigError) as info:
        draw_run_times(jobs, RunTimeModel(mode="actual"), seed=0)
    message = str(info.value)
    assert "has none" in message and "'limit'" in message and "'distribution'" in message


def test_actual_with_some_run_times_missing_names_the_first_line():
    jobs = make_jobs([100, 50, 20], actual_run_time=[10, np.nan, np.nan])
    with pytest.raises(ConfigError, match=r"2 of 3 jobs .*line 3"):
        draw_run_times(jobs, RunTimeModel(mode="actual"), seed=0)


def test_an_empty_table_gives_no_draws():
    jobs = make_jobs([])
    for model in (RunTimeModel(mode="actual"), RunTimeModel(mode="limit"), lognormal(1, 1)):
        assert draw_run_times(jobs, model, 0).shape == (0,)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(mode="guess"), "unknown run_time_mode"),
        (dict(mode="distribution", distribution="gamma"), "unknown run_time_distribution"),
        (dict(mode="distribution", distribution="normal", scale=0), "scale > 0"),
        (dict(mode="distribution", distribution="lognormal", scale=-1), "scale > 0"),
        (dict(mode="distribution", distribution="normal", stddev=-0.1), "stddev >= 0"),
        (dict(mode="distribution", distribution="uniform", scale=0.5, stddev=0.5), "low < high"),
        (dict(mode="distribution", distribution="uniform", scale=-0.1, stddev=0.5), "low < high"),
        (dict(mode="distribution", distribution="uniform"), "low=1.0, high=0.0"),
        (dict(mode="limit", min_run_time=0), "min_run_time must be > 0"),
        (dict(mode="distribution", scale=float("nan")), "finite"),
        (dict(mode="distribution", stddev=float("inf")), "finite"),
        (dict(mode="distribution", scale="0.8"), "must be a number"),
    ],
)
def test_invalid_parameters_are_config_errors(kwargs, match):
    model = RunTimeModel(**kwargs)  # checked when used, so a sweep can report a failed run
    with pytest.raises(ConfigError, match=match):
        model.validate()
    with pytest.raises(ConfigError, match=match):
        draw_run_times(MANY, model, seed=0)


def test_distribution_parameters_are_not_checked_for_other_modes():
    model = RunTimeModel(mode="limit", scale=-5, stddev=-5)  # irrelevant for limit: accepted
    assert model.validate() is model


def test_is_stochastic():
    assert not is_stochastic(RunTimeModel(mode="actual"))
    assert not is_stochastic(RunTimeModel(mode="limit"))
    assert not is_stochastic(normal(0.8, 0.0))
    assert not is_stochastic(lognormal(0.8, 0.0))
    assert is_stochastic(normal(0.8, 0.2))
    assert is_stochastic(lognormal(0.5, 1.0))
    assert is_stochastic(uniform(0.1, 1.0))


def test_as_params_and_name():
    assert RunTimeModel(mode="limit").as_params() == {"mode": "limit"}
    assert RunTimeModel(mode="limit").name == "limit"
    model = uniform(0.1, 1.0)
    assert model.name == "uniform"
    assert model.as_params() == {
        "mode": "distribution", "distribution": "uniform", "scale": 0.1, "stddev": 1.0,
        "min_run_time": 1.0,
    }
