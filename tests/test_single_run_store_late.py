"""A single run's embedded store is checked without MLflow before anything runs, and MLflow
opens it while the seeds run (issue 23: the wait for MLflow's import and open was the largest
part of a 100-seed run). What only MLflow finds -- here a deleted experiment -- still exits 2
with one line before any result is written, and leaves no folder behind."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from sweep_helpers import TINY

pytestmark = pytest.mark.slow  # single runs end to end, in subprocesses


def _single_run(tmp_path, *extra):
    return subprocess.run([
        sys.executable, "-m", "drevt_sweep", "trace=custom", f"trace.path={TINY}",
        "format=simple", "format.queues=[all]", "system=custom", "system.total_nodes=10",
        "run_time=lognormal", "replicates=3", "parallel.n_jobs=1", "progress=false",
        f"paths.output_root={tmp_path / 'out'}", f"hydra.run.dir={tmp_path / 'run'}", *extra,
    ], capture_output=True, text=True, timeout=300)


def test_a_store_only_mlflow_finds_unusable_still_exits_2_before_any_result(tmp_path):
    import mlflow

    (tmp_path / "out").mkdir()
    uri = f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    client.delete_experiment(client.create_experiment("gone"))
    proc = _single_run(tmp_path, "tracking.experiment=gone")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("drevt-sweep: error:")]
    assert len(errors) == 1 and "experiment 'gone' is deleted" in errors[0], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()  # no result.json, no outputs, no folder


def test_a_single_run_with_a_good_store_is_tracked_as_before(tmp_path):
    proc = _single_run(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "FINISHED" and result["parent_run_id"]
    marks = result["marks"]
    assert "store" not in marks and marks["store_after_seeds"] >= marks["configuration"]
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    run = client.get_run(result["parent_run_id"])
    assert run.info.status == "FINISHED"
    children = client.search_runs([run.info.experiment_id],
                                  f"tags.mlflow.parentRunId = '{run.info.run_id}'")
    assert sorted(c.data.tags["mlflow.runName"] for c in children) == ["seed 0", "seed 1", "seed 2"]
