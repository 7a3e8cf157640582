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
import uuid
from dataclasses import dataclass, field
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


def trace_dataset(name: str, checksum: str, path: str, jobs: int, digest_length: int):
    """The trace as an MLflow ``DatasetInput`` (digest: the sha256 cut to the column's width;
    source: the file; the profile has the whole checksum)."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    dataset = Dataset(
        name=name, digest=checksum[:digest_length], source_type="local",
        source=json.dumps({"uri": Path(path).resolve().as_uri()}),
        profile=json.dumps({"num_rows": jobs, "sha256": checksum}),
    )
    return DatasetInput(dataset, [InputTag("mlflow.data.context", "trace")])


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


def write_runs(store, experiment_id: str, records: list[RunRecord], digest_length: int) -> list[str]:
    """Insert ``records`` as finished runs of ``experiment_id``; returns their run ids.

    Row for row what ``SqlAlchemyStore.create_run`` (the run, its tags, ``mlflow.runName``),
    ``log_batch`` (params, metrics and their ``latest_metrics``), ``log_inputs`` (the dataset,
    shared by name and digest within the experiment, and one input edge with its tags per run)
    and ``update_run_info`` (status, end time) write for a new run."""
    from mlflow.entities import LifecycleStage, Metric, Param, RunStatus, RunTag, SourceType
    from mlflow.store.tracking.dbmodels.models import (
        SqlDataset, SqlInput, SqlInputTag, SqlLatestMetric, SqlMetric, SqlParam, SqlRun, SqlTag)
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NAME, MLFLOW_USER
    from mlflow.utils.time import get_current_time_millis
    from mlflow.utils.uri import append_to_uri_path
    from mlflow.utils.validation import (
        _validate_batch_log_data, _validate_dataset_inputs, _validate_param_keys_unique)
    from sqlalchemy import insert

    experiment = store.get_experiment(experiment_id)
    store._check_experiment_is_active(experiment)
    now = get_current_time_millis()
    rows: dict[object, list[dict]] = {table: [] for table in (
        SqlRun, SqlTag, SqlParam, SqlMetric, SqlLatestMetric, SqlDataset, SqlInput, SqlInputTag)}
    run_ids: list[str] = []
    inputs = []  # (run id, DatasetInput)
    for record in records:
        run_id = uuid.uuid4().hex
        tags = {k: str(v) for k, v in record.tags.items()}
        parent = record.parent_id or (run_ids[record.parent_index]
                                      if record.parent_index is not None else None)
        if parent:
            tags[MLFLOW_PARENT_RUN_ID] = parent
        tags.setdefault(MLFLOW_RUN_NAME, record.name)
        metrics, params, run_tags = _validate_batch_log_data(
            [Metric(k, float(v), now, 0) for k, v in record.metrics.items()],
            [Param(k, str(v)) for k, v in record.params.items()],
            [RunTag(k, v) for k, v in tags.items()])
        _validate_param_keys_unique(params)
        run_ids.append(run_id)
        rows[SqlRun].append(dict(
            name=record.name, artifact_uri=append_to_uri_path(
                experiment.artifact_location, run_id, store.ARTIFACTS_FOLDER_NAME),
            run_uuid=run_id, experiment_id=int(experiment_id),
            source_type=SourceType.to_string(SourceType.UNKNOWN), source_name="",
            entry_point_name="", user_id=tags.get(MLFLOW_USER, "unknown"),
            status=RunStatus.to_string(RunStatus.from_string(record.status)), start_time=now,
            end_time=now, deleted_time=None, source_version="",
            lifecycle_stage=LifecycleStage.ACTIVE))
        rows[SqlTag] += [dict(run_uuid=run_id, key=t.key, value=t.value) for t in run_tags]
        rows[SqlParam] += [dict(run_uuid=run_id, key=p.key, value=p.value) for p in params]
        for metric in metrics:
            is_nan, value = store.sanitize_metric_value(metric.value)
            row = dict(run_uuid=run_id, key=metric.key, value=value, timestamp=metric.timestamp,
                       step=metric.step, is_nan=is_nan)
            rows[SqlMetric].append(row)
            rows[SqlLatestMetric].append(dict(row))
        if record.dataset is not None:
            inputs.append((run_id, trace_dataset(*record.dataset, digest_length=digest_length)))
    if inputs:
        _validate_dataset_inputs([entry for _, entry in inputs])
    with store.ManagedSessionMaker(read_only=False) as session:
        dataset_ids = {}
        for run_id, entry in inputs:
            key = (entry.dataset.name, entry.dataset.digest)
            if key not in dataset_ids:
                found = (session.query(SqlDataset)
                         .filter(SqlDataset.experiment_id == experiment_id,
                                 SqlDataset.name == key[0], SqlDataset.digest == key[1])
                         .first())
                if found is not None:
                    dataset_ids[key] = found.dataset_uuid
                else:
                    dataset_ids[key] = uuid.uuid4().hex
                    rows[SqlDataset].append(dict(
                        dataset_uuid=dataset_ids[key], experiment_id=int(experiment_id),
                        name=entry.dataset.name, digest=entry.dataset.digest,
                        dataset_source_type=entry.dataset.source_type,
                        dataset_source=entry.dataset.source, dataset_schema=entry.dataset.schema,
                        dataset_profile=entry.dataset.profile))
            input_id = uuid.uuid4().hex
            rows[SqlInput].append(dict(input_uuid=input_id, source_type="DATASET",
                                       source_id=dataset_ids[key], destination_type="RUN",
                                       destination_id=run_id))
            rows[SqlInputTag] += [dict(input_uuid=input_id, name=tag.key, value=tag.value)
                                  for tag in entry.tags]
        for table, values in rows.items():  # parents before children (foreign keys)
            if values:
                _insert(session, table, values, insert)
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
