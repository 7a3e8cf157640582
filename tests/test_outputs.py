"""Output files: exact content on small schedules, exact number formatting, round trips."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drevt_sweep.errors import ConfigError
from drevt_sweep.jobs import JobTable, TraceMeta
from drevt_sweep.outputs import (
    RESOURCE_COLUMNS,
    SCHEDULE_COLUMNS,
    format_number,
    format_number_column,
    format_rows,
    resource_csv_bytes,
    schedule_csv_bytes,
    write_resource_csv,
    write_schedule_csv,
    write_stats_json,
)
from drevt_sweep.sim.schedule import Schedule


def make(submit, nodes, begin, run, *, limit=None, queue=None, names=("pbatch",), killed=None,
         rejected=None, total_nodes=100, job_id=None, exit_status=None):
    n = len(submit)
    rejected = np.zeros(n, bool) if rejected is None else np.asarray(rejected, bool)
    begin = np.where(rejected, np.nan, np.asarray(begin, float))
    run = np.where(rejected, np.nan, np.asarray(run, float))
    meta = TraceMeta(
        path="t.csv", trace_format="simple", mode="simulation", checksum="0", timezone="UTC",
        timestamp_format="epoch", machine_nodes=None, has_actual_run_time=True, rows_read=n,
        rows_kept=n,
    )
    jobs = JobTable(
        job_id=np.arange(n, dtype=np.int64) if job_id is None else np.asarray(job_id, np.int64),
        source_line=np.arange(2, n + 2, dtype=np.int64),
        submit=np.asarray(submit, float), begin=np.full(n, np.nan), end=np.full(n, np.nan),
        num_nodes=np.asarray(nodes, np.int64),
        time_limit=np.asarray(limit if limit is not None else np.full(n, 100.0), float),
        actual_run_time=run.copy(),
        queue_code=np.zeros(n, np.int32) if queue is None else np.asarray(queue, np.int32),
        queue_names=tuple(names),
        exit_status=np.zeros(n, np.int64) if exit_status is None else np.asarray(exit_status),
        meta=meta,
    )
    schedule = Schedule(
        mode="simulation", total_nodes=total_nodes, begin=begin, end=begin + run, run_time=run,
        killed=np.zeros(n, bool) if killed is None else np.asarray(killed, bool),
        rejected=rejected,
    )
    return jobs, schedule


# The seeds' example: three 10-node jobs back to back on a 100-node machine.
SEEDS = dict(submit=[0, 50, 120], nodes=[10, 10, 10], begin=[0, 100, 150], run=[100, 50, 80],
             limit=[100, 50, 80])


def test_schedule_csv_of_the_seeds_example():
    jobs, schedule = make(**SEEDS)
    assert schedule_csv_bytes(jobs, schedule).decode() == (
        "job_id,job_submit_time,begin_time,end_time,num_nodes,exit_status,queue,time_limit,"
        "actual_run_time\n"
        "0,0,0,100,10,0,pbatch,100,100\n"
        "1,50,100,150,10,0,pbatch,50,50\n"
        "2,120,150,230,10,0,pbatch,80,80\n"
    )
    assert SCHEDULE_COLUMNS[1:8] == (
        "job_submit_time", "begin_time", "end_time", "num_nodes", "exit_status", "queue",
        "time_limit",
    )


def test_schedule_csv_leaves_out_rejected_jobs_and_quotes_queue_names():
    jobs, schedule = make(
        submit=[0, 1, 2], nodes=[1, 500, 2], begin=[0, 0, 3], run=[5, 0, 7.5],
        queue=[0, 1, 1], names=("pbatch", 'odd, "name"'), rejected=[False, True, False],
        job_id=[17, 18, 19], exit_status=[0, 0, -1],
    )
    lines = schedule_csv_bytes(jobs, schedule).decode().splitlines()
    assert lines[1:] == [
        "17,0,0,5,1,0,pbatch,100,5",
        '19,2,3,10.5,2,-1,"odd, ""name""",100,7.5',
    ]


