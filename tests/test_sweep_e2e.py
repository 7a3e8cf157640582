"""Real Hydra multiruns in a subprocess, writing to a real sqlite MLflow store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from drevt_sweep.sweep.seeds import RunSpec, simulate_seed
from drevt_sweep.sim.metrics import compute_metrics
from drevt_sweep.sim.runtime import RunTimeModel
from drevt_sweep.trace import ReadOptions, read_trace

from sweep_helpers import TINY, run_sweep

pytestmark = pytest.mark.slow


def store(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("drevt-sweep")
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    return client, runs


def test_multirun_logs_one_parent_per_configuration_and_one_child_per_seed(tmp_path):
    proc = run_sweep(tmp_path, "policy=fcfs,easy", "run_time=limit,normal", "replicates=3",
                     "parallel.n_jobs=2")
    assert "Traceback" not in proc.stderr
    _, runs = store(tmp_path)
    parents = [r for r in runs if r.data.tags.get("drevt_kind") == "configuration"]
    children = [r for r in runs if r.data.tags.get("drevt_kind") == "seed"]
    assert len(parents) == 4
    assert all(r.info.status == "FINISHED" for r in runs)
    by_parent = {p.info.run_id: [c for c in children if c.data.tags["mlflow.parentRunId"] == p.info.run_id]
                 for p in parents}
    jobs = read_trace(TINY, ReadOptions(trace_format="simple", queues="all", force_simulation=True))
    for parent in parents:
        kids = by_parent[parent.info.run_id]
        normal = parent.data.params["run_time.mode"] == "distribution"
        assert len(kids) == (3 if normal else 1)  # deterministic models need one seed
        model = RunTimeModel(mode=parent.data.params["run_time.mode"],
                             distribution=parent.data.params["run_time.distribution"],
                             scale=float(parent.data.params["run_time.scale"]),
                             stddev=float(parent.data.params["run_time.stddev"]))
        spec = RunSpec(total_nodes=10, priority=parent.data.params["policy.priority"],
                       backfill=parent.data.params["policy.backfill"], run_time=model)
        for kid in kids:
            seed = int(kid.data.params["seed"])
            expected = compute_metrics(*simulate_seed(jobs, spec, seed))
            for name in ("wait_mean", "bsld_mean", "utilization", "makespan"):
                assert kid.data.metrics[name] == pytest.approx(expected[name], rel=1e-12)
        mean_wait = sum(k.data.metrics["wait_mean"] for k in kids) / len(kids)
        assert parent.data.metrics["wait_mean"] == pytest.approx(mean_wait)
    summary = pd.read_csv(tmp_path / "sweep" / "summary.csv")
    assert len(summary) == 4 and set(summary.status) == {"FINISHED"}
    assert "mean wait" in proc.stdout


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


def test_resume_skips_finished_seeds_and_reuses_their_results(tmp_path):
    run_sweep(tmp_path, "run_time=normal", "replicates=2")
    first = json.loads((tmp_path / "sweep" / "0" / "result.json").read_text())
    run_sweep(tmp_path, "run_time=normal", "replicates=3", "resume=true")
    second = json.loads((tmp_path / "sweep" / "0" / "result.json").read_text())
    assert second["reused_seeds"] == [0, 1]
    _, runs = store(tmp_path)
    children = [r for r in runs if r.data.tags.get("drevt_kind") == "seed"]
    assert sorted(int(c.data.params["seed"]) for c in children) == [0, 1, 2]
    assert second["status"] == "FINISHED" and first["status"] == "FINISHED"
    # Across a resume the results are bit-identical to a sweep run in one go.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    run_sweep(fresh, "run_time=normal", "replicates=3")
    in_one_go = json.loads((fresh / "sweep" / "0" / "result.json").read_text())
    assert second["metrics"] == in_one_go["metrics"]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_make_ui_serves_the_sweep_on_loopback(tmp_path, repo_root):
    import time
    import urllib.request

    run_sweep(tmp_path, "policy=fcfs,easy", "run_time=limit")
    port = free_port()
    ui = subprocess.Popen(
        ["make", "-s", "ui", f"UI_PORT={port}", f"TRACKING_DB={tmp_path / 'out' / 'mlflow.db'}"],
        cwd=repo_root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    try:
        body = None
        deadline = time.time() + 120
        while time.time() < deadline and body is None:
            assert ui.poll() is None, ui.stdout.read()
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/api/2.0/mlflow/runs/search",
                    data=json.dumps({"experiment_ids": ["1"], "max_results": 100}).encode(),
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=5) as response:
                    body = json.loads(response.read())
            except OSError:
                time.sleep(0.5)
        assert body is not None, "the UI never answered"
        kinds = sorted(
            tag["value"] for run in body["runs"] for tag in run["data"]["tags"]
            if tag["key"] == "drevt_kind"
        )
        assert kinds == ["configuration", "configuration", "seed", "seed", "sweep"]
        import shutil

        if shutil.which("ss"):
            listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
            bound = [line for line in listening.splitlines() if f":{port} " in line]
            assert bound and all("127.0.0.1:" in line for line in bound)  # loopback only
    finally:
        import signal

        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(timeout=30)


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
