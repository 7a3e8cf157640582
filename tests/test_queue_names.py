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


# Two distinct names with one 8-digit key (issue 28 item 3). Found by a birthday search over
# names that all sanitise to the same text: 'q' + format(i, 'b') with 0 -> '#' and 1 -> '!',
# for i = 0, 1, 2, ...; the first repeated queue_key came at i = 200394 (and
# test_the_colliding_pair_was_found_by_a_birthday_search repeats the search).
COLLIDING = ("q!##!##!!!!!!##!#!!", "q!!####!!!#!!##!#!#")


def _birthday_search(limit: int = 300_000) -> tuple[str, str]:
    seen: dict[str, str] = {}
    for i in range(limit):
        name = "q" + format(i, "b").replace("0", "#").replace("1", "!")
        key = queue_key(name)
        if key in seen:
            return seen[key], name
        seen[key] = name
    raise AssertionError("no collision found")


def test_the_colliding_pair_was_found_by_a_birthday_search():
    assert _birthday_search() == COLLIDING
    assert queue_key(COLLIDING[0]) == queue_key(COLLIDING[1])


def test_a_runs_registry_gives_colliding_names_distinct_keys():
    from drevt_sweep.names import QueueKeys

    keys = QueueKeys([*COLLIDING, "pbatch", "a+b"])
    first, second = keys(COLLIDING[0]), keys(COLLIDING[1])
    assert first != second and VALID.match(first) and len(first) <= KEY_LIMIT
    assert first.endswith(tuple("0123456789abcdef")) and len(first.rsplit("_x", 1)[1]) == 16
    # every other name keeps its stable key; one name alone keeps its short key
    assert keys("pbatch") == "pbatch" and keys("a+b") == queue_key("a+b")
    assert QueueKeys([COLLIDING[0]])(COLLIDING[0]) == queue_key(COLLIDING[0])
    assert keys.key_map() == {first: COLLIDING[0], second: COLLIDING[1], queue_key("a+b"): "a+b"}
    assert excluded_key("queue:" + COLLIDING[1], keys) == "queue:" + second


def test_drevt_sim_keeps_the_metrics_of_two_colliding_queues_apart(tmp_path):
    trace = _trace(tmp_path, [COLLIDING[0]] * 2 + [COLLIDING[1]] * 3 + ["pbatch"])
    stats = tmp_path / "stats.json"
    proc = subprocess.run(
        [sys.executable, "-m", "drevt_sweep.cli.sim", str(trace), "--queues", "all",
         "--total_nodes", "3", "--stats", str(stats)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(stats.read_text())
    mapping = document["trace"]["queue_keys"]
    assert sorted(mapping.values()) == sorted(COLLIDING) and len(mapping) == 2
    by_name = {name: key for key, name in mapping.items()}
    metrics = document["metrics"]
    assert metrics[f"queue/{by_name[COLLIDING[0]]}/jobs_simulated"] == 2
    assert metrics[f"queue/{by_name[COLLIDING[1]]}/jobs_simulated"] == 3
    table = {line.split()[0]: int(line.split()[1]) for line in
             proc.stdout.split("per queue:")[1].strip().splitlines()[1:]}
    assert table == {COLLIDING[0]: 2, COLLIDING[1]: 3, "pbatch": 1}


@pytest.mark.slow
def test_a_sweep_logs_two_colliding_queues_under_two_keys(tmp_path):
    from mlflow.tracking import MlflowClient

    trace = _trace(tmp_path, [COLLIDING[0]] * 2 + [COLLIDING[1]] * 3 + ["pbatch"])
    run_sweep(tmp_path, "policy=easy", f"trace.path={trace}", "format.queues=[all]")
    result = json.loads((tmp_path / "sweep" / "0" / "result.json").read_text())
    assert result["status"] == "FINISHED", result.get("error")
    mapping = json.loads((tmp_path / "sweep" / "0" / "queue_keys.json").read_text())
    by_name = {name: key for key, name in mapping.items()}
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    metrics = client.get_run(result["parent_run_id"]).data.metrics
    assert metrics[f"queue/{by_name[COLLIDING[0]]}/jobs_simulated"] == 2
    assert metrics[f"queue/{by_name[COLLIDING[1]]}/jobs_simulated"] == 3
