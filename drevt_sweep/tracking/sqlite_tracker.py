"""A single run's tracking written to an existing sqlite store through the stdlib, without MLflow.

In a 100-seed run the tracking helper spent 3.0-3.6 s of CPU, on a machine whose two cores the
seeds' workers needed: importing mlflow (~1.3 s), opening MLflow's SQLAlchemy store (~1.7 s:
its module and alembic's 67 migration scripts, read to check the schema), closing orphaned runs
(0.2 s), writing (0.4 s). A store that already exists needs none of it to take a run's rows:
:class:`SqliteTracker` writes them with ``sqlite3`` -- the rows :func:`.bulk.run_rows` builds
for both writers, row for row what MLflow's store writes (``tests/test_tracking_sqlite.py``
reads the same run written both ways back through ``MlflowClient``) -- under the same store
lock, in WAL mode with ``synchronous=NORMAL`` as :class:`~.store.Tracker` does.

It is used only when everything is known: an sqlite file at ``SCHEMA_REVISION`` (the installed
MLflow's schema head, which a test checks), an active experiment, no orphaned run to close,
keys and values well inside MLflow's validators' limits. (Every sweep leaves its liveness lock
file, so the next one finds a gone sweep each time: with no run of it RUNNING, the files are
removed here, as ``Tracker.close_orphaned_runs`` does after finding nothing.) Anything else -- a method it does not
have, a value MLflow might refuse or cut, a param logged again with another value -- goes to a
real :class:`~.store.Tracker`, opened (mlflow imported) the first time one is needed.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import sqlite3
import time
from pathlib import Path
from typing import Iterator, Mapping

from . import liveness
from .bulk import RunRecord, copy_artifacts, dataset_fields, input_rows, run_rows
from .store import (DIGEST_LENGTH, SWEEP_ID_ENV, TAG_HANDLE, TAG_SWEEP_ID, Tracker, _create_sqlite_store,
                    _store_lock, _use_write_ahead_log, check_sqlite_store)

# MLflow 3.17's schema head (mlflow.store.db.utils._get_latest_schema_revision()); a store at
# any other revision is MLflow's to open. tests/test_tracking_sqlite.py checks it.
SCHEMA_REVISION = "dc11669786a5"
# "1": every store through MLflow (the tests compare the two paths with it).
VIA_MLFLOW_ENV = "DREVT_TRACKING_VIA_MLFLOW"

# Well inside mlflow.utils.validation's limits (keys 250, param values 6000, tag values
# 8000, experiment tag values 20000, dataset names 500, sources 65535): MLflow would refuse
# or cut what is longer, so that goes to MLflow.
_KEY = re.compile(r"^[A-Za-z0-9_\-. /:]{1,250}$")
_PARAM_VALUE, _TAG_VALUE, _EXPERIMENT_TAG_VALUE, _RUN_NAME = 6000, 8000, 20000, 250
# Experiment names (500) and artifact locations (2048 by default): inside the columns' 256 too.
_EXPERIMENT_NAME, _ARTIFACT_LOCATION = 256, 256
_STATUSES = ("RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED")
_RUN_NAME_TAG = "mlflow.runName"


class Unsupported(Exception):
    """Not in this tracker's subset: the call goes to MLflow."""


def _key_ok(key: object) -> bool:
    """A key MLflow's validators take as it is (characters, length, not a path that
    normalises to another name)."""
    return (isinstance(key, str) and _KEY.match(key) is not None
            and posixpath.normpath(key) == key and not key.startswith(("/", "..")) and key != ".")


def _check(values: Mapping[str, object], limit: int) -> dict[str, str]:
    out = {}
    for key, value in values.items():
        text = str(value)
        if not _key_ok(key) or len(text) > limit:
            raise Unsupported(f"{key!r}: outside the values checked without MLflow")
        out[key] = text
    return out


