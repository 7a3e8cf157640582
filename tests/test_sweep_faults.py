"""Sweeps under faults: killed workers, Ctrl-C, concurrent sweeps, an unreachable server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from sweep_helpers import (TINY, assert_no_process_left, cleanup, long_kth_sweep, runs, start, sweep_cmd,
                           tagged_processes, wait_for_workers)

pytestmark = pytest.mark.slow


def test_a_killed_worker_fails_its_configuration_cleanly(tmp_path):
    tag = f"kill-{os.getpid()}-{time.time()}"
    proc = start(long_kth_sweep(tmp_path), tag)
    try:
        workers = wait_for_workers(proc, tag)
        os.kill(workers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    finally:
        cleanup(proc, tag)
    assert proc.returncode == 1
    assert "Traceback" not in err
    result = json.loads((tmp_path / "sweep" / "0" / "result.json").read_text())
    assert result["status"] == "FAILED"
    assert "worker" in result["error"].lower() or "terminated" in result["error"].lower()
    statuses = {r.info.status for r in runs(tmp_path)}
    assert statuses == {"FAILED"}  # nothing left RUNNING


def test_ctrl_c_marks_runs_in_flight_killed_and_leaves_a_readable_store(tmp_path):
    # As a terminal does it: SIGINT to the whole process group, the joblib workers too. A
    # worker's KeyboardInterrupt came back through joblib into the sweep's wave thread, which
    # printed its 60-line traceback before the sweep's one line.
    tag = f"int-{os.getpid()}-{time.time()}"
    proc = start(long_kth_sweep(tmp_path), tag, new_session=True)
    try:
        wait_for_workers(proc, tag)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        assert_no_process_left(tag)
    finally:
        cleanup(proc, tag)
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted by SIGINT" in err
    assert "Traceback" not in err and "Exception in thread" not in err, err[-3000:]
    found = runs(tmp_path)
    assert found and {r.info.status for r in found} == {"KILLED"}


def test_two_sweeps_sharing_one_store_lose_no_run(tmp_path):
    common = ("trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
              "system=custom", "system.total_nodes=10", "run_time=normal", "replicates=4",
              "parallel.n_jobs=1")
    first = subprocess.Popen(sweep_cmd(tmp_path, "a", *common, "policy=fcfs,easy"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(sweep_cmd(tmp_path, "b", *common, "policy=conservative,sjf_easy"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for proc in (first, second):
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
    found = runs(tmp_path)
    parents = [r for r in found if r.data.tags.get("drevt_kind") == "configuration"]
    seeds = [r for r in found if r.data.tags.get("drevt_kind") == "seed"]
    assert len(parents) == 4 and len(seeds) == 16
    assert {r.info.status for r in found} == {"FINISHED"}


def test_an_unreachable_tracking_server_fails_before_any_simulation(tmp_path):
    proc = subprocess.run(
        sweep_cmd(tmp_path, "sweep", "tracking.uri=http://127.0.0.1:9", "policy=fcfs,easy"),
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2
    assert "does not answer" in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    assert not list((tmp_path / "sweep").glob("*/result.json"))  # nothing was simulated


@pytest.mark.parametrize("override", ["policy.backfill=sometimes", "policy=lottery", "replicates=many"])
def test_bad_options_exit_2_before_anything_runs(tmp_path, override):
    """... and the seed workers a multirun starts while Hydra composes (``app._start_workers_early``)
    are ended, not left behind."""
    tag = f"bad-{os.getpid()}-{override.split('=')[0]}"
    proc = start(sweep_cmd(tmp_path, "sweep", override), tag)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "mlflow.db").exists()
    deadline = time.monotonic() + 5  # (resource trackers leave once they see the sweep gone)
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tagged_processes(tag) == []


def test_a_broken_embedded_store_fails_the_configuration_with_a_clear_message(tmp_path):
    """The store opens in the tracking helper before anything runs; when it cannot, a single
    run and a multirun alike stop with the store's own message, no traceback, exit 2."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mlflow.db").mkdir()  # a folder where the sqlite file should be
    tiny = ["trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
            "system=custom", "system.total_nodes=10", "run_time=lognormal", "replicates=4",
            f"paths.output_root={tmp_path / 'out'}", "progress=false"]
    single = subprocess.run(
        [sys.executable, "-m", "drevt_sweep", *tiny, f"hydra.run.dir={tmp_path / 'one'}"],
        capture_output=True, text=True, timeout=300,
    )
    assert single.returncode == 2  # checked up front, as with -m (issue 29 item 7)
    assert "is not a file" in single.stderr + single.stdout
    assert "Traceback" not in single.stderr
    assert not (tmp_path / "one").exists()

    multi = subprocess.run(
        [sys.executable, "-m", "drevt_sweep", "-m", *tiny, f"hydra.sweep.dir={tmp_path / 'many'}"],
        capture_output=True, text=True, timeout=300,
    )
    assert multi.returncode == 2
    assert "is not a file" in multi.stderr + multi.stdout
    assert not list((tmp_path / "many").glob("*/result.json"))  # nothing was simulated
