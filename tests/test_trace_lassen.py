"""The Lassen (IBM CSM allocation history) format: headers by name, headerless positions,
quoted free text, local timestamps with DST edges."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.errors import TraceError
from drevt_sweep.trace import ReadOptions, read_trace

TRACES = Path(__file__).resolve().parent / "data" / "traces"
VARIANTS = ["lassen_csm33.csv", "lassen_last25.csv", "lassen_headerless.csv"]


def read(name: str, **options):
    return read_trace(TRACES / name, ReadOptions(trace_format="lassen", **options))


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def by_id(jobs):
    return {int(job): i for i, job in enumerate(jobs.job_id)}


@pytest.mark.parametrize("name", VARIANTS)
def test_every_layout_reads_the_same_jobs(name):
    jobs = read(name, queues="all")
    assert jobs.meta.trace_format == "lassen" and jobs.meta.mode == "replay"
    assert jobs.meta.timestamp_format == "iso"
    assert jobs.meta.timezone == "America/Los_Angeles"
    assert sorted(jobs.job_id.tolist()) == [501, 502, 503, 504, 505]
    assert jobs.meta.excluded == {"not_finished": 1}
    row = by_id(jobs)[501]
    assert jobs.num_nodes[row] == 4 and jobs.time_limit[row] == 7200
    assert jobs.queue[row] == "pbatch" and jobs.exit_status[row] == 0
    # fractional seconds, PDT (UTC-7)
    assert jobs.submit[row] == pytest.approx(utc("2020-06-01T16:59:00.5"))
    assert jobs.begin[row] == pytest.approx(utc("2020-06-01T17:00:05.12345"))
    assert jobs.actual_run_time[row] == pytest.approx(3600)


def test_quoted_commas_and_newlines_parse_and_lines_stay_physical():
    jobs = read("lassen_csm33.csv", queues="all")
    lines = {int(j): int(line) for j, line in zip(jobs.job_id, jobs.source_line, strict=True)}
    # job 501's user_script spans lines 2-4, so job 502 starts on line 5
    assert lines == {501: 2, 502: 5, 503: 6, 504: 7, 505: 8}
    headerless = read("lassen_headerless.csv", queues="all")
    assert {
        int(j): int(line) for j, line in zip(headerless.job_id, headerless.source_line, strict=True)
    } == {
        501: 1,
        502: 4,
        503: 5,
        504: 6,
        505: 7,
    }


def test_dst_gap_and_fold_edges():
    jobs = read("lassen_csm33.csv")
    row = by_id(jobs)
    gap = row[502]  # begin 2020-03-08 02:30 does not exist in Los Angeles
    assert jobs.submit[gap] == utc("2020-03-08T09:50:00")  # 01:50 PST
    assert jobs.begin[gap] == utc("2020-03-08T10:30:00")  # read as PST = 03:30 PDT
    assert jobs.end[gap] == utc("2020-03-08T11:00:00")  # 04:00 PDT
    fold = row[503]  # 01:10 and 01:30:00.5 happen twice on 2020-11-01
    assert jobs.submit[fold] == utc("2020-11-01T08:10:00")  # first occurrence, PDT
    assert jobs.begin[fold] == utc("2020-11-01T08:30:00.5")
    assert jobs.end[fold] == utc("2020-11-01T10:30:00")  # 02:30 PST
    spans = row[504]  # begins 01:50 PDT, ends 01:20 PST (the second pass through the hour)
    assert jobs.begin[spans] == utc("2020-11-01T08:50:00")
    assert jobs.end[spans] == utc("2020-11-01T09:20:00")
    assert jobs.meta.notes["dst_gap_shifted_forward"] == 1
    assert jobs.meta.notes["dst_fold_first_occurrence"] == 2
    assert jobs.meta.notes["dst_fold_second_occurrence"] == 1


def test_default_queue_filter_is_the_seeds_and_counts_per_queue():
    jobs = read("lassen_csm33.csv")
    assert set(jobs.queue) == {"pbatch", "pall"}
    assert jobs.meta.excluded == {"not_finished": 1, "queue:pdebug": 1}
    assert jobs.meta.rows_read == 6 and jobs.meta.rows_kept == 4


def test_run_time_over_limit_is_legal_and_counted():
    jobs = read("lassen_csm33.csv")
    assert jobs.meta.notes["run_time_exceeds_time_limit"] == 1  # job 503: 2 h in a 1 h limit


def test_force_simulation():
    jobs = read("lassen_csm33.csv", force_simulation=True)
    assert jobs.meta.mode == "simulation"
    np.testing.assert_allclose(jobs.actual_run_time, jobs.end - jobs.begin)


def test_sorted_by_submit_with_file_order_for_ties():
    jobs = read("lassen_csm33.csv", queues="all")
    assert np.all(np.diff(jobs.submit) >= 0)


def test_timezone_option_changes_the_wall_clock_reading():
    la = read("lassen_csm33.csv", queues="all")
    ny = read("lassen_csm33.csv", queues="all", timezone="America/New_York")
    row_la, row_ny = by_id(la)[501], by_id(ny)[501]
    assert la.submit[row_la] - ny.submit[row_ny] == 3 * 3600


def test_zero_length_allocations_are_excluded_and_counted(tmp_path):
    text = (TRACES / "lassen_last25.csv").read_text()
    text = text.replace("2020-06-01 11:00:05.12345", "2020-06-01 10:00:05.12345")
    path = tmp_path / "zero.csv"
    path.write_text(text)
    jobs = read_trace(path, ReadOptions(trace_format="lassen"))
    assert jobs.meta.excluded["zero_run_time"] == 1
    assert 501 not in jobs.job_id


def test_a_short_headerless_file_is_not_taken_for_lassen(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("1,2,3\n")
    with pytest.raises(TraceError, match="not a Lassen trace.*3 fields.*33"):
        read_trace(path, ReadOptions(trace_format="lassen"))


def test_missing_column_names_the_mode(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit,begin_time\n")
    with pytest.raises(TraceError, match="missing required column 'end_time' for replay mode"):
        read_trace(path, ReadOptions(trace_format="lassen"))