def _check_metrics(metrics: Mapping[str, object]) -> dict[str, float]:
    out = {}
    for key, value in metrics.items():
        if not _key_ok(key) or isinstance(value, bool):
            raise Unsupported(f"metric {key!r}")
        try:
            out[key] = float(value)
        except (TypeError, ValueError):
            raise Unsupported(f"metric {key!r}: not a number") from None
    return out


def _check_record(record: RunRecord) -> None:
    if record.status not in _STATUSES or len(record.name) > _RUN_NAME:
        raise Unsupported("run status or name")
    _check(record.params, _PARAM_VALUE)
    _check(record.tags, _TAG_VALUE)
    _check_metrics(record.metrics)
    if record.dataset is not None:
        name = record.dataset[0]
        if not isinstance(name, str) or not 0 < len(name) <= 500:
            raise Unsupported("dataset name")


def _now() -> int:
    return int(time.time() * 1000)  # MLflow's get_current_time_millis


class SqliteTracker:
    """:class:`~.store.Tracker`'s methods that a single run uses, on an existing sqlite store."""

    def __init__(self, uri: str, experiment: str, experiment_id: str, artifact_location: str,
                 artifact_root: str | None) -> None:
        self.uri = uri
        self.experiment = experiment
        self.experiment_id = experiment_id
        self.artifact_location = artifact_location.rstrip("/")
        self.artifact_root = artifact_root
        self._db = _connect(Path(uri[len("sqlite:///"):]))
        self._mlflow: Tracker | None = None

    @classmethod
    def open(cls, uri: str, experiment: str, artifact_root: str | None = None) -> SqliteTracker | None:
        """The tracker, or ``None`` when the store is not one it can take (then
        :meth:`Tracker.open`)."""
        if os.environ.get(VIA_MLFLOW_ENV) == "1" or not uri.startswith("sqlite:///"):
            return None
        if any(name.startswith("MLFLOW_ENABLE_WORKSPACES") or name == "MLFLOW_WORKSPACE"
               for name in os.environ):
            return None  # (experiments named per workspace: MLflow's business)
        db_path = Path(uri[len("sqlite:///"):])
        if db_path.exists() and not db_path.is_file():
            return None
        with _store_lock(uri):
            check_sqlite_store(db_path)  # (as Tracker.open: a clear error for a broken file)
            if not db_path.exists():
                _create_sqlite_store(db_path)  # (a copy of MLflow's empty store: store.py)
            found = _experiment(db_path, experiment)
            if found is None and artifact_root:
                found = _create_experiment(db_path, experiment, artifact_root)
            if found is None:
                return None
            _use_write_ahead_log(uri)
        experiment_id, location = found
        if not _local_location(location):
            return None
        own = os.environ.get(SWEEP_ID_ENV)
        if own:
            liveness.hold(uri, own)
        if not _no_orphans(db_path, uri):
            return None
        return cls(uri, experiment, experiment_id, location, artifact_root)

    # ------------------------------------------------------------ MLflow, when needed
    @property
    def mlflow(self) -> Tracker:
        """The real tracker, opened (mlflow imported) the first time it is needed."""
        if self._mlflow is None:
            self._mlflow = Tracker.open(self.uri, self.experiment, self.artifact_root)
        return self._mlflow

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.mlflow, name)  # (kill_running, finished_seed_runs, client, ...)

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction under the store lock; rolled back on any error."""
        with _store_lock(self.uri):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _active_run(self, db: sqlite3.Connection, run_id: str) -> str:
        """The run's artifact URI; Unsupported unless it is an active run of this experiment."""
        row = db.execute("SELECT lifecycle_stage, experiment_id, artifact_uri FROM runs "
                         "WHERE run_uuid = ?", (run_id,)).fetchone()
        if row is None or row[0] != "active" or str(row[1]) != self.experiment_id:
            raise Unsupported(f"run {run_id}")
        return row[2]

    def _artifact_uri(self, run_id: str) -> str:
        return f"{self.artifact_location}/{run_id}/artifacts"  # (append_to_uri_path, local)

    def _find_dataset(self, name: str, digest: str) -> str | None:
        row = self._db.execute("SELECT dataset_uuid FROM datasets WHERE experiment_id = ? AND "
                               "name = ? AND digest = ?", (int(self.experiment_id), name,
                                                           digest)).fetchone()
        return row[0] if row else None

    def _insert(self, rows: dict[str, list[dict]]) -> None:
        for table, values in rows.items():  # (bulk.TABLES' order: parents first)
            if values:
                columns = list(values[0])
                names = ", ".join(f'"{c}"' for c in columns)
                self._db.executemany(
                    f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))})',
                    [tuple(row[c] for c in columns) for row in values])

    # ------------------------------------------------------------ Tracker's methods
    def start_run(self, name: str, tags: dict[str, str], parent_id: str | None = None) -> str:
        try:
            record = RunRecord(name, {k: str(v) for k, v in tags.items()}, status="RUNNING",
                               parent_id=parent_id)
            if record.tags.get(_RUN_NAME_TAG, name) != name:
                raise Unsupported("two run names")
            _check_record(record)
            with self._write():
                rows, run_ids = run_rows([record], self.experiment_id, self._artifact_uri,
                                         _now(), DIGEST_LENGTH, self._find_dataset)
                rows["runs"][0]["end_time"] = None  # (create_run: still running)
                self._insert(rows)
            return run_ids[0]
        except Unsupported:
            return self.mlflow.start_run(name, tags, parent_id)

    def log(self, run_id: str, metrics: dict[str, float] | None = None,
            params: dict[str, object] | None = None, tags: dict[str, str] | None = None) -> None:
        """``log_batch``'s rows: new params (one logged again must have its value), tags set
        or replaced, metrics and their latest values (a metric logged again: MLflow)."""
        try:
            metrics = _check_metrics(metrics or {})
            params = _check(params or {}, _PARAM_VALUE)
            tags = _check(tags or {}, _TAG_VALUE)
            if _RUN_NAME_TAG in tags:
                raise Unsupported("a run's name changed")
            now = _now()
            with self._write() as db:
                self._active_run(db, run_id)
                for key, value in list(params.items()):
                    row = db.execute("SELECT value FROM params WHERE run_uuid = ? AND key = ?",
                                     (run_id, key)).fetchone()
                    if row is not None:
                        if row[0] != value:
                            raise Unsupported(f"param {key} logged again with another value")
                        del params[key]
                for key in metrics:
                    if db.execute("SELECT 1 FROM latest_metrics WHERE run_uuid = ? AND key = ?",
                                  (run_id, key)).fetchone():
                        raise Unsupported(f"metric {key} logged again")
                record = RunRecord("", {}, params=params, metrics=metrics)
                rows, _ = run_rows([record], self.experiment_id, self._artifact_uri, now,
                                   DIGEST_LENGTH, self._find_dataset)
                rows = {table: [dict(row, run_uuid=run_id) for row in rows[table]]
                        for table in ("params", "metrics", "latest_metrics")}
                self._insert(rows)
                db.executemany('INSERT INTO tags ("key", value, run_uuid) VALUES (?, ?, ?) '
                               'ON CONFLICT ("key", run_uuid) DO UPDATE SET value = excluded.value',
                               [(k, v, run_id) for k, v in tags.items()])
        except Unsupported:
            self.mlflow.log(run_id, metrics=metrics, params=params, tags=tags)

    def log_trace_input(self, run_id: str, name: str, checksum: str, path: str, jobs: int) -> None:
        try:
            if not 0 < len(name) <= 500:
                raise Unsupported("dataset name")
            dataset = dataset_fields(name, checksum, path, jobs, DIGEST_LENGTH)
            if len(dataset["source"]) > 65535:
                raise Unsupported("dataset source")
            with self._write() as db:
                self._active_run(db, run_id)
                found = self._find_dataset(dataset["name"], dataset["digest"])
                if found is not None and db.execute(
                        "SELECT 1 FROM inputs WHERE source_type = 'DATASET' AND source_id = ? "
                        "AND destination_type = 'RUN' AND destination_id = ?",
                        (found, run_id)).fetchone():
                    return  # (log_inputs: an input edge is written once)
                rows = {table: [] for table in ("datasets", "inputs", "input_tags")}
                input_rows(rows, run_id, dataset, self.experiment_id, self._find_dataset, {})
                self._insert(rows)
        except Unsupported:
            self.mlflow.log_trace_input(run_id, name, checksum, path, jobs)

    def log_runs(self, records: list[RunRecord], existing: Mapping[int, str] | None = None) -> list[str]:
        """Finished runs in one transaction (:func:`.bulk.run_rows`), their files copied."""
        try:
            if existing:
                raise Unsupported("runs created by a helper that died")
            for record in records:
                _check_record(record)
            with self._write():
                rows, run_ids = run_rows(records, self.experiment_id, self._artifact_uri,
                                         _now(), DIGEST_LENGTH, self._find_dataset)
                self._insert(rows)
        except Unsupported:
            return self.mlflow.log_runs(records, existing)
        for record, run_id in zip(records, run_ids):
            if record.artifacts:
                copy_artifacts(self._artifact_uri(run_id), record.artifacts)
        return run_ids

    def log_artifact(self, run_id: str, path: str | os.PathLike, folder: str | None = None) -> None:
        """A copy into the run's local artifact folder (MLflow's local artifact repository)."""
        row = self._db.execute("SELECT artifact_uri FROM runs WHERE run_uuid = ?",
                               (run_id,)).fetchone()
        if row is None or not copy_artifacts(row[0], [(str(path), folder)]):
            self.mlflow.log_artifact(run_id, path, folder)

    def finish(self, run_id: str, status: str = "FINISHED") -> None:
        """``set_terminated``: the status and the end time."""
        try:
            if status not in _STATUSES:
                raise Unsupported(f"status {status}")
            with self._write() as db:
                self._active_run(db, run_id)
                db.execute("UPDATE runs SET status = ?, end_time = ? WHERE run_uuid = ?",
                           (status, _now(), run_id))
        except Unsupported:
            self.mlflow.finish(run_id, status)

    def run_with_handle(self, handle: str) -> str | None:
        """The id of the active run of this experiment that the sweep named ``handle``."""
        row = self._db.execute(
            "SELECT runs.run_uuid FROM runs JOIN tags ON tags.run_uuid = runs.run_uuid "
            "WHERE runs.experiment_id = ? AND runs.lifecycle_stage = 'active' "
            "AND tags.key = ? AND tags.value = ? LIMIT 1",
            (int(self.experiment_id), TAG_HANDLE, handle)).fetchone()
        return row[0] if row else None

    def prepare_ui(self) -> None:
        """:func:`.ui.prepare`'s experiment tags (``set_experiment_tag``: set or replaced)."""
        from .ui import ui_tags

        tags = ui_tags()
        try:
            _check(tags, _EXPERIMENT_TAG_VALUE)
            with self._write() as db:
                row = db.execute("SELECT lifecycle_stage FROM experiments WHERE experiment_id = ?",
                                 (int(self.experiment_id),)).fetchone()
                if row is None or row[0] != "active":
                    raise Unsupported("experiment not active")
                db.executemany(
                    'INSERT INTO experiment_tags ("key", value, experiment_id) VALUES (?, ?, ?) '
                    'ON CONFLICT ("key", experiment_id) DO UPDATE SET value = excluded.value',
                    [(k, v, int(self.experiment_id)) for k, v in tags.items()])
        except Unsupported:
            self.mlflow.prepare_ui()


