"""Who submitted: user and group/account columns read by every format (unknown allowed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from drevt_sweep.trace import ReadOptions, read_trace
from drevt_sweep.trace.cache import load_trace

TRACES = Path(__file__).resolve().parent / "data" / "traces"


def who(jobs):
    return list(zip(jobs.job_id.tolist(), jobs.user.tolist(), jobs.group.tolist()))


def test_swf_fields_12_and_13_with_unknowns():
    jobs = read_trace(TRACES / "swf_replay.swf", ReadOptions(trace_format="swf"))
    # the fixture's user/group fields are 1 1, 1 1, 2 2 ... and -1 where unknown
    assert jobs.user_code.dtype == np.int32 and jobs.group_code.dtype == np.int32
    assert who(jobs)[:3] == [(1, "1", "1"), (2, "1", "1"), (3, "2", "2")]
    assert set(jobs.user_names) <= {str(i) for i in range(100)}


def test_swf_unknown_user_is_minus_one(tmp_path):
    path = tmp_path / "u.swf"
    path.write_text("; MaxNodes: 8\n"
                    "1 0 0 10 1 -1 -1 1 20 -1 1 -1 7 -1 1 -1 -1 -1\n"
                    "2 1 0 10 1 -1 -1 1 20 -1 1 5 -1 -1 1 -1 -1 -1\n")
    jobs = read_trace(path, ReadOptions(trace_format="swf"))
    assert jobs.user_code.tolist() == [-1, 0] and jobs.user_names == ("5",)
    assert jobs.group_code.tolist() == [0, -1] and jobs.group_names == ("7",)
    assert who(jobs) == [(1, None, "7"), (2, "5", None)]


def test_lassen_hashed_ids_and_csm_ids():
    last = read_trace(TRACES / "lassen_last25.csv", ReadOptions(trace_format="lassen", queues="all"))
    row = {int(j): i for i, j in enumerate(last.job_id)}[501]
    assert (last.user[row], last.group[row]) == ("a1b2c3", "d4e5f6")
    for name in ("lassen_csm33.csv", "lassen_headerless.csv"):
        jobs = read_trace(TRACES / name, ReadOptions(trace_format="lassen", queues="all"))
        row = {int(j): i for i, j in enumerate(jobs.job_id)}[501]
        assert (jobs.user[row], jobs.group[row]) == ("1001", "1001"), name


def test_slurm_user_and_account_else_group(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("JobID|Submit|Timelimit|ReqNodes|ElapsedRaw|User|Group|Account\n"
                    "1|2024-05-01T08:00:00|01:00:00|1|60|alice|staff|proj1\n"
                    "2|2024-05-01T08:01:00|01:00:00|1|60|bob|staff|\n")
    jobs = read_trace(path, ReadOptions(trace_format="slurm", timezone="UTC"))
    assert who(jobs) == [(1, "alice", "proj1"), (2, "bob", None)]
    path.write_text("JobID|Submit|Timelimit|ReqNodes|ElapsedRaw|User|Group\n"
                    "1|2024-05-01T08:00:00|01:00:00|1|60|alice|staff\n")
    assert who(read_trace(path, ReadOptions(trace_format="slurm", timezone="UTC"))) == [(1, "alice", "staff")]


def test_simple_optional_columns_and_aliases(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit,uid,account\n"
                    "0,1,pbatch,10,007,A\n1,1,pbatch,10,,B\n2,1,pbatch,10,007,\n")
    jobs = read_trace(path, ReadOptions(trace_format="simple", timestamp_format="epoch"))
    assert jobs.user.tolist() == ["007", None, "007"]  # kept as text: not the number 7
    assert jobs.group.tolist() == ["A", "B", None]
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n0,1,pbatch,10\n")
    plain = read_trace(path, ReadOptions(trace_format="simple", timestamp_format="epoch"))
    assert plain.user_code.tolist() == [-1] and plain.user_names == () and plain.group.tolist() == [None]


def test_users_survive_the_cache_take_and_frame(tmp_path):
    options = ReadOptions(trace_format="lassen", queues="all")
    first = load_trace(str(TRACES / "lassen_last25.csv"), options, cache_dir=tmp_path)
    again = load_trace(str(TRACES / "lassen_last25.csv"), options, cache_dir=tmp_path)
    assert again.user_names == first.user_names and np.array_equal(again.user_code, first.user_code)
    assert again.group_names == first.group_names and np.array_equal(again.group_code, first.group_code)
    part = first.take(np.array([1, 0]))
    assert part.user.tolist() == first.user.tolist()[1::-1]
    assert "user" in first.to_frame().columns and "group" in first.to_frame().columns
