"""Cosmetic holes in the error paths (issue 29 item 12), each from its minimal case."""

from __future__ import annotations

import subprocess
import sys

import pytest

from drevt_sweep.errors import TraceError, describe
from drevt_sweep.trace import ReadOptions, read_trace


def sim(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "drevt_sweep.cli.sim", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_a_memory_error_says_what_happened():
    assert describe(MemoryError()).startswith("MemoryError: out of memory; a smaller trace")
    assert describe(ValueError("two\nlines")) == "ValueError: two lines"
    assert describe(KeyError()) == "KeyError"


def test_a_huge_bad_field_is_quoted_as_that_field_not_as_its_row(tmp_path):
    path = tmp_path / "huge.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit,actual_run_time\n0,1,pbatch,100,10\n"
                    f'1,"{"9" * 300_000}x",pbatch,100,10\n')  # over the csv module's 128 KiB field limit
    with pytest.raises(TraceError) as error:
        read_trace(path, ReadOptions())
    assert error.value.value.startswith("9999") and len(error.value.value) == 200
    assert f"{path}:3: column 'num_nodes': value '9999" in str(error.value)


def test_a_yaml_error_in_the_system_file_is_one_line(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("job_submit_time,num_nodes,queue,time_limit,actual_run_time\n0,1,pbatch,100,10\n")
    system = tmp_path / "m.yaml"
    system.write_text("partitions: [\n")
    proc = sim(trace, "--system", system)
    assert proc.returncode == 2
    assert proc.stderr == (f"drevt-sim: error: {system}:2: not valid YAML: expected the node content, "
                           "but found '<stream end>' (column 1)\n")


@pytest.mark.parametrize("url", ["/nonexistent", "http://[::1"])
def test_fetch_from_something_that_is_not_a_url_is_one_line(tmp_path, url, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "drevt_sweep.cli.fetch", "lanl_cm5", "--url", url],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"drevt-sweep-fetch: error: {url}: not a URL that can be downloaded")


def test_fetch_names_a_missing_file_once(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "drevt_sweep.cli.fetch", "lanl_cm5", "--url",
                           "file:///nonexistent"], capture_output=True, text=True, timeout=60)
    assert proc.stderr == "drevt-sweep-fetch: error: file:///nonexistent: No such file or directory\n"


@pytest.mark.parametrize("fmt,header", [
    ("simple", "job_submit_time,num_nodes,queue,time_limit,time_limit\n0,1,q,1,1\n"),
    ("lassen", "job_submit_time,begin_time,end_time,num_nodes,queue,time_limit,queue\n0,1,2,1,q,1,q\n"),
    ("slurm", "Submit|ReqNodes|Timelimit|Partition|Partition\n2024-01-01T00:00:00|1|1|a|a\n"),
])
def test_a_duplicate_column_is_named_once(tmp_path, fmt, header):
    path = tmp_path / "dup.txt"
    path.write_text(header)
    with pytest.raises(TraceError) as error:
        read_trace(path, ReadOptions(trace_format=fmt))
    message = str(error.value)
    assert ": appears more than once" in message and message.count("column '") == 1
