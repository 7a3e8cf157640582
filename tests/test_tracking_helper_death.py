"""The tracking helper process killed for real in the middle of a sweep (issue 19 item 2): a
new helper takes over, finds the runs the dead one created by their handle tags, writes what it
lost, and the configuration ends with every seed logged once and no run left RUNNING."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from sweep_helpers import TINY, assert_no_process_left, cleanup, runs, start, sweep_cmd

pytestmark = pytest.mark.slow


def helper_pid(sweep_pid: int) -> int | None:
    """The forked helper: a child of the sweep running the sweep's own command line."""
    own = Path(f"/proc/{sweep_pid}/cmdline").read_bytes()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if parent == sweep_pid and (entry / "cmdline").read_bytes() == own:
                    return int(entry.name)
            except (OSError, ValueError):
                continue
    return None


def seed_runs_written(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)) as c:
            return c.execute("select count(*) from tags where key = 'drevt_kind' "
                             "and value = 'seed'").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.parametrize("when", ["while the seeds run", "while it writes the seed runs"])
def test_a_killed_helper_loses_no_run_and_leaves_none_running(tmp_path, when):
    tag = f"helper-{os.getpid()}-{time.time()}"
    seeds = 150
    cmd = sweep_cmd(tmp_path, "sweep", "trace=custom", f"trace.path={TINY}", "format=simple",
                    "format.queues=[all]", "system=custom", "system.total_nodes=10",
                    "run_time=lognormal", f"replicates={seeds}", "parallel.n_jobs=1")
    proc = start(cmd, tag)
    db = tmp_path / "out" / "mlflow.db"
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            ready = seed_runs_written(db) >= 20 if "writes" in when else bool(
                list((tmp_path / "sweep").glob("0/.hydra")))
            pid = helper_pid(proc.pid)
            if ready and pid:
                break
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
        assert_no_process_left(tag)
    finally:
        cleanup(proc, tag)
    result_file = tmp_path / "sweep" / "0" / "result.json"
    result = json.loads(result_file.read_text()) if result_file.exists() else {}
    assert proc.returncode == 0, (err[-3000:], result.get("error"))
    assert result["status"] == "FINISHED", result.get("error")
    assert (tmp_path / "sweep" / "0" / "seed_metrics.csv").read_text().count("\n") == seeds + 1
    found = runs(tmp_path)
    assert {r.info.status for r in found} == {"FINISHED"}
    children = [r for r in found if r.data.tags.get("drevt_kind") == "seed"]
    assert sorted(int(r.data.params["seed"]) for r in children) == list(range(seeds))  # once each
    (parent,) = [r for r in found if r.data.tags.get("drevt_kind") == "configuration"]
    assert parent.info.run_id == result["parent_run_id"]
    assert parent.data.metrics["wait_mean"] == result["metrics"]["wait_mean"]
