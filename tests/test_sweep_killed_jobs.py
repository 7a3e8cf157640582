"""Under `hydra/launcher=joblib` an interrupt can end the workers running configurations before
they write their result.json (issue 29 item 11: joblib kills them while they still mark their
runs KILLED): the sweep writes a KILLED one into each of their job folders, as the README
promises. A real sweep, a real SIGTERM to the sweep alone (as `timeout` and SLURM send it), and
the launcher's workers SIGKILLed at once, so that none of them can write its own."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from sweep_helpers import (
    assert_no_process_left,
    cleanup,
    is_worker,
    runs,
    start,
    sweep_cmd,
    tagged_processes,
)

pytestmark = pytest.mark.slow


def test_sigterm_under_the_joblib_launcher_marks_every_started_job_killed(tmp_path):
    tag = f"killedjobs-{os.getpid()}-{time.time()}"
    sweep = tmp_path / "sweep"
    cmd = sweep_cmd(tmp_path, "sweep", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                    "policy=fcfs,easy", "run_time=lognormal", "replicates=2000")
    proc = start(cmd, tag)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:  # both configurations running in the workers
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            started = list(sweep.glob("*/.hydra/hydra.yaml"))
            if (len(started) == 2 and (tmp_path / "out" / "mlflow.db").exists()
                    and sum(r.info.status == "RUNNING" for r in runs(tmp_path)) >= 2):
                break
            time.sleep(0.3)
        time.sleep(1.0)
        workers = [p for p in tagged_processes(tag) if is_worker(p)]
        proc.send_signal(signal.SIGTERM)
        for pid in workers:  # ended before they can write anything, as joblib may end them
            os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
        assert_no_process_left(tag)
    finally:
        cleanup(proc, tag)
    assert proc.returncode == 143, err[-3000:]
    folders = sorted(p.parent.parent for p in sweep.glob("*/.hydra/hydra.yaml"))
    assert [f.name for f in folders] == ["0", "1"]
    labels = set()
    for folder in folders:
        result = json.loads((folder / "result.json").read_text())
        assert result["status"] == "KILLED" and "SIGTERM" in result["error"], result
        labels.add(result["label"])
    assert labels == {"trace=kth_sp2 policy=fcfs run_time=lognormal",
                      "trace=kth_sp2 policy=easy run_time=lognormal"}
    assert "RUNNING" not in {r.info.status for r in runs(tmp_path)}
