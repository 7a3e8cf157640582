"""Slurm's partition DefaultTime and association/QOS limits (issue 26 item 4), each with a
hand-computed case: a few jobs where the setting changes the schedule (the expected start
times are worked out in the comments), plus bad input as one line and exit 2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.cli.sim import main as sim_main
from drevt_sweep.sim.machine import default_time_limits, machine_from_mapping
from drevt_sweep.sim.partitioned import simulate_machine
from drevt_sweep.trace import ReadOptions, read_trace
from drevt_sweep.trace.slurm_conf import read_slurm_conf

INF = math.inf
# every backfill limit off, a cycle at every pass, exact times (tests/test_slurm_backfill.py)
EXACT = dict(bf_interval=0, bf_max_job_test=INF, bf_window=INF, bf_resolution=0,
             default_queue_depth=INF, sched_interval=0, bf_job_part_count_reserve=0)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def swf_line(job, submit, run, procs, req_time, user=1, group=1):
    """An SWF record: the fields the reader uses, -1 elsewhere (queue and partition -1: the
    slurm.conf's Default=YES partition)."""
    return (f"{job} {submit} -1 {run} {procs} -1 -1 {procs} {req_time} -1 1 {user} {group} -1 -1 -1 -1 -1\n")


# ------------------------------------------------------------------------------- DefaultTime
DEFAULT_TIME_TRACE = (
    swf_line(1, 0, 100, 2, 100)  # J0: 2 nodes, 100 s
    + swf_line(2, 1, 100, 4, 100)  # J1: the whole machine, 100 s
    + swf_line(3, 2, 50, 2, -1)  # J2: 2 nodes, runs 50 s, requested no limit (-1)
)


def default_time_schedule(tmp_path, partition_keys: str):
    """4 whole nodes, FCFS, Slurm's backfill with exact times. J0 runs [0, 100); J1 (4 nodes)
    is reserved [100, 200). J2 (2 nodes) fits beside J0 now, and starts at once if its limit
    ends by J1's reservation (2 + limit <= 100), else after J1 (200)."""
    conf = read_slurm_conf(write(tmp_path / "slurm.conf", (
        "SelectType=select/linear\nNodeName=n[1-4] CPUs=1\n"
        f"PartitionName=p Nodes=n[1-4] Default=YES {partition_keys}\n")))
    jobs = read_trace(write(tmp_path / "t.swf", DEFAULT_TIME_TRACE), ReadOptions(trace_format="swf"))
    assert jobs.time_limit_unstated.tolist() == [False, False, True]
    assert jobs.time_limit.tolist() == [100, 100, 50]  # the reader's stand-in: the run time
    machine = machine_from_mapping(conf.system)
    return simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", backfill_params=EXACT)


@pytest.mark.parametrize("keys, j2_start, j2_limit, killed", [
    ("", 2, 50, False),  # no DefaultTime, no MaxTime: the stand-in (50 s) ends at 52 < 100
    ("DefaultTime=1", 2, 60, False),  # 60 s: ends by 62 < 100, backfilled
    ("DefaultTime=2", 200, 120, False),  # 120 s: would end at 122 > 100: after J1
    ("MaxTime=10", 200, 600, False),  # no DefaultTime: MaxTime (600 s)
    ("DefaultTime=2 MaxTime=10", 200, 120, False),  # DefaultTime before MaxTime
    ("DefaultTime=0:30", 2, 30, True),  # 30 s: backfilled, killed at its limit (runs 50 s)
    ("DefaultTime=20 MaxTime=10", 200, 600, False),  # DefaultTime > MaxTime: dropped (slurmctld)
])
def test_default_time_is_the_limit_of_jobs_that_asked_none(tmp_path, keys, j2_start, j2_limit, killed):
    schedule = default_time_schedule(tmp_path, keys)
    assert schedule.begin.tolist() == [0, 100, j2_start]
    assert schedule.killed.tolist() == [False, False, killed]
    assert schedule.run_time.tolist()[2] == (30 if killed else 50)
    conf = read_slurm_conf(tmp_path / "slurm.conf")
    jobs = read_trace(tmp_path / "t.swf", ReadOptions(trace_format="swf"))
    assert default_time_limits(jobs, machine_from_mapping(conf.system)).time_limit.tolist() == [100, 100, j2_limit]
    assert any("exceeds its MaxTime" in note for note in conf.ignored) == ("DefaultTime=20" in keys)


def test_default_time_zero_refuses_jobs_that_ask_no_limit(tmp_path):
    """Slurm refuses a job without --time in a partition with DefaultTime=0 ("job's default
    time is 0", job_mgr.c): rejected, counted; the others run as before (J2 gone: no
    reservation conflict)."""
    schedule = default_time_schedule(tmp_path, "DefaultTime=0")
    assert schedule.begin.tolist()[:2] == [0, 100] and math.isnan(schedule.begin[2])
    assert schedule.warnings["rejected_partition_default_time"] == 1


def test_drevt_sim_gives_default_time_to_a_sacct_partition_limit_job(tmp_path):
    """End to end through drevt-sim --slurm-conf: a sacct export whose third job shows
    ``Partition_Limit`` (no limit requested) gets the partition's DefaultTime (2 min), so it
    is no longer backfilled beside J0 (the case above, from an sacct file)."""
    trace = write(tmp_path / "sacct.txt", (
        "JobID|User|Account|Partition|Submit|ReqNodes|Timelimit|ElapsedRaw|State\n"
        "1|u|a|p|2026-01-01T00:00:00|2|00:01:40|100|COMPLETED\n"
        "2|u|a|p|2026-01-01T00:00:01|4|00:01:40|100|COMPLETED\n"
        "3|u|a|p|2026-01-01T00:00:02|2|Partition_Limit|50|COMPLETED\n"))
    conf = write(tmp_path / "slurm.conf", "SelectType=select/linear\nNodeName=n[1-4] CPUs=1\n"
                 "PartitionName=p Nodes=n[1-4] Default=YES DefaultTime=2\n")
    out = tmp_path / "schedule.csv"
    params = [x for k, v in EXACT.items() for x in ("--backfill_param", f"{k}={v}")]
    assert sim_main([str(trace), "--trace_format", "slurm", "--slurm-conf", str(conf), "--quiet",
                     "--output", str(out), *params]) == 0
    import csv

    rows = list(csv.DictReader(out.open()))
    first = float(rows[0]["begin_time"])
    assert [float(r["begin_time"]) - first for r in rows] == [0, 100, 200]
    assert [float(r["time_limit"]) for r in rows] == [100, 100, 120]
