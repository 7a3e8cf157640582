"""The issue-15 sweep end to end: EASY, multifactor, WFP3 and EASY++ on the bundled KTH-SP2 trace
in a real Hydra multirun (subprocess), with per-user files, metrics and the report's figure."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

pytestmark = pytest.mark.slow

POLICIES = ("easy", "multifactor_easy", "wfp3_easy", "easyplusplus")


def test_policy_sweep_on_kth_sp2_with_per_user_figures(tmp_path):
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "drevt_sweep", "-m", f"policy={','.join(POLICIES)}",
           f"paths.output_root={tmp_path / 'out'}", f"hydra.sweep.dir={sweep}", "progress=false",
           "parallel.n_jobs=1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    results = {}
    for job in range(len(POLICIES)):
        result = json.loads((sweep / str(job) / "result.json").read_text())
        assert result["status"] == "FINISHED"
        results[result["choices"]["policy"]] = result["metrics"]
        users = pd.read_csv(sweep / str(job) / "per_user.csv", keep_default_na=False)
        assert list(users.columns) == ["user", "jobs", "wait_mean", "bsld_mean", "node_seconds"]
        assert users["jobs"].sum() == 28467 and len(users) == result["metrics"]["users"] == 214
    assert set(results) == set(POLICIES)
    # the policies really differ, and the fairness figures are there
    assert len({round(m["wait_mean"], 3) for m in results.values()}) == len(POLICIES)
    assert all(0 < m["user_bsld_jain"] <= 1 and m["user_wait_mean_max"] > 0 for m in results.values())
    report = (sweep / "report.html").read_text()
    assert "Per-user fairness" in report and "Jain&#39;s index" in report
    with sqlite3.connect(tmp_path / "out" / "mlflow.db") as db:
        logged = {row[0] for row in db.execute("select distinct key from metrics")}
    assert {"users", "user_wait_mean_max", "user_bsld_jain"} <= logged
