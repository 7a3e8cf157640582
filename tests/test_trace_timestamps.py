"""Timestamp parsing: encodings, offsets, time zones and the documented DST rule."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest

from drevt_sweep.errors import ConfigError
from drevt_sweep.trace import ReadOptions, read_trace
from drevt_sweep.trace.timestamps import parse_times, resolve_zone

LA = resolve_zone("America/Los_Angeles")


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def parse(values, expected="auto", zone=LA, dtype="str"):
    return parse_times(pd.Series(values, dtype=dtype), expected, zone)


def test_epoch_integers_and_fractions():
    column = parse([0, 100, 1234567890], dtype="int64")
    assert column.encoding == "epoch"
    assert column.seconds.tolist() == [0, 100, 1234567890]
    column = parse(["0", "12.5", " 7 "])
    assert column.encoding == "epoch" and column.seconds.tolist() == [0, 12.5, 7]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2024-01-15T10:30:00", "2024-01-15T18:30:00"),
        ("2024-01-15 10:30:00", "2024-01-15T18:30:00"),
        ("2024-01-15 10:30:00.70215", "2024-01-15T18:30:00.702150"),
        ("2024-01-15T10:30", "2024-01-15T18:30:00"),
        ("2024-01-15T10:30:00Z", "2024-01-15T10:30:00"),
        ("2024-01-15T10:30:00+02:00", "2024-01-15T08:30:00"),
        ("2024-01-15T10:30:00-0500", "2024-01-15T15:30:00"),
        ("2024-07-15T10:30:00", "2024-07-15T17:30:00"),  # PDT in summer
    ],
)
def test_iso_forms_wall_clock_in_the_zone_and_offsets_once(text, expected):
    column = parse([text])
    assert column.encoding == "iso"
    assert column.seconds[0] == pytest.approx(utc(expected), abs=1e-6)


def test_fast_and_general_iso_paths_agree():
    values = ["2020-06-01 10:00:05.12345", "2020-11-01 01:30:00", "2020-03-08 02:30:00", None]
    fast = parse(values)
    general = parse([v if v is None else f" {v}" for v in values])  # spaces defeat the fast path
    np.testing.assert_array_equal(fast.seconds, general.seconds)
    np.testing.assert_array_equal(fast.dst_fold, general.dst_fold)
    np.testing.assert_array_equal(fast.dst_gap, general.dst_gap)


def test_missing_values_are_nan_and_flagged_missing():
    column = parse(["2024-01-15T10:30:00", None, ""])
    assert np.isnan(column.seconds[1:]).all()
    assert column.missing.tolist() == [False, True, True]
    assert not column.problems


def test_utc_and_other_zones():
    assert parse(["2024-01-15T10:30:00"], zone=resolve_zone("UTC")).seconds[0] == utc(
        "2024-01-15T10:30:00"
    )
    tokyo = parse(["2024-01-15T10:30:00"], zone=resolve_zone("Asia/Tokyo")).seconds[0]
    assert tokyo == utc("2024-01-15T01:30:00")


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "", "not a zone", "../etc/passwd"])
def test_unknown_zone_is_a_config_error(name):
    with pytest.raises(ConfigError, match="unknown time zone"):
        resolve_zone(name)


def test_unknown_zone_through_read_trace(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n0,1,pbatch,10\n")
    with pytest.raises(ConfigError, match="unknown time zone 'Nowhere/City'"):
        read_trace(path, ReadOptions(timezone="Nowhere/City"))


def test_dst_gap_is_read_with_the_offset_before_the_jump():
    column = parse(["2020-03-08 01:59:59", "2020-03-08 02:30:00", "2020-03-08 03:00:00"])
    # 02:30 does not exist in Los Angeles: read as PST (UTC-8) -> 10:30 UTC = 03:30 PDT
    assert column.seconds.tolist() == [
        utc("2020-03-08T09:59:59"),
        utc("2020-03-08T10:30:00"),
        utc("2020-03-08T10:00:00"),
    ]
    assert column.dst_gap.tolist() == [False, True, False]
    assert not column.dst_fold.any()
    # the same answer as Python's own zoneinfo with fold=0
    expected = datetime(2020, 3, 8, 2, 30, tzinfo=ZoneInfo("America/Los_Angeles")).timestamp()
    assert column.seconds[1] == expected


def test_dst_fold_is_the_first_occurrence_with_the_later_one_kept_aside():
    column = parse(["2020-11-01 01:30:00.5"])
    assert column.seconds[0] == utc("2020-11-01T08:30:00.5")  # 01:30 PDT
    assert column.dst_fold.tolist() == [True]
    assert column.second_occurrence[0] == utc("2020-11-01T09:30:00.5")  # 01:30 PST


def test_a_job_through_the_fold_uses_the_second_occurrence_only_when_order_requires(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "job_submit_time,begin_time,end_time,num_nodes,exit_status,queue,time_limit\n"
        "2020-11-01 00:50:00,2020-11-01 01:10:00,2020-11-01 01:40:00,1,0,pbatch,7200\n"
        "2020-11-01 01:20:00,2020-11-01 01:50:00,2020-11-01 01:10:00,1,0,pbatch,7200\n"
    )
    jobs = read_trace(path)
    assert jobs.begin.tolist() == [utc("2020-11-01T08:10:00"), utc("2020-11-01T08:50:00")]
    assert jobs.end.tolist() == [utc("2020-11-01T08:40:00"), utc("2020-11-01T09:10:00")]
    assert jobs.meta.notes == {"dst_fold_first_occurrence": 2, "dst_fold_second_occurrence": 1}


def test_dst_notes_through_read_trace(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "job_submit_time,num_nodes,queue,time_limit\n"
        "2020-03-08 02:15:00,1,pbatch,10\n"
        "2020-03-08 02:45:00,1,pbatch,10\n"
        "2020-11-01 01:05:00,1,pbatch,10\n"
    )
    assert read_trace(path).meta.notes == {
        "dst_fold_first_occurrence": 1,
        "dst_gap_shifted_forward": 2,
    }
    # the same wall times in UTC are unambiguous: nothing to note
    assert read_trace(path, ReadOptions(timezone="UTC")).meta.notes == {}


def test_the_rule_is_deterministic_across_zones_with_odd_gaps():
    # Lord Howe Island moves its clocks by 30 minutes
    zone = resolve_zone("Australia/Lord_Howe")
    column = parse(["2023-10-01 02:15:00"], zone=zone)
    expected = datetime(2023, 10, 1, 2, 15, tzinfo=ZoneInfo("Australia/Lord_Howe")).timestamp()
    assert column.seconds[0] == expected and column.dst_gap.tolist() == [True]


def test_mixed_encodings_in_one_column_are_flagged_on_the_odd_rows():
    column = parse(["1705276800", "2024-01-15T00:10:00", "1705276900"])
    assert column.encoding == "epoch"
    (problem,) = column.problems
    assert problem.code == "mixed_encoding" and problem.mask.tolist() == [False, True, False]


@pytest.mark.parametrize(
    "expected, values, code",
    [
        ("epoch", ["2024-01-15T00:00:00"], "wrong_encoding"),
        ("iso", ["1705276800"], "wrong_encoding"),
        ("auto", ["yesterday"], "not_a_timestamp"),
        ("auto", ["2024-02-30 10:00:00"], "not_a_timestamp"),
        ("auto", ["NaN"], "not_a_timestamp"),
    ],
)
def test_values_that_do_not_fit_are_problems(expected, values, code):
    column = parse(values, expected=expected)
    assert [p.code for p in column.problems] == [code]


def test_epoch_numbers_with_timestamp_format_iso_are_flagged():
    column = parse([1, 2], expected="iso", dtype="int64")
    assert [p.code for p in column.problems] == ["wrong_encoding"]


def test_timestamps_before_1970_and_far_future():
    column = parse(["1969-07-20T20:17:00Z", "2150-01-01T00:00:00Z"])
    assert column.seconds[0] == utc("1969-07-20T20:17:00")
    assert column.seconds[1] == (datetime(2150, 1, 1, tzinfo=timezone.utc)).timestamp()


def test_all_encodings_in_one_file_must_agree(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "job_submit_time,begin_time,end_time,num_nodes,exit_status,queue,time_limit\n"
        "0,2024-01-15T00:00:00,2024-01-15T00:01:00,1,0,pbatch,100\n"
    )
    from drevt_sweep.errors import TraceError

    with pytest.raises(TraceError, match=r"t.csv:2: column 'begin_time'.*one timestamp encoding"):
        read_trace(path)


def test_microsecond_precision_is_kept():
    column = parse(["2024-01-15T10:30:00.123456Z"])
    assert column.seconds[0] - utc("2024-01-15T10:30:00") == pytest.approx(0.123456, abs=1e-6)
    assert timedelta(seconds=0.123456).microseconds == 123456


def test_fast_and_general_paths_agree_for_offsets():
    values = ["2024-01-15T10:30:00-08:00", "2024-07-01 12:00:00.25Z", "2024-03-10T02:30:00+0530"]
    fast = parse(values)
    general = parse([f" {v}" for v in values])
    np.testing.assert_array_equal(fast.seconds, general.seconds)
    assert fast.seconds[0] == utc("2024-01-15T18:30:00")
    assert fast.dst_gap is None  # explicit offsets need no zone rules