def test_times_are_written_exactly():
    submit = [0.1, 1 / 3, 1_700_000_000.123456, 2.0**60]
    run = [1e-3, 86400.5, math.pi, 1.0]
    jobs, schedule = make(submit=submit, nodes=[1] * 4, begin=submit, run=run)
    rows = [line.split(",") for line in schedule_csv_bytes(jobs, schedule).decode().splitlines()]
    back = np.array([[float(r[1]), float(r[2]), float(r[3]), float(r[8])] for r in rows[1:]])
    expected = np.stack([jobs.submit, schedule.begin, schedule.end, schedule.run_time], axis=1)
    assert back.tobytes() == expected.tobytes()  # bit-identical
    assert rows[1][1] == "0.1" and rows[4][1] == "1.152921504606847e+18"


def test_resource_csv_has_one_row_per_change():
    # Back to back: at 100 and 150 one job ends as another of the same size starts: no change.
    jobs, schedule = make(**SEEDS)
    assert resource_csv_bytes(jobs, schedule).decode() == (
        "time,free_nodes,allocated_nodes\n0,90,10\n230,100,0\n"
    )
    assert RESOURCE_COLUMNS == ("time", "free_nodes", "allocated_nodes")


def test_resource_csv_with_overlapping_jobs():
    # A: [0, 10) 4 nodes; B: [5, 20) 3 nodes; C: [10, 12) 6 nodes, D rejected; 10 nodes.
    #   t=0: +4 -> 4;  t=5: +3 -> 7;  t=10: -4 +6 -> 9;  t=12: -6 -> 3;  t=20: -3 -> 0
    jobs, schedule = make(submit=[0, 0, 0, 0], nodes=[4, 3, 6, 11], begin=[0, 5, 10, 0],
                          run=[10, 15, 2, 1], rejected=[False, False, False, True],
                          total_nodes=10)
    assert resource_csv_bytes(jobs, schedule).decode().splitlines()[1:] == [
        "0,6,4", "5,3,7", "10,1,9", "12,7,3", "20,10,0",
    ]


def test_an_over_committed_replay_shows_negative_free_nodes():
    jobs, schedule = make(submit=[0, 0], nodes=[3, 3], begin=[0, 0], run=[5, 5], total_nodes=4)
    assert resource_csv_bytes(jobs, schedule).decode().splitlines()[1:] == ["0,-2,6", "5,4,0"]


def test_empty_schedules_write_a_header_only():
    jobs, schedule = make(submit=[0], nodes=[9], begin=[0], run=[1], rejected=[True])
    assert schedule_csv_bytes(jobs, schedule).decode().count("\n") == 1
    assert resource_csv_bytes(jobs, schedule).decode() == "time,free_nodes,allocated_nodes\n"


def test_files_are_written_and_gzip_when_asked(tmp_path):
    jobs, schedule = make(**SEEDS)
    plain = write_schedule_csv(tmp_path / "sub" / "schedule.csv", jobs, schedule)
    packed = write_schedule_csv(tmp_path / "schedule.csv.gz", jobs, schedule)
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    write_resource_csv(tmp_path / "resources.csv", jobs, schedule)
    assert (tmp_path / "resources.csv").read_text().startswith("time,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["resources.csv", "schedule.csv.gz", "sub"]


def test_unwritable_paths_are_config_errors(tmp_path):
    jobs, schedule = make(**SEEDS)
    with pytest.raises(ConfigError, match="is a directory"):
        write_schedule_csv(tmp_path, jobs, schedule)
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="cannot write output file"):
        write_schedule_csv(tmp_path / "file" / "x.csv", jobs, schedule)


def test_stats_json_writes_nan_as_null(tmp_path):
    path = write_stats_json(
        tmp_path / "stats.json",
        {"wait_mean": 1.5, "utilization": float("nan"), "jobs_simulated": np.float64(3)},
        {"run": {"seed": np.int64(4)}},
    )
    document = json.loads(path.read_text())
    assert document == {
        "run": {"seed": 4}, "metrics": {"wait_mean": 1.5, "utilization": None, "jobs_simulated": 3.0},
    }


