"""A new embedded store is created whole or not at all: a process killed while MLflow builds
the schema (SIGKILL, a batch system's time limit) must not leave a store every later sweep
fails to open (CI saw "index index_trace_info_timestamp_ms_request_id already exists")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from drevt_sweep.tracking.store import Tracker

CREATE = """
import sys
from drevt_sweep.tracking.store import Tracker
Tracker.open(sys.argv[1], "exp", None)
"""


def test_a_store_whose_creation_was_killed_opens_and_is_whole(tmp_path: Path):
    db = tmp_path / "mlflow.db"
    uri = f"sqlite:///{db}"
    proc = subprocess.Popen([sys.executable, "-c", CREATE, uri], stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not list(tmp_path.glob(".mlflow.db.creating-*")):  # MLflow is building the schema
        assert proc.poll() is None and time.time() < deadline, "the schema was never started"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not db.exists()  # nothing half-built under the store's name

    tracker = Tracker.open(uri, "exp", None)  # the killed creation's file is cleared
    run_id = tracker.start_run("r", {"k": "v"})
    tracker.finish(run_id)
    assert tracker.client.get_run(run_id).info.status == "FINISHED"
    assert not list(tmp_path.glob(".mlflow.db.creating-*"))
    assert Tracker.open(uri, "exp", None).experiment_id == tracker.experiment_id
