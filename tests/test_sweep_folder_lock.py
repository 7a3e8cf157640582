"""One drevt-sweep per sweep folder (issue 29 item 1): two commands on one folder at once (two
`resume=true` from two terminals, a SLURM array requeued twice) both ran what was missing. The
second now stops with one line and exit code 2, or waits with `wait_for_folder=true` and then
reuses what the first finished. Real concurrent drevt-sweep subprocesses on a real store."""

from __future__ import annotations

import os
import signal
import time

import pytest

from sweep_helpers import TINY, cleanup, runs, start, sweep_cmd

pytestmark = pytest.mark.slow

LOCK = ".drevt-sweep.lock"


def wait_for_lock(proc, folder, timeout: float = 240) -> None:
    """Until the sweep holds its folder's lock (it writes its host and pid into the file)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        lock = folder / LOCK
        if lock.is_file() and lock.read_text().strip():
            return
        time.sleep(0.1)
    raise AssertionError("the first sweep never locked its folder")


def test_a_second_sweep_on_a_folder_in_use_is_refused_in_one_line(tmp_path):
    tag = f"lock-{os.getpid()}-{time.time()}"
    sweep = ("policy=easy", "run_time=lognormal", "replicates=2000", "parallel.n_jobs=1")
    first = start(sweep_cmd(tmp_path, "sweep", *sweep), tag)  # a fresh folder is locked too
    try:
        wait_for_lock(first, tmp_path / "sweep")
        second = start(sweep_cmd(tmp_path, "sweep", *sweep, "resume=true"), tag)
        _, err = second.communicate(timeout=300)
        assert first.poll() is None  # the first goes on
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=120)
    finally:
        cleanup(first, tag)
    assert second.returncode == 2, err[-3000:]
    errors = [line for line in err.splitlines() if line.startswith("drevt-sweep: error:")]
    assert len(errors) == 1, err[-3000:]
    assert f"the sweep folder {tmp_path / 'sweep'} is in use by another drevt-sweep" in errors[0]
    assert f"pid {first.pid}" in errors[0] and "Traceback" not in err
    parents = [r for r in runs(tmp_path) if r.data.tags.get("drevt_kind") == "configuration"]
    # Only the first sweep's (the task-list engine writes a configuration's run with its seeds,
    # so a first sweep stopped early may have none yet); never one of the refused second's.
    assert len(parents) <= 1


def test_with_wait_for_folder_the_second_resume_waits_and_runs_nothing_twice(tmp_path):
    tag = f"lockwait-{os.getpid()}-{time.time()}"
    sweep = ("trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
             "system=custom", "system.total_nodes=10", "policy=fcfs,easy",
             "run_time=lognormal", "replicates=300", "parallel.n_jobs=1", "resume=true")
    first = start(sweep_cmd(tmp_path, "sweep", *sweep), tag)
    try:
        wait_for_lock(first, tmp_path / "sweep")
        second = start(sweep_cmd(tmp_path, "sweep", *sweep, "wait_for_folder=true"), tag)
        first_out, first_err = first.communicate(timeout=900)
        out, err = second.communicate(timeout=900)
    finally:
        cleanup(first, tag)
    assert first.returncode == 0, first_err[-3000:]
    assert second.returncode == 0, err[-3000:]
    assert "drevt-sweep: waiting for the other drevt-sweep" in err
    assert f"resume: {tmp_path / 'sweep'}: reused 600 seeds, ran 0" in out
    seeds = [r for r in runs(tmp_path) if r.data.tags.get("drevt_kind") == "seed"]
    assert len(seeds) == 600 and {r.info.status for r in seeds} == {"FINISHED"}
    assert len({r.data.tags["drevt_run_key"] for r in seeds}) == 600  # none run twice
