"""Replay mode: the trace's own history, kept exactly; over-commit is a warning, not an error."""

from __future__ import annotations

import numpy as np
import pytest

from drevt_sweep.sim.engine import replay
from drevt_sweep.errors import ConfigError
from jobtable_factory import make_jobs


def test_times_match_the_input_exactly():
    # "Replay mode with end_time column - Times match input exactly" (seeds), with
    # non-integral epoch times.
    begin = [1_700_000_000.25, 1_700_000_100.5, 1_700_000_150.125]
    end = [1_700_000_100.5, 1_700_000_150.125, 1_700_000_230.0]
    jobs = make_jobs([1_700_000_000.0, 1_700_000_050.0, 1_700_000_120.0], [10, 10, 10], [100, 50, 80],
                     begin=begin, end=end)
    s = replay(jobs, 100)
    assert s.mode == "replay"
    assert s.begin.tolist() == begin and s.end.tolist() == end
    assert np.array_equal(s.run_time, np.array(end) - np.array(begin))
    assert not s.killed.any() and not s.rejected.any()
    assert s.warnings == {"replay_overcommit_instants": 0, "replay_begin_before_submit": 0}
    assert s.total_nodes == 100
    # the schedule does not alias the table's arrays
    s.begin[0] = 0
    assert jobs.begin[0] == begin[0]


def test_replay_ignores_limits_and_machine_size():
    # A job that ran past its limit stays as recorded (not killed); a job wider than
    # total_nodes is not rejected in replay (it did run) but shows up as over-commit.
    jobs = make_jobs([0, 0], [4, 12], [10, 10], begin=[0, 20], end=[30, 25])
    s = replay(jobs, 10)
    assert s.run_time.tolist() == [30, 5]
    assert not s.killed.any() and not s.rejected.any()
    # usage: 4 on [0,20), 16 on [20,25) (> 10), 4 on [25,30), 0 after -> 1 instant (t=20)
    assert s.warnings["replay_overcommit_instants"] == 1


def test_overcommit_instants_are_counted():
    # 10 nodes. A: [0,100) 6 nodes; B: [50,150) 6 nodes; C: [60,70) 1 node.
    # Usage after each event time: 0:6, 50:12*, 60:13*, 70:12*, 100:6, 150:0 -> 3 instants.
    jobs = make_jobs([0, 0, 0], [6, 6, 1], [100, 100, 100], begin=[0, 50, 60], end=[100, 150, 70])
    assert replay(jobs, 10).warnings["replay_overcommit_instants"] == 3
    assert replay(jobs, 13).warnings["replay_overcommit_instants"] == 0
    assert replay(jobs, 12).warnings["replay_overcommit_instants"] == 1  # only t=60 (13 > 12)


def test_back_to_back_jobs_do_not_overcommit():
    # A ends at 10 exactly when B starts: the end counts first, so usage never exceeds 10.
    # A zero-length job at 10 adds nothing either.
    jobs = make_jobs([0, 0, 0], [10, 10, 10], [10, 10, 10], begin=[0, 10, 10], end=[10, 20, 10])
    assert replay(jobs, 10).warnings["replay_overcommit_instants"] == 0


def test_begin_before_submit_is_counted_not_rejected():
    jobs = make_jobs([5, 5], [1, 1], [10, 10], begin=[3, 6], end=[4, 7])
    s = replay(jobs, 2)
    assert s.warnings["replay_begin_before_submit"] == 1
    assert s.begin.tolist() == [3, 6]


def test_simulation_trace_cannot_be_replayed():
    jobs = make_jobs([0, 1], [1, 1], [10, 10], [5, 5])
    with pytest.raises(ConfigError, match="simulation mode"):
        replay(jobs, 4)


def test_replay_table_with_missing_times_is_an_error():
    jobs = make_jobs([0, 1], [1, 1], [10, 10], begin=[0, np.nan], end=[5, 9])
    with pytest.raises(ConfigError, match=r"1 job\(s\) lack them, first at row 1 \(line 3\)"):
        replay(jobs, 4)


def test_simulation_mode_table_with_complete_times_replays():
    # A table whose meta says "simulation" but that carries finite begin/end (e.g. a schedule
    # produced by the simulator, read back) can be replayed.
    jobs = make_jobs([0], [1], [10], begin=[1], end=[6])
    jobs = jobs.replace(meta=jobs.meta.__class__(**{**jobs.meta.__dict__, "mode": "simulation"}))
    assert replay(jobs, 4).begin.tolist() == [1]


def test_end_before_begin_is_an_error():
    jobs = make_jobs([0], [1], [10], begin=[5], end=[4])
    with pytest.raises(ConfigError, match="end before they begin"):
        replay(jobs, 4)


def test_empty_replay():
    jobs = make_jobs([], [], [], begin=[], end=[])
    s = replay(jobs, 4)
    assert len(s) == 0 and s.warnings["replay_overcommit_instants"] == 0
