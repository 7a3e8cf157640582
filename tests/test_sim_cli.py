"""drevt-sim: the seeds' command line, in process and as the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.cli import sim as sim_cli
from drevt_sweep.sim.schedule import Schedule
from drevt_sweep.cli.sim import main, per_job_text, statistics_text

REPO = Path(__file__).resolve().parents[1]
DREVT_SIM = REPO / ".venv" / "bin" / "drevt-sim"
BUNDLED_KTH = REPO / "drevt_sweep" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"

# The seeds' "Testing" example, verbatim.
SEEDS_TRACE = """\
job_submit_time,begin_time,end_time,num_nodes,exit_status,queue,time_limit
0,0,100,10,0,pbatch,100
50,100,150,10,0,pbatch,50
120,150,230,10,0,pbatch,80
"""
SEEDS_ARGS = [
    "--trace_format", "simple", "--timestamp_format", "epoch", "--total_nodes", "100",
    "--backfill_policy", "easy", "--priority_policy", "fcfs", "--run_time_mode", "actual",
]
SEEDS_LINES = [
    "Job 0 starts at 0, ends at 100",
    "Job 1 starts at 100, ends at 150",
    "Job 2 starts at 150, ends at 230",
]


def _have_reader() -> bool:
    try:
        from drevt_sweep.trace import simple  # noqa: F401
    except ImportError:
        return False
    return True


needs_reader = pytest.mark.skipif(not _have_reader(), reason="the simple reader is not there yet")


@pytest.fixture
def seeds_trace(tmp_path) -> Path:
    path = tmp_path / "test.csv"
    path.write_text(SEEDS_TRACE)
    return path


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- the seeds' example -----------------------------------------------------------------------


@needs_reader
def test_the_seeds_testing_example_in_process(seeds_trace, capsys):
    code, out, err = run([seeds_trace, *SEEDS_ARGS], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:3] == SEEDS_LINES
    assert lines[3] == ""
    assert lines[4].startswith("Statistics: test.csv, 3 jobs on 100 nodes, replay")
    assert "Traceback" not in err


@needs_reader
def test_the_seeds_testing_example_with_the_installed_command(seeds_trace):
    proc = subprocess.run(
        [str(DREVT_SIM), str(seeds_trace), *SEEDS_ARGS], capture_output=True, text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:3] == SEEDS_LINES
    assert proc.stderr == ""


@needs_reader
def test_force_simulation_schedules_the_same_jobs_itself(seeds_trace, capsys):
    # As a simulation on 10 nodes, each job waits for the previous one: the same schedule.
    code, out, _ = run([seeds_trace, "--total_nodes", "10", "--force-simulation"], capsys)
    assert code == 0
    assert out.splitlines()[:3] == SEEDS_LINES
    assert "simulation, priority fcfs, backfill easy, run times actual" in out


@needs_reader
def test_a_simulation_trace_without_run_times_needs_another_mode(tmp_path, capsys):
    path = tmp_path / "sim.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n0,80,pbatch,100\n10,15,pbatch,20\n")
    code, out, err = run([path, "--total_nodes", "100"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("drevt-sim: error: ") and "run_time_mode 'limit'" in err
    code, out, err = run([path, "--total_nodes", "100", "--run_time_mode", "limit"], capsys)
    assert code == 0, err
    # 80 + 15 nodes fit together on 100: both start on arrival and run their limits
    assert out.splitlines()[:2] == ["Job 0 starts at 0, ends at 100", "Job 1 starts at 10, ends at 30"]


@needs_reader
def test_outputs_are_written(tmp_path, seeds_trace, capsys):
    args = [seeds_trace, *SEEDS_ARGS, "--output", tmp_path / "out" / "schedule.csv",
            "--resource_trace", tmp_path / "resources.csv", "--stats", tmp_path / "stats.json",
            "--quiet"]
    code, out, err = run(args, capsys)
    assert code == 0, err
    assert out == ""
    schedule = (tmp_path / "out" / "schedule.csv").read_text().splitlines()
    # job_id is the trace's own id: for a simple trace without that column, the 1-based row
    assert schedule[1:] == ["1,0,0,100,10,0,pbatch,100,100", "2,50,100,150,10,0,pbatch,50,50",
                            "3,120,150,230,10,0,pbatch,80,80"]
    assert (tmp_path / "resources.csv").read_text().splitlines() == [
        "time,free_nodes,allocated_nodes", "0,90,10", "230,100,0",
    ]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["run"]["mode"] == "replay" and stats["run"]["total_nodes"] == 100
    assert stats["metrics"]["wait_max"] == 50
    assert stats["metrics"]["utilization"] == pytest.approx(2300 / (100 * 230))
    # the schedule CSV replays to the same schedule
    code, out, err = run([tmp_path / "out" / "schedule.csv", "--total_nodes", "100"], capsys)
    assert code == 0, err
    assert out.splitlines()[:3] == SEEDS_LINES


@needs_reader
def test_large_traces_print_statistics_only_unless_asked(tmp_path, capsys):
    rows = "".join(f"{i},1,pbatch,10\n" for i in range(150))
    path = tmp_path / "many.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n" + rows)
    code, out, err = run([path, "--run_time_mode", "limit"], capsys)
    assert code == 0
    assert not out.startswith("Job ") and out.startswith("Statistics: many.csv, 150 jobs on 795")
    assert "using 795 nodes (Lassen)" in err  # no machine size in the trace nor on the line
    code, out, _ = run([path, "--run_time_mode", "limit", "--per_job"], capsys)
    assert out.splitlines()[149] == "Job 149 starts at 149, ends at 159"


@needs_reader
def test_oversized_jobs_are_rejected_with_a_warning(tmp_path, capsys):
    path = tmp_path / "big.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit\n0,5,pbatch,10\n1,50,pbatch,10\n")
    code, out, err = run([path, "--total_nodes", "10", "--run_time_mode", "limit"], capsys)
    assert code == 0
    assert out.splitlines()[:2] == [
        "Job 0 starts at 0, ends at 10",
        "Job 1 rejected: needs 50 nodes, more than the machine's 10",
    ]
    assert "1 jobs ask for more nodes than the machine has (10)" in err
    assert "job 1 (line 3, 50 nodes)" in err


def test_the_bundled_kth_trace_end_to_end(capsys):
    if not _have_swf():
        pytest.skip("the SWF reader is not there yet")
    code, out, err = run([BUNDLED_KTH, "--trace_format", "swf", "--run_time_mode", "actual"], capsys)
    assert code == 0, err
    assert "on 100 nodes" in out  # MaxNodes from the SWF header
    assert not out.startswith("Job ")


def _have_swf() -> bool:
    try:
        from drevt_sweep.trace import swf  # noqa: F401
    except ImportError:
        return False
    return True


# --- bad command lines: usage and exit 2, never a traceback -------------------------------------


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], "the following arguments are required: trace"),
        (["t.csv", "--bogus"], "unrecognized arguments: --bogus"),
        (["t.csv", "--trace_format", "xml"], "invalid choice: 'xml'"),
        (["t.csv", "--timestamp_format", "unix"], "invalid choice: 'unix'"),
        (["t.csv", "--run_time_mode", "guess"], "invalid choice: 'guess'"),
        (["t.csv", "--backfill_policy", "aggressive"], "invalid choice: 'aggressive'"),
        (["t.csv", "--priority_policy", "random"], "invalid choice: 'random'"),
        (["t.csv", "--total_nodes", "0"], "expected a positive integer, got '0'"),
        (["t.csv", "--total_nodes", "ten"], "expected a positive integer, got 'ten'"),
        (["t.csv", "--seed", "-1"], "expected a non-negative integer"),
        (["t.csv", "--run_time_scale", "nan"], "expected a finite number"),
        (["t.csv", "--queues", ","], "comma-separated list"),
        (["t.csv", "--tot", "5"], "unrecognized arguments: --tot"),  # no abbreviations
    ],
)
def test_bad_arguments_print_usage_and_exit_2(argv, expected, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2
    assert err.startswith("usage: drevt-sim")
    assert expected in err
    assert "Traceback" not in err and out == ""


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--timezone", "Mars/Olympus"], "unknown time zone 'Mars/Olympus'"),
        (["--backfill_policy", "conservative", "--drevt_compat"], "--drevt_compat"),
        (["--run_time_mode", "distribution", "--run_time_distribution", "uniform"],
         "low < high"),
        (["--run_time_mode", "distribution", "--run_time_scale", "0"], "scale > 0"),
        (["--rejects", "r.csv"], "--rejects needs --on_bad_row skip"),
    ],
)
def test_bad_option_combinations_are_clear_errors(extra, expected, seeds_trace, capsys):
    code, out, err = run([seeds_trace, *extra], capsys)
    assert code == 2 and out == ""
    assert err.startswith("drevt-sim: error: ") and expected in err
    assert "Traceback" not in err


def test_a_missing_trace_is_a_clear_error(tmp_path, capsys):
    missing = tmp_path / "nope.csv"
    code, out, err = run([missing], capsys)
    assert code == 2 and out == ""
    assert err == f"drevt-sim: error: {missing}: no such file\n"
    code, _, err = run([tmp_path], capsys)
    assert code == 2 and "is a directory" in err


def test_bad_arguments_with_the_installed_command(tmp_path):
    proc = subprocess.run([str(DREVT_SIM), "t.csv", "--total_nodes", "-3"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: drevt-sim") and "Traceback" not in proc.stderr
    proc = subprocess.run([str(DREVT_SIM), str(tmp_path / "missing.csv")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"drevt-sim: error: {tmp_path / 'missing.csv'}: no such file\n"


def test_help_and_version_exit_0(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0 and "--force-simulation" in out and "--run_time_stddev" in out
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.startswith("drevt-sim ")


def test_both_spellings_of_force_simulation_are_accepted():
    parser = sim_cli.build_parser()
    assert parser.parse_args(["t", "--force-simulation"]).force_simulation
    assert parser.parse_args(["t", "--force_simulation"]).force_simulation
    assert not parser.parse_args(["t"]).force_simulation


def test_defaults_follow_the_seeds():
    args = sim_cli.build_parser().parse_args(["t.csv"])
    # No --timezone: the file's own zone (an SWF header), else the seeds' America/Los_Angeles.
    assert (args.trace_format, args.timestamp_format, args.timezone) == ("simple", "auto", None)
    assert (args.backfill_policy, args.priority_policy) == (None, None)  # not given: --slurm-conf may say
    sim_cli._apply_slurm_conf(args)
    assert (args.backfill_policy, args.priority_policy, args.seed) == ("easy", "fcfs", 0)
    assert args.run_time_mode is None  # means actual; None tells "not given" in replay mode
    assert args.total_nodes is None and sim_cli.DEFAULT_TOTAL_NODES == 795


def test_choices_agree_with_the_engine_and_the_models():
    engine = pytest.importorskip("drevt_sweep.sim.engine")
    from drevt_sweep import trace
    from drevt_sweep.sim import runtime

    assert sim_cli.PRIORITY_POLICIES == engine.PRIORITY_POLICIES
    assert sim_cli.BACKFILL_POLICIES == engine.BACKFILL_POLICIES
    assert sim_cli.COMPRESSION_ORDERS == engine.COMPRESSION_ORDERS
    from drevt_sweep.sim import estimates

    assert sim_cli.ESTIMATES == estimates.ESTIMATES and sim_cli.BACKFILL_ORDERS == estimates.BACKFILL_ORDERS
    assert sim_cli.ESTIMATE_REFRESHES == estimates.ESTIMATE_REFRESHES
    assert sim_cli.RUN_TIME_MODES == runtime.RUN_TIME_MODES
    assert sim_cli.DISTRIBUTIONS == runtime.DISTRIBUTIONS
    assert sim_cli.TIMESTAMP_FORMATS == trace.TIMESTAMP_FORMATS


def test_internal_errors_are_reported_without_a_traceback(seeds_trace, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("oops")

    monkeypatch.setattr("drevt_sweep.trace.read_trace", broken)
    code, out, err = run([seeds_trace], capsys)
    assert code == 1
    assert "internal error: ZeroDivisionError: oops" in err and "Traceback" not in err


def test_ctrl_c_exits_130(seeds_trace, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("drevt_sweep.trace.read_trace", interrupted)
    code, _, err = run([seeds_trace], capsys)
    assert code == 130 and err == "drevt-sim: interrupted\n"


# --- the printed text ------------------------------------------------------------------------------


def _schedule(begin, run, killed, rejected, total_nodes=10):
    begin = np.asarray(begin, float)
    run = np.asarray(run, float)
    return Schedule(mode="simulation", total_nodes=total_nodes, begin=begin, end=begin + run,
                    run_time=run, killed=np.asarray(killed), rejected=np.asarray(rejected))


def test_per_job_lines_show_killed_and_rejected_jobs_and_exact_times():
    sys.path.insert(0, str(Path(__file__).parent))
    from jobtable_factory import make_jobs

    jobs = make_jobs([0, 0, 1_700_000_000.5], [4, 20, 1], [10, 10, 10], [12, 1, 0.25])
    schedule = _schedule([0, np.nan, 1_700_000_000.5], [10, np.nan, 0.25],
                         killed=[True, False, False], rejected=[False, True, False])
    assert per_job_text(jobs, schedule).splitlines() == [
        "Job 0 starts at 0, ends at 10 (killed at its time limit)",
        "Job 1 rejected: needs 20 nodes, more than the machine's 10",
        "Job 2 starts at 1700000000.5, ends at 1700000000.75",
    ]


def test_statistics_block_is_aligned_and_lists_queues():
    metrics = {"jobs_simulated": 3.0, "wait_mean": 12.5, "makespan": 7200.0, "utilization": 0.5,
               "queue/a/jobs_simulated": 2.0, "queue/a/wait_mean": 1.0,
               "queue/a/wait_p95": 2.0, "queue/a/bsld_mean": 1.0, "queue/a/utilization": 0.25,
               "queue/b/jobs_simulated": 1.0, "queue/b/wait_mean": 3.0,
               "queue/b/wait_p95": 3.0, "queue/b/bsld_mean": 1.5, "queue/b/utilization": 0.25}
    text = statistics_text(metrics, "Statistics: x", ["a", "b"])
    lines = text.splitlines()
    assert lines[0] == "Statistics: x"
    # labels padded to the longest ("bounded slowdown mean"), values right-aligned
    assert "  jobs simulated             3" in lines
    assert "  makespan                7200 s  (2 h)" in lines
    assert "  utilization            50.00 %" in lines
    assert "  wait p90                 n/a" in lines
    ends = {len(lines[1]), lines[4].index("12.5") + 4, lines[14].index("7200") + 4}
    assert len(ends) == 1
    assert any(line.split() == ["a", "2", "1", "2", "1", "25.00"] for line in lines)


@needs_reader
def test_drevt_sim_imports_no_tracking_or_config_machinery(seeds_trace):
    # Startup time: a run must not pull in MLflow or Hydra (seconds of imports).
    code = (
        "import sys; from drevt_sweep.cli.sim import main; "
        f"rc = main([{str(seeds_trace)!r}, '--quiet']); "
        "print(rc, sorted(m for m in ('mlflow', 'hydra', 'omegaconf', 'joblib') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split(None, 1) == ["0", "[]\n"], proc.stderr


# --- workload scenarios (issue 9) ---------------------------------------------------------------

# Simulation trace, 10 nodes (submit, nodes, limit = run):
#   A (0, 5, 150), B (0, 4, 50), C (10, 10, 20)
WORKLOAD_TRACE = """\
job_submit_time,num_nodes,queue,time_limit,actual_run_time
0,5,pbatch,150,150
0,4,pbatch,50,50
10,10,pbatch,20,20
"""


@pytest.fixture
def workload_trace(tmp_path) -> Path:
    path = tmp_path / "workload.csv"
    path.write_text(WORKLOAD_TRACE)
    return path


WORKLOAD_ARGS = ["--total_nodes", "10", "--timezone", "UTC"]


@needs_reader
def test_capacity_steps_delay_a_job(workload_trace, capsys):
    # 4 nodes on [100, 200): A (5 nodes for 150 s) would cross 100, so it waits until 200;
    # B ends by then (0..50) and C fits before the drop (50..70).
    code, out, err = run([workload_trace, *WORKLOAD_ARGS, "--capacity", "100:4,200:10"], capsys)
    assert code == 0, err
    assert out.splitlines()[:3] == [
        "Job 0 starts at 200, ends at 350",
        "Job 1 starts at 0, ends at 50",
        "Job 2 starts at 50, ends at 70",
    ]
    assert "workload: jobs_in 3, jobs_out 3, capacity_steps 2" in err


@needs_reader
def test_weekly_maintenance_from_the_command_line(workload_trace, capsys):
    # Epoch 0 is Thursday 00:00 UTC: losing 6 nodes on Thursdays 00:01:40-00:03:20 is the same
    # [100, 200) window as above.
    code, out, err = run(
        [workload_trace, *WORKLOAD_ARGS, "--maintenance", "thu 00:01:40-00:03:20 6"], capsys
    )
    assert code == 0, err
    assert out.splitlines()[0] == "Job 0 starts at 200, ends at 350"


@needs_reader
def test_a_job_that_can_never_fit_the_capacity_is_rejected_and_named(workload_trace, capsys):
    # 4 nodes from 100 on: A (5 nodes for 150 s) would have to start by -50 -> never.
    code, out, err = run([workload_trace, *WORKLOAD_ARGS, "--capacity", "100:4"], capsys)
    assert code == 0, err
    assert out.splitlines()[0].startswith("Job 0 rejected: needs 5 nodes, never free for its whole time limit")
    assert "1 jobs can never run within the machine's capacity schedule" in err


@needs_reader
def test_load_factor_window_and_max_jobs(workload_trace, capsys):
    # load x 2: submits 0, 0, 5; with 10 nodes C (10 nodes) waits for A and B
    code, out, err = run([workload_trace, *WORKLOAD_ARGS, "--load_factor", "2", "--max_jobs", "2"], capsys)
    assert code == 0, err
    assert out.splitlines()[:2] == ["Job 0 starts at 0, ends at 150", "Job 1 starts at 0, ends at 50"]
    assert "max_jobs_dropped 1" in err
    # window [5, 100): C alone
    code, out, err = run([workload_trace, *WORKLOAD_ARGS, "--window_start", "5", "--window_end",
                          "1970-01-01T00:01:40"], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == "Job 0 starts at 10, ends at 30"
    # --max_time 5: the jobs submitted in the first 5 seconds
    code, out, _ = run([workload_trace, *WORKLOAD_ARGS, "--max_time", "5"], capsys)
    assert "2 jobs on 10 nodes" in out


@needs_reader
def test_warm_start_on_the_seeds_replay_trace(seeds_trace, capsys):
    # The seeds' trace on 10 nodes from t = 60: job 0 (0..100) is running, so its 10 nodes are
    # busy until 100; job 1 (submitted 50, recorded start 100) was queued: it enters at 60 and
    # runs 100..150; job 2 (submitted 120) then waits for it: 150..230.
    code, out, err = run([seeds_trace, "--total_nodes", "10", "--force-simulation",
                          "--window_start", "60", "--warm_start"], capsys)
    assert code == 0, err
    assert out.splitlines()[:2] == ["Job 0 starts at 100, ends at 150", "Job 1 starts at 150, ends at 230"]
    assert "warm_running 1" in err and "warm_queued 1" in err


@needs_reader
def test_shaking_is_seeded_and_rescaling_shrinks_jobs(workload_trace, tmp_path, capsys):
    outs = []
    for seed in ("1", "1", "2"):
        code, out, err = run([workload_trace, *WORKLOAD_ARGS, "--shake", "30", "--seed", seed], capsys)
        assert code == 0, err
        outs.append(out)
    assert outs[0] == outs[1] and outs[0] != outs[2]
    stats = tmp_path / "stats.json"
    code, out, err = run([workload_trace, *WORKLOAD_ARGS, "--rescale_nodes", "0.5", "--stats", stats], capsys)
    assert code == 0, err
    # sizes 5, 4, 10 -> 3, 2, 5: all three fit on 10 nodes at once
    assert out.splitlines()[:3] == ["Job 0 starts at 0, ends at 150", "Job 1 starts at 0, ends at 50",
                                    "Job 2 starts at 10, ends at 30"]
    assert json.loads(stats.read_text())["workload"]["rescaled"] == 3


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--load_factor", "0"], "argument --load_factor: expected a number > 0"),
        (["--shake", "-5"], "argument --shake: expected a number >= 0"),
        (["--max_jobs", "0"], "argument --max_jobs: expected a positive integer"),
        (["--warm_start"], "warm_start needs a window_start"),
        (["--force-simulation", "--capacity", "soon:5"], "capacity step time must be an ISO date-time"),
        (["--capacity", "100"], "a capacity step reads <time>:<total_nodes>"),
        (["--force-simulation", "--maintenance", "tue 8-12 100"], "maintenance start must be a wall-clock time"),
        (["--window_start", "100", "--window_end", "50"], "the time window is empty"),
        (["--window_start", "1000"], "the workload transforms left no jobs"),
        (["--load_factor", "2"], "cannot apply to a replay"),
    ],
)
@needs_reader
def test_bad_workload_options_are_clear_errors(extra, expected, seeds_trace, capsys):
    code, out, err = run([seeds_trace, *extra], capsys)
    assert code == 2 and out == ""
    assert expected in err and "Traceback" not in err


def test_estimates_backfill_order_and_multifactor_parameters(tmp_path, capsys):
    # The EASY++ case of tests/test_priorities.py (OVERRUN) through the command line.
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_submit_time,num_nodes,queue,time_limit,actual_run_time,user\n"
                     "0,4,pbatch,100,10,u\n0,4,pbatch,100,30,u\n40,2,pbatch,100,50,u\n"
                     "41,4,pbatch,100,10,v\n42,2,pbatch,30,5,v\n")
    base = [str(trace), "--total_nodes", "4", "--timestamp_format", "epoch"]
    assert sim_cli.main(base + ["--estimate", "user_history", "--backfill_order", "sjbf"]) == 0
    out = capsys.readouterr().out
    assert "Job 4 starts at 60, ends at 65" in out and "estimates user_history, backfill order sjbf" in out
    # Predicted again before every pass (tests/test_estimate_refresh.py): the same schedule here,
    # since no job of u waits while u's jobs finish; the summary says which setting ran.
    assert sim_cli.main(base + ["--estimate", "user_history", "--backfill_order", "sjbf",
                                "--estimate_refresh", "every_pass"]) == 0
    out = capsys.readouterr().out
    assert "Job 4 starts at 60, ends at 65" in out and "(predictions refreshed every_pass)" in out
    assert sim_cli.main(base + ["--estimate_refresh", "sometimes"]) == 2
    assert "invalid choice: 'sometimes'" in capsys.readouterr().err
    assert sim_cli.main(base + ["--priority_policy", "multifactor", "--priority_param", "weights.fairshare=0",
                                "--priority_param", "calc_period=60"]) == 0
    capsys.readouterr()
    assert sim_cli.main(base + ["--priority_policy", "multifactor", "--priority_param", "decay_half_life=0"]) == 2
    assert "decay_half_life must be > 0" in capsys.readouterr().err
    assert sim_cli.main(base + ["--backfill_policy", "conservative", "--backfill_order", "sjbf"]) == 2
    assert "sjbf orders EASY's backfill candidates" in capsys.readouterr().err
