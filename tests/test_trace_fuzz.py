"""Fuzzing the readers: random bytes and random edits of valid traces either read into a valid
table or raise one of the project's errors (``DrevtError``) -- never anything else."""

from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drevt_sweep.errors import DrevtError
from drevt_sweep.trace import ReadOptions, read_trace

TRACES = Path(__file__).resolve().parent / "data" / "traces"
SEEDS = {
    "simple": [
        "simple_replay_epoch.csv",
        "simple_replay_iso.csv",
        "simple_aliases_extra.csv",
        "simple_iso_offsets.csv",
        "simple_replay_duration.csv",
    ],
    "lassen": ["lassen_csm33.csv", "lassen_headerless.csv", "lassen_last25.csv"],
    "swf": ["swf_replay.swf", "swf_unknowns.swf"],
    "slurm": ["slurm_replay.txt", "slurm_simulation.txt"],
}
NASTY = [
    "",
    " ",
    '"',
    '""',
    ",",
    "|",
    ";",
    "\n",
    "\r\n",
    "-1",
    "0",
    "-0",
    "1e309",
    "-1e309",
    "nan",
    "NaN",
    "inf",
    "99999999999999999999999",
    "1.5",
    "abc",
    "2020-03-08 02:30:00",
    "2020-11-01 01:30:00",
    "2024-13-45T99:99:99",
    "9999-12-31T23:59:59",
    "0001-01-01",
    "UNLIMITED",
    "Partition_Limit",
    "Unknown",
    "1-00:00:00",
    "12.batch",
    "\t",
    "é",
    "\u2028",
    "; MaxNodes: x",
    '"a,b"',
    "x" * 300,
]
# A modest number of examples keeps the suite fast; DREVT_FUZZ_EXAMPLES=2000 digs deeper.
FUZZ = settings(
    max_examples=int(os.environ.get("DREVT_FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def read_bytes_as(trace_format: str, data: bytes, **options):
    fd, name = tempfile.mkstemp(suffix=".trace")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return read_trace(name, ReadOptions(trace_format=trace_format, queues="all", **options))
    finally:
        os.unlink(name)


def check(trace_format: str, data: bytes, **options) -> None:
    try:
        jobs = read_bytes_as(trace_format, data, **options)
    except DrevtError as error:
        assert str(error)
        return
    meta = jobs.meta
    assert meta.rows_read == meta.rows_kept + sum(meta.excluded.values())
    assert len(jobs) == meta.rows_kept > 0
    assert np.all(np.diff(jobs.submit) >= 0)
    assert np.all(jobs.num_nodes >= 1) and np.all(jobs.time_limit > 0)
    known = np.isfinite(jobs.actual_run_time)
    assert np.all(jobs.actual_run_time[known] > 0)
    history = np.isfinite(jobs.begin) & np.isfinite(jobs.end)
    assert np.all(jobs.end[history] >= jobs.begin[history])
    assert np.all(jobs.begin[history] >= jobs.submit[history])
    lines = data.count(b"\n") + data.count(b"\r") + 1
    assert np.all((jobs.source_line >= 1) & (jobs.source_line <= lines))


@FUZZ
@given(data=st.binary(max_size=3000), trace_format=st.sampled_from(sorted(SEEDS)))
def test_random_bytes(data, trace_format):
    check(trace_format, data)


@FUZZ
@given(data=st.binary(max_size=600), trace_format=st.sampled_from(sorted(SEEDS)))
def test_random_bytes_gzipped(data, trace_format):
    check(trace_format, gzip.compress(data))


@st.composite
def edited_trace(draw):
    trace_format = draw(st.sampled_from(sorted(SEEDS)))
    name = draw(st.sampled_from(SEEDS[trace_format]))
    lines = (TRACES / name).read_text().split("\n")
    separator = {"simple": ",", "lassen": ",", "swf": " ", "slurm": "|"}[trace_format]
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        row = draw(st.integers(0, len(lines) - 1))
        kind = draw(
            st.sampled_from(
                ["field", "drop_field", "add_field", "duplicate", "delete", "truncate", "insert"]
            )
        )
        fields = lines[row].split(separator)
        if kind == "field":
            k = draw(st.integers(0, max(len(fields) - 1, 0)))
            fields[k] = draw(st.one_of(st.sampled_from(NASTY), st.text(max_size=12)))
            lines[row] = separator.join(fields)
        elif kind == "drop_field" and len(fields) > 1:
            fields.pop(draw(st.integers(0, len(fields) - 1)))
            lines[row] = separator.join(fields)
        elif kind == "add_field":
            fields.insert(draw(st.integers(0, len(fields))), draw(st.sampled_from(NASTY)))
            lines[row] = separator.join(fields)
        elif kind == "duplicate":
            lines.insert(row, lines[row])
        elif kind == "delete":
            lines.pop(row)
        elif kind == "truncate":
            lines[row] = lines[row][: draw(st.integers(0, len(lines[row])))]
        else:
            lines.insert(row, draw(st.one_of(st.sampled_from(NASTY), st.text(max_size=30))))
    text = "\n".join(lines)
    return trace_format, text.encode("utf-8", errors="surrogatepass")


@FUZZ
@given(case=edited_trace(), on_bad_row=st.sampled_from(["error", "skip"]))
def test_random_row_edits(case, on_bad_row):
    trace_format, data = case
    if b"\xed" in data:  # lone surrogates are not UTF-8: covered by the random-bytes test
        return
    check(trace_format, data, on_bad_row=on_bad_row, timezone="America/Los_Angeles")
