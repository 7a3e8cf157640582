"""A new embedded store is created whole or not at all, and cheaply.

Whole: a process killed while MLflow builds the schema (SIGKILL, a batch system's time limit)
must not leave a store every later sweep fails to open (CI saw "index
index_trace_info_timestamp_ms_request_id already exists"). Cheaply: a new store is a copy of
an empty one MLflow built once per version (``store._empty_store``), which must be the store
MLflow would have built, table for table."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from drevt_sweep.tracking import store
from drevt_sweep.tracking.store import Tracker

CREATE = """
import sys
from drevt_sweep.tracking.store import Tracker
Tracker.open(sys.argv[1], "exp", None)
"""


def test_a_store_whose_creation_was_killed_opens_and_is_whole(tmp_path: Path):
    db = tmp_path / "mlflow.db"
    uri = f"sqlite:///{db}"
    no_cache = tmp_path / "not-a-folder"
    no_cache.write_text("")  # no empty store to copy: MLflow builds this one, slowly
    env = {**os.environ, "DREVT_STORE_CACHE": str(no_cache)}
    proc = subprocess.Popen([sys.executable, "-c", CREATE, uri], stderr=subprocess.DEVNULL,
                            env=env)
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


def _definition(sql: str | None) -> frozenset | None:
    """A table's or index's definition as a set of its clauses: MLflow's migrations write a
    table's constraints in an order that differs from one run to the next (a set's)."""
    if sql is None:
        return None
    head, _, body = sql.partition("(")
    return frozenset([" ".join(head.split())] + [" ".join(part.split()) for part in body.rstrip(")").split(", \n")])


def _schema(path: Path) -> tuple[set, list, list]:
    with sqlite3.connect(path) as db:
        tables = {(kind, name, table, _definition(sql)) for kind, name, table, sql in
                  db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")}
        stamp = db.execute("SELECT * FROM alembic_version").fetchall()
        default = db.execute("SELECT experiment_id, name, artifact_location, lifecycle_stage "
                             "FROM experiments WHERE experiment_id = 0").fetchall()
    return tables, stamp, default


def test_a_copied_store_is_the_store_mlflow_builds(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("DREVT_STORE_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # the Default experiment's place follows the working folder
    built = tmp_path / "built.db"
    store._build_store(built)  # MLflow, from scratch
    copied = tmp_path / "copied" / "mlflow.db"
    copied.parent.mkdir()
    store._create_sqlite_store(copied)  # builds the empty store in the cache, then copies it
    assert (tmp_path / "cache").is_dir() and len(list((tmp_path / "cache").glob("empty-*.db"))) == 1
    monkeypatch.chdir(tmp_path / "copied")  # a copy made elsewhere owns its own Default
    again = tmp_path / "copied" / "again.db"
    store._create_sqlite_store(again)
    assert _schema(copied) == _schema(built)
    tables, stamp, default = _schema(again)
    assert (tables, stamp) == _schema(built)[:2]
    assert default[0][2] == str(tmp_path / "copied" / "mlruns" / "0")


@pytest.fixture(scope="module")
def mlflows_store(tmp_path_factory) -> Path:
    """A store MLflow built (~2-4 s): opened again from another working folder, MLflow computes
    the Default experiment's place there as it does when it creates a store there
    (``SqlAlchemyStore._get_artifact_location(0)`` from the root it resolves at opening)."""
    path = tmp_path_factory.mktemp("mlflows") / "mlflow.db"
    with store._store_at(path):
        pass
    return path


@pytest.mark.parametrize("folder", ["plain", "with space", "ünïcode-ß", "a.b_c-d"])
def test_the_default_experiments_place_is_mlflows_without_mlflow(tmp_path, monkeypatch, mlflows_store, folder):
    """``store.default_artifact_location`` (a new store's Default experiment, without importing
    MLflow) is what MLflow's store gives in the same working folder."""
    where = tmp_path / folder
    where.mkdir()
    monkeypatch.chdir(where)
    with store._store_at(mlflows_store) as mlflows:
        expected = str(mlflows._get_artifact_location(0))
    assert expected.startswith(str(where))  # (this folder's, not the one the store was built in)
    assert store.default_artifact_location() == expected
    monkeypatch.setenv("_MLFLOW_SERVER_ARTIFACT_ROOT", "s3://bucket/root")  # a server's: MLflow's call
    assert store.default_artifact_location() is None


def test_a_damaged_empty_store_is_built_again(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("DREVT_STORE_CACHE", str(tmp_path / "cache"))
    empty = store._empty_store()
    empty.write_bytes(b"not a database")
    assert store._empty_store() == empty and store._is_whole_store(empty)
    tracker = Tracker.open(f"sqlite:///{tmp_path / 'mlflow.db'}", "exp", None)
    assert tracker.client.get_experiment_by_name("exp") is not None


@pytest.mark.parametrize("sync", ["NORMAL"])
def test_embedded_store_connections_sync_at_checkpoints(tmp_path: Path, sync):
    tracker = Tracker.open(f"sqlite:///{tmp_path / 'mlflow.db'}", "exp", None)
    engine = tracker.client._tracking_client.store.engine
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.exec_driver_sql("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_without_mlflow_internals_to_own_the_copy_mlflow_builds_the_store(tmp_path, monkeypatch):
    """The copy needs one MLflow internal (the Default experiment's place); an MLflow without
    it gets its store built by MLflow, whole, and no half-made file is left."""
    monkeypatch.setenv("DREVT_STORE_CACHE", str(tmp_path / "cache"))

    def missing(path):
        raise AttributeError("'SqlAlchemyStore' object has no attribute '_get_artifact_location'")

    monkeypatch.setattr(store, "_own_default_experiment", missing)
    db = tmp_path / "store" / "mlflow.db"
    db.parent.mkdir()
    store._create_sqlite_store(db)
    assert store._is_whole_store(db)
    assert [p.name for p in db.parent.iterdir()] == ["mlflow.db"]