# --- number formatting --------------------------------------------------------------------------


def reference(values) -> list[str]:
    return [format_number(v) for v in values]


def formatted(values) -> list[str]:
    column = format_number_column(np.asarray(values))
    return format_rows([column, b"\n"], len(values)).decode().splitlines()


def test_integral_floats_print_as_integers_and_the_rest_as_repr():
    values = [0.0, -0.0, 5.0, -5.0, 100.0, 2.0**53, 0.5, -2.5, 1e-300, float("inf"), float("nan")]
    assert formatted(values) == [
        "0", "-0.0", "5", "-5", "100", "9007199254740992.0", "0.5", "-2.5", "1e-300", "inf", "nan",
    ]
    assert formatted(np.array([0, -7, 2**63 - 1, -(2**63)], dtype=np.int64)) == [
        "0", "-7", str(2**63 - 1), str(-(2**63)),
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, width=64), min_size=1, max_size=50))
def test_vectorised_floats_match_the_scalar_formatter_and_round_trip(values):
    text = formatted(values)
    assert text == reference(values)
    assert np.array(list(map(float, text))).tobytes() == np.array(values, float).tobytes()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), min_size=1, max_size=50))
def test_vectorised_integers_match_str(values):
    assert formatted(np.array(values, dtype=np.int64)) == [str(v) for v in values]


# --- round trip through the simple reader -----------------------------------------------------


def _read_back(path):
    trace = pytest.importorskip("drevt_sweep.trace")
    try:
        return trace.read_trace(
            path, trace.ReadOptions(trace_format="simple", timestamp_format="epoch", queues="all")
        )
    except ImportError:
        pytest.skip("the simple reader is not there yet")


def test_the_schedule_csv_is_a_replay_trace_that_round_trips_bit_identically(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    submit = np.sort(1_700_000_000 + rng.random(n) * 1e6)
    begin = submit + rng.exponential(500, n)
    limit = rng.integers(60, 7200, n).astype(float)
    run = np.minimum(limit, rng.lognormal(6, 1, n))
    jobs, schedule = make(submit=submit, nodes=rng.integers(1, 64, n), begin=begin, run=run,
                          limit=limit, queue=rng.integers(0, 2, n), names=("pbatch", "pdebug"),
                          total_nodes=64)
    path = write_schedule_csv(tmp_path / "schedule.csv", jobs, schedule)
    back = _read_back(path)
    assert back.meta.mode == "replay"
    assert len(back) == n
    order = np.argsort(back.job_id)  # sorted by submit either way; compare by id
    for mine, theirs in ((jobs.submit, back.submit), (schedule.begin, back.begin),
                         (schedule.end, back.end), (jobs.time_limit, back.time_limit)):
        assert theirs[order].tobytes() == mine.tobytes()
    assert np.array_equal(back.num_nodes[order], jobs.num_nodes)
    assert list(back.queue[order]) == list(jobs.queue)
    # Writing its replay again gives the same file, but for actual_run_time, which a replay
    # recomputes as end - begin (equal to the run time up to the last bit for fractional times).
    engine = pytest.importorskip("drevt_sweep.sim.engine")
    again = schedule_csv_bytes(back, engine.replay(back, 64)).decode().splitlines()
    first = path.read_text().splitlines()
    assert [line.rsplit(",", 1)[0] for line in again] == [line.rsplit(",", 1)[0] for line in first]


def test_an_integral_schedule_round_trips_byte_for_byte(tmp_path):
    engine = pytest.importorskip("drevt_sweep.sim.engine")
    jobs, schedule = make(**SEEDS, job_id=[7, 8, 9], exit_status=[0, 1, -1])
    path = write_schedule_csv(tmp_path / "schedule.csv", jobs, schedule)
    back = _read_back(path)
    assert schedule_csv_bytes(back, engine.replay(back, 100)) == path.read_bytes()
