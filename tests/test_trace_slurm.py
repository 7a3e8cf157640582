"""Slurm ``sacct -P`` exports: steps, jobs that never started, limits, modes, the Kabre export."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from drevt_sweep.errors import TraceError
from drevt_sweep.trace import ReadOptions, read_trace
from drevt_sweep.trace.slurm import parse_duration

TRACES = Path(__file__).resolve().parent / "data" / "traces"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"


def read(name, **options):
    options.setdefault("timezone", "UTC")
    return read_trace(TRACES / name, ReadOptions(trace_format="slurm", **options))


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def test_replay_export_with_steps_and_unfinished_jobs():
    jobs = read("slurm_replay.txt")
    meta = jobs.meta
    assert meta.mode == "replay" and meta.trace_format == "slurm"
    assert meta.excluded == {
        "job_step": 2,
        "never_started": 1,
        "not_finished": 1,
        "unknown_time_limit": 1,
        "zero_run_time": 1,
    }
    assert meta.rows_read == 10 and meta.rows_kept == 4
    assert jobs.job_id.tolist() == [107, 100, 103, 104]  # by submit; array task 102_2 is 103
    row = jobs.job_id.tolist().index(100)
    assert jobs.submit[row] == utc("2024-05-01T08:00:00")
    assert jobs.begin[row] == utc("2024-05-01T08:05:00")
    assert jobs.end[row] == utc("2024-05-01T09:05:00")
    assert jobs.actual_run_time[row] == 3600 and jobs.time_limit[row] == 7200
    assert jobs.num_nodes[row] == 2 and jobs.queue[row] == "pbatch"
    timeout = jobs.job_id.tolist().index(103)
    assert jobs.time_limit[timeout] == 86_400 and jobs.exit_status[timeout] == 0


def test_unlimited_takes_the_partitions_largest_finite_limit():
    jobs = read("slurm_replay.txt")
    row = jobs.job_id.tolist().index(104)
    assert jobs.time_limit[row] == 86_400  # pbatch's largest: 1-00:00:00
    assert jobs.meta.notes == {"time_limit_from_partition_max": 1}


def test_without_start_and_end_the_export_is_simulated():
    jobs = read("slurm_simulation.txt", timezone="America/Costa_Rica")
    meta = jobs.meta
    assert meta.mode == "simulation" and meta.has_actual_run_time
    # PENDING and CANCELLED-with-no-CPU-time never started; a partition with only
    # Partition_Limit jobs has no finite limit to borrow
    assert meta.excluded == {"never_started": 2, "unknown_time_limit": 1}
    # No Elapsed: CPUTimeRAW / ReqCPUS (two TIMEOUT jobs only: too few to estimate k, so 1)
    assert jobs.actual_run_time.tolist() == [158_517_504, 15_725_242 / 25, 2000]
    assert jobs.submit[0] == utc("2024-06-24T18:33:26")  # Costa Rica is UTC-6
    assert jobs.time_limit.tolist() == [619_200, 604_800, 619_200]  # 10320 min; nu-long's max
    assert jobs.num_nodes.tolist() == [1, 2, 1]
    assert meta.notes == {"time_limit_from_partition_max": 1, "run_time_exceeds_time_limit": 2,
                          "run_time_from_cpu_time_req_cpus_x1": 3}


def test_force_simulation_of_a_replay_export():
    jobs = read("slurm_replay.txt", force_simulation=True)
    assert jobs.meta.mode == "simulation"
    np.testing.assert_array_equal(jobs.actual_run_time, jobs.end - jobs.begin)


def test_elapsed_is_the_run_time_in_simulation(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text(
        "JobID|Partition|Submit|ReqNodes|Timelimit|Elapsed|State\n"
        "1|p|2024-01-01T00:00:00|2|01:00:00|00:30:00|COMPLETED\n"
        "2|p|2024-01-01T00:10:00|1|1-00:00:00|1-02:03:04|TIMEOUT\n"
        "3|p|2024-01-01T00:20:00|1|30:00|00:00:00|CANCELLED by 12\n"
    )
    jobs = read_trace(path, ReadOptions(trace_format="slurm", timezone="UTC"))
    assert jobs.meta.has_actual_run_time
    assert jobs.actual_run_time.tolist() == [1800, 93_784]
    assert jobs.time_limit.tolist() == [3600, 86_400]
    assert jobs.meta.excluded == {"never_started": 1}


@pytest.mark.filterwarnings("error")
def test_a_state_column_without_a_word_is_read_without_a_warning(tmp_path):
    """An export whose State cells are all blank: every job is kept as finished, and pandas
    is not asked to fill a float column with "" (a warning in pandas 3, an error in pandas 4;
    the fuzz test found it)."""
    path = tmp_path / "s.txt"
    path.write_text(
        "JobID|Partition|Submit|ReqNodes|Timelimit|Elapsed|CPUTimeRAW|ReqCPUS|State\n"
        "1|p|2024-01-01T00:00:00|2|01:00:00|00:30:00|3600|2|\n"
        "2|p|2024-01-01T00:10:00|1|02:00:00|01:00:00|3600|1| \n"
    )
    jobs = read_trace(path, ReadOptions(trace_format="slurm", timezone="UTC"))
    assert jobs.actual_run_time.tolist() == [1800, 3600] and not jobs.meta.excluded


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("00:30:00", 1800),
        ("30:00", 1800),
        ("1-00:00:00", 86_400),
        ("2-22:00:00", 252_000),
        ("7-04:00:00", 619_200),
        ("3-12", 302_400),
        ("1-01:30", 91_800),
        ("45", 2700),
    ],
)
def test_timelimit_forms(text, seconds):
    values, bad, unlimited = parse_duration(pd.Series([text]), minutes_alone=True)
    assert values.tolist() == [seconds] and not bad.any() and not unlimited.any()


def test_timelimit_keywords_and_garbage():
    values, bad, unlimited = parse_duration(
        pd.Series(["UNLIMITED", "Partition_Limit", "INVALID", "soon", ""]), minutes_alone=True
    )
    assert unlimited.tolist() == [True, True, True, False, False]
    assert bad.tolist() == [False, False, False, True, False]


def test_missing_required_column_names_mode_and_accepted_names(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text(
        "JobID|Partition|Submit|Timelimit|State\n1|p|2024-01-01T00:00:00|10|COMPLETED\n"
    )
    with pytest.raises(TraceError, match="missing required column 'ReqNodes' for simulation mode"):
        read_trace(path, ReadOptions(trace_format="slurm"))


@pytest.fixture(scope="module")
def kabre() -> Path:
    path = SHARED / "kabre_sacct.csv.gz"
    if not path.is_file():
        pytest.skip(f"public traces not found at {SHARED}")
    return path


def test_kabre_export(kabre):
    jobs = read_trace(kabre, ReadOptions(trace_format="slurm", timezone="America/Costa_Rica"))
    meta = jobs.meta
    assert meta.rows_read == 30_376
    # CPUTimeRAW 0 and not cancelled: started and ended within the second
    assert meta.excluded == {"never_started": 478, "zero_run_time": 480}
    assert len(jobs) == 29_418 and meta.mode == "simulation"
    # No Elapsed: CPUTimeRAW / (ReqCPUS x 2), k = 2 from the 872 TIMEOUT jobs (two threads a core)
    assert meta.has_actual_run_time and (jobs.actual_run_time > 0).all()
    assert meta.notes == {"run_time_from_cpu_time_req_cpus_x2": 29_418,
                          "run_time_exceeds_time_limit": 1961}
    assert jobs.num_nodes.sum() == 29_942
    assert (jobs.time_limit > 0).all()
    assert jobs.submit[0] == utc("2024-06-24T18:33:26")  # the first row, 12:33:26 CST
    assert jobs.submit[-1] == utc("2025-01-01T03:23:01")  # the last row, 2024-12-31 21:23:01
    counts = pd.Series(jobs.queue).value_counts()
    assert counts["andalan"] == 13_193 and counts["nu-all"] == 2
    assert len(jobs.queue_names) == 23


# ----------------------------------------------------------------- issue 19, items 10 and 16


def test_jobs_still_active_at_export_are_excluded_and_counted(tmp_path):
    """Without Start/End, a RUNNING job's Elapsed is only its time so far (was kept as a run)."""
    path = tmp_path / "s.txt"
    path.write_text(
        "JobID|Partition|Submit|ReqNodes|Timelimit|Elapsed|State\n"
        "1|p|2024-01-01T00:00:00|2|01:00:00|00:30:00|COMPLETED\n"
        "2|p|2024-01-01T00:01:00|1|01:00:00|00:10:00|RUNNING\n"
        "3|p|2024-01-01T00:02:00|1|01:00:00|00:05:00|SUSPENDED\n"
        "4|p|2024-01-01T00:03:00|1|01:00:00|00:01:00|REQUEUED\n"
        "5|p|2024-01-01T00:04:00|1|01:00:00|00:00:00|PENDING\n"
        "6|p|2024-01-01T00:05:00|1|01:00:00|00:02:00|COMPLETING\n"
        "7|p|2024-01-01T00:06:00|1|01:00:00|00:20:00|TIMEOUT\n"
    )
    jobs = read_trace(path, ReadOptions(trace_format="slurm", timezone="UTC"))
    assert jobs.meta.excluded == {"not_finished": 4, "never_started": 1}
    assert jobs.job_id.tolist() == [1, 7] and jobs.actual_run_time.tolist() == [1800, 1200]
    assert jobs.meta.rows_read == jobs.meta.rows_kept + 5


