"""The Python API: simulate_trace, Schedule.to_frame (load_sweep: tests/test_examples.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.api import simulate_trace
from drevt_sweep.errors import DrevtError
from drevt_sweep.sim.metrics import compute_metrics

TINY = Path(__file__).parent / "data" / "traces" / "sweep_tiny.csv"


def test_simulate_trace_returns_the_schedule_and_its_metrics():
    run = simulate_trace(TINY, total_nodes=10, run_time="limit", backfill="none")
    assert run.metrics == compute_metrics(run.jobs, run.schedule)
    frame = run.frame()
    assert len(frame) == len(run.jobs)
    assert list(frame.columns[:5]) == ["job_id", "submit", "num_nodes", "time_limit", "queue"]
    np.testing.assert_array_equal(frame["wait"], run.schedule.begin - run.jobs.submit)
    assert frame["wait"].mean() == pytest.approx(run.metrics["wait_mean"])
    assert (frame["end"] == frame["begin"] + frame["run_time"]).all()


def test_the_same_call_gives_the_same_schedule():
    a = simulate_trace(TINY, total_nodes=10, run_time="lognormal", scale=0.5, stddev=0.5, seed=3)
    b = simulate_trace(TINY, total_nodes=10, run_time="lognormal", scale=0.5, stddev=0.5, seed=3)
    assert a.frame().equals(b.frame())


def test_to_frame_without_jobs_and_with_rejected_jobs():
    run = simulate_trace(TINY, total_nodes=2, run_time="limit")  # some jobs are too wide
    frame = run.schedule.to_frame()
    assert list(frame.columns) == ["begin", "end", "run_time", "killed", "rejected"]
    assert frame["rejected"].any() and frame.loc[frame.rejected, "begin"].isna().all()


def test_bad_input_is_a_message():
    with pytest.raises(DrevtError, match="run_time"):
        simulate_trace(TINY, run_time="oracle")
