"""Bytes that are not UTF-8 (issue 29 item 8): with on_bad_row=skip a damaged row is skipped
and counted, a damaged field that nothing reads is decoded leniently and counted, and the rest
of the trace is read; with on_bad_row=error the first such byte is named by file, line and column."""

from __future__ import annotations

import pytest

from drevt_sweep.errors import TraceError
from drevt_sweep.trace import ReadOptions, read_trace

SIMPLE_HEADER = b"job_submit_time,num_nodes,queue,time_limit,actual_run_time\n"


def _read(tmp_path, data: bytes, fmt: str, skip: bool = True, **options):
    path = tmp_path / f"trace.{fmt}"
    path.write_bytes(data)
    return path, read_trace(path, ReadOptions(trace_format=fmt, queues="all",
                                              on_bad_row="skip" if skip else "error", **options))


def test_error_mode_names_file_line_and_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(SIMPLE_HEADER + b"0,1,pbatch,100,10\n5,1,pb\xe9tch,100,10\n")
    with pytest.raises(TraceError) as error:
        read_trace(path, ReadOptions(queues="all"))
    assert str(error.value).startswith(f"{path}:3: not UTF-8 text: byte 0xe9 at column 7 of the line")
    assert "on_bad_row=skip" in str(error.value)


def test_skip_mode_skips_a_row_whose_queue_is_damaged_and_reads_the_rest(tmp_path):
    data = SIMPLE_HEADER + b"0,1,pbatch,100,10\n5,1,pb\xe9tch,100,10\n9,2,pbatch,100,10\n"
    _, jobs = _read(tmp_path, data, "simple")
    assert len(jobs) == 2 and jobs.submit.tolist() == [0, 9]
    assert jobs.meta.excluded == {"bad_row:queue_not_utf8": 1}
    (reject,) = jobs.meta.rejects
    assert reject.line == 3 and reject.column == "queue" and "not UTF-8" in reject.reason


def test_two_damaged_queue_names_are_never_merged_into_one(tmp_path):
    data = SIMPLE_HEADER + b"0,1,q\xe9,100,10\n5,1,q\xe8,100,10\n9,2,pbatch,100,10\n"
    _, jobs = _read(tmp_path, data, "simple")
    assert jobs.queue_names == ("pbatch",) and jobs.meta.excluded == {"bad_row:queue_not_utf8": 2}


def test_a_damaged_number_is_a_bad_row(tmp_path):
    data = SIMPLE_HEADER + b"0,1,pbatch,100,10\n5,\xff,pbatch,100,10\n"
    _, jobs = _read(tmp_path, data, "simple")
    assert len(jobs) == 1 and jobs.meta.excluded == {"bad_row:num_nodes_not_a_number": 1}


def test_an_swf_comment_line_is_decoded_leniently_and_counted(tmp_path):
    data = (b"; Acknowledge: Lars Malinowsky (latin-1: \xe9)\n; MaxNodes: 4\n"
            b"1 0 0 10 1 -1 -1 1 100 -1 1 1 1 -1 1 1 -1 -1\n")
    _, jobs = _read(tmp_path, data, "swf")
    assert len(jobs) == 1 and jobs.meta.notes == {"non_utf8_lines_outside_rows": 1}
    assert jobs.meta.machine_nodes == 4
    with pytest.raises(TraceError, match=r"trace.swf:1: not UTF-8 text: byte 0xe9"):
        _read(tmp_path, data, "swf", skip=False)


def test_an_swf_field_nobody_reads_is_decoded_leniently(tmp_path):
    data = b"1 0 0 10 1 -1 -1 1 100 -1 1 1 1 -1 1 1 -1 x\xe9\n2 5 0 10 1 -1 -1 1 100 -1 1 1 1 -1 1 1 -1 -1\n"
    _, jobs = _read(tmp_path, data, "swf")
    assert len(jobs) == 2 and jobs.meta.notes["non_utf8_text_replaced"] == 1


def test_a_slurm_job_name_is_decoded_leniently(tmp_path):
    data = (b"JobIDRaw|JobName|Submit|Start|End|ReqNodes|Timelimit|Partition\n"
            b"1|caf\xe9|2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T00:01:00|1|00:10:00|a\n"
            b"2|run|2024-01-01T00:00:01|2024-01-01T00:00:05|2024-01-01T00:01:00|1|00:10:00|a\n")
    _, jobs = _read(tmp_path, data, "slurm")
    assert jobs.job_id.tolist() == [1, 2] and jobs.meta.notes == {"non_utf8_text_replaced": 1}
    assert not jobs.meta.rejects


def test_a_lassen_column_the_simulator_never_uses_is_decoded_leniently(tmp_path):
    data = (b"primary_job_id,job_name,job_submit_time,begin_time,end_time,num_nodes,queue,time_limit\n"
            b"1,caf\xe9,0,1,11,1,pbatch,100\n2,ok,1,2,12,1,pbatch,100\n")
    _, jobs = _read(tmp_path, data, "lassen")
    assert len(jobs) == 2 and jobs.meta.notes == {"non_utf8_text_replaced": 1}


def test_a_damaged_user_name_is_a_bad_row(tmp_path):
    data = (b"job_submit_time,num_nodes,queue,time_limit,actual_run_time,user\n"
            b"0,1,pbatch,100,10,al\xe9\n5,1,pbatch,100,10,bob\n")
    _, jobs = _read(tmp_path, data, "simple")
    assert jobs.user_names == ("bob",) and jobs.meta.excluded == {"bad_row:user_not_utf8": 1}


def test_drevt_sim_reports_the_count(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "t.csv"
    path.write_bytes(SIMPLE_HEADER + b"0,1,pbatch,100,10\n5,1,pb\xe9tch,100,10\n")
    proc = subprocess.run([sys.executable, "-m", "drevt_sweep.cli.sim", str(path), "--queues", "all",
                           "--total_nodes", "2", "--on_bad_row", "skip", "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "1 bad rows skipped: not UTF-8 text" in proc.stderr
