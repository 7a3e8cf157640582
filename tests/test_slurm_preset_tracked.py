"""`system=lassen_slurm policy=slurm` (the README's preset) with tracking on: its slurm.conf's
partitions that share nodes become one pool named "pbatch+pall+...", which MLflow refuses in a
param key, so the configuration FAILED. The partition params are keyed as the partition metrics
are (partition/<key>/...)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys

import pytest

MLFLOW_KEY = re.compile(r"^[\w\-./ :]+$")  # what MLflow accepts in a param or metric name


@pytest.mark.slow
def test_the_lassen_slurm_preset_is_tracked(tmp_path):
    cmd = [sys.executable, "-m", "drevt_sweep", "system=lassen_slurm", "policy=slurm",
           "workload.max_jobs=200", "figures=none", "progress=false", f"paths.root={tmp_path}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    with sqlite3.connect(tmp_path / "outputs" / "mlflow.db") as db:
        params = [k for (k,) in db.execute("select key from params where key like 'partition.%'")]
        metrics = {k for (k,) in db.execute("select distinct key from metrics where key like 'partition/%'")}
        status = {s for (s,) in db.execute("select status from runs")}
    assert status == {"FINISHED"}
    assert all(MLFLOW_KEY.match(k) for k in params)
    param_parts = {k.split(".")[1] for k in params if k.endswith(".nodes")}
    metric_parts = {k.split("/")[1] for k in metrics}
    assert len(param_parts) == 2 and param_parts == metric_parts  # the pooled partitions, pdebug
    assert "pdebug" in param_parts
