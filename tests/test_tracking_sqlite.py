"""A single run written to an existing sqlite store without MLflow (tracking/sqlite_tracker.py)
reads back through ``MlflowClient`` as the same run written through MLflow; a store it does not
know (another schema revision, no experiment) goes to MLflow. Real sqlite stores."""

from __future__ import annotations

import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from drevt_sweep.tracking.bulk import RunRecord
from drevt_sweep.tracking.sqlite_tracker import SCHEMA_REVISION, SqliteTracker
from drevt_sweep.tracking.store import Tracker, embedded_uri
from drevt_sweep.tracking.ui import ui_tags

ID_TAGS = ("mlflow.parentRunId", "drevt_handle")


def test_schema_revision_is_the_installed_mlflows_head():
    """A new MLflow with a new migration fails here instead of writing to stores it does not know."""
    from mlflow.store.db.utils import _get_latest_schema_revision

    assert SCHEMA_REVISION == _get_latest_schema_revision()


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    trace = tmp_path / "trace.swf"
    trace.write_text("; a trace\n")
    figure = tmp_path / "wait.png"
    figure.write_bytes(b"png")
    table = tmp_path / "seed_metrics.csv"
    table.write_text("seed,wait_mean\n1,2.5\n")
    return trace, figure, table


def _single_run(tracker, tmp_path: Path) -> None:
    """What a single run's helper commands do, in their order."""
    trace, figure, table = _files(tmp_path)
    parent = tracker.start_run("easy lognormal", {"drevt_kind": "configuration", "drevt_handle": "h0",
                                                  "mlflow.note.content": "Reproduce:\n"}, None)
    tracker.log(parent, params={"policy.name": "easy", "seed": 1, "system.total_nodes": None})
    tracker.log(parent, params={"timezone.name": "Europe/Stockholm", "seed": 1})
    tracker.log_trace_input(parent, "kth_sp2", "a" * 64, str(trace), 28)
    tracker.log(parent, metrics={"wait_mean": 12.5, "wait_p95": math.nan, "bsld_max": math.inf},
                params={"total_nodes": 100}, tags={"drevt_config_hash": "c" * 32})
    seeds = [RunRecord(f"seed {seed}", {"drevt_kind": "seed", "drevt_handle": f"h{seed}"},
                       params={"seed": seed, "policy.name": "easy"},
                       metrics={"wait_mean": float(seed), "zero": 0.0}, parent_id=parent,
                       dataset=("kth_sp2", "a" * 64, str(trace), 28))
             for seed in (1, 2, 3)]
    tracker.log_runs(seeds)
    tracker.log_artifact(parent, figure, "figures")
    tracker.log_artifact(parent, table, None)
    tracker.finish(parent, "FINISHED")
    tracker.prepare_ui()


def _artifacts(client, run_id: str, path: str | None = None) -> list[tuple[str, bool]]:
    found = []
    for entry in client.list_artifacts(run_id, path):
        found.append((entry.path, entry.is_dir))
        if entry.is_dir:
            found += _artifacts(client, run_id, entry.path)
    return sorted(found)


def _read_back(client, experiment_id: str) -> dict:
    """Everything the UI and the client show of the experiment's runs, ids and times left out."""
    runs = {run.info.run_name: run for run in client.search_runs([experiment_id], max_results=100)}
    names = {run.info.run_id: name for name, run in runs.items()}
    seen = {}
    for name, run in runs.items():
        info = run.info
        tags = {k: v for k, v in run.data.tags.items() if k not in ID_TAGS}
        tags["parent"] = names.get(run.data.tags.get("mlflow.parentRunId"))
        history = {key: [(m.value, m.step) for m in client.get_metric_history(info.run_id, key)]
                   for key in run.data.metrics}
        seen[name] = dict(
            info=(info.status, info.lifecycle_stage, info.user_id, info.run_name,
                  info.artifact_uri.endswith(f"/{info.run_id}/artifacts"),
                  info.end_time is not None and info.end_time >= info.start_time),
            params=run.data.params, metrics=run.data.metrics, history=history, tags=tags,
            inputs=[(d.dataset.name, d.dataset.digest, d.dataset.source_type, d.dataset.source,
                     d.dataset.profile, d.dataset.schema, sorted((t.key, t.value) for t in d.tags))
                    for d in run.inputs.dataset_inputs],
            artifacts=_artifacts(client, info.run_id))
    experiment = client.get_experiment(experiment_id)
    ui = {k: v for k, v in experiment.tags.items() if k in ui_tags()}
    return repr({"runs": dict(sorted(seen.items())), "ui": ui})  # (repr: NaN == NaN)


