"""The simple CSV format: the seeds' parsing and mode test cases, aliases, filters, sorting."""

from __future__ import annotations

import gzip
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.errors import ConfigError, TraceError
from drevt_sweep.trace import DEFAULT_QUEUES, ReadOptions, read_trace

TRACES = Path(__file__).resolve().parent / "data" / "traces"


def read(name: str, **options):
    return read_trace(TRACES / name, ReadOptions(**options))


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def test_replay_with_end_time_keeps_the_recorded_times_exactly():
    jobs = read("simple_replay_epoch.csv", timestamp_format="epoch")
    assert jobs.meta.mode == "replay" and jobs.meta.can_replay
    assert jobs.submit.tolist() == [0, 50, 120]
    assert jobs.begin.tolist() == [0, 100, 150]
    assert jobs.end.tolist() == [100, 150, 230]
    assert jobs.actual_run_time.tolist() == [100, 50, 80]
    assert jobs.time_limit.tolist() == [100, 50, 80]
    assert jobs.num_nodes.tolist() == [10, 10, 10]
    assert jobs.exit_status.tolist() == [0, 0, 0]
    assert jobs.queue.tolist() == ["pbatch"] * 3
    assert jobs.source_line.tolist() == [2, 3, 4]
    assert jobs.job_id.tolist() == [1, 2, 3]
    assert jobs.meta.has_actual_run_time
    assert jobs.meta.timestamp_format == "epoch"


def test_replay_with_duration_computes_end_from_begin():
    jobs = read("simple_replay_duration.csv")
    assert jobs.meta.mode == "replay"
    assert jobs.end.tolist() == [100, 150, 230]
    assert jobs.actual_run_time.tolist() == [100, 50, 80]


def test_replay_with_iso_timestamps_matches_the_epoch_example():
    iso = read("simple_replay_iso.csv", timezone="UTC")
    assert iso.meta.timestamp_format == "iso"
    base = utc("2024-01-15T00:00:00")
    assert (iso.submit - base).tolist() == [0, 50, 120]
    assert (iso.begin - base).tolist() == [0, 100, 150]
    assert (iso.end - base).tolist() == [100, 150, 230]


def test_simulation_without_run_times():
    jobs = read("simple_simulation.csv")
    assert jobs.meta.mode == "simulation"
    assert np.isnan(jobs.begin).all() and np.isnan(jobs.end).all()
    assert np.isnan(jobs.actual_run_time).all()
    assert not jobs.meta.has_actual_run_time
    assert jobs.exit_status.tolist() == [-1, -1, -1]
    assert jobs.time_limit.tolist() == [100, 50, 80]


def test_simulation_with_actual_run_time_column():
    jobs = read("simple_simulation_actual.csv")
    assert jobs.meta.mode == "simulation"
    assert jobs.meta.has_actual_run_time
    assert jobs.actual_run_time.tolist() == [87, 18]
    assert jobs.num_nodes.tolist() == [80, 15]


def test_columns_by_name_in_any_order_with_aliases_and_extra_columns():
    jobs = read("simple_aliases_extra.csv", queues="all")
    # walltime -> time_limit, run_time -> actual_run_time, note/user ignored; sorted by submit
    assert jobs.submit.tolist() == [50, 100, 100, 300]
    assert jobs.time_limit.tolist() == [1800, 600, 7200, 3600]
    assert jobs.actual_run_time.tolist() == [1800, 60, 3600, 1200]
    assert jobs.queue.tolist() == ["pbatch2", "pdebug", "pall", "pbatch"]
    # ties at submit 100 keep file order (lines 3 then 4)
    assert jobs.source_line.tolist() == [5, 3, 4, 2]


@pytest.mark.parametrize(
    "header, expected",
    [
        ("job_submit_time,num_nodes,queue,time_limit,timelimit,walltime", 1.0),
        ("job_submit_time,num_nodes,queue,walltime,timelimit", 2.0),
        ("job_submit_time,num_nodes,queue,walltime", 1.0),
    ],
)
def test_first_time_limit_alias_in_the_seeds_order_wins(tmp_path, header, expected):
    values = "0,1,pbatch" + "".join(f",{i + 1}" for i in range(len(header.split(",")) - 3))
    path = tmp_path / "t.csv"
    path.write_text(f"{header}\n{values}\n")
    assert read_trace(path).time_limit.tolist() == [expected]


