"""A configuration's seed runs written to an SQL tracking store in one transaction.

Through MLflow's client each finished child run costs four calls -- ``create_run``,
``log_batch``, ``log_inputs``, ``set_terminated`` -- that open about 16 sessions and run about
40 SQL statements between them: 25-35 ms of CPU per run, 3 s for 100 seeds, on a machine
whose cores the seeds need (issue 16). Here the same rows go in with one ``INSERT`` per table
for all the runs, inside one session of MLflow's own store (its session maker, so its sqlite
pragmas and its commit/rollback), built from MLflow's own table models and checked by its own
validators: the runs are the ones the client would write (the UI, ``MlflowClient.get_run``
and ``mlflow.search_runs`` see the same info, params, metrics, tags and dataset inputs;
``tests/test_tracking_bulk.py`` compares them field by field with client-written runs).

This is below MLflow's public API, so it is used only for the versions it was tested with
(``TESTED``) and only for SQL stores; anything else (a tracking server, another version, a
missing internal) returns ``None`` from :func:`bulk_writer` and the caller uses the client.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping

TESTED = ("3.17",)  # MLflow minor versions whose tables and validators this was tested with


@dataclass
class RunRecord:
    """One finished run, all of it: what the client would send in four calls."""

    name: str
    tags: Mapping[str, str]
    params: Mapping[str, object] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)
    status: str = "FINISHED"
    parent_id: str | None = None
    dataset: tuple | None = None  # (name, checksum, path, jobs): log_trace_input's arguments
    # The parent is a record before this one in the same batch (a configuration written with
    # its seeds in one transaction); ``parent_id`` then stays None.
    parent_index: int | None = None
    artifacts: tuple = ()  # (file, folder or None): the run's files, copied once it exists


def dataset_fields(name: str, checksum: str, path: str, jobs: int, digest_length: int) -> dict:
    """The trace as a dataset's columns (digest: the sha256 cut to the column's width; source:
    the file; the profile has the whole checksum), and ``INPUT_TAGS`` its input edge's tags."""
    return dict(name=name, digest=checksum[:digest_length], source_type="local",
                source=json.dumps({"uri": Path(path).resolve().as_uri()}),
                profile=json.dumps({"num_rows": jobs, "sha256": checksum}), schema=None)


INPUT_TAGS = (("mlflow.data.context", "trace"),)


def trace_dataset(name: str, checksum: str, path: str, jobs: int, digest_length: int):
    """The trace as an MLflow ``DatasetInput`` (:func:`dataset_fields`)."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    return DatasetInput(Dataset(**dataset_fields(name, checksum, path, jobs, digest_length)),
                        [InputTag(key, value) for key, value in INPUT_TAGS])


def bulk_writer(client) -> Callable | None:
    """``write(experiment_id, records, digest_length) -> run ids`` for the client's store, or
    ``None`` where the store is not MLflow's SQL store or the version is not one tested."""
    try:
        import mlflow
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        store = client._tracking_client.store
    except (ImportError, AttributeError):
        return None
    version = ".".join(mlflow.__version__.split(".")[:2])
    if version not in TESTED or not isinstance(store, SqlAlchemyStore):
        return None
    return lambda experiment_id, records, digest_length: write_runs(
        store, experiment_id, records, digest_length)


TABLES = ("runs", "tags", "params", "metrics", "latest_metrics", "datasets", "inputs",
          "input_tags")  # parents before children (foreign keys)
PARENT_TAG, RUN_NAME_TAG, USER_TAG = "mlflow.parentRunId", "mlflow.runName", "mlflow.user"


def sanitize_metric_value(value: float) -> tuple[bool, float]:
    """``SqlAlchemyStore.sanitize_metric_value``: (is NaN, the value SQL can hold)."""
    if math.isnan(value):
        return True, 0
    if math.isinf(value):
        return False, 1.7976931348623157e308 if value > 0 else -1.7976931348623157e308
    return False, value


