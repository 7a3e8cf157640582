"""Runs left RUNNING by a dead sweep (issue 27 item 6): a sweep is dead when no process holds its
liveness lock beside the store -- never because its pid is missing from the asker's /proc, which
a live sweep in another PID namespace (another container of the pod) is. Real sqlite stores, real
processes, real SIGKILL, and the issue's ``unshare --pid --fork --mount-proc`` reproduction."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sweep_helpers import TINY, cleanup, runs, start, sweep_cmd, tagged_processes

HOLDER = textwrap.dedent("""
    import sys, time
    from drevt_sweep.tracking.liveness import hold
    from drevt_sweep.tracking.store import TAG_SWEEP_ID, Tracker
    uri, sweep = sys.argv[1], sys.argv[2]
    hold(uri, sweep)
    tracker = Tracker.open(uri, "drevt-sweep")
    run = tracker.start_run("held", {TAG_SWEEP_ID: sweep})
    print(run, flush=True)
    time.sleep(600)
""")


def _status(uri: str, run_id: str) -> str:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri).get_run(run_id).info.status


def _open_store(uri: str) -> None:
    """What every sweep does first: open the store (which closes the runs of dead sweeps)."""
    subprocess.run([sys.executable, "-c", "import sys; from drevt_sweep.tracking.store import "
                    "Tracker; Tracker.open(sys.argv[1], 'drevt-sweep')", uri],
                   check=True, timeout=120)


@pytest.mark.slow
def test_a_run_is_closed_once_its_sweep_is_sigkilled_and_not_before(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, uri, "host:7:abc"],
                              stdout=subprocess.PIPE, text=True)
    try:
        run_id = holder.stdout.readline().strip()
        assert run_id, "the holder did not start its run"
        _open_store(uri)
        assert _status(uri, run_id) == "RUNNING"  # its sweep lives
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        holder.kill()
    _open_store(uri)
    assert _status(uri, run_id) == "KILLED"
    assert not list((tmp_path / "mlflow.db.live").glob("*.lock"))  # the dead sweep's lock went


def test_a_sweep_id_with_no_lock_file_is_never_taken_for_dead(tmp_path):
    """A run of an older drevt-sweep (host:pid:start, no lock file): no way to tell, left alone."""
    from drevt_sweep.tracking.store import TAG_SWEEP_ID, Tracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = Tracker.open(uri, "drevt-sweep")
    run_id = tracker.start_run("old", {TAG_SWEEP_ID: "somehost:1:12345"})
    _open_store(uri)
    assert _status(uri, run_id) == "RUNNING"


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                          capture_output=True, timeout=30).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _unshare_works(), reason="unshare --pid is not permitted here (needs "
                    "root or user namespaces)")
def test_a_live_sweep_in_another_pid_namespace_is_not_declared_dead(tmp_path):
    """The issue's reproduction: sweep A runs in its own PID namespace (as in another container
    of the pod, same host name, one outputs volume); sweep B opens the same store meanwhile.
    A's runs must stay RUNNING while it runs, and never get the "ended without closing" tag."""
    tag = f"pidns-{os.getpid()}-{time.time()}"
    cmd = ["unshare", "--pid", "--fork", "--mount-proc",
           *sweep_cmd(tmp_path, "a", "policy=easy", "run_time=lognormal", "replicates=2000",
                      "parallel.n_jobs=1")]
    a = start(cmd, tag)
    try:
        deadline = time.time() + 240
        # Read-only until A has made the store: a client opened here first would run MLflow's
        # migrations beside A's ("duplicate column name: step").
        while time.time() < deadline and not _running_read_only(tmp_path / "out" / "mlflow.db"):
            assert a.poll() is None, a.stderr.read()[-3000:]
            time.sleep(0.5)
        running = {r.info.run_id for r in _runs(tmp_path) if r.info.status == "RUNNING"}
        assert running, "sweep A never started its run"

        b = subprocess.run(sweep_cmd(tmp_path, "b", "trace=custom", f"trace.path={TINY}",
                                     "format=simple", "format.queues=[all]", "system=custom",
                                     "system.total_nodes=10", "run_time=actual"),
                           capture_output=True, text=True, timeout=300)
        assert b.returncode == 0, b.stderr[-3000:]
        by_id = {r.info.run_id: r for r in _runs(tmp_path)}
        assert {by_id[i].info.status for i in running} == {"RUNNING"}, "B closed A's live runs"
        assert a.poll() is None

        sweep = [p for p in tagged_processes(tag) if _parent(p) == a.pid]  # unshare's child
        assert len(sweep) == 1, sweep
        os.kill(sweep[0], signal.SIGTERM)  # A ends as a sweep ends on SIGTERM
        _, err = a.communicate(timeout=120)
    finally:
        cleanup(a, tag)
    assert a.returncode == 143, err[-3000:]
    mine = [r for r in _runs(tmp_path) if r.info.run_id in running]
    assert {r.info.status for r in mine} == {"KILLED"}
    assert not any("ended without closing" in r.data.tags.get("drevt_error", "") for r in mine)
    result = json.loads((tmp_path / "a" / "0" / "result.json").read_text())
    assert result["status"] == "KILLED"


def _runs(tmp_path):
    if not (tmp_path / "out" / "mlflow.db").exists():
        return []
    try:
        return runs(tmp_path)
    except Exception:  # noqa: BLE001 - the store is still being created
        return []


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _running_read_only(db) -> bool:
    """Whether the store holds a RUNNING run, read without creating or migrating anything."""
    import sqlite3

    if not db.exists():
        return False
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return con.execute("select count(*) from runs where status = 'RUNNING'").fetchone()[0] > 0
        finally:
            con.close()
    except sqlite3.Error:
        return False
