"""The tracking helper: MLflow calls sent from the sweep, run in order in a helper process (or
thread), with errors coming back where the sweep waits. Real sqlite stores throughout."""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from drevt_sweep.tracking import helper as tracking_service
from drevt_sweep.errors import ConfigError, TraceError
from drevt_sweep.tracking.helper import TrackingError, TrackingService


@pytest.fixture
def thread_helper():
    """A thread helper for this test (pytest's process has threads: no fork here)."""
    tracking_service.stop_helper()
    tracking_service.start_helper()
    yield
    tracking_service.stop_helper()


def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


def client(uri: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def test_runs_sent_without_waiting_arrive_in_order_with_their_parent(tmp_path, thread_helper):
    uri = store(tmp_path)
    service = TrackingService(uri, "exp", str(tmp_path / "artifacts"))
    parent = service.start_run("config", {"drevt_kind": "configuration"})
    service.log(parent, params={"policy": "easy"})
    children = []
    for seed in range(3):
        child = service.start_run(f"seed={seed}", {"drevt_kind": "seed"}, parent_id=parent)
        service.log(child, metrics={"wait_mean": 10.0 + seed}, params={"seed": seed})
        service.finish(child)
        children.append(child)
    note = tmp_path / "note.txt"
    note.write_text("hello\n")
    service.log_artifact(parent, note, "files")
    service.finish(parent)
    service.wait()

    parent_id = service.run_id(parent)
    runs = client(uri).search_runs([client(uri).get_experiment_by_name("exp").experiment_id])
    by_id = {r.info.run_id: r for r in runs}
    assert by_id[parent_id].data.params == {"policy": "easy"}
    assert by_id[parent_id].info.status == "FINISHED"
    kids = [by_id[service.run_id(c)] for c in children]
    assert [k.data.metrics["wait_mean"] for k in kids] == [10.0, 11.0, 12.0]
    assert all(k.data.tags["mlflow.parentRunId"] == parent_id for k in kids)
    assert all(k.info.status == "FINISHED" for k in kids)
    artifacts = client(uri).list_artifacts(parent_id, "files")
    assert [a.path for a in artifacts] == ["files/note.txt"]


def test_a_store_that_cannot_open_fails_at_the_wait_and_is_seen_without_waiting(tmp_path, thread_helper):
    (tmp_path / "mlflow.db").mkdir()  # a folder where the sqlite file should be
    service = TrackingService(store(tmp_path), "exp")
    parent = service.start_run("config", {})
    with pytest.raises(ConfigError, match="is not a file"):
        service.wait()
    assert service.run_id(parent) is None  # never created

    service = TrackingService(store(tmp_path), "exp")
    tracking_service._submit_to_helper(lambda: None).result()  # the open has run by now
    with pytest.raises(ConfigError, match="is not a file"):
        service.raise_if_failed()


def test_a_deleted_experiment_is_a_clear_error(tmp_path, thread_helper):
    uri = store(tmp_path)
    mlflow = client(uri)
    mlflow.delete_experiment(mlflow.create_experiment("exp"))
    with pytest.raises(ConfigError, match="experiment 'exp' is deleted"):
        TrackingService.open(uri, "exp")


def test_finished_seed_runs_come_back_as_metrics(tmp_path, thread_helper):
    uri = store(tmp_path)
    service = TrackingService(uri, "exp")
    parent = service.start_run("config", {})
    tags = {"drevt_kind": "seed", "drevt_config_hash": "abc", "drevt_run_key": "k1"}
    child = service.start_run("seed=1", tags, parent_id=parent)
    service.log(child, metrics={"wait_mean": 4.0})
    service.finish(child)
    unfinished = service.start_run("seed=2", {**tags, "drevt_run_key": "k2"}, parent_id=parent)
    service.log(unfinished, metrics={"wait_mean": 5.0})
    assert service.finished_seed_runs("abc") == {"k1": {"wait_mean": 4.0}}


def test_errors_come_back_as_exceptions_that_pickle(tmp_path):
    def fails(exc):
        raise exc

    with pytest.raises(ConfigError, match="bad uri"):
        tracking_service._command(fails, ConfigError("bad uri"))
    with pytest.raises(Exception, match="trace.csv:3") as info:  # a DrevtError whose __init__ differs
        tracking_service._command(fails, TraceError("boom", path="trace.csv", line=3))
    assert pickle.loads(pickle.dumps(info.value)).args == info.value.args
    with pytest.raises(TrackingError) as info:
        tracking_service._command(fails, KeyError("x"))
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == "KeyError: 'x'" and "Traceback" in again.details


def one_finished_run(tmp_path) -> str:
    """Script lines (for the scripts below): a forked helper, one run logged and finished."""
    return "; ".join([
        "ts.start_helper(fork=True)", f"service = ts.TrackingService({store(tmp_path)!r}, 'exp')",
        "run = service.start_run('one', {})", "service.log(run, metrics={'m': 1.0})",
        "service.finish(run)", "service.wait()"])


def test_the_console_helper_is_a_separate_process(tmp_path):
    """What `drevt-sweep` does first thing: fork a helper process; its runs land in the store;
    it keeps the sweep's priority (at nice 10 a shared machine starved it); stopping it kills
    it at once."""
    script = textwrap.dedent(f"""
        import os, threading
        from drevt_sweep.tracking import helper as ts
        {one_finished_run(tmp_path)}
        pid = ts._helper_pid.value
        assert pid and pid != os.getpid(), pid
        assert os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0)
        print(service.run_id(run))
        ts.stop_helper()
        import time
        for _ in range(50):  # killed, not left to finish: gone (or a zombie) at once
            try:
                state = open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[0]
            except OSError:
                break
            if state in "ZX":
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the helper is still running")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip().splitlines()[-1]
    assert client(store(tmp_path)).get_run(run_id).data.metrics == {"m": 1.0}


@pytest.mark.skipif(sys.platform != "linux", reason="the helper is a thread elsewhere")
def test_a_helper_whose_sweep_died_leaves(tmp_path):
    script = textwrap.dedent("""
        import os, sys
        from drevt_sweep.tracking import helper as ts
        ts.start_helper(fork=True)
        ts._submit_to_helper(os.getpid).result()
        print(ts._helper_pid.value, flush=True)
        os._exit(0)  # no clean shutdown
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    pid = int(done.stdout.split()[-1])
    deadline = time.time() + 10
    while time.time() < deadline and Path(f"/proc/{pid}").exists():
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            break
        time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists() or state == "Z"


def test_a_helper_that_dies_while_it_is_asked_is_replaced_and_the_answer_comes(tmp_path):
    """The helper killed while it answers a question (the wave's run ids, asked right after
    the wave was written: the CI failure of stop 35): the question goes to a new helper, with
    the commands the dead one took, and is answered; nothing fails."""
    script = textwrap.dedent(f"""
        import os, signal
        from drevt_sweep.tracking import helper as ts
        MAIN = os.getpid()
        real = ts._run_ids_of

        def dying(key, handles):  # in the forked helper: dies as it is asked
            if os.getpid() != MAIN:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(key, handles)

        ts._run_ids_of = dying  # (before the fork: the helper has it too)
        {one_finished_run(tmp_path)}
        print(service.run_ids([run])[0], ts._restarts)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    run_id, restarts = done.stdout.split()
    assert restarts == "1"
    assert client(store(tmp_path)).get_run(run_id).data.metrics == {"m": 1.0}


# ---------------------------------------------------------------- a store that cannot be used
@contextlib.contextmanager
def read_only(path: Path):
    """``path`` read-only for this process: a read-only bind mount for root (whom file
    permissions do not stop), else its permission bits."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield
        return
    mounted = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True)
        yield
    finally:
        subprocess.run(["umount", str(path)], check=True)


def filled_store(tmp_path: Path) -> Path:
    """A real store holding a few runs, its write-ahead log folded into the file."""
    service = TrackingService(store(tmp_path), "exp")
    for i in range(40):
        run = service.start_run(f"run {i}", {"drevt_kind": "seed"})
        service.log(run, metrics={f"m{j}": float(i * j) for j in range(20)}, params={"i": i})
        service.finish(run)
    service.wait()
    db = tmp_path / "mlflow.db"
    import sqlite3

    with contextlib.closing(sqlite3.connect(db)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


@pytest.mark.slow
def test_a_read_only_store_is_one_clear_line_naming_it(tmp_path, thread_helper):
    """A real sweep in a fresh process (this one keeps the file open from writing it)."""
    from sweep_helpers import TINY

    db = filled_store(tmp_path)
    common = ["trace=custom", f"trace.path={TINY}", "format=simple", "format.queues=[all]",
              "system=custom", "system.total_nodes=10", f"paths.output_root={tmp_path}",
              "progress=false"]
    app = [sys.executable, "-m", "drevt_sweep"]
    with read_only(db):
        single = subprocess.run([*app, *common, f"hydra.run.dir={tmp_path / 'one'}"],
                                capture_output=True, text=True, timeout=300)
        multi = subprocess.run([*app, "-m", *common, f"hydra.sweep.dir={tmp_path / 'many'}"],
                               capture_output=True, text=True, timeout=300)
    for done, code in ((single, 2), (multi, 2)):  # a single run checks its store up front too
        assert done.returncode == code, done.stderr[-3000:]
        out = done.stdout + done.stderr
        assert out.count(f"tracking store {db} is read-only") in (1, 2), out  # log + summary
        assert "Traceback" not in out and "SQL" not in out, out[-3000:]
    assert not list((tmp_path / "many").glob("*/result.json"))  # nothing was simulated
    assert not (tmp_path / "one").exists()


def test_a_store_with_a_corrupt_page_is_refused_before_use(tmp_path, thread_helper):
    db = filled_store(tmp_path)
    tracking_service._trackers.clear()
    page = 4096
    data = bytearray(db.read_bytes())
    assert len(data) > 8 * page
    data[6 * page + 8: 7 * page] = b"\xa5" * (page - 8)  # one page's cells, header intact
    db.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match=f"tracking store {db} is corrupt .*quick_check"):
        TrackingService.open(store(tmp_path), "exp")


def test_a_store_that_is_not_a_database_is_refused_naming_it(tmp_path, thread_helper):
    (tmp_path / "mlflow.db").write_bytes(b"not a database at all, just some bytes\n" * 200)
    with pytest.raises(ConfigError, match=f"tracking store {tmp_path / 'mlflow.db'} is corrupt"):
        TrackingService.open(store(tmp_path), "exp")


def test_errors_while_writing_name_the_store_in_one_line():
    import sqlite3

    def fails(key):
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.Error as exc:
            raise RuntimeError("(sqlite3.OperationalError) database or disk is full\n[SQL: INSERT ...]") from exc

    with pytest.raises(TrackingError) as info:
        tracking_service._command(fails, ("sqlite:////data/mlflow.db", "exp", None))
    assert str(info.value) == ("tracking store /data/mlflow.db: OperationalError: database or "
                               "disk is full")
