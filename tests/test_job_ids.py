"""Job ids stay exact from every reader to every output (issue 28 item 2): 2**53 and 2**53 + 1
were one id after a trip through float64. Ids are int64 where they are integers (an id above
int64 is a bad row naming file, line and column), text for Slurm array tasks (``12345_7``)."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

import numpy as np
import pytest

from drevt_sweep.errors import TraceError
from drevt_sweep.outputs import schedule_csv_bytes
from drevt_sweep.trace import ReadOptions, read_trace
from drevt_sweep.trace.cache import load_trace

BIG = [2**53, 2**53 + 1, 2**63 - 1]
TOO_BIG = 2**63


def simple(ids) -> str:
    return "job_id,job_submit_time,num_nodes,queue,time_limit,actual_run_time\n" + "".join(
        f"{job},{i},1,pbatch,100,10\n" for i, job in enumerate(ids))


def simple_with_gap(ids) -> str:
    """An empty exit_status cell: pandas then reads columns as float64 (the old path)."""
    return "job_id,job_submit_time,num_nodes,queue,time_limit,actual_run_time,exit_status\n" + "".join(
        f"{job},{i},1,pbatch,100,10,{'' if i == 0 else 0}\n" for i, job in enumerate(ids))


def lassen(ids) -> str:
    return ("primary_job_id,job_submit_time,begin_time,end_time,num_nodes,queue,time_limit\n" + "".join(
        f"{job},{i},{i + 1},{i + 11},1,pbatch,100\n" for i, job in enumerate(ids)))


def swf(ids, decimal=False) -> str:
    rows = []
    for i, job in enumerate(ids):
        run = "10.0" if decimal else "10"  # a decimal point sends the file to the pandas path
        rows.append(f"{job} {i} 0 {run} 1 -1 -1 1 100 -1 1 1 1 -1 1 1 -1 -1\n")
    return "; MaxNodes: 4\n" + "".join(rows)


def slurm(ids, column="JobIDRaw") -> str:
    return f"{column}|Submit|Start|End|ReqNodes|Timelimit|Partition\n" + "".join(
        f"{job}|2024-01-01T00:00:0{i}|2024-01-01T00:00:05|2024-01-01T00:01:00|1|00:10:00|a\n"
        for i, job in enumerate(ids))


INTEGER_CASES = {
    "simple": (simple, "simple", {}),
    "simple_float_column": (simple_with_gap, "simple", {}),
    "lassen": (lassen, "lassen", {}),
    "swf_fast": (swf, "swf", {}),
    "swf_pandas": (lambda ids: swf(ids, decimal=True), "swf", {}),
    "slurm": (slurm, "slurm", {}),
}


def _read(tmp_path, text, fmt, **options):
    path = tmp_path / f"trace.{fmt}"
    path.write_text(text)
    return path, read_trace(path, ReadOptions(trace_format=fmt, queues="all", **options))


@pytest.mark.parametrize("case", INTEGER_CASES)
def test_every_reader_keeps_large_integer_ids_exact(tmp_path, case):
    make, fmt, _ = INTEGER_CASES[case]
    _, jobs = _read(tmp_path, make(BIG), fmt)
    assert jobs.job_id.dtype == np.int64
    assert jobs.job_id.tolist() == BIG  # 2**53 and 2**53 + 1 stay two ids


@pytest.mark.parametrize("case", INTEGER_CASES)
def test_an_id_above_int64_is_refused_naming_file_line_and_column(tmp_path, case):
    make, fmt, _ = INTEGER_CASES[case]
    path = tmp_path / f"trace.{fmt}"
    path.write_text(make([1, TOO_BIG]))
    with pytest.raises(TraceError) as error:
        read_trace(path, ReadOptions(trace_format=fmt, queues="all"))
    message = str(error.value)
    assert message.startswith(f"{path}:3: column ")  # line 1: the header (SWF: a comment) and str(TOO_BIG) in message
    assert "larger than the largest 64-bit integer (9223372036854775807)" in message
    skipped = read_trace(path, ReadOptions(trace_format=fmt, queues="all", on_bad_row="skip"))
    assert skipped.job_id.tolist() == [1] and len(skipped.meta.rejects) == 1
    assert skipped.meta.rejects[0].value == str(TOO_BIG)


@pytest.mark.parametrize("column", ["JobID", "JobIDRaw"])
def test_slurm_array_tasks_keep_their_own_ids_as_text(tmp_path, column):
    _, jobs = _read(tmp_path, slurm(["12345_7", "12345_8", "12345+1", 2**63 - 1], column), "slurm")
    assert jobs.job_id.dtype.kind == "U"
    assert jobs.job_id.tolist() == ["12345_7", "12345_8", "12345+1", str(2**63 - 1)]


def test_a_job_step_does_not_turn_ids_into_text(tmp_path):
    _, jobs = _read(tmp_path, slurm([2**53 + 1, f"{2**53 + 1}.batch"]), "slurm")
    assert jobs.job_id.tolist() == [2**53 + 1] and jobs.meta.excluded == {"job_step": 1}


def test_a_text_id_that_is_no_job_id_is_a_bad_row(tmp_path):
    path = tmp_path / "t.slurm"
    path.write_text(slurm(["12345_7", "abc"]))
    with pytest.raises(TraceError, match=r":3: column 'JobIDRaw': value 'abc': not a job id"):
        read_trace(path, ReadOptions(trace_format="slurm"))


def _schedule_ids(tmp_path, jobs) -> list[str]:
    from drevt_sweep.sim.partitioned import replay_machine
    from drevt_sweep.sim.machine import Machine

    schedule = replay_machine(jobs, Machine.single_pool(4)) if jobs.meta.mode == "replay" else None
    if schedule is None:
        from drevt_sweep.sim.partitioned import simulate_machine
        from drevt_sweep.sim.runtime import RunTimeModel, draw_run_times

        run_times = draw_run_times(jobs, RunTimeModel(mode="actual"), 0)
        schedule = simulate_machine(jobs, run_times, Machine.single_pool(4), priority="fcfs", backfill="easy")
    rows = list(csv.reader(io.StringIO(schedule_csv_bytes(jobs, schedule).decode())))
    return [row[0] for row in rows[1:]]


@pytest.mark.parametrize("ids", [BIG, ["12345_7", "12345_8", str(2**63 - 1)]], ids=["int64", "text"])
def test_ids_reach_the_schedule_csv_and_read_back_exactly(tmp_path, ids):
    _, jobs = _read(tmp_path, slurm(ids, "JobID"), "slurm")
    written = _schedule_ids(tmp_path, jobs)
    assert written == [str(i) for i in ids]
    again = tmp_path / "schedule.csv"
    from drevt_sweep.outputs import write_schedule_csv
    from drevt_sweep.sim.partitioned import replay_machine
    from drevt_sweep.sim.machine import Machine

    write_schedule_csv(again, jobs, replay_machine(jobs, Machine.single_pool(4)))
    back = read_trace(again, ReadOptions(trace_format="simple", queues="all"))
    assert [str(i) for i in back.job_id.tolist()] == [str(i) for i in ids]


@pytest.mark.parametrize("ids", [BIG, ["12345_7", "12345_8"]], ids=["int64", "text"])
def test_the_trace_cache_keeps_ids_exact(tmp_path, ids):
    path = tmp_path / "t.slurm"
    path.write_text(slurm(ids, "JobID"))
    options = ReadOptions(trace_format="slurm")
    first = load_trace(path, options, cache_dir=tmp_path / "cache")
    with _no_warning():  # a valid entry: served, not rebuilt
        cached = load_trace(path, options, cache_dir=tmp_path / "cache")
    assert cached.job_id.tolist() == first.job_id.tolist() == ids
    assert cached.job_id.dtype == first.job_id.dtype


class _no_warning:
    def __enter__(self):
        import warnings

        self.catcher = warnings.catch_warnings()
        self.catcher.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        return self.catcher.__exit__(*exc)


def test_drevt_sim_writes_two_distinct_ids_for_2_53_and_2_53_plus_1(tmp_path):
    trace = tmp_path / "ids.csv"
    trace.write_text(simple(BIG))
    out = tmp_path / "out.csv"
    proc = subprocess.run([sys.executable, "-m", "drevt_sweep.cli.sim", str(trace), "--total_nodes", "4",
                           "--output", str(out), "--quiet"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [row.split(",")[0] for row in out.read_text().splitlines()[1:]] == [str(i) for i in BIG]


@pytest.mark.slow
def test_a_sweeps_schedule_keeps_array_task_and_large_ids(tmp_path):
    import gzip

    from sweep_helpers import run_sweep

    ids = ["12345_7", "12345_8", str(2**53 + 1), str(2**53)]
    trace = tmp_path / "array.slurm"
    trace.write_text(slurm(ids, "JobID"))
    run_sweep(tmp_path, "policy=fcfs", f"trace.path={trace}", "format=slurm", "tracking.enabled=false",
              "figures=auto")  # (auto keeps the schedule file of a small sweep)
    schedule = gzip.decompress((tmp_path / "sweep" / "0" / "schedule_seed0.csv.gz").read_bytes()).decode()
    assert [line.split(",")[0] for line in schedule.splitlines()[1:]] == ids


def test_a_job_table_refuses_float_ids():
    from jobtable_factory import make_jobs

    jobs = make_jobs([0, 1], [1, 1], [10, 10])
    with pytest.raises(TypeError, match="job_id must be int64 or text"):
        jobs.replace(job_id=np.array([2.0**53, 2.0**53 + 1]))
