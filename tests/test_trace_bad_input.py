"""The bad-input corpus (tests/data/bad/, one file per case): every case gives correct results
where the input is legal, or one TraceError/ConfigError naming file, line, column and value."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.errors import ConfigError, DrevtError, TraceError
from drevt_sweep.trace import ReadOptions, read_trace

BAD = Path(__file__).resolve().parent / "data" / "bad"
TRACES = Path(__file__).resolve().parent / "data" / "traces"


def format_of(name: str) -> str:
    if "lassen" in name:
        return "lassen"
    if name.endswith(".txt"):
        return "slurm"
    if name.endswith(".swf"):
        return "swf"
    return "simple"


def read(name: str, **options):
    options.setdefault("trace_format", format_of(name))
    return read_trace(BAD / name, ReadOptions(**options))


# file -> (where: "file:line" or "file" for whole-file errors, column or None, message pattern)
ERRORS = {
    "empty.csv": ("empty.csv", None, "empty file"),
    "header_only.csv": ("header_only.csv:1", None, "header but no job rows"),
    "missing_column_simple_simulation.csv": (
        "missing_column_simple_simulation.csv:1",
        None,
        r"missing required column 'time_limit' for simulation mode \(accepted names: "
        r"time_limit, timelimit, walltime\)",
    ),
    "missing_column_simple_replay.csv": (
        "missing_column_simple_replay.csv:1",
        None,
        "missing required column 'exit_status' for replay mode",
    ),
    "missing_column_lassen.csv": (
        "missing_column_lassen.csv:1",
        None,
        "missing required column 'time_limit' for replay mode",
    ),
    "missing_column_slurm.txt": (
        "missing_column_slurm.txt:1",
        None,
        "missing required column 'Submit' for replay mode",
    ),
    "missing_fields.swf": ("missing_fields.swf:3", None, "wrong number of fields.*18"),
    "begin_without_end.csv": (
        "begin_without_end.csv:1",
        None,
        "ambiguous trace format: begin_time without end_time",
    ),
    "end_without_begin.csv": (
        "end_without_begin.csv:1",
        None,
        "ambiguous trace format: end_time without begin_time",
    ),
    "non_numeric.csv": ("non_numeric.csv:3", "num_nodes", "value 'ten': not a number"),
    "negative_nodes.csv": (
        "negative_nodes.csv:3",
        "num_nodes",
        "value '-4': num_nodes must be at least 1",
    ),
    "nan_value.csv": ("nan_value.csv:2", "time_limit", "value 'NaN': not a number"),
    "inf_value.csv": ("inf_value.csv:2", "time_limit", "value 'inf': not a finite number"),
    "overflow_nodes.csv": ("overflow_nodes.csv:2", "num_nodes", "num_nodes is too large"),
    "overflow_time.csv": (
        "overflow_time.csv:2",
        "job_submit_time",
        "value '1e300': time out of range",
    ),
    "zero_nodes.csv": ("zero_nodes.csv:2", "num_nodes", "value '0': num_nodes must be at least 1"),
    "time_limit_zero.csv": (
        "time_limit_zero.csv:2",
        "time_limit",
        "value '0': time_limit must be > 0",
    ),
    "time_limit_negative.csv": (
        "time_limit_negative.csv:2",
        "time_limit",
        "value '-60': time_limit must be > 0",
    ),
    "end_before_begin.csv": (
        "end_before_begin.csv:3",
        "end_time",
        "value '40': end time is before begin",
    ),
    "begin_before_submit.csv": (
        "begin_before_submit.csv:3",
        "begin_time",
        "value '40': begin time is before submit",
    ),
    "duplicate_column.csv": ("duplicate_column.csv:1", "time_limit", "appears more than once"),
    "ragged_short.csv": (
        "ragged_short.csv:3",
        None,
        "value '10,2,pbatch': row has the wrong number",
    ),
    "ragged_long.csv": (
        "ragged_long.csv:3",
        None,
        "value '10,2,pbatch,50,extra': row has the wrong",
    ),
    "mixed_epoch_iso.csv": (
        "mixed_epoch_iso.csv:3",
        "job_submit_time",
        "value '2024-01-15T00:10:00': an ISO date-time, but this column's first value is in epoch",
    ),
    "long_line.csv.gz": (
        "long_line.csv.gz:3",
        None,
        r"value 'x{77}\.\.\.': row has the wrong number",
    ),
    "truncated.csv.gz": ("truncated.csv.gz", None, "truncated gzip file"),
    "not_utf8.csv": ("not_utf8.csv:3", None, "not UTF-8 text: byte 0xe9"),
    "binary_nul.csv": ("binary_nul.csv:3", None, "binary data"),
    "unterminated_quote.csv": ("unterminated_quote.csv:2", None, "unterminated quoted field"),
    "swf_not_numeric.swf": (
        "swf_not_numeric.swf:2",
        r"run time \(field 4\)",
        "value 'ten': not a number",
    ),
    "slurm_bad_timelimit.txt": (
        "slurm_bad_timelimit.txt:3",
        "Timelimit",
        "value 'forever': not a time limit",
    ),
    "several_bad_rows.csv": ("several_bad_rows.csv:3", "num_nodes", "num_nodes must be at least 1"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_file_gives_one_located_error(name):
    where, column, message = ERRORS[name]
    with pytest.raises(TraceError) as caught:
        read(name)
    text = str(caught.value)
    expected = (
        f"^{Path(BAD / where)}: " + (f"column '{column}': " if column else "") + ".*" + message
    )
    assert caught.value.path == str(BAD / name)
    assert __import__("re").search(expected, text), text
    assert "Traceback" not in text


def test_every_corpus_file_has_a_test():
    legal = {
        "utf8_bom.csv",
        "crlf.csv",
        "quoted_commas_newlines.csv",
        "run_time_over_limit.csv",
        "dst_gap.csv",
        "dst_fold.csv",
        "unsorted_submit.csv",
        "no_run_times.csv",
        "iso_but_epoch_requested.csv",
        "swf_unknown_time_limit.swf",
    }
    assert {p.name for p in BAD.iterdir()} == set(ERRORS) | legal


def test_utf8_bom_just_works():
    jobs = read("utf8_bom.csv")
    assert jobs.num_nodes.tolist() == [4] and jobs.source_line.tolist() == [2]


def test_crlf_line_ends_just_work():
    jobs = read("crlf.csv")
    assert jobs.time_limit.tolist() == [100, 50] and jobs.source_line.tolist() == [2, 3]


def test_quoted_fields_with_commas_and_newlines():
    jobs = read("quoted_commas_newlines.csv")
    assert jobs.num_nodes.tolist() == [4, 2, 1]
    assert jobs.source_line.tolist() == [2, 3, 5]  # the second row spans lines 3-4


def test_actual_run_time_over_the_limit_is_legal_and_counted():
    jobs = read("run_time_over_limit.csv")
    assert jobs.actual_run_time.tolist() == [150, 50]
    assert jobs.meta.notes == {"run_time_exceeds_time_limit": 1}


def test_times_in_a_dst_gap_are_resolved_and_counted():
    jobs = read("dst_gap.csv")
    assert jobs.meta.notes == {"dst_gap_shifted_forward": 1}
    assert np.all(np.diff(jobs.submit) >= 0)


def test_times_in_a_dst_fold_are_resolved_and_counted():
    jobs = read("dst_fold.csv")
    assert jobs.meta.notes == {"dst_fold_first_occurrence": 2, "dst_fold_second_occurrence": 1}
    assert np.all(jobs.end > jobs.begin)


def test_unsorted_submit_times_just_work():
    jobs = read("unsorted_submit.csv")
    assert jobs.submit.tolist() == [100, 100, 200, 300]
    assert jobs.num_nodes.tolist() == [2, 4, 3, 1]  # ties keep file order


def test_a_trace_without_run_times_reads_and_says_so():
    jobs = read("no_run_times.csv")
    assert not jobs.meta.has_actual_run_time  # run_time_mode actual refuses it later


def test_a_value_that_does_not_match_an_explicit_timestamp_format():
    with pytest.raises(
        TraceError,
        match=r"iso_but_epoch_requested.csv:2: column 'job_submit_time'"
        r".*--timestamp_format epoch",
    ):
        read("iso_but_epoch_requested.csv", timestamp_format="epoch")
    assert len(read("iso_but_epoch_requested.csv", timestamp_format="iso")) == 1


def test_swf_unknown_time_limit_with_fail():
    with pytest.raises(
        TraceError, match=r"swf_unknown_time_limit.swf:3: .*swf_missing_time_limit=fail"
    ):
        read("swf_unknown_time_limit.swf", swf_missing_time_limit="fail")
    assert len(read("swf_unknown_time_limit.swf")) == 2


def test_path_that_does_not_exist(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        read_trace(tmp_path / "nope.csv")


def test_path_that_is_a_directory(tmp_path):
    with pytest.raises(TraceError, match="is a directory"):
        read_trace(tmp_path)


def test_path_that_is_unreadable(tmp_path, monkeypatch):
    path = tmp_path / "secret.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n0,1,pbatch,1\n")
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):  # root reads anything: simulate the refusal

            import drevt_sweep.files as files

            monkeypatch.setattr(files.os, "access", lambda p, mode: mode != os.R_OK)
        with pytest.raises(TraceError, match="permission denied"):
            read_trace(path)
    finally:
        path.chmod(0o644)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("trace_format", "csv2", "unknown trace format 'csv2'"),
        ("timestamp_format", "unix", "unknown timestamp format 'unix'"),
        ("timezone", "Atlantis/Capital", "unknown time zone 'Atlantis/Capital'"),
        ("on_bad_row", "ignore", "on_bad_row must be one of"),
    ],
)
def test_unknown_options_are_config_errors(field, value, message):
    with pytest.raises(ConfigError, match=message):
        read_trace(TRACES / "simple_simulation.csv", ReadOptions(**{field: value}))


def test_skip_counts_bad_rows_per_reason_and_writes_the_rejects_file(tmp_path):
    rejects = tmp_path / "out" / "rejects.csv"
    jobs = read("several_bad_rows.csv", on_bad_row="skip", rejects_path=str(rejects))
    assert jobs.source_line.tolist() == [2, 8]
    meta = jobs.meta
    assert meta.excluded == {
        "bad_row:num_nodes_below_1": 1,
        "bad_row:num_nodes_not_a_number": 1,
        "bad_row:ragged_row": 1,
        "bad_row:time_limit_not_positive": 1,
        "queue:pdebug": 1,
    }
    assert meta.rows_read == 7 == meta.rows_kept + sum(meta.excluded.values())
    assert [(r.line, r.column, r.value) for r in meta.rejects] == [
        (3, "num_nodes", "0"),
        (4, "time_limit", "-5"),
        (5, "num_nodes", "x"),
        (7, None, "50,1,pbatch"),
    ]
    with open(rejects, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["line"] for row in rows] == ["3", "4", "5", "7"]
    assert rows[1] == {
        "line": "4",
        "column": "time_limit",
        "value": "-5",
        "reason": "time_limit must be > 0 seconds",
    }


def test_skip_with_every_row_bad_is_still_an_error(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n0,0,pbatch,1\n")
    with pytest.raises(TraceError, match=r"no jobs left.*bad_row:num_nodes_below_1: 1"):
        read_trace(path, ReadOptions(on_bad_row="skip"))


def test_an_unwritable_rejects_path_is_a_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="cannot write the rejects file"):
        read("several_bad_rows.csv", on_bad_row="skip", rejects_path=str(blocker / "rejects.csv"))


@pytest.mark.parametrize("trace_format", ["simple", "lassen", "swf", "slurm"])
def test_every_reader_reports_a_missing_file_the_same_way(tmp_path, trace_format):
    with pytest.raises(TraceError, match="nope: no such file"):
        read_trace(tmp_path / "nope", ReadOptions(trace_format=trace_format))


def test_errors_are_all_drevt_errors():
    assert issubclass(TraceError, DrevtError) and issubclass(ConfigError, DrevtError)
