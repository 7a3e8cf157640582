"""The SWF reader's fast path (numpy's loadtxt, no pandas) against its general path (pandas).

The fast path takes a file only when every row has 18 fields and every used field is a whole
number; on such a file it must build exactly the JobTable the pandas path builds (every array,
dtype, name and the whole ``meta``: exclusion counts, notes, rejects). On every other file it
must decline, so that errors and skip lists come from the pandas path as before. Checked on the
real archive traces, the test fixtures, and random SWF text built from tokens on both sides of
the fast path's grammar.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drevt_sweep.errors import DrevtError
from drevt_sweep.trace import ReadOptions, read_trace, swf
from drevt_sweep.trace.records import scan_whitespace
from drevt_sweep.trace.source import read_source

HERE = Path(__file__).resolve().parent
SHARED = Path("/work/shared/traces")
ARCHIVE = sorted(SHARED.glob("*.swf.gz")) if SHARED.is_dir() else []
FIXTURES = sorted((HERE / "data" / "traces").glob("*.swf")) + sorted((HERE / "data" / "bad").glob("*.swf"))
OPTION_SETS = [
    {},
    {"swf_missing_time_limit": "drop"},
    {"on_bad_row": "skip", "queues": ("1",)},
    {"timezone": "Europe/Stockholm", "force_simulation": True},
]


def _outcome(path, options: dict):
    """The JobTable read, or the error's class and message."""
    try:
        return read_trace(path, ReadOptions(trace_format="swf", **options))
    except DrevtError as error:
        return (type(error).__name__, str(error))


def _pandas_path(path, options: dict, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(swf, "_whole_number_columns", lambda data, rows: None)
        return _outcome(path, options)


def _takes_fast_path(path) -> bool:
    data = read_source(str(path)).data
    return swf._whole_number_columns(data, scan_whitespace(data, ";")) is not None


def _assert_same(fast, slow) -> None:
    if isinstance(slow, tuple) or isinstance(fast, tuple):
        assert fast == slow
        return
    for spec in dataclasses.fields(slow):
        a, b = getattr(fast, spec.name), getattr(slow, spec.name)
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype, spec.name
            assert np.array_equal(a, b, equal_nan=b.dtype.kind == "f"), spec.name
        else:
            assert a == b, spec.name


@pytest.mark.skipif(not ARCHIVE, reason="the shared archive traces are not on this machine")
@pytest.mark.parametrize("path", ARCHIVE, ids=lambda p: p.name)
def test_archive_traces_take_the_fast_path_and_read_the_same(path, monkeypatch):
    assert _takes_fast_path(path)
    _assert_same(_outcome(path, {}), _pandas_path(path, {}, monkeypatch))


@pytest.mark.parametrize("options", OPTION_SETS, ids=str)
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixtures_read_the_same_on_both_paths(path, options, monkeypatch):
    _assert_same(_outcome(path, options), _pandas_path(path, options, monkeypatch))


def test_fixtures_exercise_both_paths():
    taken = {path.name: _takes_fast_path(path) for path in FIXTURES}
    assert taken["swf_replay.swf"] and taken["swf_unknowns.swf"]
    assert not taken["swf_not_numeric.swf"] and not taken["missing_fields.swf"]


# Tokens the fast path accepts, and tokens it must leave to pandas.
WHOLE = ["0", "1", "-1", "7", "-0", "+5", "007", "-2", "100", "28800", "9007199254740993",
         "9223372036854775807"]
OTHER = ["1.5", "1.", ".5", "1e3", "abc", "nan", "inf", '"5"', "1_0", "0x10", "é",
         "99999999999999999999", "-", "1;x"]
SEPARATORS = [" ", "  ", "\t", " \t ", "\x0b", "\x0c"]


@st.composite
def job_line(draw, number: int) -> str:
    """A plausible job line, sometimes with a few fields replaced by tokens from either side."""
    wait = draw(st.sampled_from(["-1", "0", "30"]))
    run = draw(st.sampled_from(["100", "3600", "-1", "0"]))
    nodes = draw(st.sampled_from(["1", "4", "16", "-1"]))
    fields = [str(number), str(10 * number), wait, run, nodes, "-1", "-1", nodes,
              draw(st.sampled_from(["200", "7200", "-1"])), draw(st.sampled_from(["-1", "1024"])),
              "1", draw(st.sampled_from(["3", "-1", "12"])), draw(st.sampled_from(["1", "-1"])),
              "-1", draw(st.sampled_from(["1", "2", "0"])), draw(st.sampled_from(["-1", "1"])),
              "-1", "-1"]
    for _ in range(draw(st.sampled_from([0, 0, 0, 0, 1, 2]))):
        fields[draw(st.integers(0, 17))] = draw(st.sampled_from(WHOLE * 2 + OTHER))
    if draw(st.integers(0, 19)) == 0:  # a ragged row
        fields = fields[:-1] if draw(st.booleans()) else fields + ["5"]
    sep = draw(st.sampled_from(SEPARATORS[:4] * 16 + SEPARATORS[4:]))
    return draw(st.sampled_from(["", " ", "\t"])) + sep.join(fields)


@st.composite
def swf_text(draw) -> str:
    lines = []
    if draw(st.booleans()):
        lines += ["; MaxNodes: 16", "; MaxProcs: " + draw(st.sampled_from(["16", "64"]))]
    if draw(st.booleans()):
        lines.append("; UnixStartTime: 1000000")
    for number in range(1, draw(st.integers(1, 8)) + 1):
        kind = draw(st.sampled_from(["job"] * 6 + ["comment", "blank", "inline"]))
        if kind == "comment":
            lines.append("; a comment")
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "   ", "\t"])))
        else:
            line = draw(job_line(number))
            lines.append(line + " ; inline" if kind == "inline" else line)
    return "\n".join(lines) + draw(st.sampled_from(["\n", ""]))


