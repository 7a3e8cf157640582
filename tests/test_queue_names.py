"""Queue names never break tracking or the outputs (issue 19, items 5 and 13)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from drevt_sweep.names import KEY_LIMIT, display_name, excluded_key, queue_key
from sweep_helpers import run_sweep

# What MLflow accepts on every platform (no colon on Windows), and no path tricks.
VALID = re.compile(r"^[A-Za-z0-9_.\-]+$")
AWKWARD = ["gpu+debug", "a_b", "a+b", "a b", "..", ".", "a/b", "é", "x" * 500, "_x12345678",
           "a_b_x" + "0" * 8, "", "q:1"]


@pytest.mark.parametrize("name", AWKWARD)
def test_every_key_is_valid_short_and_not_a_path(name):
    key = queue_key(name)
    assert VALID.match(key) and key.strip(".") and len(key) <= KEY_LIMIT


def test_keys_are_unique_and_stable_whatever_else_is_present():
    keys = [queue_key(n) for n in AWKWARD]
    assert len(set(keys)) == len(AWKWARD)
    assert queue_key("pbatch") == "pbatch"  # valid names are kept as they are
    assert queue_key("a+b") == queue_key("a+b") != queue_key("a_b") == "a_b"
    assert excluded_key("queue:gpu+debug") == "queue:" + queue_key("gpu+debug")
    assert excluded_key("bad_row:time_limit_not_positive") == "bad_row:time_limit_not_positive"
    assert len(display_name("y" * 10_000_000)) <= 200


def _trace(tmp_path, rows):
    path = tmp_path / "queues.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit,actual_run_time\n"
                    + "".join(f"{i * 10},{1 + i % 3},{q},100,{50 + i}\n" for i, q in enumerate(rows)))
    return path


def test_drevt_sim_per_queue_table_shows_each_queues_own_numbers(tmp_path):
    # "a+b" and "a_b" collided after sanitising: the table printed a_b's numbers for both.
    trace = _trace(tmp_path, ["a+b"] * 3 + ["a_b"] * 5 + [".."] * 2)
    stats = tmp_path / "stats.json"
    proc = subprocess.run(
        [sys.executable, "-m", "drevt_sweep.cli.sim", str(trace), "--queues", "all",
         "--total_nodes", "3", "--backfill_policy", "none", "--stats", str(stats)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    jobs = {line.split()[0]: int(line.split()[1]) for line in
            proc.stdout.split("per queue:")[1].strip().splitlines()[1:]}
    assert jobs == {"a+b": 3, "a_b": 5, "..": 2}
    document = json.loads(stats.read_text())
    metrics = document["metrics"]
    assert metrics[f"queue/{queue_key('a+b')}/jobs_simulated"] == 3
    assert metrics["queue/a_b/jobs_simulated"] == 5
    assert all(VALID.match(k.split("/")[1]) for k in metrics if k.startswith("queue/"))
    assert document["trace"]["queue_keys"] == {queue_key("a+b"): "a+b", queue_key(".."): ".."}


@pytest.mark.parametrize("queues", ["all", "default"], ids=["kept", "excluded"])
def test_a_huge_queue_name_does_not_blow_up_the_outputs(tmp_path, queues):
    huge = "q" * 2_000_000
    trace = _trace(tmp_path, [huge, huge, "pbatch", "pall"])
    stats = tmp_path / "stats.json"
    proc = subprocess.run(
        [sys.executable, "-m", "drevt_sweep.cli.sim", str(trace), "--queues", queues,
         "--total_nodes", "4", "--stats", str(stats)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert stats.stat().st_size < 20_000  # was 16 metric keys x the whole name
    assert max(len(line) for line in proc.stdout.splitlines()) < 200
    assert len(proc.stderr) < 2_000  # an excluded queue is named, shortened
    document = json.loads(stats.read_text())
    assert document["trace"]["queue_keys"] == {queue_key(huge): display_name(huge)}


@pytest.mark.slow
def test_a_sweep_tracks_awkward_queue_names(tmp_path):
    """Excluded 'gpu+debug', colliding 'a+b'/'a_b' and '..' made the configuration FAIL."""
    from mlflow.tracking import MlflowClient

    trace = _trace(tmp_path, ["a+b", "a_b", "..", "gpu+debug"] * 3)
    run_sweep(tmp_path, "policy=easy", f"trace.path={trace}",
              "format.queues=['a+b',a_b,'..']")
    result = json.loads((tmp_path / "sweep" / "0" / "result.json").read_text())
    assert result["status"] == "FINISHED", result.get("error")
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    parent = client.get_run(result["parent_run_id"])
    assert parent.info.status == "FINISHED"
    assert parent.data.params[f"excluded.queue:{queue_key('gpu+debug')}"] == "3"
    assert parent.data.metrics["queue/a_b/jobs_simulated"] == 3
    assert parent.data.metrics[f"queue/{queue_key('a+b')}/jobs_simulated"] == 3
    mapping = json.loads((tmp_path / "sweep" / "0" / "queue_keys.json").read_text())
    assert mapping == {queue_key(n): n for n in ("a+b", "..", "gpu+debug")}
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert "queue_keys.json" in artifacts
