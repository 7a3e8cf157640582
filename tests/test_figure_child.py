"""A single run's figures drawn in a forked child (``drevt_sweep/report/figure_child.py``): the
same files as drawn in-process, byte for byte; a failure or a death in the child comes back as
one error (the caller warns, the configuration goes on); no child is left behind."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from drevt_sweep.report import figures as plots
from drevt_sweep.sim.engine import historical_baseline
from drevt_sweep.report.figure_child import FiguresInChild, import_in_background

from test_plots import jobs_and_schedule

SEEDS = [{"wait_median": 10.0, "wait_p90": 50.0, "wait_p95": 60.0, "wait_p99": 70.0},
         {"wait_median": 12.0, "wait_p90": 55.0, "wait_p95": 66.0, "wait_p99": 80.0}]


def drawer(folder: Path):
    jobs, schedule = jobs_and_schedule()
    baseline = historical_baseline(jobs, 4)
    return lambda: plots.configuration_figure_files(
        folder, plots.schedule_frame(jobs, schedule), int(schedule.total_nodes),
        plots.schedule_frame(jobs, baseline), label="easy · actual", seed_metrics=SEEDS, seed=0)


def no_child_left(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_child_draws_the_files_drawn_in_process(tmp_path):
    import_in_background().join()
    here = drawer(tmp_path / "here")()
    child = FiguresInChild.start(drawer(tmp_path / "child"))
    assert child is not None and child.pid != os.getpid()
    paths, cpu = child.result()
    assert [p.name for p in paths] == [p.name for p in here] and len(here) >= 3
    assert [p.read_bytes() for p in paths] == [p.read_bytes() for p in here]
    assert cpu is not None and cpu > 0
    assert no_child_left(child.pid)


def test_an_error_in_the_child_comes_back_as_one_error(tmp_path):
    def broken():
        raise ValueError("no such column: wait")

    child = FiguresInChild.start(broken)
    with pytest.raises(RuntimeError, match="ValueError: no such column: wait"):
        child.result()
    assert no_child_left(child.pid)


def test_a_child_that_dies_is_an_error_not_a_hang(tmp_path):
    def dies():
        os.kill(os.getpid(), signal.SIGKILL)
        return []

    child = FiguresInChild.start(dies)
    with pytest.raises(RuntimeError, match="ended without an answer"):
        child.result()
    assert no_child_left(child.pid)


def test_an_interrupt_while_waiting_ends_the_child(tmp_path):
    import time

    def slow():
        time.sleep(60)
        return []

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    child = FiguresInChild.start(slow)
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)  # Ctrl-C half a second into the wait
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            child.result()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 10
    assert no_child_left(child.pid) and not Path(f"/proc/{child.pid}").exists()


def test_a_child_that_does_not_answer_in_time_is_ended_and_an_error():
    """A child stuck (say, on a lock another thread held at the fork) ends after ``timeout``:
    the report then draws the figure itself."""
    import time

    def stuck():
        time.sleep(60)
        return []

    child = FiguresInChild.start(stuck)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="did not answer in 0.5 s"):
        child.result(timeout=0.5)
    assert time.monotonic() - started < 10
    assert no_child_left(child.pid)