def _store(tmp_path: Path, *experiments: str) -> str:
    uri = embedded_uri(tmp_path / "outputs")
    for name in experiments:  # (MLflow creates the store and the experiments: a first run)
        Tracker.open(uri, name, str(tmp_path / "outputs" / "mlartifacts"))
    return uri


def test_a_single_run_reads_back_the_same_both_ways(tmp_path):
    uri = _store(tmp_path, "raw", "via")
    raw = SqliteTracker.open(uri, "raw", str(tmp_path / "outputs" / "mlartifacts"))
    assert raw is not None
    _single_run(raw, tmp_path)
    assert raw._mlflow is None  # nothing went to MLflow
    via = Tracker.open(uri, "via", str(tmp_path / "outputs" / "mlartifacts"))
    _single_run(via, tmp_path)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    written_raw, written_via = _read_back(client, raw.experiment_id), _read_back(client, via.experiment_id)
    assert written_raw == written_via
    assert written_raw.count("'info': ('FINISHED'") == 4 and str(ui_tags())[1:-1] in written_raw
    # The UI's search (mlflow ui, make ui) sees them, by their tags and params.
    found = client.search_runs([raw.experiment_id], "tags.drevt_kind = 'seed' and params.seed = '2'")
    assert [run.info.run_name for run in found] == ["seed 2"]
    # A restarted helper finds a run by its handle.
    assert raw.run_with_handle("h2") == found[0].info.run_id
    with sqlite3.connect(uri[len("sqlite:///"):]) as db:  # WAL, as Tracker leaves it
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_values_mlflow_might_refuse_or_cut_go_to_mlflow(tmp_path):
    uri = _store(tmp_path, "raw")
    raw = SqliteTracker.open(uri, "raw")
    run = raw.start_run("r", {"drevt_kind": "seed"})
    raw.log(run, params={"long": "x" * 7000})  # over 6000: MLflow cuts it
    assert raw._mlflow is not None
    assert len(raw.client.get_run(run).data.params["long"]) == 6000


def test_a_store_at_another_revision_or_without_the_experiment_goes_to_mlflow(tmp_path):
    uri = _store(tmp_path, "raw")
    assert SqliteTracker.open(uri, "raw") is not None
    assert SqliteTracker.open(uri, "missing") is None  # no artifact root given: MLflow creates it
    assert SqliteTracker.open(uri, "x" * 300, str(tmp_path / "art")) is None  # a name MLflow judges
    with sqlite3.connect(uri[len("sqlite:///"):]) as db:
        db.execute("UPDATE experiments SET lifecycle_stage = 'deleted' WHERE name = 'raw'")
    assert SqliteTracker.open(uri, "raw", str(tmp_path / "art")) is None  # MLflow says it is deleted
    with sqlite3.connect(uri[len("sqlite:///"):]) as db:
        db.execute("UPDATE alembic_version SET version_num = 'other'")
    assert SqliteTracker.open(uri, "other", str(tmp_path / "art")) is None


def _experiment_row(uri: str, name: str) -> tuple:
    with sqlite3.connect(uri[len("sqlite:///"):]) as db:
        row = db.execute("SELECT name, artifact_location, lifecycle_stage, creation_time, last_update_time, "
                         "workspace FROM experiments WHERE name = ?", (name,)).fetchone()
        tags = db.execute("SELECT COUNT(*) FROM experiment_tags JOIN experiments USING (experiment_id) "
                          "WHERE name = ?", (name,)).fetchone()[0]
    return row[0], row[2], row[5], row[3] == row[4], tags, row[1]


def test_a_new_store_and_experiment_without_mlflow_are_mlflows(tmp_path):
    """A sweep's first run in a new output folder: the store (a copy of MLflow's empty one,
    ``store._create_sqlite_store``) and the experiment made with sqlite3 alone, in a process
    that never imports mlflow; the experiment is the row MLflow's ``create_experiment`` makes,
    and the run reads back as one written through MLflow."""
    from drevt_sweep.tracking import store

    store._empty_store()  # (built by MLflow once per version and machine, as any first store)
    raw_uri = embedded_uri(tmp_path / "raw")
    code = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_tracking_sqlite import _single_run
