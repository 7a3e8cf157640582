"""Inputs are never overwritten, special files are written as such, and odd input paths get
their own messages (issue 19, items 7, 12 and 13). Real files, real ``drevt-sim`` processes."""

from __future__ import annotations

import csv
import os
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from drevt_sweep.files import csv_cell, csv_uncell
from drevt_sweep.trace import ReadOptions, read_trace

TRACE = ("job_submit_time,num_nodes,queue,time_limit,actual_run_time\n"
         "0,2,pbatch,100,60\n5,1,pbatch,50,40\n9,3,pbatch,80,20\n")


def sim(*args, timeout=60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "drevt_sweep.cli.sim", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.fixture
def trace(tmp_path) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(TRACE)
    return path


# ----------------------------------------------------------------- item 7: never onto an input

@pytest.mark.parametrize("option", ["--output", "--stats", "--resource_trace", "--rejects"])
def test_an_output_naming_the_input_trace_is_refused(trace, option):
    extra = ["--on_bad_row", "skip"] if option == "--rejects" else []
    proc = sim(trace, "--total_nodes", 4, option, trace, *extra)
    assert proc.returncode == 2, proc.stderr
    assert f"{option} '{trace}' is the input trace" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert trace.read_text() == TRACE


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_an_output_reaching_the_input_through_a_link_is_refused(trace, tmp_path, link):
    alias = tmp_path / "alias.csv"
    (os.symlink if link == "symlink" else os.link)(trace, alias)
    proc = sim(trace, "--total_nodes", 4, "--output", alias)
    assert proc.returncode == 2 and "is the input trace" in proc.stderr
    assert trace.read_text() == TRACE
    assert alias.is_symlink() == (link == "symlink")


def test_two_outputs_naming_one_file_are_refused(trace, tmp_path):
    out = tmp_path / "out.csv"
    proc = sim(trace, "--total_nodes", 4, "--output", out, "--resource_trace", out)
    assert proc.returncode == 2 and "name the same file" in proc.stderr


def test_an_output_through_a_symlink_replaces_its_target_and_keeps_the_link(trace, tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert sim(trace, "--total_nodes", 4, "--stats", link).returncode == 0
    assert link.is_symlink() and '"metrics"' in target.read_text()


# ----------------------------------------------------------------- item 7: special files

def test_stats_to_dev_null_leaves_dev_null_a_device(trace):
    proc = sim(trace, "--total_nodes", 4, "--stats", "/dev/null", "--output", "/dev/null")
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_to_dev_stdout_prints_the_schedule(trace):
    proc = sim(trace, "--total_nodes", 4, "--output", "/dev/stdout", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("job_id,job_submit_time,begin_time")
    assert len(proc.stdout.splitlines()) == 4


@pytest.mark.skipif(not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK),
                    reason="no writable /dev/shm")
def test_outputs_in_a_folder_under_dev_shm_are_ordinary_files(trace):
    """/dev/shm (RAM-backed scratch) holds ordinary files: written atomically, created when
    missing. It was taken for a device like /dev/stdout: "No such file or directory"."""
    from drevt_sweep.files import write_file

    with tempfile.TemporaryDirectory(dir="/dev/shm") as folder:
        stats = Path(folder) / "run" / "stats.json"
        proc = sim(trace, "--total_nodes", 4, "--stats", stats)
        assert proc.returncode == 0, proc.stderr
        assert '"metrics"' in stats.read_text()
        target = Path(folder) / "config.yaml"
        target.write_text("old\n")
        write_file(target, b"new\n")
        assert target.read_text() == "new\n"  # replaced, not appended to
        assert sorted(p.name for p in Path(folder).iterdir()) == ["config.yaml", "run"]


def test_an_output_fifo_is_written_into_and_stays_a_fifo(trace, tmp_path):
    fifo = tmp_path / "stats.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    proc = sim(trace, "--total_nodes", 4, "--stats", fifo)
    reader.join(timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # was replaced by a regular file
    assert received and '"metrics"' in received[0]


def test_an_output_fifo_nobody_reads_is_a_clear_error(trace, tmp_path):
    fifo = tmp_path / "stats.fifo"
    os.mkfifo(fifo)
    proc = sim(trace, "--total_nodes", 4, "--stats", fifo, timeout=30)
    assert proc.returncode == 2
    assert "named pipe (FIFO) that no process is reading" in proc.stderr


# ----------------------------------------------------------------- item 13: odd input paths

def test_a_fifo_trace_with_no_writer_is_refused_at_once(tmp_path):
    fifo = tmp_path / "jobs.fifo"
    os.mkfifo(fifo)
    proc = sim(fifo, timeout=30)  # hung for ever
    assert proc.returncode == 2
    assert proc.stderr == (f"drevt-sim: error: {fifo}: is a named pipe (FIFO), not a regular "
                           "file: a trace is read more than once (its checksum, then its rows); "
                           "save the data to a file first\n")


def test_dev_zero_is_a_clear_error_not_an_internal_one():
    proc = sim("/dev/zero", timeout=30)
    assert proc.returncode == 2
    assert proc.stderr == "drevt-sim: error: /dev/zero: is a device (like /dev/zero), not a trace file\n"


def test_a_symlink_loop_says_so(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.symlink_to(b)
    b.symlink_to(a)
    proc = sim(a)
    assert proc.returncode == 2
    assert proc.stderr == f"drevt-sim: error: {a}: symbolic link loop: the path never resolves to a file\n"


def test_a_broken_symlink_names_its_target(tmp_path):
    link = tmp_path / "jobs.csv"
    link.symlink_to(tmp_path / "gone.csv")
    proc = sim(link)
    assert proc.returncode == 2
    assert f"broken symbolic link: it points to '{tmp_path / 'gone.csv'}'" in proc.stderr


def _without_root_overrides():
    """Root enters every folder: run the child without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
    (dropped from its bounding set before exec), so that folder permissions apply to it."""
    if os.geteuid() != 0:
        return {}
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def drop():
        for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")

    return {"preexec_fn": drop}


def test_a_file_in_a_folder_that_cannot_be_entered_says_so():
    base = Path(tempfile.mkdtemp(prefix="drevt-locked-"))
    try:
        base.chmod(0o755)
        locked = base / "locked"
        locked.mkdir()
        (locked / "jobs.csv").write_text(TRACE)
        locked.chmod(0o600)  # readable listing, no entering
        proc = sim(locked / "jobs.csv", **_without_root_overrides())
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr == (f"drevt-sim: error: {locked / 'jobs.csv'}: permission denied: "
                               f"the folder '{locked}' cannot be entered\n")
    finally:
        (base / "locked").chmod(0o755)
        for path in sorted(base.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        base.rmdir()


# ----------------------------------------------------------------- item 12: CSV injection

@pytest.mark.parametrize("text,escaped", [
    ("=HYPERLINK(\"http://x\",\"y\")", "'=HYPERLINK(\"http://x\",\"y\")"),
    ("@SUM(A1)", "'@SUM(A1)"), ("+cmd", "'+cmd"), ("-cmd|' /C calc'!A0", "'-cmd|' /C calc'!A0"),
    ("\tx", "'\tx"), ("\rx", "'\rx"), ("'=x", "''=x"),
    ("-60", "-60"), ("+1.5e3", "+1.5e3"), ("pbatch", "pbatch"), ("'quoted", "'quoted"), ("", ""),
])
def test_csv_cells_follow_the_owasp_rule_and_round_trip(text, escaped):
    assert csv_cell(text) == escaped
    assert csv_uncell(csv_cell(text)) == text


def test_rejects_csv_escapes_formulas(tmp_path):
    trace = tmp_path / "bad.csv"
    trace.write_text("job_submit_time,num_nodes,queue,time_limit\n0,1,pbatch,=HYPERLINK(\"x\")\n"
                     "1,1,pbatch,-60\n2,1,pbatch,100\n")
    rejects = tmp_path / "rejects.csv"
    proc = sim(trace, "--on_bad_row", "skip", "--rejects", rejects, "--total_nodes", 2,
               "--run_time_mode", "limit")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(rejects.open(newline="")))
    assert [r[2] for r in rows[1:]] == ["'=HYPERLINK(\"x\")", "-60"]


def test_schedule_csv_escapes_formula_queue_names_and_reads_back_exactly(tmp_path):
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_submit_time,num_nodes,queue,time_limit,actual_run_time\n"
                     "0,1,=cmd|calc,100,60\n1,1,@SUM(A1),100,60\n2,1,-x,100,60\n")
    schedule = tmp_path / "schedule.csv"
    proc = sim(trace, "--queues", "all", "--total_nodes", 2, "--output", schedule)
    assert proc.returncode == 0, proc.stderr
    cells = [row[6] for row in csv.reader(schedule.open(newline=""))][1:]
    assert cells == ["'=cmd|calc", "'@SUM(A1)", "'-x"]
    again = read_trace(schedule, ReadOptions(queues="all", timestamp_format="epoch"))
    assert list(again.queue) == ["=cmd|calc", "@SUM(A1)", "-x"]


@pytest.mark.slow
def test_a_sweep_never_writes_over_its_trace(tmp_path):
    """A trace kept where the configuration writes its first seed's schedule."""
    from sweep_helpers import run_sweep

    import gzip

    job_dir = tmp_path / "sweep" / "0"
    job_dir.mkdir(parents=True)
    trace = job_dir / "schedule_seed0.csv.gz"  # the name the sweep gives its kept schedule
    trace.write_bytes(gzip.compress(TRACE.encode(), mtime=0))
    before = trace.read_bytes()
    proc = run_sweep(tmp_path, "policy=easy", f"trace.path={trace}", "figures=auto", check=False)
    assert proc.returncode == 2  # refused before anything is written (test_sweep_own_files.py)
    assert trace.read_bytes() == before
    assert "is inside the output folder" in proc.stderr
    assert sorted(p.name for p in job_dir.iterdir()) == ["schedule_seed0.csv.gz"]


# ----------------------------------------------------------------- issue 28 item 1: every input

@pytest.mark.parametrize("option", ["--stats", "--output", "--resource_trace"])
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_an_output_naming_the_system_yaml_is_refused(trace, tmp_path, option, how):
    system = tmp_path / "machine.yaml"
    system.write_text("partitions:\n  pbatch: {nodes: 4, queues: [pbatch]}\n")
    before = system.read_bytes()
    target = system
    if how != "same":
        target = tmp_path / "alias.yaml"
        (os.symlink if how == "symlink" else os.link)(system, target)
    proc = sim(trace, "--system", system, option, target)
    assert proc.returncode == 2, proc.stderr
    assert f"{option} '{target}' is the --system file '{system}'" in proc.stderr
    assert system.read_bytes() == before


def test_every_file_option_of_drevt_sim_is_a_declared_input_or_output():
    """A new option naming a file must be listed, so that the "never an input" check covers it."""
    from drevt_sweep.cli.sim import INPUT_OPTIONS, OUTPUT_OPTIONS, build_parser

    file_metavars = {"CSV", "JSON", "YAML", "CONF", "FILE", "PATH"}
    named = {action.dest for action in build_parser()._actions
             if not action.option_strings and action.dest != "help" or action.metavar in file_metavars}
    assert named == set(INPUT_OPTIONS) | set(OUTPUT_OPTIONS)
    assert not set(INPUT_OPTIONS) & set(OUTPUT_OPTIONS)


@pytest.mark.parametrize("name", ["'=x", "'@a", "''=y"])
def test_a_traces_own_leading_quote_is_kept(tmp_path, name):
    """Only our schedule CSV escapes names: another trace's ``'=x`` is the name ``'=x`` (issue 29
    item 12: the leading ``'`` was stripped), and it survives a schedule round trip."""
    from drevt_sweep.outputs import SCHEDULE_COLUMNS
    from drevt_sweep.trace.simple import SCHEDULE_HEADER

    assert SCHEDULE_HEADER == SCHEDULE_COLUMNS
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_submit_time,num_nodes,queue,time_limit,actual_run_time\n"
                     f"0,1,{name},100,60\n1,1,pbatch,100,60\n")
    assert set(read_trace(trace, ReadOptions(queues="all")).queue_names) == {name, "pbatch"}
    schedule = tmp_path / "schedule.csv"
    assert sim(trace, "--queues", "all", "--total_nodes", 2, "--output", schedule).returncode == 0
    again = read_trace(schedule, ReadOptions(queues="all", timestamp_format="epoch"))
    assert set(again.queue_names) == {name, "pbatch"}