def _cpu_export(tmp_path, alloc: bool, timeouts: int):
    header = "JobID|Partition|Submit|ReqNodes|TimelimitRaw|CPUTimeRAW|ReqCPUS|State"
    rows = ["1|p|2024-01-01T00:00:00|1|60|7200|4|COMPLETED"]  # 7200 CPU-s on 4 (x k) CPUs
    # TIMEOUT jobs ran their 10-minute limit on 2 x ReqCPUS CPUs (plus a few seconds' grace)
    rows += [f"{i}|p|2024-01-01T01:00:00|1|10|{2 * 3 * 605}|3|TIMEOUT" for i in range(2, timeouts + 2)]
    if alloc:
        header += "|AllocCPUS"
        rows = [row + ("|8" if i == 0 else "|6") for i, row in enumerate(rows)]
    path = tmp_path / "cpu.txt"
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return read_trace(path, ReadOptions(trace_format="slurm", timezone="UTC"))


def test_run_time_from_cpu_time_per_allocated_cpu(tmp_path):
    jobs = _cpu_export(tmp_path, alloc=True, timeouts=1)
    assert jobs.actual_run_time.tolist() == [900, 605]
    assert jobs.meta.notes["run_time_from_cpu_time_alloc_cpus"] == 2


def test_run_time_from_cpu_time_per_requested_cpu_estimates_the_threads(tmp_path):
    jobs = _cpu_export(tmp_path, alloc=False, timeouts=5)  # k = round(605 / 600 * 2) = 2
    assert jobs.actual_run_time[0] == 900 and (jobs.actual_run_time[1:] == 605).all()
    assert jobs.meta.notes["run_time_from_cpu_time_req_cpus_x2"] == 6
    few = _cpu_export(tmp_path, alloc=False, timeouts=4)  # too few TIMEOUT jobs: k = 1
    assert few.actual_run_time[0] == 1800
    assert few.meta.notes["run_time_from_cpu_time_req_cpus_x1"] == 5


