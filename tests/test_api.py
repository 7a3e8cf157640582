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


# ---------------------------------------------------------------- issue 24 item 6, issue 27 item 3
@pytest.mark.parametrize("kwargs, message", [
    ({"total_nodes": 0}, "system.total_nodes=0: must be >= 1"),
    ({"total_nodes": -5}, "system.total_nodes=-5: must be >= 1"),
    ({"seed": -1}, "seed=-1: must be >= 0"),
    ({"run_time": "lognormal", "scale": 0}, "run_time.scale=0: must be > 0"),
    ({"timezone": "Mars/Olympus"}, "timezone.name=Mars/Olympus: not an IANA time zone"),
    ({"compression": "sometimes"}, "compression=sometimes: must be one of"),
])
def test_bad_values_get_drevt_sweeps_own_message(kwargs, message):
    with pytest.raises(DrevtError, match=message.replace("(", r"\(")):
        simulate_trace(TINY, **kwargs)


def test_a_missing_catalogue_trace_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("DREVT_TRACE_DIR", raising=False)
    with pytest.raises(DrevtError, match="fetch it once with `drevt-sweep-fetch lanl_cm5`"):
        simulate_trace("lanl_cm5")


def test_a_machine_with_partitions_as_system_gives_it():
    # one partition of 3 nodes serving every queue: the jobs wider than 3 nodes are rejected
    small = {"partitions": [{"name": "small", "nodes": 3, "queues": ["*"]}]}
    run = simulate_trace(TINY, system=small, run_time="limit")
    wide = int((run.jobs.num_nodes > 3).sum())
    assert run.total_nodes == 3 and 0 < wide < len(run.jobs)
    assert run.schedule.rejected.sum() == wide and run.metrics["jobs_simulated"] == len(run.jobs) - wide
    lassen = simulate_trace(TINY, system="lassen", run_time="limit")
    assert lassen.total_nodes == 752 + 36 and "partition/pbatch/wait_mean" in lassen.metrics
    with pytest.raises(DrevtError, match="not both"):
        simulate_trace(TINY, system="lassen", total_nodes=10)
    with pytest.raises(DrevtError, match="system=atlantis: neither a bundled machine"):
        simulate_trace(TINY, system="atlantis")


def test_the_compression_order_reaches_the_engine(tmp_path):
    # The README's example (sjf, 10 nodes): J0 ends early at 50; J1 was reserved at 100; J2 (limit
    # 10) arrives at 50. compress_first moves J1 to 50 and places J2 at 100; interleaved lets J2,
    # ranked first, take [50, 60) and J1 moves only to 60.
    trace = tmp_path / "three.csv"
    trace.write_text("job_submit_time,num_nodes,queue,time_limit,actual_run_time\n"
                     "0,10,q,100,50\n1,10,q,50,50\n50,10,q,10,10\n")
    begins = {order: simulate_trace(trace, total_nodes=10, priority="sjf", backfill="conservative",
                                    compression=order, cache=False).schedule.begin.tolist()
              for order in ("compress_first", "interleaved")}
    assert begins == {"compress_first": [0, 50, 100], "interleaved": [0, 60, 50]}


def test_repr_is_one_short_line_and_frame_has_date_times():
    run = simulate_trace(TINY, total_nodes=10, run_time="limit")
    text = repr(run)
    assert len(text) < 160 and "\n" not in text and text.startswith("Simulation(10 jobs, 10 nodes")
    frame = run.frame(datetimes=True)
    assert str(frame["begin_time"].dt.tz) == run.jobs.meta.timezone
    assert [t.timestamp() for t in frame["begin_time"]] == frame["begin"].tolist()
    assert "begin_time" not in run.frame().columns


@pytest.mark.slow
def test_load_sweep_gives_typed_columns_and_what_each_configuration_ran_on(tmp_path):
    import math

    from sweep_helpers import run_sweep

    from drevt_sweep.api import load_sweep

    run_sweep(tmp_path, "policy=fcfs,easy", "run_time=limit,normal", "replicates=2")
    frame = load_sweep(tmp_path / "sweep")
    assert len(frame) == 2 * (1 + 2)  # limit: one seed (deterministic), normal: two
    assert set(frame["total_nodes"]) == {10} and set(frame["jobs"]) == {10}
    assert sorted(frame.groupby("configuration")["n_seeds"].first()) == [1, 1, 2, 2]
    assert frame["system.enforce_limits"].map(type).eq(bool).all()
    assert frame["run_time.scale"].dtype.kind == "f" and frame["system.total_nodes"].dtype.kind == "i"
    for column in frame.columns:  # nothing is left as the text of a value
        assert not frame[column].isin(["None", "True", "False", "[]", "null"]).any(), column
    window = frame["workload.window_start"]
    assert window.map(lambda v: v is None or (isinstance(v, float) and math.isnan(v))).all()