from drevt_sweep.tracking.sqlite_tracker import SqliteTracker
tracker = SqliteTracker.open({raw_uri!r}, "exp", {str(tmp_path / "raw" / "mlartifacts")!r})
assert tracker is not None
_single_run(tracker, Path({str(tmp_path)!r}))
assert tracker._mlflow is None
assert not [m for m in sys.modules if m.split(".")[0] in ("mlflow", "sqlalchemy", "alembic")], "imported"
"""
    env = {k: v for k, v in os.environ.items() if k != "DREVT_TRACKING_VIA_MLFLOW"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path)
    via_uri = embedded_uri(tmp_path / "via")
    via = Tracker.open(via_uri, "exp", str(tmp_path / "via" / "mlartifacts"))
    _single_run(via, tmp_path)
    raw_row, via_row = _experiment_row(raw_uri, "exp"), _experiment_row(via_uri, "exp")
    assert raw_row[:-1] == via_row[:-1]
    assert raw_row[-1] == (tmp_path / "raw" / "mlartifacts").as_uri()
    assert via_row[-1] == (tmp_path / "via" / "mlartifacts").as_uri()
    from mlflow.tracking import MlflowClient

    raw_client, via_client = MlflowClient(tracking_uri=raw_uri), MlflowClient(tracking_uri=via_uri)
    raw_id = raw_client.get_experiment_by_name("exp").experiment_id
    assert raw_id == via_client.get_experiment_by_name("exp").experiment_id == "1"
    assert _read_back(raw_client, raw_id) == _read_back(via_client, raw_id)
    assert [e.name for e in raw_client.search_experiments()] == [e.name for e in via_client.search_experiments()]


def test_forced_through_mlflow(tmp_path, monkeypatch):
    uri = _store(tmp_path, "raw")
    monkeypatch.setenv("DREVT_TRACKING_VIA_MLFLOW", "1")
    assert SqliteTracker.open(uri, "raw") is None


def test_a_single_run_without_importing_mlflow(tmp_path):
    """The point of it: a process writing a single run never imports mlflow."""
    uri = _store(tmp_path, "raw")
    code = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_tracking_sqlite import _single_run
from drevt_sweep.tracking.sqlite_tracker import SqliteTracker
tracker = SqliteTracker.open({uri!r}, "raw", {str(tmp_path / "outputs" / "mlartifacts")!r})
_single_run(tracker, Path({str(tmp_path)!r}))
assert tracker._mlflow is None
assert not [m for m in sys.modules if m.split(".")[0] in ("mlflow", "sqlalchemy", "alembic")], "imported"
"""
    env = {k: v for k, v in os.environ.items() if k != "DREVT_TRACKING_VIA_MLFLOW"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path)


def test_orphaned_runs_go_to_mlflow_and_a_gone_sweep_without_any_does_not(tmp_path):
    """Every sweep leaves its liveness lock file: the next finds it gone. Without a run of it
    left RUNNING the file is removed and the run stays off MLflow; with one, MLflow closes it."""
    from drevt_sweep.tracking import liveness
    from drevt_sweep.tracking.store import TAG_SWEEP_ID

    uri = _store(tmp_path, "raw")
    folder = liveness.lock_folder(uri)
    folder.mkdir(exist_ok=True)
    (folder / "vm:1:finished.lock").touch()  # a sweep that ended, its runs closed
    assert SqliteTracker.open(uri, "raw") is not None
    assert not (folder / "vm:1:finished.lock").exists()
    running = Tracker.open(uri, "raw").start_run("left", {TAG_SWEEP_ID: "vm:2:killed"})
    (folder / "vm:2:killed.lock").touch()  # ... and one killed with a run RUNNING
    assert SqliteTracker.open(uri, "raw") is None
    assert (folder / "vm:2:killed.lock").exists()  # for Tracker.open to claim
    tracker = Tracker.open(uri, "raw")
    assert tracker.client.get_run(running).info.status == "KILLED"
    assert SqliteTracker.open(uri, "raw") is not None