def test_elapsed_wins_over_cpu_time(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("JobID|Partition|Submit|ReqNodes|Timelimit|Elapsed|CPUTimeRAW|ReqCPUS|State\n"
                    "1|p|2024-01-01T00:00:00|1|01:00:00|00:30:00|999|1|COMPLETED\n"
                    "2|p|2024-01-01T00:00:00|1|01:00:00||999|1|COMPLETED\n")
    jobs = read_trace(path, ReadOptions(trace_format="slurm", timezone="UTC"))
    assert jobs.actual_run_time.tolist() == [1800, 999]
    assert jobs.meta.notes == {"run_time_from_cpu_time_req_cpus_x1": 1}


@pytest.mark.slow
def test_trace_kabre_runs_with_the_defaults(kabre, tmp_path):
    """It failed: no run-time column, so run_time=actual had nothing to use."""
    import json
    import os
    import subprocess
    import sys

    import yaml

    proc = subprocess.run(
        [sys.executable, "-m", "drevt_sweep", "trace=kabre", "tracking.enabled=false",
         f"paths.output_root={tmp_path / 'out'}", f"hydra.run.dir={tmp_path / 'run'}",
         "progress=false"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "DREVT_TRACE_DIR": str(kabre.parent)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "FINISHED" and result["jobs"] == 29_418
    config = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert config["timezone"]["name"] == "America/Costa_Rica"
    # Costa Rica has no DST: under it no wall time is ambiguous (Los Angeles reported 10 folds)
    jobs = read_trace(kabre, ReadOptions(trace_format="slurm", timezone="America/Costa_Rica"))
    assert not any(note.startswith("dst_") for note in jobs.meta.notes)