@settings(max_examples=int(os.environ.get("DREVT_FUZZ_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=swf_text(), options=st.sampled_from(OPTION_SETS))
def test_random_swf_text_reads_the_same_on_both_paths(text, options, monkeypatch):
    fd, name = tempfile.mkstemp(suffix=".swf")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        _assert_same(_outcome(name, options), _pandas_path(name, options, monkeypatch))
    finally:
        os.unlink(name)


@pytest.mark.parametrize("trace, options", [
    ("swf_unknowns.swf", ["--force-simulation"]),
    ("swf_replay.swf", []),
    ("swf_replay.swf", ["--force-simulation", "--run_time_mode", "distribution",
                        "--run_time_distribution", "lognormal", "--run_time_stddev", "0.5"]),
])
def test_drevt_sim_on_swf_imports_no_pandas_scipy_matplotlib_numba(trace, options, tmp_path):
    """The start-up promise of issue 16: a one-off SWF run (reading, simulating or replaying,
    statistics, every output file) needs numpy only."""
    outputs = [f"--{name}={tmp_path / f'{name}.out'}" for name in ("output", "resource_trace", "stats")]
    argv = [str(HERE / "data" / "traces" / trace), "--trace_format", "swf", *options, *outputs]
    code = (
        "import sys\n"
        "from drevt_sweep.cli.sim import main\n"
        f"code = main({argv!r})\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
        "{'pandas', 'scipy', 'matplotlib', 'numba', 'pyarrow', 'yaml', 'hydra', 'mlflow'})\n"
        "print('HEAVY', heavy)\n"
        "sys.exit(code)\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "DREVT_KERNEL"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout
    assert all((tmp_path / f"{name}.out").stat().st_size > 0 for name in ("output", "resource_trace", "stats"))


def test_wide_ranges_of_ids_read_the_same(tmp_path, monkeypatch):
    """Queue, partition, user and group numbers far apart (coded by sorting, not by a table)."""
    rows = [
        "1 0 5 100 4 -1 -1 4 200 -1 1 9223372036854775807 -1 -1 3 -5 -1 -1",
        "2 10 -1 60 2 -1 -1 2 60 -1 1 -1 9007199254740993 -1 9007199254740993 1 -1 -1",
        "3 20 0 10 1 -1 -1 -1 100 -1 1 7 7 -1 -1 1 -1 -1",
        "4 30 1 10 1 -1 -1 1 100 -1 1 +7 007 -1 0 1 -1 -1",
    ]
    path = tmp_path / "wide.swf"
    path.write_text("; MaxNodes: 8\n" + "\n".join(rows) + "\n")
    assert _takes_fast_path(path)
    fast = _outcome(path, {"force_simulation": True})
    _assert_same(fast, _pandas_path(path, {"force_simulation": True}, monkeypatch))
    assert fast.user_names == ("7", "9223372036854775807")
    assert fast.queue_names == ("-1", "0", "3", "9007199254740993")
