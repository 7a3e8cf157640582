"""Seed runs written in one transaction (tracking/bulk.py) are the runs MLflow's client writes:
the same info, params, metrics, tags and dataset inputs through ``MlflowClient.get_run``,
``search_runs`` filters and ``mlflow.search_runs``'s table. Real sqlite stores."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from drevt_sweep.tracking.bulk import TESTED, RunRecord, bulk_writer
from drevt_sweep.tracking.store import Tracker

RECORD = RunRecord(
    "seed 7",
    {"drevt_kind": "seed", "drevt_run_key": "abc", "mlflow.user": "alice",
     "mlflow.source.name": "drevt-sweep", "mlflow.source.type": "LOCAL",
     "mlflow.note.content": "Reproduce:\n\n```\ndrevt-sweep seed=7\n```\n"},
    params={"policy.backfill": "easy", "seed": 7, "system.total_nodes": None, "long": "x" * 7000},
    metrics={"wait_mean": 12.5, "wait_p95": math.nan, "bsld_max": math.inf, "zero": 0.0},
    dataset=("kth_sp2", "f" * 64, "/tmp/trace.swf", 28467),
)
INSTALLED = ".".join(__import__("mlflow").__version__.split(".")[:2])
# On an MLflow release the bulk path was not tested with, the sweep uses the client instead;
# the tests below of the bulk path itself then have nothing to test.
needs_bulk = pytest.mark.skipif(INSTALLED not in TESTED,
                                reason=f"MLflow {INSTALLED}: bulk path off, the client writes runs")
VOLATILE_TAGS = ("mlflow.parentRunId",)  # differs by design (each store's own parent)


def _by_client(tracker: Tracker, record: RunRecord) -> str:
    """The run through the client, as the sweep wrote it before (four calls)."""
    run_id = tracker.start_run(record.name, record.tags, record.parent_id)
    tracker.log(run_id, metrics=record.metrics, params=record.params)
    tracker.log_trace_input(run_id, *record.dataset)
    tracker.finish(run_id, record.status)
    return run_id


def _nan(value: float):
    return "nan" if math.isnan(value) else value  # NaN != NaN: compare it by name


def _view(client, run_id: str) -> dict:
    run = client.get_run(run_id)
    info = run.info
    return {
        "status": info.status, "lifecycle_stage": info.lifecycle_stage, "user_id": info.user_id,
        "run_name": info.run_name, "experiment_id": info.experiment_id,
        "artifact_uri": info.artifact_uri.replace(run_id, "<id>"),
        "ended": info.end_time is not None and info.end_time >= info.start_time,
        "params": run.data.params, "metrics": {k: _nan(v) for k, v in run.data.metrics.items()},
        "tags": {k: v for k, v in run.data.tags.items() if k not in VOLATILE_TAGS},
        "inputs": [(d.dataset.name, d.dataset.digest, d.dataset.source_type, d.dataset.source,
                    d.dataset.profile, [(t.key, t.value) for t in d.tags])
                   for d in run.inputs.dataset_inputs],
        "history": [(m.key, _nan(m.value), m.step) for key in run.data.metrics
                    for m in client.get_metric_history(run_id, key)],
    }


@pytest.fixture
def tracker(tmp_path):
    return Tracker.open(f"sqlite:///{tmp_path / 'mlflow.db'}", "exp", str(tmp_path / "artifacts"))


def test_the_bulk_path_is_used_only_for_an_sql_store_of_a_tested_version(tracker):
    if INSTALLED in TESTED:
        assert bulk_writer(tracker.client) is not None
    else:
        assert bulk_writer(tracker.client) is None


@needs_bulk
def test_bulk_runs_are_the_runs_the_client_writes(tracker):
    parent_a = tracker.start_run("config a", {"drevt_kind": "configuration"})
    parent_b = tracker.start_run("config b", {"drevt_kind": "configuration"})
    by_client = _by_client(tracker, replace(RECORD, parent_id=parent_a))
    failed = replace(RECORD, name="seed 8", status="FAILED", metrics={},
                     tags={**RECORD.tags, "drevt_error": "boom"}, parent_id=parent_b)
    bulk_ids = tracker.log_runs([replace(RECORD, parent_id=parent_b), failed])
    client = tracker.client
    assert _view(client, bulk_ids[0]) == _view(client, by_client)
    assert _view(client, bulk_ids[1])["status"] == "FAILED"
    assert _view(client, bulk_ids[1])["tags"]["drevt_error"] == "boom"
    assert client.get_run(bulk_ids[0]).data.tags["mlflow.parentRunId"] == parent_b
    # One dataset row shared by both writers' runs (same name and digest in the experiment).
    exp = [tracker.experiment_id]
    found = client.search_runs(exp, "tags.drevt_kind = 'seed' and params.seed = '7' "
                                    "and metrics.wait_mean = 12.5")
    assert sorted(r.info.run_id for r in found) == sorted([by_client, bulk_ids[0]])
    assert [r.info.run_id for r in client.search_runs(
        exp, f"tags.mlflow.parentRunId = '{parent_b}'", order_by=["attributes.run_name"])] == bulk_ids


@needs_bulk
def test_mlflow_search_runs_sees_the_same_table(tracker):
    import mlflow

    by_client = _by_client(tracker, RECORD)
    (bulk,) = tracker.log_runs([RECORD])
    mlflow.set_tracking_uri(tracker.uri)
    try:
        frame = mlflow.search_runs([tracker.experiment_id]).set_index("run_id")
    finally:
        mlflow.set_tracking_uri(None)
    volatile = {"start_time", "end_time", "artifact_uri"}
    columns = [c for c in frame.columns if c not in volatile]
    a, b = frame.loc[by_client, columns], frame.loc[bulk, columns]
    assert a.isna().equals(b.isna())
    assert a[a.notna()].equals(b[b.notna()])


@needs_bulk
def test_a_run_written_whole_before_a_helper_died_is_not_written_again(tracker):
    (first,) = tracker.log_runs([RECORD])
    again = tracker.log_runs([RECORD, replace(RECORD, name="seed 9")], existing={0: first})
    assert again[0] == first
    client = tracker.client
    assert len(client.search_runs([tracker.experiment_id])) == 2
    assert [m.value for m in client.get_metric_history(first, "wait_mean")] == [12.5]


@needs_bulk
def test_a_bad_record_writes_no_run_at_all(tracker):
    from mlflow.exceptions import MlflowException

    bad = replace(RECORD, params={"bad key!": 1})
    with pytest.raises(MlflowException):
        tracker.log_runs([RECORD, bad])
    assert tracker.client.search_runs([tracker.experiment_id]) == []