def record_tags(record: RunRecord, parent: str | None) -> dict[str, str]:
    """A finished run's tags as ``create_run`` stores them (its parent, its name)."""
    tags = {k: str(v) for k, v in record.tags.items()}
    if parent:
        tags[PARENT_TAG] = parent
    tags.setdefault(RUN_NAME_TAG, record.name)
    return tags


def run_rows(records: list[RunRecord], experiment_id: str, artifact_uri: Callable[[str], str],
             now: int, digest_length: int, find_dataset: Callable[[str, str], str | None]
             ) -> tuple[dict[str, list[dict]], list[str]]:
    """The rows, by table, that ``SqlAlchemyStore.create_run`` (the run, its tags,
    ``mlflow.runName``), ``log_batch`` (params, metrics and their ``latest_metrics``),
    ``log_inputs`` (the dataset, shared by name and digest within the experiment --
    ``find_dataset(name, digest)`` gives an existing one's id --, and one input edge with its
    tags per run) and ``update_run_info`` (status, end time) write for new finished runs; and
    their run ids. Written once for both writers: MLflow's session (:func:`write_runs`) and
    the stdlib's sqlite3 (:mod:`.sqlite_tracker`); each validates the records first."""
    rows: dict[str, list[dict]] = {table: [] for table in TABLES}
    run_ids: list[str] = []
    dataset_ids: dict[tuple, str] = {}
    for record in records:
        run_id = uuid.uuid4().hex
        parent = record.parent_id or (run_ids[record.parent_index]
                                      if record.parent_index is not None else None)
        tags = record_tags(record, parent)
        run_ids.append(run_id)
        rows["runs"].append(dict(
            name=record.name, artifact_uri=artifact_uri(run_id), run_uuid=run_id,
            experiment_id=int(experiment_id), source_type="UNKNOWN", source_name="",
            entry_point_name="", user_id=tags.get(USER_TAG, "unknown"),
            status=record.status, start_time=now, end_time=now, deleted_time=None,
            source_version="", lifecycle_stage="active"))
        rows["tags"] += [dict(run_uuid=run_id, key=k, value=v) for k, v in tags.items()]
        rows["params"] += [dict(run_uuid=run_id, key=k, value=str(v))
                           for k, v in record.params.items()]
        for key, value in record.metrics.items():
            is_nan, value = sanitize_metric_value(float(value))
            row = dict(run_uuid=run_id, key=key, value=value, timestamp=now, step=0, is_nan=is_nan)
            rows["metrics"].append(row)
            rows["latest_metrics"].append(dict(row))
        if record.dataset is not None:
            input_rows(rows, run_id, dataset_fields(*record.dataset, digest_length=digest_length),
                       experiment_id, find_dataset, dataset_ids)
    return rows, run_ids


def input_rows(rows: dict[str, list[dict]], run_id: str, dataset: dict, experiment_id: str,
               find_dataset: Callable[[str, str], str | None], dataset_ids: dict) -> None:
    """A run's dataset input (``log_inputs``): the dataset row unless the experiment has it
    (by name and digest), the input edge and its tags."""
    key = (dataset["name"], dataset["digest"])
    if key not in dataset_ids:
        found = find_dataset(*key)
        dataset_ids[key] = found or uuid.uuid4().hex
        if found is None:
            rows["datasets"].append(dict(
                dataset_uuid=dataset_ids[key], experiment_id=int(experiment_id),
                name=dataset["name"], digest=dataset["digest"],
                dataset_source_type=dataset["source_type"], dataset_source=dataset["source"],
                dataset_schema=dataset["schema"], dataset_profile=dataset["profile"]))
    input_id = uuid.uuid4().hex
    rows["inputs"].append(dict(input_uuid=input_id, source_type="DATASET",
                               source_id=dataset_ids[key], destination_type="RUN",
                               destination_id=run_id))
    rows["input_tags"] += [dict(input_uuid=input_id, name=k, value=v) for k, v in INPUT_TAGS]