def _connect(db_path: Path) -> sqlite3.Connection:
    """A connection that leaves transactions to :meth:`SqliteTracker._write`, syncing the
    write-ahead log at checkpoints only (``store._sync_at_checkpoints``). Any thread may use
    it: the helper runs one command at a time, but a restarted helper is another thread."""
    db = sqlite3.connect(db_path, timeout=30, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA synchronous = NORMAL")
    return db


def _experiment(db_path: Path, name: str) -> tuple[str, str] | None:
    """(id, artifact location) of the active experiment ``name`` in the default workspace, if
    the store's schema is ``SCHEMA_REVISION``; else None."""
    with contextlib.closing(sqlite3.connect(db_path, timeout=30)) as db:
        try:
            revision = db.execute("SELECT version_num FROM alembic_version").fetchall()
            if revision != [(SCHEMA_REVISION,)]:
                return None
            row = db.execute("SELECT experiment_id, artifact_location, lifecycle_stage FROM "
                             "experiments WHERE name = ? AND workspace = 'default'",
                             (name,)).fetchone()
        except sqlite3.DatabaseError:
            return None
    if row is None or row[2] != "active" or not row[1]:
        return None
    return str(row[0]), row[1]


def _create_experiment(db_path: Path, name: str, artifact_root: str) -> tuple[str, str] | None:
    """``Tracker.open``'s ``create_experiment(name, artifact_location=<artifact_root as a file
    URI>)``, row for row what MLflow's store inserts (``SqlAlchemyStore.create_experiment``:
    active, created and updated now, no tags, the default workspace; ``tests/test_tracking_sqlite.py``
    compares the two): (id, location), or ``None`` for MLflow to create it (a schema it does
    not know, a name or location MLflow would refuse, a deleted experiment of that name)."""
    location = Path(artifact_root).resolve().as_uri()  # absolute: resolve_uri_if_local keeps it
    if not (0 < len(name) <= _EXPERIMENT_NAME) or len(location) > _ARTIFACT_LOCATION:
        return None
    now = _now()
    try:
        with contextlib.closing(sqlite3.connect(db_path, timeout=30)) as db, db:
            if db.execute("SELECT version_num FROM alembic_version").fetchall() != [(SCHEMA_REVISION,)]:
                return None
            created = db.execute(
                "INSERT INTO experiments (name, artifact_location, lifecycle_stage, creation_time, "
                "last_update_time, workspace) VALUES (?, ?, 'active', ?, ?, 'default')",
                (name, location, now, now)).lastrowid
    except sqlite3.DatabaseError:  # (the name taken by a deleted experiment: MLflow says so)
        return None
    return str(created), location


def _no_orphans(db_path: Path, uri: str) -> bool:
    """``Tracker.close_orphaned_runs`` when there is nothing to close (every sweep leaves its
    liveness lock file, so the next one finds it gone): the gone sweeps' lock files removed.
    False, the files left for MLflow's ``Tracker.open`` to claim again, when a gone sweep left
    a run RUNNING (in any experiment: more than MLflow closes, never fewer)."""
    gone = liveness.claim_gone(uri)
    if not gone:
        return True
    with contextlib.closing(sqlite3.connect(db_path, timeout=30)) as db:
        orphans = db.execute(
            "SELECT 1 FROM runs JOIN tags ON tags.run_uuid = runs.run_uuid WHERE tags.key = ? "
            f"AND tags.value IN ({', '.join('?' * len(gone))}) AND runs.status = 'RUNNING' "
            "LIMIT 1", (TAG_SWEEP_ID, *gone)).fetchone()
    if orphans:
        for fd in gone.values():
            os.close(fd)
        return False
    liveness.release(uri, gone)
    return True


def _local_location(location: str) -> bool:
    """An artifact location that MLflow's ``append_to_uri_path`` extends by plain joining."""
    return (location.startswith(("file:///", "/")) and "?" not in location and "#" not in location
            and "\\" not in location)
