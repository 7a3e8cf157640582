"""Signals that end a sweep (issue 19 items 1 and 3): SIGTERM (`timeout`, SLURM), SIGHUP (a
closed terminal) and Ctrl-C mark the runs in flight KILLED, end every worker process, exit with
128 + N, and `resume=true` then finishes the sweep. Real sweeps in subprocesses, real signals."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from sweep_helpers import (
    TINY,
    assert_no_process_left,
    cleanup,
    long_kth_sweep,
    runs,
    start,
    sweep_cmd,
    wait_for_running_runs,
    wait_for_workers,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_marks_runs_killed_ends_the_workers_and_exits_128_plus_n(tmp_path, signum):
    tag = f"sig{signum}-{os.getpid()}-{time.time()}"
    proc = start(long_kth_sweep(tmp_path), tag)
    try:
        wait_for_workers(proc, tag)
        proc.send_signal(signum)  # to the sweep alone, as `timeout` does
        _, err = proc.communicate(timeout=120)
        assert_no_process_left(tag)
    finally:
        cleanup(proc, tag)
    assert proc.returncode == 128 + signum, err[-3000:]
    assert f"interrupted by {signal.Signals(signum).name}" in err
    assert "Traceback" not in err
    found = runs(tmp_path)
    assert found and {r.info.status for r in found} == {"KILLED"}
    result = json.loads((tmp_path / "sweep" / "0" / "result.json").read_text())
    assert result["status"] == "KILLED" and signal.Signals(signum).name in result["error"]


def test_resume_after_sigterm_reuses_the_finished_configuration_and_runs_the_rest(tmp_path):
    # Hydra's basic sweeper runs the configurations one after the other (the Hydra job path),
    # so there is a moment when the first is finished and the second running; the engine's
    # configurations of one wave finish together (test_sweep_resume_scale.py signals it).
    sweep = ("policy=fcfs,easy", "run_time=lognormal", "replicates=48", "parallel.n_jobs=2",
             "hydra/sweeper=basic")
    tag = f"resume-{os.getpid()}-{time.time()}"
    proc = start(sweep_cmd(tmp_path, "first", *sweep), tag)
    first_done = tmp_path / "first" / "0" / "result.json"
    try:
        deadline = time.time() + 300
        second_started = tmp_path / "first" / "1" / ".hydra"
        while not (first_done.exists() and second_started.exists()) and proc.poll() is None \
                and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # into the second configuration's seeds (48 of them: several seconds)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        cleanup(proc, tag)
    assert proc.returncode == 143, (proc.returncode, err[-3000:])
    first = json.loads(first_done.read_text())
    assert first["status"] == "FINISHED"
    assert {r.info.status for r in runs(tmp_path)} <= {"FINISHED", "KILLED"}

    again = start(sweep_cmd(tmp_path, "again", *sweep, "resume=true"), tag)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err[-3000:]
    reused = json.loads((tmp_path / "again" / "0" / "result.json").read_text())
    assert reused["reused_seeds"] == first["seeds"]
    assert reused["metrics"] == first["metrics"]
    second = json.loads((tmp_path / "again" / "1" / "result.json").read_text())
    assert second["status"] == "FINISHED" and len(second["seeds"]) == 48
    assert "RUNNING" not in {r.info.status for r in runs(tmp_path)}


def test_ctrl_c_under_the_joblib_launcher_leaves_no_run_running(tmp_path):
    """Ctrl-C reaches the whole process group: the launcher's workers are interrupted while
    they run configurations and are then killed by joblib; their runs must still end KILLED."""
    tag = f"launcher-{os.getpid()}-{time.time()}"
    cmd = sweep_cmd(tmp_path, "sweep", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                    "policy=fcfs,easy", "run_time=actual,lognormal", "replicates=2000")
    proc = start(cmd, tag, new_session=True)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:  # one deterministic configuration done, others running
            assert proc.poll() is None, proc.stderr.read()
            if any((tmp_path / "sweep").glob("*/result.json")) and len(runs(tmp_path)) >= 3:
                break
            time.sleep(0.2)
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
        _, err = proc.communicate(timeout=120)
        assert_no_process_left(tag)
    finally:
        cleanup(proc, tag)
    assert proc.returncode == 130, err[-3000:]
    statuses = [r.info.status for r in runs(tmp_path)]
    assert "KILLED" in statuses and "RUNNING" not in statuses, statuses
    for hydra_file in (tmp_path / "sweep").glob("*/.hydra/hydra.yaml"):  # every started job
        result = json.loads((hydra_file.parent.parent / "result.json").read_text())
        assert result["status"] in ("FINISHED", "KILLED"), result


def test_runs_of_a_sweep_killed_by_sigkill_are_closed_by_the_next_sweep(tmp_path):
    """SIGKILL cannot be caught: the next sweep that opens the store finds the runs whose
    drevt-sweep process on this machine is gone, and marks them KILLED."""
    tag = f"sigkill-{os.getpid()}-{time.time()}"
    proc = start(long_kth_sweep(tmp_path), tag)
    try:
        wait_for_workers(proc, tag)
        wait_for_running_runs(tmp_path)
        proc.kill()
        proc.wait(timeout=60)
        time.sleep(2.0)  # the helper notices its sweep is gone
    finally:
        cleanup(proc, tag)
    left = runs(tmp_path)
    assert {r.info.status for r in left} == {"RUNNING"}  # left behind
    first = {r.info.run_id for r in left}

    again = start(sweep_cmd(tmp_path, "again", "trace=custom", f"trace.path={TINY}",
                            "format=simple", "format.queues=[all]", "system=custom",
                            "system.total_nodes=10", "run_time=actual"), tag)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err[-3000:]
    found = runs(tmp_path)
    old = [r for r in found if r.info.run_id in first]
    assert old and {r.info.status for r in old} == {"KILLED"}
    assert all("ended without closing it" in r.data.tags["drevt_error"] for r in old)
    assert {r.info.status for r in found if r not in old} == {"FINISHED"}


def test_an_error_that_replaced_an_interrupt_is_taken_for_that_interrupt():
    """A signal in the middle of an OmegaConf assignment inside ``open_dict`` leaves a half-built
    node; the context manager's ``finally`` then fails on it and that error replaces the
    interrupt (a sweep exited 1 with it instead of 128 + N). ``interrupt_behind`` finds the
    interrupt again; an error with no interrupt behind it stays an error."""
    from omegaconf import OmegaConf, open_dict

    from drevt_sweep.sweep.interrupts import Interrupted, interrupt_behind

    cfg = OmegaConf.create({"hydra": {"overrides": {"task": ["a=1"]}}})
    with pytest.raises(AttributeError, match="_invalidate_flags_cache") as info:
        with open_dict(cfg.hydra):
            cfg.hydra.overrides.task._get_flag("struct")  # (flags cached, as in a sweep)
            cfg.hydra.overrides.task.__dict__["_content"].append(None)  # what the signal left
            raise Interrupted(signal.SIGTERM)
    assert interrupt_behind(info.value).signum == signal.SIGTERM
    assert interrupt_behind(ValueError("not an interrupt")) is None