@pytest.mark.parametrize(
    "alias", ["actual_run_time", "duration", "actual_duration", "run_time", "actual_runtime"]
)
def test_every_actual_run_time_alias_is_accepted_in_simulation(tmp_path, alias):
    path = tmp_path / "t.csv"
    path.write_text(f"job_submit_time,num_nodes,queue,time_limit,{alias}\n0,1,pbatch,100,42\n")
    jobs = read_trace(path)
    assert jobs.meta.mode == "simulation"
    assert jobs.actual_run_time.tolist() == [42]


def test_actual_run_time_alias_order(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "job_submit_time,num_nodes,queue,time_limit,actual_runtime,run_time,duration\n"
        "0,1,pbatch,100,1,2,3\n"
    )
    assert read_trace(path).actual_run_time.tolist() == [3]  # duration comes first


def test_begin_time_and_duration_select_replay_not_simulation(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "job_submit_time,begin_time,duration,num_nodes,exit_status,queue,time_limit\n"
        "0,5,10,1,0,pbatch,20\n"
    )
    jobs = read_trace(path)
    assert jobs.meta.mode == "replay"
    assert jobs.end.tolist() == [15]


def test_end_time_wins_over_duration_when_both_are_given(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "job_submit_time,begin_time,end_time,duration,num_nodes,exit_status,queue,time_limit\n"
        "0,5,30,10,1,0,pbatch,20\n"
    )
    jobs = read_trace(path)
    assert jobs.end.tolist() == [30] and jobs.actual_run_time.tolist() == [25]


def test_force_simulation_keeps_history_and_uses_it_as_actual_run_time():
    jobs = read("simple_replay_epoch.csv", force_simulation=True)
    assert jobs.meta.mode == "simulation"
    assert jobs.actual_run_time.tolist() == [100, 50, 80]
    assert jobs.begin.tolist() == [0, 100, 150]  # the history stays available
    assert jobs.meta.has_actual_run_time


def test_default_queue_filter_counts_each_excluded_queue():
    jobs = read("simple_aliases_extra.csv")
    assert set(jobs.queue) <= set(DEFAULT_QUEUES)
    assert jobs.meta.excluded == {"queue:pdebug": 1}
    assert jobs.meta.rows_read == 4 and jobs.meta.rows_kept == 3


@pytest.mark.parametrize("queues", [("pdebug", "pall"), "pdebug,pall", ["pdebug", "pall"]])
def test_explicit_queue_list(queues):
    jobs = read("simple_aliases_extra.csv", queues=queues)
    assert sorted(jobs.queue) == ["pall", "pdebug"]
    assert jobs.meta.excluded == {"queue:pbatch": 1, "queue:pbatch2": 1}


def test_queue_all_keeps_everything_and_an_empty_list_is_a_config_error():
    assert len(read("simple_aliases_extra.csv", queues="all")) == 4
    with pytest.raises(ConfigError, match="queues is empty"):
        read("simple_aliases_extra.csv", queues=())