def write_runs(store, experiment_id: str, records: list[RunRecord], digest_length: int) -> list[str]:
    """Insert ``records`` as finished runs of ``experiment_id`` (:func:`run_rows`) in one
    session of MLflow's store, after MLflow's own validators; returns their run ids."""
    from mlflow.entities import Metric, Param, RunStatus, RunTag
    from mlflow.store.tracking.dbmodels.models import (
        SqlDataset, SqlInput, SqlInputTag, SqlLatestMetric, SqlMetric, SqlParam, SqlRun, SqlTag)
    from mlflow.utils.time import get_current_time_millis
    from mlflow.utils.uri import append_to_uri_path
    from mlflow.utils.validation import (
        _validate_batch_log_data, _validate_dataset_inputs, _validate_param_keys_unique)
    from sqlalchemy import insert

    experiment = store.get_experiment(experiment_id)
    store._check_experiment_is_active(experiment)
    now = get_current_time_millis()
    checked = []  # the records as MLflow's validators leave them (they cut over-long values)
    for record in records:
        RunStatus.from_string(record.status)
        _, params, tags = _validate_batch_log_data(
            [Metric(k, float(v), now, 0) for k, v in record.metrics.items()],
            [Param(k, str(v)) for k, v in record.params.items()],
            [RunTag(k, str(v)) for k, v in record.tags.items()])
        _validate_param_keys_unique(params)
        checked.append(replace(record, params={p.key: p.value for p in params},
                               tags={t.key: t.value for t in tags}))
    records = checked
    datasets = [trace_dataset(*r.dataset, digest_length=digest_length) for r in records if r.dataset]
    if datasets:
        _validate_dataset_inputs(datasets)
    models = dict(zip(TABLES, (SqlRun, SqlTag, SqlParam, SqlMetric, SqlLatestMetric, SqlDataset,
                               SqlInput, SqlInputTag)))
    with store.ManagedSessionMaker(read_only=False) as session:
        def find_dataset(name: str, digest: str) -> str | None:
            found = (session.query(SqlDataset)
                     .filter(SqlDataset.experiment_id == experiment_id, SqlDataset.name == name,
                             SqlDataset.digest == digest)
                     .first())
            return found.dataset_uuid if found is not None else None

        rows, run_ids = run_rows(
            records, experiment_id,
            lambda run_id: append_to_uri_path(experiment.artifact_location, run_id,
                                              store.ARTIFACTS_FOLDER_NAME),
            now, digest_length, find_dataset)
        for table, values in rows.items():
            if values:
                _insert(session, models[table], values, insert)
    return run_ids


def _insert(session, table, values: list[dict], insert) -> None:
    """``session.execute(insert(table), values)``; on sqlite, the same rows as one
    ``executemany`` of the driver: SQLAlchemy's bulk insert processes every row in Python
    (~16 us a row: 4 ms for a configuration's ~130 rows of params, tags and metrics). Every
    row here carries every column it sets, as the same Python values (sqlite stores a bool as
    0/1 either way), and a column left out takes its server default in both."""
    connection = session.connection()
    if connection.dialect.name != "sqlite" or connection.dialect.paramstyle != "qmark":
        session.execute(insert(table), values)
        return
    columns = list(values[0])
    if any(list(row) != columns for row in values):  # (never, as written above)
        session.execute(insert(table), values)
        return
    names = ", ".join(f'"{name}"' for name in columns)
    sql = f'INSERT INTO "{table.__tablename__}" ({names}) VALUES ({", ".join("?" * len(columns))})'
    connection.exec_driver_sql(sql, [tuple(row[c] for c in columns) for row in values])


def copy_artifacts(artifact_uri: str, files) -> bool:
    """Copy ``files`` ((path, folder)) into a run's artifact folder when it is a local one, as
    MLflow's local artifact repository does (a copy per file, a few ms each through the client,
    most of it looking the run up); False for any other kind of store (the caller uploads)."""
    import shutil
    from urllib.parse import unquote, urlparse

    parsed = urlparse(artifact_uri)
    if parsed.scheme not in ("", "file") or parsed.netloc not in ("", "localhost"):
        return False
    root = Path(unquote(parsed.path) if parsed.scheme else artifact_uri)
    for path, folder in files:
        target = root / folder if folder else root
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / Path(path).name)
    return True
