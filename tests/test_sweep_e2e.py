"""Real Hydra multiruns in a subprocess, writing to a real sqlite MLflow store. (The runs one
multirun logs, recomputed seed by seed, and `make ui` serving them are checked on the shared
sweep of test_mlflow_ui.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from sweep_helpers import TINY, run_sweep

pytestmark = pytest.mark.slow


def store(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep")
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    return client, runs


def test_a_failing_configuration_is_marked_failed_and_the_others_still_run(tmp_path):
    # The second trace is a Slurm export read as a simple CSV: it fails only when it is read
    # (values that are wrong in themselves stop the sweep before it starts, see test_hydra_cli).
    broken = TINY.parent / "slurm_replay.txt"
    proc = run_sweep(tmp_path, f"trace.path={TINY},{broken}", "run_time=limit", check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    _, runs = store(tmp_path)
    parents = {Path(r.data.params.get("trace.path")).name: r for r in runs
               if r.data.tags.get("drevt_kind") == "configuration"}
    assert parents[TINY.name].info.status == "FINISHED"
    assert parents[broken.name].info.status == "FAILED"
    assert broken.name in parents[broken.name].data.tags["drevt_error"]
    summary = pd.read_csv(tmp_path / "sweep" / "summary.csv")
    assert sorted(summary.status) == ["FAILED", "FINISHED"]


def test_default_output_folders_follow_the_working_directory(tmp_path):
    # No paths.* or hydra.sweep.dir overrides: what `make run` does, from another folder.
    cmd = [sys.executable, "-m", "drevt_sweep", "-m", "trace=custom", f"trace.path={TINY}",
           "format=simple", "format.queues=[all]", "system=custom", "system.total_nodes=10",
           "policy=fcfs,easy", "run_time=limit", "progress=false"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summaries = list((tmp_path / "outputs" / "multirun").glob("*/summary.csv"))
    assert len(summaries) == 1 and (tmp_path / "outputs" / "mlflow.db").is_file()
    assert (summaries[0].parent / "report.html").is_file()
    assert str(tmp_path / "outputs" / "mlflow.db") in proc.stdout