def test_nothing_left_after_the_queue_filter_says_why(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n0,1,pdebug,10\n")
    with pytest.raises(TraceError, match="queue:pdebug: 1.*queues=all"):
        read_trace(path)


def test_job_id_column_is_used_when_present(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "job_id,job_submit_time,num_nodes,queue,time_limit\n77,5,1,pbatch,10\n12,1,1,pbatch,10\n"
    )
    assert read_trace(path).job_id.tolist() == [12, 77]


def test_gzip_is_read_transparently_and_the_checksum_is_of_the_stored_bytes(tmp_path):
    plain = (TRACES / "simple_simulation.csv").read_bytes()
    path = tmp_path / "trace.csv.gz"
    path.write_bytes(gzip.compress(plain))
    jobs = read_trace(path)
    assert jobs.time_limit.tolist() == [100, 50, 80]
    import hashlib

    assert jobs.meta.checksum == hashlib.sha256(path.read_bytes()).hexdigest()
    # gzip is recognised by content, not by the name
    renamed = tmp_path / "trace.csv"
    renamed.write_bytes(path.read_bytes())
    assert read_trace(renamed).time_limit.tolist() == [100, 50, 80]


def test_source_lines_count_blank_lines_and_a_header_after_them(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "\n\njob_submit_time,num_nodes,queue,time_limit\n0,1,pbatch,10\n\n  \n5,2,pbatch,10\n"
    )
    jobs = read_trace(path)
    assert jobs.source_line.tolist() == [4, 7]


def test_header_names_are_trimmed_and_case_insensitive(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(" Job_Submit_Time , NUM_NODES,Queue,Time_Limit\n0,1,pbatch,10\n")
    assert read_trace(path).num_nodes.tolist() == [1]


def test_numeric_looking_queue_names_keep_their_text(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n0,1,007,10\n1,1,1.50,10\n")
    jobs = read_trace(path, ReadOptions(queues="all"))
    assert jobs.queue.tolist() == ["007", "1.50"]


def test_fractional_epoch_seconds(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "job_submit_time,num_nodes,queue,time_limit,actual_run_time\n0.25,1,pbatch,10.5,2.75\n"
    )
    jobs = read_trace(path)
    assert jobs.submit.tolist() == [0.25]
    assert jobs.time_limit.tolist() == [10.5] and jobs.actual_run_time.tolist() == [2.75]


def test_iso_offsets_are_honoured_exactly_once():
    jobs = read("simple_iso_offsets.csv", timezone="America/Los_Angeles")
    first, second = jobs.source_line.argsort()
    assert jobs.submit[first] == utc("2024-07-01T12:00:00")
    assert jobs.begin[first] == utc("2024-07-01T12:00:00")  # 14:00+02:00
    assert jobs.end[first] == utc("2024-07-01T13:00:00.5")
    # no offset: Los Angeles wall time (PDT, UTC-7); "-07:00" applied once, not twice
    assert jobs.submit[second] == utc("2024-07-01T12:30:00")
    assert jobs.begin[second] == utc("2024-07-01T13:00:00")
    assert jobs.end[second] == utc("2024-07-01T14:00:00")


def test_the_table_columns_have_the_documented_types():
    jobs = read("simple_replay_epoch.csv")
    for name in ("submit", "begin", "end", "time_limit", "actual_run_time"):
        assert getattr(jobs, name).dtype == np.float64
    for name in ("job_id", "source_line", "num_nodes", "exit_status"):
        assert getattr(jobs, name).dtype == np.int64
    assert jobs.queue_code.dtype == np.int32
    assert jobs.meta.rows_read == jobs.meta.rows_kept + sum(jobs.meta.excluded.values())


def test_stray_quotes_inside_unquoted_fields_are_text_like_pandas_reads_them(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        'job_submit_time,comment,num_nodes,queue,time_limit\n0,say "hi,2,pbatch,10\n'
        '5,"real\nquote",3,pbatch,10\n9,6" tall,4,pbatch,10\n'
    )
    jobs = read_trace(path)
    assert jobs.num_nodes.tolist() == [2, 3, 4]
    assert jobs.source_line.tolist() == [2, 3, 5]


def test_a_space_before_a_quote_does_not_open_it(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('job_submit_time,comment,num_nodes,queue,time_limit\n0, "a,b",2,pbatch,10\n')
    with pytest.raises(TraceError, match="t.csv:2: .*wrong number of fields"):
        read_trace(path)


def test_a_giant_header_field_is_a_trace_error(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('"' + "x" * 200_000 + '",job_submit_time\n1,2\n')
    with pytest.raises(TraceError, match="missing required column 'num_nodes'"):
        read_trace(path)


@pytest.mark.parametrize("name", ["simple_aliases_extra.csv", "lassen_csm33.csv"])
def test_scanning_in_small_chunks_finds_the_same_records(monkeypatch, name):
    from drevt_sweep.trace import records

    data = (TRACES / name).read_bytes()
    whole = records.scan_delimited(data, ",", '"')
    monkeypatch.setattr(records, "_CHUNK", 7)
    chunked = records.scan_delimited(data, ",", '"')
    for field in ("starts", "ends", "lines", "field_counts"):
        np.testing.assert_array_equal(getattr(whole, field), getattr(chunked, field))
