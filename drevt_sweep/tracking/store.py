"""All MLflow glue: the store, the experiment, and one parent run per configuration with one
child run per seed.

Design points (each measured to matter): the sqlite store and the experiment are created once,
under a file lock, by one process (several processes migrating a fresh sqlite schema at once
corrupt it, and concurrent ``set_experiment`` calls create duplicates; a multirun creates them
before its first job); every write to an embedded store holds the same lock, so two sweeps
sharing it lose nothing; metrics go in batches after the seeds are gathered (``log_metric`` in
a loop is 30-45x slower); workers never import mlflow. The sweep calls this module through
:mod:`drevt_sweep.tracking_service`, which runs it in a helper process.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from ..errors import ConfigError
from . import liveness
from .bulk import RunRecord

# Tag keys carry no dots so that they can be used in MLflow filter strings unquoted.
TAG_KIND = "drevt_kind"  # "configuration" (parent) or "seed" (child)
TAG_CONFIG_HASH = "drevt_config_hash"
TAG_RUN_KEY = "drevt_run_key"
TAG_SWEEP_DIR = "drevt_sweep_dir"
TAG_ERROR = "drevt_error"
TAG_LABEL = "drevt_label"  # the configuration's full label (every choice and override)
TAG_PRESET = "drevt_experiment"  # the named preset (experiment=...), "none" without one
TAG_SWEEP_RUN = "drevt_sweep_run_id"  # on a parent: the sweep-level run holding report.html
TAG_DESCRIPTION = "mlflow.note.content"  # the run's description in the UI
DIGEST_LENGTH = 36  # MLflow's dataset digest column holds 36 characters
TAG_SWEEP_ID = "drevt_sweep_id"  # the drevt-sweep command that started the run: sweep_id()
SWEEP_ID_ENV = "DREVT_SWEEP_ID"  # the console script's sweep id, inherited by its processes
TAG_HANDLE = "drevt_handle"  # the sweep's name for the run (a restarted helper finds it by it)

_BATCH_METRICS, _BATCH_PARAMS, _BATCH_TAGS = 1000, 100, 100


def flatten(tree: Mapping, prefix: str = "") -> dict[str, object]:
    """A nested config as MLflow params: ``{"policy": {"backfill": "easy"}}`` ->
    ``{"policy.backfill": "easy"}``."""
    flat: dict[str, object] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


# MLflow's limits (mlflow.utils.validation, 2.x and 3.x): longer values are refused or cut.
PARAM_VALUE_LIMIT = 6000
TAG_VALUE_LIMIT = 8000
DATASET_NAME_LIMIT = 500


def shortened(value: object, limit: int) -> object:
    """``value`` as it is when MLflow keeps it whole, else its text cut to ``limit``
    characters with a marker saying so (the whole value is in the job's ``config.yaml``);
    MLflow itself would cut it silently or refuse the run."""
    text = str(value)
    if len(text) <= limit:
        return value
    marker = f" ...[cut: {len(text)} characters, MLflow keeps {limit}; see config.yaml]"
    return text[:limit - len(marker)] + marker


def fitted(values: Mapping[str, object], limit: int) -> dict[str, object]:
    """Every value of a params or tags mapping within MLflow's ``limit`` (see ``shortened``)."""
    return {key: shortened(value, limit) for key, value in values.items()}


def embedded_uri(output_root: str | os.PathLike) -> str:
    """The default store: a sqlite file at an absolute path under the outputs folder."""
    return f"sqlite:///{Path(output_root).resolve() / 'mlflow.db'}"


def run_key(config_hash: str, trace_checksum: str, seed: int) -> str:
    """Identifies a configuration x seed across sweeps, so ``resume`` can skip it."""
    return hashlib.sha256(f"{config_hash}|{trace_checksum}|{seed}".encode()).hexdigest()[:32]


def config_hash(config: dict) -> str:
    """A stable hash of the settings that decide results (seed and bookkeeping left out)."""
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def sweep_id() -> str:
    """A name for this ``drevt-sweep`` command (``host:pid:random``); whether it still runs is
    told by the lock it holds (:mod:`.liveness`), not by this name."""
    from .liveness import new_sweep_id

    return new_sweep_id()


def check_reachable(uri: str, timeout: float = 5.0) -> None:
    """Fail fast, before any simulation, when a remote tracking server does not answer."""
    if not uri.startswith(("http://", "https://")):
        return
    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            if response.status >= 400:
                raise ConfigError(f"tracking server {uri} answered HTTP {response.status}")
    except urllib.error.HTTPError as exc:
        raise ConfigError(f"tracking server {uri} answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigError(
            f"tracking server {uri} does not answer ({reason}); start it, or set "
            "tracking.uri=null for the embedded store"
        ) from None


def check_sqlite_store(db_path: Path) -> None:
    """Before MLflow touches an embedded store: it is a file, this process may write it, and
    it passes sqlite's ``PRAGMA quick_check`` (MLflow would otherwise retry a folder for
    ~100 s, print SQLAlchemy's traceback for a read-only file, and use a corrupt one until a
    query meets the damage). A missing store is fine: MLflow creates it. ``quick_check`` reads
    every page as ``integrity_check`` does but does not match each index against its table:
    0.39 s against 4.0 s on a 364 MB store of 16,000 runs (every sweep pays it)."""
    import sqlite3

    if not db_path.exists():
        return
    if not db_path.is_file():
        raise ConfigError(f"tracking store {db_path} is not a file")
    move_away = ("restore it from a backup, or move it away to start a new store "
                 "(tracking.uri=sqlite:////other/path.db for another one)")
    try:
        with contextlib.closing(sqlite3.connect(db_path, timeout=30)) as db:
            # A write, rolled back: sqlite opens a file it may not write read-only, silently.
            db.execute("BEGIN IMMEDIATE")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            db.execute(f"PRAGMA user_version = {int(version) + 1}")
            db.execute("ROLLBACK")
            problems = [row[0] for row in db.execute("PRAGMA quick_check(10)")]
    except sqlite3.OperationalError as exc:
        if "readonly" in str(exc) or "read-only" in str(exc) or not os.access(db_path, os.W_OK):
            raise ConfigError(f"tracking store {db_path} is read-only ({exc}): make it "
                              "writable, or set tracking.uri to another store") from None
        raise ConfigError(f"tracking store {db_path} cannot be used: {exc}") from None
    except sqlite3.DatabaseError as exc:  # "file is not a database", "disk image is malformed"
        raise ConfigError(f"tracking store {db_path} is corrupt ({exc}): {move_away}") from None
    if problems != ["ok"]:
        raise ConfigError(f"tracking store {db_path} is corrupt (PRAGMA quick_check: "
                          f"{'; '.join(problems)}): {move_away}")


def _create_sqlite_store(db_path: Path) -> None:
    """Create a new embedded store whole, or not at all, under the store lock.

    Whole or not at all: the store is built in a file under another name, which then takes
    the store's name (``os.replace``, atomic). MLflow's schema is dozens of statements (tables,
    then ~50 migrations) that sqlite does not run as one transaction; a sweep killed among them
    (SIGKILL, a batch system's time limit) left a store that every later open tried to
    migrate again and failed on ("index ... already exists"). A ``.creating`` file found here
    is a killed creation's.

    Cheaply: building the schema costs 2-5 s of CPU (importing and running the migrations),
    paid by every new output folder, test and benchmark. MLflow builds it once per MLflow
    version, in the user's cache (:func:`_empty_store`); a new store is a copy of that file
    with its Default experiment given the place and time MLflow would have given it here
    (:func:`_own_default_experiment`; ``tests/test_store_creation.py`` compares the two).
    Without a usable cache, MLflow builds the store itself, as before."""
    import shutil

    for stale in db_path.parent.glob(f".{db_path.name}.creating-*"):
        stale.unlink(missing_ok=True)
    part = db_path.with_name(_part_name(db_path.name))
    empty = _empty_store()
    if empty is not None:
        try:
            shutil.copyfile(empty, part)
            _own_default_experiment(part)
        except Exception:  # noqa: BLE001 - (an MLflow without the internals used): MLflow builds it
            part.unlink(missing_ok=True)
            empty = None
    if empty is None:
        _build_store(part)
    os.replace(part, db_path)


def _build_store(path: Path) -> None:
    """MLflow's own creation of an empty store at ``path`` (schema, migrations, Default)."""
    with _store_at(path) as store:
        store.search_experiments(max_results=1)  # builds the schema and the Default experiment


@contextlib.contextmanager
def _store_at(path: Path):
    """MLflow's store object for a sqlite file, its pooled connections closed on leaving (no
    connection may outlive the name it was opened under: the file is renamed next)."""
    uri = f"sqlite:///{path}"
    try:  # not MLflow's store cache: a name is used once
        from mlflow.tracking._tracking_service.utils import _get_sqlalchemy_store

        store = _get_sqlalchemy_store(uri, None)
    except ImportError:  # another MLflow: through the client (each name is new: nothing stale)
        from mlflow.tracking import MlflowClient

        store = MlflowClient(tracking_uri=uri)._tracking_client.store
    try:
        yield store
    finally:
        engine = getattr(store, "engine", None)
        if engine is not None:
            engine.dispose()
            getattr(type(store), "_engine_map", {}).pop(uri, None)


def empty_store_dir() -> Path:
    """``$DREVT_STORE_CACHE``, else ``~/.cache/drevt_sweep/mlflow``: empty stores, one per
    MLflow version (a few hundred kB each)."""
    given = os.environ.get("DREVT_STORE_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "drevt_sweep" / "mlflow"


def _empty_store() -> Path | None:
    """An empty store built by this MLflow version (built now if missing); None when the
    cache cannot be written or read (MLflow then builds each store itself)."""
    from importlib.metadata import version

    folder = empty_store_dir()
    path = folder / f"empty-mlflow-{version('mlflow')}.db"
    if _is_whole_store(path):
        return path
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob(f".{path.name}.creating-*"):  # a killed builder's
            pid = stale.name.rsplit(".creating-", 1)[1].split("-")[0]
            if pid.isdigit() and not liveness.pid_alive(int(pid)):
                stale.unlink(missing_ok=True)
        part = folder / _part_name(path.name)
        _build_store(part)
        os.replace(part, path)  # two builders at once: either file is the same schema
    except Exception:  # noqa: BLE001 - no cache (unwritable, full): MLflow builds each store
        return None
    return path if _is_whole_store(path) else None


def _part_name(name: str) -> str:
    """The name a store is built under: its process and a token (a name is used once)."""
    import uuid

    return f".{name}.creating-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _is_whole_store(path: Path) -> bool:
    """A file sqlite reads, with MLflow's migration stamp and the Default experiment."""
    import sqlite3

    if not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            stamped = db.execute("SELECT count(*) FROM alembic_version").fetchone()[0] == 1
            default = db.execute("SELECT count(*) FROM experiments WHERE experiment_id = 0"
                                 ).fetchone()[0] == 1
            return stamped and default and db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    except sqlite3.DatabaseError:
        return False


def _own_default_experiment(path: Path) -> None:
    """The copied Default experiment (id 0) as MLflow would create it here: its artifact
    location under the default artifact root as this process resolves it, its times now."""
    import sqlite3

    location = default_artifact_location()
    if location is None:
        with _store_at(path) as store:
            location = str(store._get_artifact_location(0))
    now = int(time.time() * 1000)  # (mlflow.utils.time.get_current_time_millis)
    with contextlib.closing(sqlite3.connect(path, timeout=30)) as db:
        with db:
            db.execute("UPDATE experiments SET artifact_location = ?, creation_time = ?, "
                       "last_update_time = ? WHERE experiment_id = 0", (location, now, now))


# What changes where MLflow puts a new store's artifacts (a server's root, workspaces): with any
# of these set, MLflow is asked (default_artifact_location).
_ARTIFACT_ROOT_ENVIRONMENT = ("_MLFLOW_SERVER_ARTIFACT_ROOT", "MLFLOW_ENABLE_WORKSPACES", "MLFLOW_WORKSPACE")


def default_artifact_location() -> str | None:
    """The Default experiment's artifact location in a store MLflow creates from this process,
    without importing MLflow (1.3 s, and 1.7 s more to open its store, paid by each new output
    folder): ``SqlAlchemyStore._get_artifact_location(0)`` with MLflow's default root
    ``./mlruns`` resolved against the working folder (``resolve_uri_if_local``), ``/0``
    appended (``append_to_uri_path``). ``None`` (ask MLflow) when the environment could change
    it or the folder's name is not a plain path to append to; ``tests/test_store_creation.py``
    compares it with MLflow's own."""
    if any(os.environ.get(name) for name in _ARTIFACT_ROOT_ENVIRONMENT):
        return None
    root = Path.cwd().joinpath("mlruns").as_posix()
    if any(c in root for c in "?#%\\:") or not root.startswith("/"):
        return None
    return root + "/0"


@contextlib.contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """An exclusive lock beside an embedded sqlite store (no-op for other stores)."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    db_path = Path(uri[len("sqlite:///") :])
    lock_path = db_path.with_suffix(".lock")
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock_path, "a")
    except OSError as exc:
        raise ConfigError(f"tracking store {db_path}: cannot create its lock file "
                          f"{lock_path} ({exc.strerror})") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass
class Tracker:
    """A handle on one tracking store and experiment; every call is safe across processes."""

    uri: str
    experiment_id: str
    artifact_root: str | None = None

    @classmethod
    def open(cls, uri: str, experiment: str, artifact_root: str | None = None) -> Tracker:
        """Create the store and the experiment once (under the lock) and return a handle."""
        check_reachable(uri)
        with _store_lock(uri):
            if uri.startswith("sqlite:///"):
                db_path = Path(uri[len("sqlite:///"):])
                check_sqlite_store(db_path)
                if not db_path.exists():
                    _create_sqlite_store(db_path)
            client = _client(uri)
            _use_write_ahead_log(uri)
            found = client.get_experiment_by_name(experiment)
            if found is not None and found.lifecycle_stage == "deleted":
                raise ConfigError(
                    f"MLflow experiment '{experiment}' is deleted in {uri}; restore it "
                    "(mlflow experiments restore) or choose another tracking.experiment"
                )
            if found is None:
                location = Path(artifact_root).resolve().as_uri() if artifact_root else None
                experiment_id = client.create_experiment(experiment, artifact_location=location)
            else:
                experiment_id = found.experiment_id
        tracker = cls(uri, experiment_id, artifact_root)
        own = os.environ.get(SWEEP_ID_ENV)
        if own:  # the helper too: it may write a moment after its sweep was killed
            liveness.hold(uri, own)
        tracker.close_orphaned_runs()
        return tracker

    @property
    def client(self):
        return _client(self.uri)

    def start_run(self, name: str, tags: dict[str, str], parent_id: str | None = None) -> str:
        tags = dict(tags)
        if parent_id:
            tags["mlflow.parentRunId"] = parent_id
        with _store_lock(self.uri):
            run = self.client.create_run(self.experiment_id, run_name=name, tags=tags)
        return run.info.run_id

    def log(
        self,
        run_id: str,
        metrics: dict[str, float] | None = None,
        params: dict[str, object] | None = None,
        tags: dict[str, str] | None = None,
    ) -> None:
        """Log everything in as few batches as MLflow's limits allow."""
        from mlflow.entities import Metric, Param, RunTag

        now = int(time.time() * 1000)
        metric_list = [Metric(k, float(v), now, 0) for k, v in (metrics or {}).items()]
        param_list = [Param(k, str(v)) for k, v in (params or {}).items()]
        tag_list = [RunTag(k, str(v)) for k, v in (tags or {}).items()]
        with _store_lock(self.uri):
            client = self.client
            # One call when everything fits MLflow's per-batch limits (the usual case for a
            # seed's run); otherwise metrics, params and tags in chunks of their own.
            if (len(metric_list) <= _BATCH_METRICS and len(param_list) <= _BATCH_PARAMS
                    and len(tag_list) <= _BATCH_TAGS
                    and len(metric_list) + len(param_list) + len(tag_list) <= _BATCH_METRICS):
                client.log_batch(run_id, metrics=metric_list, params=param_list, tags=tag_list)
                return
            for chunk in _chunks(metric_list, _BATCH_METRICS):
                client.log_batch(run_id, metrics=chunk)
            for chunk in _chunks(param_list, _BATCH_PARAMS):
                client.log_batch(run_id, params=chunk)
            for chunk in _chunks(tag_list, _BATCH_TAGS):
                client.log_batch(run_id, tags=chunk)

    def log_trace_input(self, run_id: str, name: str, checksum: str, path: str,
                        jobs: int) -> None:
        """The trace as the run's dataset input (the UI's Dataset column): digest = its sha256
        (cut to MLflow's 36 characters; the profile has all of it), source = its file."""
        from .bulk import trace_dataset

        entry = trace_dataset(name, checksum, path, jobs, DIGEST_LENGTH)
        with _store_lock(self.uri):
            self.client.log_inputs(run_id, datasets=[entry])

    def log_runs(self, records: list[RunRecord], existing: Mapping[int, str] | None = None) -> list[str]:
        """Create, fill and close many runs (a configuration's seeds); returns their ids.

        An SQL store takes them in one transaction (:mod:`.bulk`: about 1 ms a run instead of
        25-35 ms through the client); other stores, run by run through the client.
        ``existing`` maps a record's index to a run created for it earlier (by a helper that
        died): that run is completed rather than created twice."""
        from .bulk import bulk_writer

        existing = dict(existing or {})
        write = bulk_writer(self.client) if not existing else None
        if write is not None:
            with _store_lock(self.uri):
                run_ids = write(self.experiment_id, records, DIGEST_LENGTH)
            self._log_record_artifacts(records, run_ids)
            return run_ids
        run_ids = []
        for index, record in enumerate(records):
            run_id = existing.get(index)
            if run_id is not None and self.client.get_run(run_id).info.status != "RUNNING":
                run_ids.append(run_id)  # written whole before the helper died
                continue
            parent = record.parent_id or (run_ids[record.parent_index]
                                          if record.parent_index is not None else None)
            run_id = run_id or self.start_run(record.name, record.tags, parent)
            self.log(run_id, metrics=record.metrics, params=record.params)
            if record.dataset is not None:
                self.log_trace_input(run_id, *record.dataset)
            for path, folder in record.artifacts:
                self.log_artifact(run_id, path, folder)
            self.finish(run_id, record.status)
            run_ids.append(run_id)
        return run_ids

    def _log_record_artifacts(self, records: list[RunRecord], run_ids: list[str]) -> None:
        """The files of runs written in bulk: copied where the artifact store is a local
        folder, else uploaded through the client."""
        from mlflow.utils.uri import append_to_uri_path

        from .bulk import copy_artifacts

        location = None
        for record, run_id in zip(records, run_ids):
            if not record.artifacts:
                continue
            if location is None:
                location = self.client.get_experiment(self.experiment_id).artifact_location
            if not copy_artifacts(append_to_uri_path(location, run_id, "artifacts"), record.artifacts):
                for path, folder in record.artifacts:
                    self.log_artifact(run_id, path, folder)

    def prepare_ui(self) -> None:
        """Tag the experiment for the UI's view (:func:`.ui.prepare`)."""
        from .ui import prepare

        with _store_lock(self.uri):
            prepare(self.client, self.experiment_id)

    def log_artifact(self, run_id: str, path: str | os.PathLike, folder: str | None = None) -> None:
        with _store_lock(self.uri):
            self.client.log_artifact(run_id, str(path), artifact_path=folder)

    def finish(self, run_id: str, status: str = "FINISHED") -> None:
        with _store_lock(self.uri):
            self.client.set_terminated(run_id, status=status)

    def close_orphaned_runs(self) -> int:
        """Mark KILLED the runs still RUNNING whose ``drevt-sweep`` has ended without closing
        them (SIGKILL, a power cut, a store on a full disk): a sweep is gone when no process
        holds its liveness lock (:mod:`.liveness`, so a live sweep in another PID namespace or
        container is never taken for dead); runs of sweeps that cannot be told are left alone.
        Returns how many."""
        from mlflow.exceptions import MlflowException

        gone = liveness.claim_gone(self.uri)
        closed = 0
        try:
            # Every experiment: the lock file goes, so its sweep's runs are found now or never.
            experiments = ([e.experiment_id for e in self.client.search_experiments()]
                           if gone else [])
            for name in gone:
                filter_string = (f"tags.{TAG_SWEEP_ID} = '{name}' "
                                 "and attributes.status = 'RUNNING'")
                try:
                    found = search_all_runs(self.client, experiments, filter_string)
                except MlflowException:  # a server that does not take the filter: nothing to do
                    return closed
                for run in found:
                    with _store_lock(self.uri):
                        self.client.set_tag(run.info.run_id, TAG_ERROR, "the drevt-sweep that "
                                            "ran it ended without closing it (killed by SIGKILL, "
                                            "a crash, or a full disk)")
                        self.client.set_terminated(run.info.run_id, status="KILLED")
                    closed += 1
        finally:
            liveness.release(self.uri, gone)
        return closed

    def run_with_handle(self, handle: str) -> str | None:
        """The id of the run the sweep named ``handle``, if it was created."""
        found = self.client.search_runs([self.experiment_id], max_results=1,
                                        filter_string=f"tags.{TAG_HANDLE} = '{handle}'")
        return found[0].info.run_id if found else None

    def kill_running(self, sweep_id: str) -> int:
        """Mark KILLED the runs of one ``drevt-sweep`` command still RUNNING (those its
        interrupted joblib-launcher workers could not close); returns how many."""
        filter_string = f"tags.{TAG_SWEEP_ID} = '{sweep_id}' and attributes.status = 'RUNNING'"
        killed = 0
        while True:
            page = self.client.search_runs([self.experiment_id], filter_string=filter_string,
                                           max_results=1000)
            for run in page:
                self.finish(run.info.run_id, "KILLED")
            killed += len(page)
            if len(page) < 1000:
                return killed

    def finished_seed_runs(self, config_hash_value: str | None) -> dict[str, object]:
        """FINISHED child runs of a configuration, by run key (what ``resume`` may reuse);
        ``None``: of every configuration of the experiment (a whole sweep, in one query)."""
        filter_string = f"tags.{TAG_KIND} = 'seed' and attributes.status = 'FINISHED'"
        if config_hash_value is not None:
            filter_string = f"tags.{TAG_CONFIG_HASH} = '{config_hash_value}' and " + filter_string
        found = {}
        page_token = None
        while True:
            page = self.client.search_runs(
                [self.experiment_id], filter_string=filter_string, max_results=1000,
                page_token=page_token,
            )
            for run in page:
                key = run.data.tags.get(TAG_RUN_KEY)
                if key:
                    found.setdefault(key, run)
            page_token = page.token
            if not page_token:
                return found


def search_all_runs(client, experiment_ids: list[str], filter_string: str) -> list:
    """Every run matching ``filter_string``, page after page (MLflow returns 1000 at most)."""
    found, token = [], None
    while True:
        page = client.search_runs(experiment_ids, filter_string=filter_string, max_results=1000,
                                  page_token=token)
        found.extend(page)
        token = page.token
        if not token:
            return found


def _use_write_ahead_log(uri: str) -> None:
    """Switch an embedded sqlite store to write-ahead logging, once (the mode is stored in the
    file): commits cost fewer syncs (about 30% less time per logged run, measured) and the UI
    can read while a sweep writes."""
    if not uri.startswith("sqlite:///"):
        return
    import sqlite3

    with contextlib.closing(sqlite3.connect(uri[len("sqlite:///") :], timeout=30)) as db:
        if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            db.execute("PRAGMA journal_mode=WAL")


_CLIENTS: dict[str, object] = {}


def _client(uri: str):
    """One MlflowClient per store and process (creating one is not free)."""
    if uri not in _CLIENTS:
        import logging

        from mlflow.tracking import MlflowClient

        # MLflow logs each database error with its traceback before raising it; the sweep
        # reports the error itself, in one line naming the store (the traceback goes to the
        # configuration's error.txt).
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)

        client = MlflowClient(tracking_uri=uri)
        if uri.startswith("sqlite:///"):
            _sync_at_checkpoints(client)
        _CLIENTS[uri] = client
    return _CLIENTS[uri]


def _sync_at_checkpoints(client) -> None:
    """``PRAGMA synchronous=NORMAL`` on every connection to an embedded store (which is in WAL
    mode, :func:`_use_write_ahead_log`): sqlite then syncs the log at checkpoints, not at every
    commit. In WAL mode that cannot corrupt the store -- a power cut may lose the last commits,
    a crashed process loses nothing (https://www.sqlite.org/pragma.html#pragma_synchronous) --
    and the sync per commit was a third of the helper's time writing a sweep's runs (9 ms a
    configuration, measured). Reaches into MLflow's store for its SQLAlchemy engine; without
    one, nothing changes."""
    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    engine = getattr(store, "engine", None)
    if engine is None or getattr(engine.dialect, "name", "") != "sqlite":
        return
    from sqlalchemy import event

    if not event.contains(engine, "connect", _normal_sync):
        event.listen(engine, "connect", _normal_sync)
        engine.dispose()  # the pooled connections reconnect with it


def _normal_sync(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()
